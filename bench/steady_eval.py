#!/usr/bin/env python3
"""How well does the steady-state detector decide? zfsperf's multi-metric SNIA vote against fio's
single-metric `iops_slope` criterion, on the same series.

Labelled synthetic series (each with the talk's 7 metrics, or 10 with L2ARC), many seeds per class:
  steady        every metric flat with noise                 truth: steady from the start
  ramp          every metric grows 2.5 % per sample          truth: never steady
  arc-fill      ARC size fills exponentially, load follows   truth: settled when within 5 % of the end
  step          a 40 % step in load half-way into the first window   truth: settled after the step
  txg-bursts    pool bandwidth/ops burst every 5th sample    truth: steady (periodic is a steady state)
  l2-warmup     L2ARC fills slowly over 70 % of the series   truth: settled when L2 is within 5 % of full
Detectors: zfsperf's vote, the vote with the cache gate (active data set 90 % of the ARC, or 95 % of
ARC + L2ARC), and fio's iops_slope on the pool's operations.
Plus real series recorded on zfs-fuse (`--series FILE…`, or recorded here by a gated zfsperf run with
a window it cannot meet), for which only the two detectors' answers are shown (no ground truth).

For each class: false-steady rate (declared steady before the truth settles, or on a never-steady
series), missed-steady rate (never declared though the series settles at least one window before
its end), the median detection delay in samples after the first fully settled window (negative:
declared that many samples too early), and the
median load bias: how far the pool bandwidth over the W samples after the verdict is from its final
value (the mean of the last W samples: what a measurement taken right then would be off by).
Usage: bench/steady_eval.py [--seeds 50] [--n 120] [--window 10] [--series FILE ...] [--no-real]
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

BASE = {"arc_size_frac": 0.95, "arc_mru_frac": 0.4, "arc_data_frac": 0.9, "arc_hit_ratio": 0.8,
        "pool_kops": 5.0, "pool_mibs": 300.0, "pool_lat_ms": 2.0}
L2 = {"l2_size_frac": 0.9, "l2_write_frac": 0.3, "l2_hit_ratio": 0.6}
NOISE = 0.02          # 2 % gaussian noise on every metric
TRUTH_TOL = 0.05      # a series has settled once its drifting metrics are within 5 % of their final value
C_MAX, L2_CAP = 1 << 30, 4 << 30                 # for the cache gate: ARC 1 GiB, L2ARC 4 GiB
ACTIVE = {False: int(0.9 * C_MAX), True: int(0.95 * (C_MAX + L2_CAP))}   # active data set


def settle_index(y: np.ndarray, tol: float = 0.02) -> int:
    """First index after which y stays within tol of its final value (0-based)."""
    final = y[-1]
    outside = np.nonzero(np.abs(y - final) > tol * abs(final))[0]
    return int(outside[-1] + 1) if len(outside) else 0


def make(kind: str, n: int, rng: np.random.Generator, l2: bool, window: int
         ) -> tuple[list[dict], int | None, np.ndarray]:
    """(samples, truth, load): truth is the 1-based sample count from which the series is steady, or
    None; load is the noise-free shape of the pool's bandwidth (to measure a declaration's bias)."""
    names = dict(BASE, **(L2 if l2 else {}))
    t = np.arange(n, dtype=float)
    shapes = {k: np.ones(n) for k in names}
    truth: int | None = 1
    if kind == "ramp":                       # +2.5 % per sample: every window drifts ~25 %
        shapes = {k: np.exp(0.025 * t) for k in names}
        truth = None
    elif kind == "arc-fill":
        fill = 1 - np.exp(-t / (n / 8))
        for k in ("arc_size_frac", "arc_hit_ratio", "pool_kops", "pool_mibs"):
            shapes[k] = 0.05 + 0.95 * fill
        truth = settle_index(shapes["arc_size_frac"], TRUTH_TOL) + 1
    elif kind == "step":                     # inside the first window: a detector must wait it out
        s = window // 2
        for k in ("pool_kops", "pool_mibs", "pool_lat_ms", "arc_hit_ratio", "arc_mru_frac"):
            shapes[k] = np.where(t < s, 1.0, 1.4)
        truth = s + 1
    elif kind == "txg-bursts":
        burst = np.where(t % 5 == 0, 1.8, 0.8)
        shapes["pool_mibs"] = burst
        shapes["pool_kops"] = burst
    elif kind == "l2-warmup":
        if not l2:
            raise ValueError("l2-warmup needs L2 metrics")
        shapes["l2_size_frac"] = np.minimum(1.0, 0.02 + t / (0.7 * n))
        shapes["l2_write_frac"] = np.where(t < 0.7 * n, 1.0, 0.1)
        truth = max(settle_index(shapes["l2_size_frac"], TRUTH_TOL),
                    settle_index(shapes["l2_write_frac"], TRUTH_TOL)) + 1
    samples = []
    for i in range(n):
        m = {k: float(v * shapes[k][i] * (1 + rng.normal(0, NOISE))) for k, v in names.items()}
        info = {"arc_bytes": m["arc_size_frac"] * C_MAX, "arc_c_max": C_MAX}
        if l2:
            info["l2_bytes"], info["l2_capacity"] = m["l2_size_frac"] * L2_CAP, L2_CAP
        samples.append({"t": float(i), "metrics": m, "info": info})
    return samples, truth, shapes["pool_mibs"]


def fio_iops_slope(samples: list[dict], window: int, metric: str) -> int | None:
    """fio's steadystate=iops_slope:(S/(W−1))% on one metric (the workload's rate): the first window
    whose least-squares slope per sample, as % of the window mean, is within the limit."""
    y = np.array([s["metrics"].get(metric) if s["metrics"].get(metric) is not None else np.nan
                  for s in samples], dtype=float)
    limit = 10.0 / (window - 1)          # the SNIA excursion of 10 % spread over W−1 intervals
    x = np.arange(window, dtype=float)
    for end in range(window, len(y) + 1):
        w = y[end - window:end]
        if np.isnan(w).any() or w.mean() == 0:
            continue
        slope = np.polyfit(x, w, 1)[0]
        if abs(slope) / abs(w.mean()) * 100 <= limit:
            return end
    return None


Detector = Callable[[list[dict], bool], "int | None"]


def evaluate(kind: str, seeds: int, n: int, window: int, l2: bool, detectors: dict[str, Detector]) -> dict:
    out = {name: {"false": 0, "missed": 0, "delays": [], "bias": [], "cases": 0} for name in detectors}
    for seed in range(seeds):
        samples, truth, load = make(kind, n, np.random.default_rng(seed), l2, window)
        for name, det in detectors.items():
            got = det(samples, l2)
            r = out[name]
            r["cases"] += 1
            if got is not None:                # a measurement of W samples right after the verdict
                r["bias"].append(abs(load[got:got + window].mean() / load[-window:].mean() - 1) if got < n else 0.0)
            first_possible = truth + window - 1 if truth is not None else None
            if got is not None and first_possible is not None:
                r["delays"].append(got - first_possible)      # negative: declared too early
            if got is not None and (first_possible is None or got < first_possible):
                r["false"] += 1
            elif got is None and truth is not None and truth + window <= n:
                r["missed"] += 1
    return out


def record_real(seconds: int) -> list[Path]:
    """A gated zfsperf receive run whose window cannot be met: `seconds` samples of real series."""
    tmp = Path(tempfile.mkdtemp(prefix="zfsperf-steady-eval-"))
    rf = tmp / "real.toml"
    rf.write_text(f"""
