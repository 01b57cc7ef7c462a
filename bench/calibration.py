"""Every verdict design calibrated through compare's own code path: records in, verdicts out.

For each design, simulated runs (in-memory `RunData` of `CaseRecord`s, exactly what compare reads
from a results directory) are judged by `compare.compare_within` / `compare.compare_runs`, under
three kinds of noise on the log scale: normal, heavy-tailed (Student's t with 3 degrees of freedom,
scaled to the same sd) and drifting (normal plus a level that moves 1 % an iteration, or a run for
the designs whose unit is the run). Per design it reports:

- A/A false alarms: the share of trials compare calls better or WORSE with no change planted
  (goal ≤ 5 %, the 95 % upper bound ≤ 7 %), with its Wilson interval;
- the real power at the printed detectable change: a change of the A/As' median "could see ≥ X %"
  planted, the share called (goal 80 %, within 75-90 %);
- "same" at a true change of ±δ (δ = the margin, 5 %): the share of trials called "same within
  ±5 %" when B really is 5 % off (goal ≤ 5 %);
- interval coverage: the share of trials whose 95 % interval holds the planted ratio (93-97 %).

Designs: paired (interleaved blocks), turns (a duet taking turns; the same sign-flip statistics on
its pairs), history (one run a side against 5, 8, 12 and 20 earlier runs), runs (3 vs 3 runs a side,
`--vs`), separate (one run a side without history: the drift floor; "separate N %" at a run-to-run
spread of N %), fio slices (fio taking turns in slices, judged on slice pairs), unpaired (sweep points of a run
that did not alternate: never a verdict), and detect (`--detect`'s stopping rule: the real power at
its target when it stops).

    .venv/bin/python bench/calibration.py [--trials 2000] [--designs paired,history,...] [--json OUT]

A smaller seeded version runs in `make test` (tests/test_calibration.py) and fails when a design
leaves its bound.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from zfsperf.report import abstats, compare  # noqa: E402
from zfsperf.report.designs import SAME_DESIGNS  # noqa: E402
from zfsperf.report.pairing import ab_pairs  # noqa: E402
from zfsperf.history.store import Store  # noqa: E402
from zfsperf.runfile import DEFAULT_MAX_ITERATIONS  # noqa: E402
from zfsperf.report.model import CaseData, RunData  # noqa: E402
from zfsperf.results.record import CaseRecord, Figure, RunRecord, Status  # noqa: E402
from zfsperf.units import ChangeVerdict  # noqa: E402

SD = 0.03                       # a pair's (or a run's) spread on the log scale: 3 %
MARGIN = compare.MARGIN_PCT     # δ
NOISES = ("normal", "t3", "drift")
DRIFT = 0.01                    # the drifting noise: the level moves 1 % an iteration (or a run)


def noise(rng: np.random.Generator, kind: str, shape: tuple[int, ...], sd: float = SD) -> np.ndarray:
    if kind == "t3":
        return rng.standard_t(3, shape) * sd / math.sqrt(3)
    return rng.standard_normal(shape) * sd


# ----------------------------------------------------------------------------- simulated runs
def _records(test: str, side: str, values: list[float], iterations: list[int]) -> list[CaseRecord]:
    return [CaseRecord(test=test, case=f"{test} arm={side}", sweep={"arm": side}, iteration=i, workload="receive",
                       status=Status.PASS, figures={"throughput": Figure(float(v), "MiB/s")})
            for v, i in zip(values, iterations)]


def one_run(sides: dict[str, list[float]], *, interleave: bool = False, turns: bool = False,
            host: str = "sim", start: float = 0.0) -> RunData:
    """A run of one test whose cases are the sides (arm=a, arm=b, …), each with these iterations."""
    return run_of({side: _records("t", side, values, list(range(1, len(values) + 1)))
                   for side, values in sides.items()}, "receive", interleave=interleave, turns=turns,
                  host=host, start=start)


def run_of(sides: dict[str, list[CaseRecord]], workload: str, *, interleave: bool = False, turns: bool = False,
           host: str = "sim", start: float = 0.0) -> RunData:
    """A run of one test whose cases are the sides (arm=a, arm=b, …), each with these records."""
    rr = RunRecord(host=host, start=start)
    rr.selection = {"interleave": interleave}
    if turns:
        rr.duets, rr.turns = ["t"], ["t"]
    cases: dict[str, CaseData] = {}
    for side, recs in sides.items():
        cd = CaseData("t", f"t arm={side}", workload, {"arm": side}, recs)
        cases[cd.key] = cd
    rr.cases = [c.case for c in cases.values()]
    return RunData(path=Path(f"/sim/{host}/{start}"), run=rr, cases=cases,
                   records=[r for c in cases.values() for r in c.records])


def side_run(values: list[float], start: float) -> RunData:
    """One side's run of the separate-runs designs: the case is the same in every run (so are the
    settings the history store matches runs by: host, ZFS, runfile text)."""
    rr = RunRecord(host="sim", start=start, runfile={"source": "sim.toml", "text": "sim"},
                   target={"implementation": "sim", "zfs_version": "0"})
    cd = CaseData("t", "t", "receive", {}, _records("t", "", values, list(range(1, len(values) + 1))))
    cd.records = [CaseRecord(test="t", case="t", sweep={}, iteration=r.iteration, workload="receive",
                             status=Status.PASS, figures=r.figures) for r in cd.records]
    rr.cases = ["t"]
    return RunData(path=Path(f"/sim/{start}"), run=rr, cases={cd.key: cd}, records=list(cd.records))


# ----------------------------------------------------------------------------- designs
Trial = Callable[[np.random.Generator, str, float], compare.FigureChange | None]   # (rng, noise, log shift)


def paired_trial(n: int, turns: bool) -> Trial:
    """Blocks (or iterations of turns) of A and B. Under drift the level moves DRIFT a block, and
    inside an interleaved block the second case runs half a block later: B sits DRIFT/2 above A's
    level when A went first and below when B did (each block's order drawn, as the runner's seed
    draws it), so drift reaches the pairs' ratios. Taking turns ABBA (or BAAB) a linear drift cancels
    inside the iteration: there the drifting data are the normal data with a moving level."""
    def trial(rng: np.random.Generator, kind: str, shift: float) -> compare.FigureChange | None:
        level = 100 * np.exp((DRIFT * np.arange(n) if kind == "drift" else np.zeros(n)) + noise(rng, "normal", (n,)))
        inside = np.zeros(n)
        if kind == "drift" and not turns:        # (drawn only here: the other cells' draws stay as they were)
            inside = np.where(rng.integers(0, 2, n) == 1, DRIFT / 2, -DRIFT / 2)
        a = level * np.exp(noise(rng, kind, (n,), SD / math.sqrt(2)))
        b = level * np.exp(noise(rng, kind, (n,), SD / math.sqrt(2)) + shift + inside)
        run = one_run({"a": list(a), "b": list(b)}, interleave=not turns, turns=turns)
        cmp = compare.compare_within(run, ab_pairs(run))
        return next((c for c in cmp.changes if c.figure == "throughput"), None)
    return trial


def slice_trial(n: int, slices: int = 2) -> Trial:
    """fio taking turns in slices (A1 B1 B2 A2, B first on even iterations), judged as compare judges
    it: each record holds its IOPS slice by slice (detail["slices"]), the pairs are the slices that
    ran beside each other (report/pairing.slice_pairs), 2n slice pairs of n iterations. A slice's
    spread is SD / √2 on each side (a slice pair's ratio spreads SD, as a block's does); ABBA cancels
    a linear drift inside the iteration, so drift moves the level from one iteration to the next."""
    def trial(rng: np.random.Generator, kind: str, shift: float) -> compare.FigureChange | None:
        level = 100 * np.exp((DRIFT * np.arange(n) if kind == "drift" else np.zeros(n)) + noise(rng, "normal", (n,)))
        sides: dict[str, list[CaseRecord]] = {"a": [], "b": []}
        for i in range(n):
            for side, s in (("a", 0.0), ("b", shift)):
                vals = level[i] * np.exp(noise(rng, kind, (slices,), SD / math.sqrt(2)) + s)
                sides[side].append(CaseRecord(
                    test="t", case=f"t arm={side}", sweep={"arm": side}, iteration=i + 1, workload="fio",
                    status=Status.PASS, figures={"iops": Figure(float(np.mean(vals)), "IOPS")},
                    detail={"slices": {"figures": [{"iops": float(v)} for v in vals]}}))
        run = run_of(sides, "fio", turns=True)
        cmp = compare.compare_within(run, ab_pairs(run))
        return next((c for c in cmp.changes if c.figure == "iops"), None)
    return trial


def history_trial(n_hist: int, store: bool = True) -> Trial:
    """One run a side against n_hist earlier runs of identical settings, the way `compare A B
    --store` reads them: every run (5 iterations each) added to a SQLite history store, and the
    earlier ones' medians queried back by the store (Store.same_settings_medians: identical
    settings, made before BASE, the compared runs left out). Until 2026-12-05 the trial handed
    compare the planted levels directly, past the store's import and query; store=False hands it
    the runs' medians (the fast test's cells: the store's ~7 ms a trial would slow make test-fast
    by a quarter)."""
    def trial(rng: np.random.Generator, kind: str, shift: float) -> compare.FigureChange | None:
        k = n_hist + 2
        levels = noise(rng, kind, (k,)) + (DRIFT * np.arange(k) if kind == "drift" else 0.0)
        meds = 100 * np.exp(levels)
        iters = 5
        runs = [side_run(list(meds[i] * math.exp(shift if i == k - 1 else 0.0)
                              * np.exp(noise(rng, "normal", (iters,), 0.005))), start=1000.0 + i) for i in range(k)]
        base, new = runs[-2], runs[-1]
        if not store:
            hist = [float(np.median(next(iter(r.cases.values())).values("throughput"))) for r in runs[:-2]]
            cmp = compare.compare_runs([base], [new], history=lambda _r, _c, _f: hist)
        else:
            with Store.open(":memory:") as db:         # the store's own SQL, in memory: no file a trial
                for run in runs:
                    db.add(run)
                cmp = compare.compare_runs([base], [new], history=lambda run, case, figure:
                                           db.same_settings_medians(run, case, figure, compared=[base, new]))
        return next((c for c in cmp.changes if c.figure == "throughput"), None)
    return trial


def runs_trial(k: int, alternate: bool = False) -> Trial:
    """k runs a side, made all A then all B (what drift reads as a change: the design line says so)
    or alternating A B A B (alternate: drift reaches both sides alike)."""
    def trial(rng: np.random.Generator, kind: str, shift: float) -> compare.FigureChange | None:
        levels = noise(rng, kind, (2 * k,)) + (DRIFT * np.arange(2 * k) if kind == "drift" else 0.0)
        when = [2 * i for i in range(k)] + [2 * i + 1 for i in range(k)] if alternate else list(range(2 * k))
        runs = [side_run(list(100 * math.exp(levels[when[i]] + (shift if i >= k else 0.0))
                              * np.exp(noise(rng, "normal", (5,), 0.005))), start=float(when[i])) for i in range(2 * k)]
        cmp = compare.compare_runs(runs[:k], runs[k:])
        return next((c for c in cmp.changes if c.figure == "throughput"), None)
    return trial


def separate_trial(run_sd: float = SD) -> Trial:
    """One run a side, no history: run_sd is how far a run's level lands from the next (log scale),
    the run-to-run spread the drift floor must stand above."""
    def trial(rng: np.random.Generator, kind: str, shift: float) -> compare.FigureChange | None:
        lv = noise(rng, kind, (2,), run_sd) + (np.array([0.0, DRIFT]) if kind == "drift" else 0.0)
        a = side_run(list(100 * math.exp(lv[0]) * np.exp(noise(rng, "normal", (5,), 0.01))), 0.0)
        b = side_run(list(100 * math.exp(lv[1] + shift) * np.exp(noise(rng, "normal", (5,), 0.01))), 1.0)
        cmp = compare.compare_runs([a], [b])
        return next((c for c in cmp.changes if c.figure == "throughput"), None)
    return trial


def unpaired_trial(n: int) -> Trial:
    def trial(rng: np.random.Generator, kind: str, shift: float) -> compare.FigureChange | None:
        drift = DRIFT * np.arange(2 * n) if kind == "drift" else np.zeros(2 * n)
        a = 100 * np.exp(drift[:n] + noise(rng, kind, (n,)))
        b = 100 * np.exp(drift[n:] + noise(rng, kind, (n,)) + shift)
        run = one_run({"a": list(a), "b": list(b)})
        cmp = compare.compare_within(run, ab_pairs(run))
        return next((c for c in cmp.changes if c.figure == "throughput"), None)
    return trial


DESIGNS: dict[str, Trial] = {
    "paired 6": paired_trial(6, False), "paired 12": paired_trial(12, False), "turns 8": paired_trial(8, True),
    "history 5": history_trial(5), "history 8": history_trial(8), "history 12": history_trial(12),
    "history 20": history_trial(20), "runs 3 vs 3": runs_trial(3), "runs 3 vs 3 alternating": runs_trial(3, alternate=True),
    "separate": separate_trial(),
    # the floor's own promise: A/As ≤ 5 % up to a 20 % run-to-run spread (zfs-fuse's runs differ by up to 33 %)
    "separate 10 %": separate_trial(0.10), "separate 15 %": separate_trial(0.15), "separate 20 %": separate_trial(0.20),
    "unpaired 6": unpaired_trial(6), "fio slices 6": slice_trial(6),
}


# ----------------------------------------------------------------------------- measuring
def wilson(k: int, n: int) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    z = 1.959964
    p = k / n
    mid, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, mid - half), min(1.0, mid + half))


@dataclass
class Row:
    design: str
    noise: str
    trials: int
    false_alarms: int
    detectable_pct: float | None          # the A/As' median "could see ≥ X %"
    power: float | None                   # called at that planted change
    same_at_margin: float | None          # "same" at a true ±δ
    coverage: float | None                # planted changes' intervals holding the truth
    p10: float | None = None              # detect: the 10th percentile of the real power at the stop
    mean_pairs: float | None = None       # detect: the pairs it stopped at, on average
    verdict_mean: float | None = None     # the real power at each A/A's own printed X, averaged
    verdict_p5: float | None = None       # ... its 5th percentile (≥ 50 %: 95 % of verdicts seen half the time)

    @property
    def fa_rate(self) -> float:
        return self.false_alarms / self.trials if self.trials else 0.0

    @property
    def fa_upper(self) -> float:
        return wilson(self.false_alarms, self.trials)[1]

    def as_dict(self) -> dict:
        return {"design": self.design, "noise": self.noise, "trials": self.trials,
                "false_alarm_rate": self.fa_rate, "false_alarm_upper95": self.fa_upper,
                "detectable_pct": self.detectable_pct, "power_at_detectable": self.power,
                "same_at_margin": self.same_at_margin, "coverage": self.coverage, "p10": self.p10,
                "mean_pairs": self.mean_pairs, "power_per_verdict_mean": self.verdict_mean,
                "power_per_verdict_p5": self.verdict_p5}


def covers(ch: compare.FigureChange, shift: float) -> bool | None:
    if ch.ci_pct is None:
        return None
    true = math.expm1(shift) * 100
    return ch.ci_pct[0] - 1e-9 <= true <= ch.ci_pct[1] + 1e-9


def measure(name: str, trial: Trial, kind: str, trials: int, seed: int, per_verdict: bool = True) -> Row:
    rng = np.random.default_rng(seed)
    aa = [trial(rng, kind, 0.0) for _ in range(trials)]
    aa = [c for c in aa if c is not None]
    calls = sum(c.verdict.decided for c in aa)
    dets = [c.detectable_pct for c in aa if c.detectable_pct is not None]
    det = float(np.median(dets)) if dets else None
    cov = [covers(c, 0.0) for c in aa]
    power = same = None
    if det is not None:
        shift = math.log1p(det / 100)
        planted = [trial(rng, kind, -shift) for _ in range(trials)]     # a loss of the printed size
        power = float(np.mean([c is not None and c.verdict.decided for c in planted]))
        cov += [covers(c, -shift) for c in planted if c is not None]
    judged_same = [c for c in (trial(rng, kind, s * math.log1p(MARGIN / 100)) for s in (1, -1)
                               for _ in range(trials // 2)) if c is not None]
    if judged_same and any(c.design in SAME_DESIGNS for c in judged_same):
        same = float(np.mean([c.verdict == ChangeVerdict.SAME for c in judged_same]))
    if aa and all(c.design is compare.Design.ITERATIONS for c in aa):
        cov = []        # separate runs: the interval is of the iterations, not of the runs (not claimed)
    held = [x for x in cov if x is not None]
    mean_p, p5 = per_verdict_power(trial, kind, dets, trials, rng) if dets and per_verdict else (None, None)
    return Row(name, kind, len(aa), calls, det, power, same, float(np.mean(held)) if held else None,
               verdict_mean=mean_p, verdict_p5=p5)


def per_verdict_power(trial: Trial, kind: str, dets: list[float], trials: int,
                      rng: np.random.Generator) -> tuple[float, float]:
    """The real power at the X each A/A printed (a user reads one verdict, not the median): the
    design's power curve measured at 9 changes across the printed X's 2nd-98th percentiles (trials/4
    planted losses each, made monotone), read at every printed X; its mean and 5th percentile."""
    grid = np.unique(np.percentile(dets, np.linspace(2, 98, 9)))
    curve = []
    for x in grid:
        shift = math.log1p(x / 100)
        got = [trial(rng, kind, -shift) for _ in range(max(50, trials // 4))]
        curve.append(float(np.mean([c is not None and c.verdict.decided for c in got])))
    curve = np.maximum.accumulate(curve)            # power only grows with the change
    at = np.interp(dets, grid, curve)
    return float(np.mean(at)), float(np.percentile(at, 5))


DETECT_MAX = DEFAULT_MAX_ITERATIONS     # --detect's cap by default (the runner's looks are spent over it)


def detect_rows(trials: int, seed: int, targets: tuple[float, ...] = (5.0, 3.0)) -> list[Row]:
    """--detect's stopping rule, the runner's own (report/detectlook.look, which runner._detected
    calls after every block): an interleaved A/A run of pair sd 3.4 % grows a block at a time from
    MIN_BLOCKS, each look judging the run so far through compare, until it stops (decided, the change
    seen with 80 % power at the 90 % upper bound of the pairs' sd reached, or DETECT_MAX blocks); the
    real power at the target at the blocks it stopped at, of the test it then runs (K(n) of the
    sign-flip test). Until 2026-12-05 the bench applied the bound by formula beside the runner."""
    from scipy import stats
    from zfsperf.report.detectlook import look
    out = []
    for target, sd in ((t, 0.034) for t in targets):
        rng = np.random.default_rng(seed)
        powers, ns = [], []
        for _ in range(trials):
            level = noise(rng, "normal", (DETECT_MAX,))
            a = 100 * np.exp(level + rng.standard_normal(DETECT_MAX) * sd / math.sqrt(2))
            b = 100 * np.exp(level + rng.standard_normal(DETECT_MAX) * sd / math.sqrt(2))
            for n in range(abstats.MIN_BLOCKS, DETECT_MAX + 1):
                run = one_run({"a": list(a[:n]), "b": list(b[:n])}, interleave=True)
                why, _ = look(run, target, n, DETECT_MAX, at_cap=n >= DETECT_MAX)
                if why is not None:
                    break
            k = abstats.SIGN_FLIP_K.get(n, stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1))
            powers.append(float(stats.norm.cdf(math.log1p(target / 100) / (sd / math.sqrt(n)) - (k - stats.norm.ppf(0.8)))))
            ns.append(n)
        out.append(Row(f"detect {target:g} % (pair sd {sd * 100:.1f} %)", "normal", trials, 0, target,
                       float(np.mean(powers)), None, None, float(np.percentile(powers, 10)), float(np.mean(ns))))
    return out


def pct(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f} %"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--designs", default=",".join([*DESIGNS, "detect"]))
    ap.add_argument("--noises", default=",".join(NOISES))
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    t0 = time.time()
    rows: list[Row] = []
    print("| design | noise | A/A false alarms (95 % upper) | could see (median) | power there | "
          "power at each verdict's X: mean, 5th pct | \"same\" at ±5 % | coverage |")
    print("|---|---|---|---|---|---|---|---|")
    for name in [d.strip() for d in args.designs.split(",") if d.strip()]:
        if name == "detect":
            for r in detect_rows(args.trials, args.seed):
                rows.append(r)
                print(f"| {r.design} | normal | - | target | mean {pct(r.power)}, 10th pct "
                      f"{pct(r.p10)} ({r.mean_pairs or 0:.1f} pairs) | - | - | - |", flush=True)
            continue
        for kind in args.noises.split(","):
            r = measure(name, DESIGNS[name], kind, args.trials, args.seed)
            rows.append(r)
            print(f"| {r.design} | {kind} | {pct(r.fa_rate)} ({pct(r.fa_upper)}) | "
                  f"{'-' if r.detectable_pct is None else f'{r.detectable_pct:.1f} %'} | {pct(r.power)} | "
                  f"{pct(r.verdict_mean)}, {pct(r.verdict_p5)} | "
                  f"{pct(r.same_at_margin)} | {pct(r.coverage)} |", flush=True)
    print(f"# {args.trials} trials a cell, seed {args.seed}, {time.time() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
