#!/usr/bin/env python3
"""How well do the steady-state detectors decide? The changepoint method (zfsperf's default), the
SNIA range/slope vote (`method = "snia"`, SNIA PTS) and fio's `iops_slope` rule, side by side on
the same labelled series, then on real series recorded on zfs-fuse.

Synthetic series: the metrics the sampler records (workload_mibs is the headline, pool_mibs,
pool_kops, arc_size_frac, arc_hit_ratio; l2_* with L2ARC), n samples, many seeds per class and
noise level. Noise is multiplicative gaussian on the load metrics (the level given: 2-30 %), a
fifth of it on cache levels and half of it on hit ratios. Classes and their ground truth:
  flat          every metric flat                                           steady from sample 1
  arc-fill      ARC fills exponentially (τ = n/8), load and hit ratio follow  once within 5 % of the end
  l2-warmup     L2ARC fills linearly over half the run, reads get 30 % faster  once L2 is within 5 %
  l2-late       the same over 70 % of the run: a knot 36 samples from the end, which noise hides
                (at 15 % noise the slopes before and after differ by ~1.4 standard errors): shown,
                not counted in the goals — a gate would keep sampling until it shows
  txg-bursts    pool bandwidth/ops ×1.8 every 5th sample (a periodic steady state) steady from sample 1
  step-up       load ×1.4 at 40 % of the run                                from the step
  step-down     load ×0.7 at 40 % of the run                                from the step
  slow-drift    load grows 50 % over the run, linearly (0.4 % a sample)       never steady
  spikes        flat, plus 3 % of samples ×3 or ×0.3 (heavy-tailed)          steady from sample 1
  burst-return  load ×0.6 until 25 % of the run (a warm-up), then at its level,  from the warm-up's end
                with a 4-sample dip to ×0.5 at 70 % (a stall) that comes back
Scores, per class, noise and detector:
  false-steady  declared steady on a never-steady series, or with an onset more than W/2 samples
                before the truth's (a measurement would include unsettled data)
  missed        not declared on a series that settles at least W samples before its end
  onset error   median |declared onset − true onset| in samples, over the series declared steady
Goals: false-steady ≤ 5 % and missed ≤ 10 % on every class up to 15 % noise; median
onset error ≤ W/2.

Real series: `--series FILE…`, or recorded here by zfsperf itself on zfs-fuse (a receive case
and a fio case, gated with a window they cannot meet so the whole series is kept); shown per
detector (no ground truth), and drawn with `--chart DIR` (a steady-state chart per real series).
Long series (--long-set): 300-3,000 samples, synthetic (flat, a warm-up with short stalls every
150 samples, a late step, an ARC fill, a slow drift and a slow wander that never settle) and real
ones recorded by zfsperf on zfs-fuse and labelled by hand (bench/long/labels.toml: where each
settles and why); onset error, never-steady series called steady and settling missed, beside SNIA,
fio's slope rule and "always steady", and the default method's CPU time on 3,000 samples.
Usage: bench/steady_eval.py [--seeds 40] [--n 120] [--window 10] [--noise 0.02,0.05,...]
                            [--series FILE ...] [--no-real] [--real-seconds 90] [--chart DIR]
       bench/steady_eval.py --long-set [--seeds 40] [--long-n 300,1000,3000] [--long-noise 0.05]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from zfsperf.steady import Criteria, decide, read_series

BASE = {"workload_mibs": 200.0, "pool_mibs": 300.0, "pool_kops": 5.0, "arc_size_frac": 0.95, "arc_hit_ratio": 0.8}
L2 = {"l2_size_frac": 0.9, "l2_hit_ratio": 0.6}
LOAD = ("workload_mibs", "pool_mibs", "pool_kops")
LEVELS = ("arc_size_frac", "l2_size_frac")
TRUTH_TOL = 0.05
CLASSES = ("flat", "arc-fill", "l2-warmup", "l2-late", "txg-bursts", "step-up", "step-down", "slow-drift", "spikes",
           "burst-return")
LONG_CLASSES = ("flat", "arc-fill", "step-up", "burst-return")     # also run at --long samples
NOT_IN_GOALS = ("l2-late",)


def settle_index(y: np.ndarray, tol: float = TRUTH_TOL) -> int:
    """First index after which y stays within tol of its final value (0-based)."""
    final = y[-1]
    outside = np.nonzero(np.abs(y - final) > tol * abs(final))[0]
    return int(outside[-1] + 1) if len(outside) else 0


def make(kind: str, n: int, noise: float, rng: np.random.Generator) -> tuple[list[dict], int | None]:
    """(samples, truth): truth is the 1-based first sample of the steady state, or None."""
    names = dict(BASE, **(L2 if kind.startswith("l2-") else {}))
    t = np.arange(n, dtype=float)
    shape = {k: np.ones(n) for k in names}
    truth: int | None = 1
    if kind == "arc-fill":
        fill = 1 - np.exp(-t / (n / 8))
        for k in ("arc_size_frac", "arc_hit_ratio", *LOAD):
            shape[k] = 0.05 + 0.95 * fill
        truth = settle_index(shape["arc_size_frac"]) + 1
    elif kind in ("l2-warmup", "l2-late"):
        fill = np.minimum(1.0, 0.02 + t / ((0.5 if kind == "l2-warmup" else 0.7) * n))
        shape["l2_size_frac"] = fill
        shape["l2_hit_ratio"] = 0.1 + 0.9 * fill
        for k in LOAD:
            shape[k] = 0.7 + 0.3 * fill
        truth = settle_index(fill) + 1
    elif kind == "txg-bursts":
        burst = np.where(t % 5 == 0, 1.8, 0.8)
        shape["pool_mibs"], shape["pool_kops"] = burst, burst
    elif kind in ("step-up", "step-down"):
        at = int(0.4 * n)
        for k in (*LOAD, "arc_hit_ratio"):
            shape[k] = np.where(t < at, 1.0, 1.4 if kind == "step-up" else 0.7)
        truth = at + 1
    elif kind == "burst-return":
        at, dip = int(0.25 * n), int(0.7 * n)
        for k in LOAD:
            shape[k] = np.where(t < at, 0.6, np.where((t >= dip) & (t < dip + 4), 0.5, 1.0))
        truth = at + 1
    elif kind == "slow-drift":
        for k in LOAD:
            shape[k] = 1 + 0.5 * t / n
        truth = None
    return _noisy(names, shape, n, noise, rng, spikes=kind == "spikes"), truth


def _noisy(names: dict[str, float], shape: dict[str, np.ndarray], n: int, noise: float, rng: np.random.Generator,
           spikes: bool = False) -> list[dict]:
    """Samples of the shapes with the noise model above (and, for spikes, 3 % heavy-tailed samples)."""
    samples = []
    spike = rng.random(n) < 0.03 if spikes else np.zeros(n, bool)
    factor = np.where(rng.random(n) < 0.5, 3.0, 0.3)
    for i in range(n):
        m = {}
        for k, v in names.items():
            sd = noise / 5 if k in LEVELS else noise / 2 if "ratio" in k else noise
            x = v * shape[k][i] * (1 + rng.normal(0, sd))
            if spike[i] and k in LOAD:
                x *= factor[i]
            m[k] = float(max(x, 0.0))
        samples.append({"t": float(i), "metrics": m, "info": {}})
    return samples


def fio_iops_slope(samples: list[dict], window: int, metric: str = "workload_mibs") -> int | None:
    """fio's steadystate=iops_slope on the headline: the first window whose least-squares slope per
    sample, as % of the window mean, is within 10 %/(W−1) (SNIA's excursion); the onset (1-based)."""
    y = np.array([s["metrics"].get(metric) if s["metrics"].get(metric) is not None else np.nan
                  for s in samples], dtype=float)
    limit = 10.0 / (window - 1)
    x = np.arange(window, dtype=float)
    for end in range(window, len(y) + 1):
        w = y[end - window:end]
        if np.isnan(w).any() or w.mean() == 0:
            continue
        if abs(np.polyfit(x, w, 1)[0]) / abs(w.mean()) * 100 <= limit:
            return end - window + 1
    return None


Detector = Callable[[list[dict]], "int | None"]      # -> 1-based onset, or None: not steady


def detectors(window: int) -> dict[str, Detector]:
    cp, snia = Criteria(window=window), Criteria(window=window, method="snia")
    return {
        "changepoint (default)": lambda s: decide(s, cp, headline="workload_mibs").onset,
        "SNIA vote (snia)": lambda s: decide(s, snia).onset,
        "fio iops_slope": lambda s: fio_iops_slope(s, window),
    }


def evaluate(kind: str, noise: float, seeds: int, n: int, window: int, dets: dict[str, Detector]) -> dict:
    out = {name: {"false": 0, "missed": 0, "err": [], "cases": 0} for name in dets}
    for seed in range(seeds):
        samples, truth = make(kind, n, noise, np.random.default_rng(1000 * seed + int(noise * 1000)))
        for name, det in dets.items():
            got, r = det(samples), out[name]
            r["cases"] += 1
            if got is not None and truth is not None:
                r["err"].append(abs(got - truth))
            if got is not None and (truth is None or got < truth - window / 2):
                r["false"] += 1
            elif got is None and truth is not None and truth + window - 1 <= n:
                r["missed"] += 1
    return out


def early_fills(noise: float, seeds: int, n: int, window: int) -> tuple[int, int]:
    """(declared steady, declared while the true level over the declared window was still more
    than 5 % below the level the fill settles at) for the ARC fill, changepoint method."""
    declared = early = 0
    t = np.arange(n, dtype=float)
    shape = 0.05 + 0.95 * (1 - np.exp(-t / (n / 8)))
    for seed in range(seeds):
        samples, _truth = make("arc-fill", n, noise, np.random.default_rng(1000 * seed + int(noise * 1000)))
        onset = decide(samples, Criteria(window=window), headline="workload_mibs").onset
        if onset:
            declared += 1
            early += shape[onset - 1:onset - 1 + window].mean() < (1 - TRUTH_TOL) * shape[-1]
    return declared, early


def across_iterations(seeds: int) -> None:
    """The case verdict across 5 iterations (steady/rounds.py): SNIA's rounds rule and the default
    noise-aware rule side by side, on iterations that are pure noise and on a steady drift."""
    from zfsperf.steady import rounds
    rng = np.random.default_rng(7)
    trials = seeds * 50
    print(f"\nacross 5 iterations ({trials} simulated cases each): share called NOT steady")
    print(f"{'iteration CV':>12}  {'noise: snia':>12} {'default':>8}   {'15 % drift: snia':>17} {'default':>8}")
    for cv in (0.02, 0.05, 0.08, 0.10):
        cells = []
        for drift in (0.0, 0.15):
            snia = dflt = 0
            for _ in range(trials):
                y = list(1000 * (1 - np.linspace(0, drift, 5) + cv * rng.standard_normal(5)))
                snia += not rounds.rounds_rule(y)[0]
                dflt += not rounds.noise_aware_rule(y).ok
            cells.append(f"{snia / trials:>12.0%} {dflt / trials:>8.0%}")
        print(f"{cv:>12.0%}  {cells[0]}   {cells[1]:>26}")


def growing(trials: int, caps: list[int]) -> None:
    """iterations = "steady" (steady/rounds.py, issue 86): cases of iterations drifting 0-20 % per
    5 iterations at spreads of 1-10 %, each stopped at its first decided look of the growing window
    (or its cap), by the product's rule (rounds.growing_verdict) at its level a look and, beside it,
    at 95 % a look (no correction for the stopping). Goals: "steady" for a drift beyond the
    tolerance (15, 20 %) <= 5 %, "not steady" for none <= 5 %."""
    from zfsperf.steady import rounds

    def run(drift: float, cv: float, cap: int, rng: np.random.Generator) -> tuple[float, float, float]:
        said = {True: 0, False: 0, None: 0}
        its = 0
        for _ in range(trials):
            i = np.arange(cap)
            y = list(100 * (1 + drift / 100 * i / (rounds.ROUNDS_WINDOW - 1)) * (1 + cv / 100 * rng.standard_normal(cap)))
            v, n = None, cap
            for n in range(rounds.GROW_FIRST, cap + 1):
                v = rounds.growing_verdict(y[:n], cap).steady
                if v is not None:
                    break
            said[v] += 1
            its += n
        return said[True] / trials, said[False] / trials, its / trials

    kept = rounds.LOOK_ALPHA
    for cap in caps:
        print(f"\niterations = \"steady\", cap {cap} ({trials} simulated cases a cell): steady / not steady / "
              f"iterations taken, at {kept:g} a look | at 0.05 a look")
        print(f"{'spread':>6}  " + "  ".join(f"{f'drift {d} %':>27}" for d in (0, 5, 10, 15, 20)))
        worst = {kept: [0.0, 0.0], 0.05: [0.0, 0.0]}
        for cv in (1, 3, 5, 10):
            cells = []
            for d in (0, 5, 10, 15, 20):
                both = []
                for level in (kept, 0.05):
                    rounds.LOOK_ALPHA = level
                    st, ns, its = run(d, cv, cap, np.random.default_rng(1000 * cap + 10 * cv + d))
                    both.append(f"{st:.0%}/{ns:.0%}/{its:.1f}")
                    if d >= 15:
                        worst[level][0] = max(worst[level][0], st)
                    if d == 0:
                        worst[level][1] = max(worst[level][1], ns)
                cells.append(f"{both[0]:>13} {both[1]:>13}")
            rounds.LOOK_ALPHA = kept
            print(f"{cv:>5} %  " + "  ".join(cells), flush=True)
        for level, (st, ns) in worst.items():
            met = st <= 0.05 and ns <= 0.05
            print(f"  at {level:g} a look: steady for a drift of 15-20 % <= {st:.0%}, not steady for none <= {ns:.0%}"
                  f" -> {'goals met' if met else 'goals MISSED'}")


def record_real(seconds: int) -> list[Path]:
    """A gated zfsperf run whose window cannot be met: `seconds` of real series per case (a receive
    of 4 streams in rounds, and fio random writes), on the embedded zfs-fuse."""
    tmp = Path(tempfile.mkdtemp(prefix="zfsperf-steady-eval-"))
    rf = tmp / "real.toml"
    gate = f'{{ mode = "gate", window = {seconds * 10}, interval = 1, timeout = {seconds} }}'
    rf.write_text(f"""
[defaults]
iterations = 1
[defaults.pool]
vdevs = 2
vdev_size = "2G"
prefill = true
[[test]]
name = "receive"
workload = "receive"
corpus = {{ kind = "random", size = "64M", seed = 5 }}
threads = 4
steady = {gate}
[[test]]
name = "fio"
workload = "fio"
rw = "randwrite"
bs = "16k"
size = "256M"
runtime = "{seconds + 30}s"
steady = {gate}
""")
    env = {**os.environ, "ZFSPERF_LAB": f"/run/zfsperf/steady-eval-{os.getpid()}"}
    res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "run", "-q", "-r", str(rf), "-o", str(tmp / "out")],
                         capture_output=True, text=True, env=env)
    if res.returncode != 0:
        print(res.stdout[-2000:], res.stderr[-2000:], file=sys.stderr)
    return sorted({p.resolve() for p in (tmp / "out").glob("*/series/*.jsonl")})