[defaults]
iterations = 1
[defaults.pool]
vdevs = 1
vdev_size = "512M"
[[test]]
name = "real"
workload = "receive"
corpus = {{ kind = "random", size = "64M", seed = 5 }}
threads = [1, 4]
steady = {{ mode = "gate", window = {seconds + 100}, interval = 1, timeout = {seconds} }}
""")
    env = {**os.environ, "ZFSPERF_LAB": f"/run/zfsperf/steady-eval-{os.getpid()}"}
    res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "run", "-q", "-r", str(rf), "-o", str(tmp / "out")],
                         capture_output=True, text=True, env=env)
    if res.returncode != 0:
        print(res.stdout[-2000:], res.stderr[-2000:], file=sys.stderr)
        return []
    return sorted({p.resolve() for p in (tmp / "out").glob("*/series/*.jsonl")})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--n", type=int, default=120)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--series", nargs="*", default=[])
    ap.add_argument("--no-real", action="store_true")
    ap.add_argument("--real-seconds", type=int, default=60)
    args = ap.parse_args()
    c = Criteria(window=args.window)

    detectors: dict[str, Detector] = {
        "zfsperf vote (SNIA range+slope, 70 %)": lambda s, l2: decide(s, c).first_steady_index,
        "zfsperf vote + cache gate": lambda s, l2: decide(s, c, active_bytes=ACTIVE[l2]).first_steady_index,
        "fio iops_slope on pool ops": lambda s, l2: fio_iops_slope(s, args.window, "pool_kops"),
    }
    print(f"window W = {args.window} samples, {args.n} samples per series, {args.seeds} seeds per class, "
          f"noise {NOISE:.0%}")
    print(f"{'class':<22} {'detector':<40} {'false-steady':>12} {'missed':>8} {'delay (samples)':>16} "
          f"{'load bias':>10}")
    for kind, l2 in (("steady", False), ("ramp", False), ("arc-fill", False), ("step", False),
                     ("txg-bursts", False), ("steady", True), ("l2-warmup", True)):
        res = evaluate(kind, args.seeds, args.n, args.window, l2, detectors)
        label = kind + (" (+L2ARC)" if l2 else "")
        for name, r in res.items():
            delay = f"{statistics.median(r['delays']):.0f}" if r["delays"] else "-"
            bias = f"{statistics.median(r['bias']):.1%}" if r["bias"] else "-"
            print(f"{label:<22} {name:<40} {r['false'] / r['cases']:>11.0%} {r['missed'] / r['cases']:>7.0%} "
                  f"{delay:>16} {bias:>10}")
    paths = [Path(p) for p in args.series]
    if not args.no_real and not paths:
        print(f"\nrecording real series on zfs-fuse ({args.real_seconds} s per case) ...", flush=True)
        paths = record_real(args.real_seconds)
    if paths:
        print("\nreal series (no ground truth): first steady sample per detector")
        for p in paths:
            s = read_series(str(p))
            v = decide(s, c)
            fio = fio_iops_slope(s, args.window, "pool_kops")
            print(f"  {p.name:<40} {len(s):>4} samples  zfsperf: {v.first_steady_index or 'never':>5}  "
                  f"fio iops_slope: {fio or 'never':>5}  metrics: {', '.join(sorted(v.metrics))}")


if __name__ == "__main__":
    main()
