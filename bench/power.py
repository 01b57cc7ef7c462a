#!/usr/bin/env python3
"""What `zfsperf compare` can be trusted to see, design by design, from real runs on zfs-fuse.

The default suite's receive case (threads=1 unless --threads: a 256 MiB stream, rounds back to back
for 4 s per iteration, pre-filled vdevs, primarycache=none) measured four ways, each a real
`zfsperf run` on the embedded zfs-fuse:

  consecutive runs  K runs of 5 iterations of identical settings, one after another: every pair of
                    runs compared as `compare BASE NEW` does (one run a side, no history: the
                    iterations design with its drift floor)
  interleaved       one `--interleave` run of an A/A sweep (a user property ZFS ignores, arm=a|b),
                    cut into windows of --block blocks: unpaired (Mann-Whitney on the two arms) and
                    paired (compare's sign-flip test on the within-block ratios)
  duet              one `duet = true` run of the same A/A sweep: both arms at once on one pool,
                    windows of --block iterations, paired
  turns             one `duet = "turns"` run of the same A/A sweep: both arms on one pool taking
                    turns round by round (ABBA), windows of --block iterations, paired
  fio               a fio randread 4k test taking turns in 1 s slices (16 MiB a side, runtime 4,
                    the A/A sweep), windows of --block iterations, paired: read IOPS and read p99;
                    each again with the slice pair as the unit (a side's k-th slice of an iteration
                    against the other's k-th, which ran beside it: two pairs an iteration); and
                    the p99 of each side's bins merged over a window, tested by relabelling slice pairs
  mix               the starvation mix taking turns (the reader 4k random reads of 16 MiB, alone 1 s,
                    then under a gzip-9 writer of 32 MiB for 1 + 1 s; one ABBA group an iteration;
                    the A/A sweep): the headline (the reader's p99 ratio, loaded / alone) per
                    iteration, and its throughput figures (the reader's IOPS alone and loaded, the
                    writer's) per iteration and on turn pairs as its records keep them (compare's unit)

For each: the A/A false-alarm rate (a verdict of better/WORSE on identical settings; goal <= 5 %),
the smallest change called significant with 80 % power when one arm's values are scaled by 1 + d
(goal <= 2 %), and the machine time it took. Then two real changes of known direction -- the
receive into compression=lzjb against off on an incompressible stream (lzjb tries every block and
gives up: CPU spent, nothing saved), and a block checksum (fletcher4) against none (a little CPU
per block) -- interleaved, as a duet and in turns, with compare's own verdict.
Windows of one long run overlap by half unless --step says otherwise (--step = --block: disjoint
windows, independent comparisons, the count to quote as "N comparisons").
Usage: bench/power.py [--runs 6] [--blocks 24] [--block 6] [--step 3] [--threads 1] [--reuse]
                      [--designs consecutive,interleaved,duet,turns,fio,mix] [--no-real]
                      [--real-iterations 12] [--small 'checksum = ["off", "fletcher4"]'] [--skip-lzjb] [--keep DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from zfsperf.metrics import fiojson
from zfsperf.report import abstats
from zfsperf.report.compare import MARGIN_PCT, NOISE_PCT, compare_values, from_estimate
from zfsperf.report.designs import DRIFT_FLOOR_PCT, Design, beyond_floor
from zfsperf.report.export.compare.text import verdict_text
from zfsperf.report.model import load_run
from zfsperf.report.compare import compare_within
from zfsperf.report.pairing import ab_pairs
from zfsperf.runfile import case_slug, resolve_path

DESIGNS = ("consecutive", "interleaved", "duet", "turns", "fio", "mix")
SCALES = [0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 25, 30, 40, 50]


def runfile(threads: int, iterations: int, sweep: str = "", duet: str = "") -> str:
    """The default suite's receive case; duet "true" (both sides at once) or '"turns"' (round by round)."""
    text = resolve_path("quick")[1]
    text = text.replace("threads = [1, 2, 4]", f"threads = {threads}")
    # a fixed count (the suite's own is "steady", until each case's verdict is decided)
    text = re.sub(r"^iterations = .*$", f"iterations = {iterations}", text, count=1, flags=re.M)
    if sweep:
        text = re.sub(r"(\[defaults\.dataset\]\n[^\n]*\n)", lambda m: m.group(1) + sweep + "\n", text)
    # the measured design: receive rounds back to back for 4 s (the default suite's io_size changes
    # the work, not the design; these figures were taken with this)
    text = re.sub(r'io_size = "\$\{io_size\}"[^\n]*', 'duration = "4s"', text)
    if duet:
        text = text.replace('duration = "4s"', f'duration = "4s"\nduet = {duet}')
    return text