# ---------------------------------------------------------------------------------------------
# Long series (issue 43): 300-3,000 samples, where a fixed 10-sample window restarts its steady
# stretch after every short excursion. Labelled real series live in bench/long/ (labels.toml says
# where each settles, read from its chart by hand, and why); synthetic ones are made here.

LONG_DIR = Path(__file__).resolve().parent / "long"
LONG_SYNTH = ("flat", "warmup-bursts", "late-step", "arc-fill", "slow-drift", "wander", "random-walk",
              "level-shifts", "long-swing", "noisy-trend", "wide-wander")
LONG_NEVER = ("slow-drift", "wander", "random-walk", "level-shifts", "long-swing", "noisy-trend", "wide-wander")


def make_long(kind: str, n: int, noise: float, rng: np.random.Generator) -> tuple[list[dict], int | None]:
    """A long synthetic series and its truth (1-based onset, None: never steady):
      flat           steady from sample 1
      warmup-bursts  ×0.6 for the first 20 %, then its level with a 4-sample stall (×0.5) every 150
                     samples (at 70-73 of each 150), which comes back: steady from the warm-up's end
      late-step      ×1.3 from 85 % of the run on: steady from the step
      arc-fill       the ARC fill of the short set (τ = n/8): once within 5 % of the end
      slow-drift     load grows 30 % over the run: never steady
      wander         load swings ±15 % with a period of a third of the run: never steady
      random-walk    load a random walk (steps of 1 % of the level a sample, reflected at ±40 %): never
      level-shifts   load steps by ±15 % (random sign) every tenth of the run: never steady
      long-swing     one slow swing of ±12 % over 1.5 periods of the run (longer than any window): never
      noisy-trend    load grows 20 % over the run under its noise doubled: never steady
      wide-wander    load wanders ±8 % (past the 5 % tolerance) on a smooth random path: never steady"""
    if kind == "arc-fill":
        return make("arc-fill", n, noise, rng)
    t = np.arange(n, dtype=float)
    shape = {k: np.ones(n) for k in BASE}
    truth: int | None = 1
    if kind == "warmup-bursts":
        at = int(0.2 * n)
        stall = (t >= at) & (t % 150 >= 70) & (t % 150 < 74)      # the run never ends in one
        for k in LOAD:
            shape[k] = np.where(t < at, 0.6, np.where(stall, 0.5, 1.0))
        truth = at + 1
    elif kind == "late-step":
        at = int(0.85 * n)
        for k in LOAD:
            shape[k] = np.where(t < at, 1.0, 1.3)
        truth = at + 1
    elif kind == "slow-drift":
        for k in LOAD:
            shape[k] = 1 + 0.3 * t / n
        truth = None
    elif kind == "wander":
        for k in LOAD:
            shape[k] = 1 + 0.15 * np.sin(2 * np.pi * t / (n / 3))
        truth = None
    elif kind == "random-walk":
        walk = np.empty(n)
        x = 0.0
        for i, step in enumerate(0.01 * rng.standard_normal(n)):
            x += step
            x = 0.8 - x if x > 0.4 else -0.8 - x if x < -0.4 else x     # reflected at ±40 %
            walk[i] = x
        for k in LOAD:
            shape[k] = 1 + walk
        truth = None
    elif kind == "level-shifts":
        levels = np.cumsum(rng.choice([-0.15, 0.15], size=10))
        for k in LOAD:
            shape[k] = 1 + levels[np.minimum((10 * t / n).astype(int), 9)] - levels.mean()
        truth = None
    elif kind == "long-swing":
        for k in LOAD:
            shape[k] = 1 + 0.12 * np.sin(2 * np.pi * t / (n / 1.5) + rng.uniform(0, 2 * np.pi))
        truth = None
    elif kind == "noisy-trend":
        for k in LOAD:
            shape[k] = (1 + 0.2 * t / n) * (1 + noise * rng.standard_normal(n))
        truth = None
    elif kind == "wide-wander":
        knots = np.resize([1.0, -1.0], 8) * rng.uniform(0.06, 0.09, size=8)     # past ±5 %, each way
        path = np.interp(t, np.linspace(0, n - 1, 8), knots)
        for k in LOAD:
            shape[k] = 1 + path
        truth = None
    return _noisy(dict(BASE), shape, n, noise, rng), truth


