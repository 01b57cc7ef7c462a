#!/usr/bin/env python3
"""--detect's looks: the A/A false-alarm rate and the block a real change is decided at.

Simulates what `zfsperf run --detect` does after each block from the 6th: the exact sign-flip test
of the paired log-ratios, judged (a) at 0.05 at every look (what stopping on a decision without
α spending would do), (b) at the spent levels of report.sequential, (c) once, at 0.05, after the
last block (a fixed number of blocks). Block log-ratios are Gaussian with the spread given
(--sd, default 0.05: the within-block spread of receive turns on zfs-fuse is 1-5 %). For a real
change (--change PCT), the share of runs decided WORSE and the mean block at which they stop.

Usage: bench/sequential.py [--runs 4000] [--max 12,14,30] [--sd 0.05] [--change 5]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from zfsperf.report import abstats, sequential
from zfsperf.report.abstats import ALPHA, MIN_BLOCKS


def simulate(n_max: int, runs: int, sd: float, shift: float, rule: str, seed: int) -> tuple[float, float]:
    """(share of runs called significant, mean blocks when stopped on a decision or at the end)."""
    rng = np.random.default_rng(seed)
    hits, blocks = 0, 0
    for _ in range(runs):
        d = rng.normal(shift, sd, n_max)
        stop = n_max
        looks = range(n_max, n_max + 1) if rule == "fixed" else range(MIN_BLOCKS, n_max + 1)
        for b in looks:
            lv = ALPHA if rule in ("naive", "fixed") else sequential.level(b, MIN_BLOCKS, n_max, final=(b == n_max))
            if abstats.sign_flip_p(d[:b]) < lv:
                hits += 1
                stop = b
                break
        blocks += stop
    return hits / runs, blocks / runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=4000)
    ap.add_argument("--max", default="12,14")
    ap.add_argument("--sd", type=float, default=0.05)
    ap.add_argument("--change", type=float, default=5.0, help="a real change, in %% (its log is the shift)")
    a = ap.parse_args()
    se = math.sqrt(ALPHA * (1 - ALPHA) / a.runs)
    print(f"{a.runs} simulated runs each; block log-ratio sd {a.sd}; one standard error at 5 %: {se * 100:.2f} points")
    print(f"{'max blocks':>10}  {'rule':<22}{'A/A alarms':>11}  {'change ' + format(a.change, 'g') + ' % seen':>16}"
          f"  {'mean blocks':>11}  {'s':>5}")
    shift = math.log(1 - a.change / 100)
    for n_max in (int(x) for x in a.max.split(",")):
        for rule, label in (("naive", "0.05 at every look"), ("spent", "α spent (sequential)"),
                            ("fixed", "0.05 once, at the end")):
            t0 = time.monotonic()
            aa, _ = simulate(n_max, a.runs, a.sd, 0.0, rule, 11)
            power, mean_blocks = simulate(n_max, a.runs, a.sd, shift, rule, 12)
            print(f"{n_max:>10}  {label:<22}{aa * 100:>10.1f}%  {power * 100:>15.1f}%  {mean_blocks:>11.1f}"
                  f"  {time.monotonic() - t0:>5.0f}")


if __name__ == "__main__":
    main()