# the fio and mix A/As: one pool of one 512 MiB vdev, a warm-up iteration, the A/A sweep taking turns
TURNS_AA = """
[defaults]
iterations = {{iterations}}
warmup = 1
[defaults.pool]
vdevs = 1
vdev_size = "512M"
[[test]]
{test}
duet = "turns"
dataset = {{{{ "zfsperf:arm" = ["a", "b"] }}}}
"""
FIO_AA = TURNS_AA.format(test="""name = "rr"
workload = "fio"
rw = "randread"
bs = "4k"
size = "16M"
runtime = 4
slice = 1""")
MIX_AA = TURNS_AA.format(test="""name = "mix"
workload = "mixed"
runtime = 1
slice = 1
settle = 1
reader = {{ rw = "randread", bs = "4k", size = "16M" }}
writer = {{ rw = "write", bs = "1M", size = "32M", compress_percentage = 66 }}
writer_dataset = {{ compression = "gzip-9" }}""")
MIX_RATES = ("reader_alone_iops", "reader_loaded_iops", "writer_iops")


REUSE = False      # --reuse: judge the runs already kept in --keep DIR again, without running them


def run(out: Path, name: str, text: str, *flags: str) -> tuple[Path, float]:
    kept = out / name / "current"
    if REUSE and (kept / "results.jsonl").exists():
        recs = [json.loads(x) for x in (kept / "results.jsonl").read_text().splitlines() if x.strip()]
        # a duet's two records of one iteration carry the iteration's one duration: counted once
        return kept.resolve(), sum(dur for _it, dur in {(r["iteration"], r.get("duration") or 0.0) for r in recs})
    rf = out / f"{name}.toml"
    rf.write_text(text)
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "run", "-q", "-r", str(rf), "-o", str(out / name),
                          "--no-history", *flags], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"the measuring run {name} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    return (out / name / "current").resolve(), time.monotonic() - t0