def long_detectors() -> dict[str, Callable[[list[dict], str], "int | None"]]:
    """The detectors on a long series (headline given): the changepoint method with its window
    scaled to the series (the default), the same without a wandering level counted (the default
    before 2026-11-27), fixed at 10 (before the window scaled), and with a 15 % tolerance (what a
    rater accepts as one level on zfs-fuse's wandering series), SNIA's vote at 10 and 50, fio's
    slope rule at 50, and "always steady" (the onset is sample 1)."""
    scaled, fixed, loose = Criteria(), Criteria(window=10, scale=False, wander=False), Criteria(tolerance=0.15)
    before = Criteria(wander=False)
    snia10, snia50 = Criteria(window=10, method="snia"), Criteria(window=50, method="snia")
    return {
        "changepoint, W scales": lambda s, h: decide(s, scaled, headline=h).onset,
        "changepoint, no wander": lambda s, h: decide(s, before, headline=h).onset,
        "changepoint, W = 10": lambda s, h: decide(s, fixed, headline=h).onset,
        "changepoint, tol 15 %": lambda s, h: decide(s, loose, headline=h).onset,
        "SNIA, W = 10": lambda s, h: decide(s, snia10).onset,
        "SNIA, W = 50": lambda s, h: decide(s, snia50).onset,
        "fio slope, W = 50": lambda s, h: fio_iops_slope(s, 50, h),
        "always steady": lambda s, h: 1,
    }


