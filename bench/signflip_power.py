"""The detectable change of the exact sign-flip test (compare's paired, duet and turns designs):
for n pairs of normal log ratios of sd σ, the shift δ at which the test at α = 0.05 rejects with
80 % power, as K(n) = δ / (σ / √n). Prints the table abstats.SIGN_FLIP_K holds (seeded, so the
same every time), beside the t approximation (t₀.₉₇₅ + t₀.₈) it replaced.

    .venv/bin/python bench/signflip_power.py [--trials 4000] [--max-n 30]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from zfsperf.report import abstats  # noqa: E402


def rejects(samples: np.ndarray, alpha: float) -> np.ndarray:
    """For each row of samples (T × n), whether the sign-flip test rejects at alpha."""
    signs = abstats.sign_vectors(samples.shape[1])
    out = np.empty(len(samples), bool)
    for i in range(0, len(samples), 64):
        chunk = samples[i:i + 64]
        obs = np.abs(chunk.sum(axis=1))
        sums = np.abs(chunk @ signs.T)                       # chunk × 2^n
        p = np.mean(sums >= (obs - 1e-12 * np.maximum(1.0, obs))[:, None], axis=1)
        out[i:i + 64] = p <= alpha
    return out


def k_of(n: int, trials: int, alpha: float = abstats.ALPHA, power: float = abstats.POWER) -> float:
    rng = np.random.default_rng(20261202 + n)
    z = rng.standard_normal((trials, n))
    lo, hi = 0.0, 3.0                                        # δ in units of σ
    for _ in range(16):
        mid = (lo + hi) / 2
        if rejects(z + mid, alpha).mean() >= power:
            hi = mid
        else:
            lo = mid
    return hi * math.sqrt(n)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=4000)
    ap.add_argument("--max-n", type=int, default=30)
    args = ap.parse_args()
    from scipy import stats
    t0 = time.time()
    print("n\tK (sign-flip, simulated)\tK (t approximation)")
    for n in range(abstats.MIN_BLOCKS, args.max_n + 1):
        kt = stats.t.ppf(1 - abstats.ALPHA / 2, n - 1) + stats.t.ppf(abstats.POWER, n - 1)
        print(f"{n}\t{k_of(n, args.trials):.3f}\t{kt:.3f}", flush=True)
    print(f"# {args.trials} trials a step, {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