def by_arm(d: Path, figure: str = "throughput") -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = {}
    for line in (d / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["status"] == "PASS" and r["iteration"] >= 1:
            # by case: unique in a run, where the sweep's text is not (10 and "10" both read k=10)
            arm = r["case"] if r.get("sweep", r.get("params")) else "all"
            out.setdefault(arm, {})[r["iteration"]] = r["figures"][figure]["value"]
    return out


def arms_and_windows(d: Path, w: int, step: int, figure: str = "throughput"
                     ) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """The two arms' values by iteration (or block) they share, and windows of w pairs, step apart."""
    arms = list(by_arm(d, figure).values())
    its = sorted(set(arms[0]) & set(arms[1]))
    a, b = np.array([arms[0][i] for i in its]), np.array([arms[1][i] for i in its])
    return a, b, [(a[k:k + w], b[k:k + w]) for k in range(0, len(a) - w + 1, step)]


def slice_stats(d: Path) -> dict[int, list[tuple[fiojson.ClassStats, fiojson.ClassStats]]]:
    """A fio turns run's slices as pairs, by iteration: each side's k-th slice of an iteration with
    the other side's k-th, which ran next to it (A1 B1 B2 A2; B1 A1 A2 B2 on even iterations), each
    slice's reads as its own fio JSON has them (fio/<case slug>.i<iteration>.s<k>.json)."""
    arms = by_arm(d, "iops")
    cases = list(arms)
    its = sorted(set.intersection(*(set(arms[c]) for c in cases)))
    out = {}
    for it in its:
        per = []
        for case in cases:
            vals = []
            for k in itertools.count(1):
                f = d / "fio" / f"{case_slug(case)}.i{it}.s{k}.json"
                if not f.exists():
                    break
                vals.append(fiojson.result(fiojson.parse(f.read_text(), str(f))).classes["read"])
            per.append(vals)
        out[it] = list(zip(per[0], per[1]))
    return out


def slice_pairs(d: Path, figure: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The slice pairs' read IOPS ("iops") or read p99 in µs ("read_lat_p99"), and each pair's
    iteration. The unit the issue asks fio turns to be judged on, beside the iteration."""
    a, b, where = [], [], []
    for it, pairs in slice_stats(d).items():
        for sa, sb in pairs:
            for side, st in ((a, sa), (b, sb)):
                side.append(st.iops if figure == "iops" else st.percentiles_ns["99.000000"] / 1000)
            where.append(it)
    return np.array(a), np.array(b), np.array(where)


def slice_windows(d: Path, w: int, step: int, figure: str,
                  pairs: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Windows of w iterations (step apart), each holding the slice pairs of its iterations (pairs:
    (a, b, iteration) as slice_pairs or kept_slice_pairs give them; default slice_pairs(d, figure))."""
    a, b, where = pairs if pairs is not None else slice_pairs(d, figure)
    its = sorted(set(where.tolist()))
    return [(a[np.isin(where, its[k:k + w])], b[np.isin(where, its[k:k + w])])
            for k in range(0, len(its) - w + 1, step)]


def kept_slice_pairs(d: Path, figure: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A turns run's figure on slice (or turn) pairs as its records keep them (`slices.figures`,
    what compare judges), and each pair's iteration: iterations whose sides kept as many slices."""
    per: dict[str, dict[int, list[float]]] = {}
    for line in (d / "results.jsonl").read_text().splitlines():
        r = json.loads(line) if line.strip() else {}
        if r.get("status") == "PASS" and r["iteration"] >= 1:
            per.setdefault(r["case"], {})[r["iteration"]] = [s[figure] for s in r["slices"]["figures"]]
    sa, sb = per.values()
    its = sorted(i for i in set(sa) & set(sb) if len(sa[i]) == len(sb[i]))
    return (np.array([v for i in its for v in sa[i]]), np.array([v for i in its for v in sb[i]]),
            np.array([i for i in its for _ in sa[i]]))


Bins = dict[int, int]


def bin_windows(d: Path, w: int, step: int) -> list[list[tuple[Bins, Bins]]]:
    """Windows of w iterations (step apart), each the json+ read bins (ns -> I/Os) of its slice pairs."""
    by_it = slice_stats(d)
    its = sorted(by_it)
    return [[(sa.bins, sb.bins) for it in its[k:k + w] for sa, sb in by_it[it]]
            for k in range(0, len(its) - w + 1, step)]


def merged_p99_p(pairs: list[tuple[Bins, Bins]], scale: float = 1.0) -> float:
    """The other way to judge fio turns' p99 (issue 37 §3): each side's p99 from its slices' bins
    merged over the whole window (fio's rule: the first bin where the I/Os reach 99 %), the log of
    B's over A's as the statistic, and its two-sided p from relabelling whole slice pairs (under no
    change, which of a pair's two slices is A's is a coin toss: every assignment up to 2^16, else
    abstats' seeded sample). scale: B's latencies multiplied by it (a planted change)."""
    pairs = [(a, {int(round(k * scale)): v for k, v in b.items()}) for a, b in pairs]
    keys = np.array(sorted(set().union(*(set(a) | set(b) for a, b in pairs))), float)
    at = {int(k): i for i, k in enumerate(keys)}
    A, B = np.zeros((len(pairs), len(keys))), np.zeros((len(pairs), len(keys)))
    for j, (a, b) in enumerate(pairs):
        for m, bins in ((A, a), (B, b)):
            for k, v in bins.items():
                m[j, at[k]] += v
    signs = abstats.sign_vectors(len(pairs))                   # row 0: the labels as observed
    total = (A + B).sum(0)
    b_side = (total[None, :] + signs @ (B - A)) / 2
    a_side = total[None, :] - b_side

    def p99(counts: np.ndarray) -> np.ndarray:
        cum = np.cumsum(counts, axis=1)
        return keys[np.argmax(cum >= 0.99 * cum[:, -1:], axis=1)]
    stat = np.abs(np.log(p99(b_side) / p99(a_side)))
    return float(np.mean(stat >= stat[0] - 1e-12))


def report_bins(title: str, wins: list[list[tuple[Bins, Bins]]]) -> dict:
    """power.py's report for merged_p99_p: A/A calls, and the planted change called in 80 % of tries
    (B's latencies scaled up, and A's: each window twice)."""
    def share(pct: float) -> float:
        hits = sum(merged_p99_p(x, 1 + pct / 100) < abstats.ALPHA for x in wins)
        hits += sum(merged_p99_p([(b, a) for a, b in x], 1 + pct / 100) < abstats.ALPHA for x in wins)
        return hits / (2 * len(wins))
    return summary(title, sum(merged_p99_p(x) < abstats.ALPHA for x in wins), len(wins), seen_at(share))


def called(verdict: str) -> bool:
    return verdict in ("better", "worse")


def unpaired(a, b) -> str:
    return compare_values("c", "throughput", "MiB/s", list(a), list(b)).verdict


def separate(a, b) -> str:
    """compare BASE NEW of two separate runs, no history: the drift floor applies."""
    ch = compare_values("c", "throughput", "MiB/s", list(a), list(b))
    if ch.verdict in ("better", "worse") and not beyond_floor(ch.change_pct, DRIFT_FLOOR_PCT):
        return "within unknown drift"
    return ch.verdict


def verdict(a, b, margin: float | None = None) -> str:
    """compare's own verdict on a window of pairs, as its table prints it: the paired test (the
    exact sign-flip test; no noise floor since issue 69: a significant change is better or WORSE
    whatever its size) and, given a margin, its "same within ±margin". B higher counts as better; a
    false-alarm count takes both directions."""
    est = abstats.paired(list(a), list(b))
    if est is None or est.p is None:
        return "not significant"
    ch = from_estimate("window", "figure", "", list(a), list(b), est, 1, NOISE_PCT, Design.PAIRED, "sign-flip")
    if margin is not None:
        ch.judge_same(margin)
    return ch.verdict.value


def paired(a, b) -> str:
    return verdict(a, b)


def seen_at(share) -> float | None:
    """The smallest planted change of SCALES (%) called in at least 80 % of tries; share(pct): the
    share of tries that called it."""
    return next((pct for pct in SCALES if share(pct) >= 0.8), None)


def summary(title: str, fa: int, of: int, found: float | None, seconds: float | None = None) -> dict:
    """One design's line: its A/A calls, the change it sees with 80 % power, its machine time."""
    line = (f"{title:<44} A/A false alarms {fa:>2} of {of:>2} ({100 * fa / of:3.0f} %)   "
            f"80 %-power change: {('>50' if found is None else f'{found:g}'):>4} %")
    print(line + ("" if seconds is None else f"   machine time {seconds / 60:5.1f} min"), flush=True)
    out = {"false_alarms": fa, "of": of, "detect_pct": found}
    return out if seconds is None else out | {"minutes": round(seconds / 60, 1)}


def report(title: str, comps: list[tuple[np.ndarray, np.ndarray]], judge, seconds: float) -> dict:
    def share(pct: float) -> float:
        hits = sum(called(judge(a, b * (1 + pct / 100))) for a, b in comps)
        hits += sum(called(judge(b, a * (1 + pct / 100))) for a, b in comps)
        return hits / (2 * len(comps))
    return summary(title, sum(called(judge(a, b)) for a, b in comps), len(comps), seen_at(share), seconds)


def three_way(comps: list[tuple[np.ndarray, np.ndarray]], margin: float = MARGIN_PCT) -> dict:
    """The A/A windows by compare's three outcomes (paired, as `verdict`): called (a false alarm),
    "same within ±margin" (the whole 95 % interval inside it), or can't tell."""
    called_n = same = 0
    for a, b in comps:
        v = verdict(a, b, margin)
        called_n += called(v)
        same += v == "same"
    cant = len(comps) - called_n - same
    print(f"  three outcomes: called {called_n}, same within ±{margin:g} % {same}, can't tell {cant} "
          f"(of {len(comps)})", flush=True)
    return {"called": called_n, "same": same, "cant_tell": cant}


def whole(a: np.ndarray, b: np.ndarray) -> dict:
    """The whole A/A run as one comparison: what compare itself would say it could see, from all pairs."""
    est = abstats.paired(list(a), list(b))
    sd = float(np.std(np.log(b) - np.log(a), ddof=1) * 100)
    print(f"  all {len(a)} pairs of the run as one comparison: compare could see >= {est.detectable_pct:.1f} % "
          f"(sd of a pair's log ratio {sd:.1f} %; p {est.p:.2f})", flush=True)
    return {"pairs": len(a), "detectable_pct": est.detectable_pct, "pair_sd_pct": sd, "p": est.p}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=6, help="consecutive runs of 5 iterations")
    ap.add_argument("--blocks", type=int, default=24, help="blocks of the interleaved and duet A/A runs")
    ap.add_argument("--block", type=int, default=6, help="blocks (pairs) per comparison window")
    ap.add_argument("--step", type=int, help="windows start this many blocks apart (default: half a window; "
                                              "--step = --block gives disjoint windows)")
    ap.add_argument("--no-real", action="store_true", help="only the A/A designs, no real change")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--real-iterations", type=int, default=12, help="iterations (blocks) of each real change's run")
    ap.add_argument("--small", default='checksum = ["off", "fletcher4"]',
                    help="the small real change of known direction, a dataset property sweep (default: a block "
                         "checksum against none)")
    ap.add_argument("--skip-lzjb", action="store_true", help="leave out the lzjb real change")
    ap.add_argument("--designs", default=",".join(DESIGNS),
                    help=f"which designs to measure, of {','.join(DESIGNS)} (the real changes: all but consecutive)")
    ap.add_argument("--keep", help="keep the results here (default: a temporary directory)")
    ap.add_argument("--reuse", action="store_true", help="with --keep: judge the runs kept there again instead of "
                                                         "running them (machine time: the sum of their iterations)")
    args = ap.parse_args()
    global REUSE
    REUSE = args.reuse and bool(args.keep)
    designs = [x for x in args.designs.split(",") if x]
    if set(designs) - set(DESIGNS):
        ap.error(f"--designs: unknown {sorted(set(designs) - set(DESIGNS))}")
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zfsperf-power-"))
    out.mkdir(parents=True, exist_ok=True)
    aa = '"zfsperf:arm" = ["a", "b"]'
    print(f"receive threads={args.threads} (the default case) on zfs-fuse, results in {out}", flush=True)

    # consecutive separate runs
    runs, secs = [], 0.0
    for i in range(args.runs if "consecutive" in designs else 0):
        d, s = run(out, f"run{i}", runfile(args.threads, 5))
        runs.append(np.array(list(by_arm(d)["all"].values())))
        secs += s
    comps = [(runs[i], runs[j]) for i, j in itertools.combinations(range(len(runs)), 2)]
    res = {}
    if comps:
        res["consecutive"] = report(f"consecutive runs, {args.runs} x 5 (compare A B)", comps, separate, secs)
        raw_fa = sum(called(unpaired(a, b)) for a, b in comps)
        print(f"  (without the drift floor, the rank test alone: {raw_fa} of {len(comps)} false alarms)")

    # interleaved A/A, unpaired and paired
    w = args.block
    step = args.step or max(1, w // 2)
    kind = "disjoint windows" if step >= w else "windows"
    if "interleaved" in designs:
        d, s = run(out, "inter", runfile(args.threads, args.blocks, aa), "--interleave")
        a, b, windows = arms_and_windows(d, w, step)
        res["interleaved_unpaired"] = report(f"interleaved, {kind} of {w} blocks, unpaired", windows, unpaired, s)
        res["interleaved_paired"] = report(f"interleaved, {kind} of {w} blocks, paired", windows, paired, s)
        res["interleaved_paired"]["three_way"] = three_way(windows)
        res["interleaved_paired"]["whole_run"] = whole(a, b)

    # duet A/A
    for key, how, title in (("duet_paired", "true", "duet"), ("turns_paired", '"turns"', "turns (ABBA rounds)")):
        if key.split("_")[0] not in designs:
            continue
        d, s = run(out, key.split("_")[0], runfile(args.threads, args.blocks, aa, duet=how))
        a, b, windows = arms_and_windows(d, w, step)
        res[key] = report(f"{title}, {kind} of {w} iterations, paired", windows, paired, s)
        res[key]["three_way"] = three_way(windows)
        res[key]["whole_run"] = whole(a, b)

    # fio taking turns in slices: the headline (read IOPS) and the reader's p99, each judged alone
    if "fio" in designs:
        d, s = run(out, "fio", FIO_AA.format(iterations=args.blocks))
        for figure, title in (("iops", "fio turns, read IOPS"), ("read_lat_p99", "fio turns, read p99")):
            a, b, windows = arms_and_windows(d, w, step, figure)
            res[f"fio_{figure}"] = report(f"{title}, {kind} of {w} iterations, paired", windows, paired, s)
            res[f"fio_{figure}"]["three_way"] = three_way(windows)
            res[f"fio_{figure}"]["whole_run"] = whole(a, b)
            # the same windows with the slice pair as the unit (each slice's own figure, its ratio to the
            # slice beside it): more pairs a window, if slices of one iteration are as good as independent
            sw = slice_windows(d, w, step, figure)
            res[f"fio_{figure}_slices"] = report(f"{title}, slice pairs, {kind} of {w} iterations", sw, paired, s)
            res[f"fio_{figure}_slices"]["three_way"] = three_way(sw)
            res[f"fio_{figure}_slices"]["whole_run"] = whole(*slice_pairs(d, figure)[:2])
        # p99 from each side's merged bins over a window, judged by relabelling slice pairs
        res["fio_p99_merged_bins"] = report_bins(f"fio turns, read p99 of merged bins, slice pairs relabelled, "
                                                 f"{kind} of {w} iterations", bin_windows(d, w, step))

    # the starvation mix taking turns: its headline per iteration, its throughput both ways
    if "mix" in designs:
        d, s = run(out, "mix", MIX_AA.format(iterations=args.blocks))
        for figure in ("read_p99_ratio",) + MIX_RATES:
            a, b, windows = arms_and_windows(d, w, step, figure)
            res[f"mix_{figure}"] = report(f"mix turns, {figure}, {kind} of {w} iterations", windows, paired, s)
            res[f"mix_{figure}"]["three_way"] = three_way(windows)
            res[f"mix_{figure}"]["whole_run"] = whole(a, b)
            if figure in MIX_RATES:
                ta, tb, where = kept_slice_pairs(d, figure)
                tw = slice_windows(d, w, step, figure, (ta, tb, where))
                key = f"mix_{figure}_turn_pairs"
                res[key] = report(f"mix turns, {figure}, turn pairs, {kind} of {w} iterations", tw, paired, s)
                res[key]["three_way"] = three_way(tw)
                res[key]["whole_run"] = whole(ta, tb)
                # how alike an iteration's first two turn pairs are (independent: about 0)
                la = np.log(tb) - np.log(ta)
                first = np.r_[True, where[1:] != where[:-1]]
                res[key]["within_iteration_corr"] = float(np.corrcoef(la[first], la[np.r_[False, first[:-1]]])[0, 1])
                print(f"  turn pairs of one iteration: log ratios correlated "
                      f"{res[key]['within_iteration_corr']:.2f}", flush=True)

    # real changes of known direction: lzjb on an incompressible stream costs CPU and saves nothing;
    # a block checksum (fletcher4) costs a little CPU against none
    reals = [('compression = ["off", "lzjb"]', "compression=lzjb vs off, incompressible stream"),
             (args.small, args.small)][1 if args.skip_lzjb else 0:] if not args.no_real else []
    for real, what in reals:
        print(f"\na real change of known direction: receive into {what}")
        for name, text, flags in (("interleaved", runfile(args.threads, args.real_iterations, real), ["--interleave"]),
                                  ("duet", runfile(args.threads, args.real_iterations, real, duet="true"), []),
                                  ("turns", runfile(args.threads, args.real_iterations, real, duet='"turns"'), [])):
            if name not in designs:
                continue
            name = f"{real.split()[0]}-{name}"
            d, s = run(out, name, text, *flags)
            run_data = load_run(d)
            cmp = compare_within(run_data, ab_pairs(run_data))
            ch = next(c for c in cmp.changes if c.figure == "throughput")
            print(f"  {name:<18} {ch.change_pct:+6.1f} %  p {ch.p:.3f}  {verdict_text(ch)}  [{ch.design}, "
                  f"{s / 60:.1f} min]", flush=True)
            res[name] = {"change_pct": ch.change_pct, "p": ch.p, "verdict": ch.verdict, "ci_pct": ch.ci_pct,
                         "detectable_pct": ch.detectable_pct}
    (out / "power.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