def labelled_real() -> list[tuple[str, list[dict], str, int | None, str]]:
    """bench/long/labels.toml: (name, samples, headline, onset or None, why) per real series."""
    import gzip
    import json
    import tomllib
    from zfsperf.steady.series import decision_samples
    path = LONG_DIR / "labels.toml"
    if not path.exists():
        return []
    out = []
    for e in tomllib.loads(path.read_text())["series"]:
        with gzip.open(LONG_DIR / e["file"], "rt") as f:
            samples = decision_samples([json.loads(line) for line in f if line.strip()])
        onset = None if e["onset"] == "never" else int(e["onset"])
        out.append((e["file"].split(".")[0], samples, e["headline"], onset, e["why"]))
    return out


def as_runner_judges(det: Callable[[list[dict], str], "int | None"]) -> Callable[[list[dict], str], "int | None"]:
    """A detector applied as the runner applies it (steady/timescale.py): to the samples while the
    workload ran (its headline moving), in bins of whole source updates (at least 1 s); the onset it
    finds is mapped back to the series' own 1-based sample number, the first sample of its bin."""
    from zfsperf.steady import timescale

    def judged(samples: list[dict], headline: str) -> "int | None":
        dts = np.diff([x["t"] for x in samples])
        interval = float(np.median(dts)) if len(dts) else 1.0
        run, bins = timescale.judged(samples, headline, interval, timescale.span(interval, None))
        start = next(i for i, x in enumerate(samples) if x is run[0])
        onset = det(bins, headline)
        if onset is None:
            return None
        if onset == 1:
            return start + 1
        before = bins[onset - 2]["t"]                  # the previous bin ends at this sample's time
        return start + next(i for i, x in enumerate(run) if x["t"] > before) + 1
    return judged


def long_eval(seeds: int, noise: float, lengths: list[int]) -> None:
    import time
    dets = long_detectors()
    series: list[tuple[str, list[dict], str, int | None]] = []
    for n in lengths:
        for kind in LONG_SYNTH:
            for seed in range(seeds):
                smp, truth = make_long(kind, n, noise, np.random.default_rng(7919 * seed + n))
                series.append((f"{kind} n={n} s={seed}", smp, "workload_mibs", truth))
    real = labelled_real()
    series += [(name, smp, h, onset) for name, smp, h, onset, _why in real]
    print(f"\nlong series: {len(series) - len(real)} synthetic ({', '.join(LONG_SYNTH)}; n = "
          f"{', '.join(map(str, lengths))}; {seeds} seeds; noise {noise:.0%}) and {len(real)} real, labelled by hand")
    for name, smp, h, onset, why in real:
        print(f"  {name:<10} {len(smp):>5} samples, {h}: {'never steady' if onset is None else f'steady from {onset}'} "
              f"-- {' '.join(why.split())}")
    got = {d: [(det if d == "always steady" else as_runner_judges(det))(smp, h) for _name, smp, h, _t in series]
           for d, det in dets.items()}
    # the detectors' parameters are chosen on the even seeds' series (the tuning half) and their
    # figures reported on the odd seeds' (the report half), so that no figure is fit to its own data
    groups = {"synthetic": [i for i, x in enumerate(series) if "n=" in x[0]],
              "tuning": [i for i, x in enumerate(series) if "n=" in x[0] and int(x[0].rsplit("s=", 1)[1]) % 2 == 0],
              "report": [i for i, x in enumerate(series) if "n=" in x[0] and int(x[0].rsplit("s=", 1)[1]) % 2 == 1],
              "real": [i for i, x in enumerate(series) if "n=" not in x[0]]}
    print(f"\n{'detector':<24} {'set':<10} {'onset error, median':>20} {'never-steady called steady':>27} "
          f"{'settling missed':>16}")
    for d in dets:
        for gname, idx in groups.items():
            if not idx:
                continue
            errs = [abs(got[d][i] - series[i][3]) for i in idx if got[d][i] is not None and series[i][3] is not None]
            never = [i for i in idx if series[i][3] is None]
            false = sum(got[d][i] is not None for i in never)
            settles = [i for i in idx if series[i][3] is not None]
            missed = sum(got[d][i] is None for i in settles)
            med = f"{statistics.median(errs):.0f} samples" if errs else "-"
            fs = f"{false} of {len(never)}" + (f" ({100 * false / len(never):.0f} %)" if never else "")
            ms = f"{missed} of {len(settles)}" + (f" ({100 * missed / len(settles):.0f} %)" if settles else "")
            print(f"{d:<24} {gname:<10} {med:>20} {fs:>27} {ms:>16}")
    print("goals (issue 75, on the report half): never-steady called steady <= 20 %, settling missed <= 10 %, "
          "median onset error no worse than the scaled window without the wandering rule")
    print("\nsynthetic, per class (all lengths): median onset error in samples / never-steady called steady")
    print(f"{'class':<14} " + " ".join(f"{d:>22}" for d in dets))
    for kind in LONG_SYNTH:
        idx = [i for i, x in enumerate(series) if x[0].startswith(kind + " ")]
        cells = []
        for d in dets:
            if series[idx[0]][3] is None:
                cells.append(f"{sum(got[d][i] is not None for i in idx)} of {len(idx)} steady")
            else:
                errs = [abs(got[d][i] - series[i][3]) for i in idx if got[d][i] is not None]
                miss = sum(got[d][i] is None for i in idx)
                cells.append((f"{statistics.median(errs):.0f}" if errs else "-") + (f" ({miss} missed)" if miss else ""))
        print(f"{kind:<14} " + " ".join(f"{c:>22}" for c in cells))
    print("\nper real series: labelled onset, then each detector's (never: not steady)")
    for i, (name, smp, _h, onset) in enumerate(series):
        if "n=" in name:
            continue
        cells = "  ".join(f"{d}: {got[d][i] or 'never'}" for d in dets if d != "always steady")
        print(f"  {name:<10} label {onset or 'never'}:  {cells}")
    # CPU time of the default method on a 3,000-sample series (each call timed; the median)
    smp, _t = make_long("warmup-bursts", 3000, noise, np.random.default_rng(1))
    times = []
    for _ in range(5):
        t0 = time.process_time()
        decide(smp, Criteria(), headline="workload_mibs")
        times.append(time.process_time() - t0)
    print(f"\nCPU time of the default method on one 3,000-sample series of {len(BASE)} metrics: "
          f"{statistics.median(times) * 1000:.0f} ms (median of 5)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--n", type=int, default=120)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--noise", default="0.02,0.05,0.10,0.15,0.30")
    ap.add_argument("--classes", default=",".join(CLASSES))
    ap.add_argument("--long", type=int, default=360, help="also run LONG_CLASSES at this many samples (0: not)")
    ap.add_argument("--series", nargs="*", default=[])
    ap.add_argument("--no-real", action="store_true")
    ap.add_argument("--real-seconds", type=int, default=90)
    ap.add_argument("--chart", help="write a steady-state chart per real series into this folder")
    ap.add_argument("--long-set", action="store_true",
                    help="only the long series: synthetic at --long-n and the labelled real ones in bench/long/")
    ap.add_argument("--long-n", default="300,1000,3000")
    ap.add_argument("--growing", action="store_true",
                    help='only the growing window of iterations = "steady": its errors with and without the correction')
    ap.add_argument("--long-noise", type=float, default=0.05)
    args = ap.parse_args()
    if args.growing:
        growing(args.seeds * 15, [12, 20])
        return
    if args.long_set:
        long_eval(max(1, args.seeds // 4), args.long_noise, [int(x) for x in args.long_n.split(",")])
        return
    dets = detectors(args.window)
    noises = [float(x) for x in args.noise.split(",")]
    print(f"window W = {args.window} samples, {args.n} samples per series, {args.seeds} seeds per class and noise")
    print(f"{'class':<12} {'noise':>5}  " + "  ".join(f"{name:>31}" for name in dets))
    print(f"{'':<12} {'':>5}  " + "  ".join(f"{'false':>9} {'missed':>9} {'onset±':>10}" for _ in dets))
    worst: dict[str, dict[str, float]] = {name: {"false": 0.0, "missed": 0.0, "err": 0.0} for name in dets}
    runs = [(kind, args.n) for kind in args.classes.split(",")]
    if args.long:
        runs += [(kind, args.long) for kind in LONG_CLASSES if kind in args.classes.split(",")]
    for kind, n in runs:
        for noise in noises:
            res = evaluate(kind, noise, args.seeds, n, args.window, dets)
            cells = []
            for name, r in res.items():
                f, m = r["false"] / r["cases"], r["missed"] / r["cases"]
                err = statistics.median(r["err"]) if r["err"] else None
                cells.append(f"{f:>9.0%} {m:>9.0%} {('-' if err is None else f'{err:.1f}'):>10}")
                if noise <= 0.15 + 1e-9 and kind not in NOT_IN_GOALS:
                    w = worst[name]
                    w["false"], w["missed"] = max(w["false"], f), max(w["missed"], m)
                    w["err"] = max(w["err"], err or 0.0)
            label = kind if n == args.n else f"{kind} n={n}"
            print(f"{label:<12} {noise:>5.0%}  " + "  ".join(cells), flush=True)
    print(f"\nworst case up to 15 % noise, l2-late left out (goals: false-steady <= 5 %, missed <= 10 %, onset error <= "
          f"{args.window / 2:g} samples):")
    for name, w in worst.items():
        met = w["false"] <= 0.05 and w["missed"] <= 0.10 and w["err"] <= args.window / 2
        print(f"  {name:<24} false-steady {w['false']:>4.0%}  missed {w['missed']:>4.0%}  "
              f"onset error {w['err']:>4.1f}  -> {'goals met' if met else 'goals MISSED'}")
    if "arc-fill" in args.classes.split(","):
        print("\nARC fills declared steady while the true level over the window was > 5 % below its final level:")
        for n in [args.n] + ([args.long] if args.long else []):
            for noise in noises:
                declared, early = early_fills(noise, args.seeds, n, args.window)
                print(f"  n={n:<4} noise {noise:>4.0%}: {early} of {declared} declared")
    across_iterations(args.seeds)
    paths = [Path(p) for p in args.series]
    if not args.no_real and not paths:
        print(f"\nrecording real series on zfs-fuse ({args.real_seconds} s per case) ...", flush=True)
        paths = record_real(args.real_seconds)
    if not paths:
        return
    print("\nreal series (no ground truth): onset (1-based sample) per detector")
    for p in paths:
        s = read_series(str(p))
        headline = "workload_iops" if p.name.startswith("fio") else "workload_mibs"
        cpv = decide(s, Criteria(window=args.window), headline=headline)
        sn = decide(s, Criteria(window=args.window, method="snia"))
        fio = fio_iops_slope(s, args.window, headline)
        kinds = ", ".join(f"{k}={m.kind}" for k, m in sorted(cpv.metrics.items()))
        print(f"  {p.name:<32} {len(s):>4} samples  changepoint: {cpv.onset or 'never':>5}  "
              f"snia: {sn.onset or 'never':>5}  fio: {fio or 'never':>5}\n      {kinds}")
        if args.chart:
            from zfsperf.report import plots
            out = Path(args.chart)
            out.mkdir(parents=True, exist_ok=True)
            from zfsperf.results.record import SteadyRecord
            rec = SteadyRecord(mode="record", steady=False, method=Criteria().method, samples=0,
                               criteria=Criteria(window=args.window).__dict__, headline=headline)
            png = plots.steady_chart(p, rec)
            if png:
                (out / f"steady-{p.stem}.png").write_bytes(png)
                print(f"      chart: {out / f'steady-{p.stem}.png'}")


if __name__ == "__main__":
    main()
