"""The statistics behind compare's verdicts, one function per design.

All work on log values (a ratio new/old is what a performance change is; logs make it additive
and symmetric). Each returns the change as a ratio, a two-sided p-value, a 95 % interval for the
ratio when one exists, and the *detectable change*: the smallest change this data could have
called significant with 80 % power at alpha 0.05, from its own observed variance and n (a
t-based approximation: (t_{1-α/2} + t_{0.8}) · SE). A verdict of "not significant" says nothing
without that figure: "~ (could see >= 2.4 %)" does.

Designs:
- paired(): one run, interleaved blocks; each block holds one iteration of A and of B, so drift
  over the run falls on both alike and the block-to-block level cancels out of the within-block
  log-ratio. The test is an exact sign-flip permutation test on the mean log-ratio (Fisher's
  randomization test: under "no effect" each pair's sign is a coin toss). Chosen over Wilcoxon's
  signed-rank test because it uses the ratios' sizes, not only their ranks (more power on the
  near-normal log-ratios zfsperf sees), while its smallest p is the same, 2 / 2^n: at least 6
  blocks are needed for p < 0.05. The interval inverts the same test: the shifts δ of the mean
  log-ratio for which the sign-flip test on (d − δ) does not reject at α. So "the interval
  excludes no change" and "p < 0.05" are one statement (a Student's t interval beside an exact
  test printed -48.8 … -5.5 % beside p 0.062). With 6 blocks it is the range of the block
  ratios; it narrows towards the t interval as blocks are added. No interval under 6 blocks.
- runs(): runs as the unit (Kalibera & Jones, "Rigorous benchmarking in reasonable time", ISMM
  2013): each run's median is one observation, so the variance *between* runs -- which a run's
  own iterations never show -- is what the test is judged against. Welch's t on log run medians;
  when one side has a single run, the other side's between-run variance stands for both.
- known_noise(): one run a side, with the between-run spread known from the history store's
  earlier runs of the same case on the same host and target (a robust estimate from successive
  differences, so one real step in the history does not inflate it).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
POWER = 0.80
EXACT_SIGN_FLIPS = 16          # up to 2^16 sign vectors enumerated; beyond, a seeded Monte Carlo
MIN_BLOCKS = 6                 # 2 / 2^6 = 0.031: the fewest pairs with which p < 0.05 is possible


@dataclass
class Estimate:
    ratio: float                          # new / old
    p: float | None                       # two-sided; None when no test could be made
    ci: tuple[float, float] | None        # 95 % interval of the ratio
    detectable_pct: float | None          # smallest change seen with 80 % power, in %
    n: str                                # what the test counted, e.g. "8 pairs", "3 vs 2 runs"


def _t():
    """Student's t distribution. scipy.stats is imported when a verdict is first computed, not with
    this module: every `zfsperf run` imports it and paid ~0.8 s (~23 s in a guest under emulation)."""
    from scipy import stats as sps
    return sps.t


def _mde(se: float, df: float, alpha: float = ALPHA) -> float | None:
    if se == 0:
        return 0.0
    if not (se > 0 and df >= 1 and alpha > 0):
        return None
    t = _t()
    k = t.ppf(1 - alpha / 2, df) + t.ppf(POWER, df)
    return float(np.expm1(k * se) * 100)


def _t_ci(mean: float, se: float, df: float) -> tuple[float, float] | None:
    if not (se >= 0 and df >= 1):
        return None
    h = _t().ppf(1 - ALPHA / 2, df) * se
    return (float(math.exp(mean - h)), float(math.exp(mean + h)))


@functools.cache
def sign_vectors(n: int) -> np.ndarray:
    """Every ±1 vector of length n up to EXACT_SIGN_FLIPS (as rows), else a seeded Monte Carlo
    sample of 65536 whose first row is all +1."""
    if n <= EXACT_SIGN_FLIPS:
        bits = (np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]) & 1
        return 1.0 - 2.0 * bits
    signs = np.random.default_rng(20261123).choice((1.0, -1.0), size=(65536, n))
    signs[0] = 1.0
    return signs


def sign_flip_p(d: np.ndarray) -> float:
    """Exact two-sided sign-flip permutation p of mean(d) (seeded Monte Carlo beyond 2^16)."""
    d = np.asarray(d, float)
    obs = abs(d.sum())
    sums = np.abs(sign_vectors(len(d)) @ d)
    return float(np.mean(sums >= obs - 1e-12 * max(1.0, obs)))


def sign_flip_ci(d: np.ndarray, alpha: float = ALPHA) -> tuple[float, float] | None:
    """The (1 - alpha) interval of the mean of d that the sign-flip test gives: the shifts δ with
    sign_flip_p(d - δ) > alpha, found by bisection on each side of the mean (where p is 1). None
    when no shift can be rejected (2 / 2^n > alpha: under 6 values at 95 %)."""
    d = np.asarray(d, float)
    n = len(d)
    if n < 2 or 2.0 / 2 ** min(n, 62) > alpha:
        return None
    mean = float(d.mean())
    span = float(d.max() - d.min()) + 1e-9

    def edge(outside: float) -> float:
        """Bisect between a rejected shift and the mean; returns the outermost accepted shift."""
        rej, acc = outside, mean
        for _ in range(64):
            mid = (rej + acc) / 2
            if mid in (rej, acc):
                break
            if sign_flip_p(d - mid) > alpha:
                acc = mid
            else:
                rej = mid
        return acc
    return edge(float(d.min()) - span), edge(float(d.max()) + span)


def paired(a: list[float], b: list[float], alpha: float = ALPHA) -> Estimate | None:
    """a[i], b[i]: the same block's iterations of A and B (positive values). alpha: the level the
    interval and the detectable change are for (a --detect run's look: report.sequential)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if len(x) != len(y) or len(x) < 2 or np.any(x <= 0) or np.any(y <= 0):
        return None
    d = np.log(y) - np.log(x)
    n = len(d)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    p = 1.0 if np.all(d == 0) else sign_flip_p(d)
    ci = sign_flip_ci(d, alpha) if alpha > 0 else None
    return Estimate(math.exp(mean), p, None if ci is None else (math.exp(ci[0]), math.exp(ci[1])),
                    _mde(se, n - 1, alpha), f"{n} pairs")


def runs(base: list[float], new: list[float]) -> Estimate | None:
    """base, new: one median per run (positive values); at least 3 runs in all, one side >= 2."""
    x, y = np.log(np.asarray(base, float)), np.log(np.asarray(new, float))
    k1, k2 = len(x), len(y)
    if k1 + k2 < 3 or min(k1, k2) < 1 or max(k1, k2) < 2:
        return None
    diff = float(y.mean() - x.mean())
    if k1 >= 2 and k2 >= 2:
        v1, v2 = x.var(ddof=1) / k1, y.var(ddof=1) / k2
        se = math.sqrt(v1 + v2)
        df = (v1 + v2) ** 2 / ((v1 ** 2 / (k1 - 1)) + (v2 ** 2 / (k2 - 1))) if v1 + v2 > 0 else k1 + k2 - 2
    else:
        many = x if k1 >= 2 else y
        s2 = float(many.var(ddof=1))
        se = math.sqrt(s2 * (1 / k1 + 1 / k2))
        df = len(many) - 1
    return _t_estimate(diff, se, df, f"{k1} vs {k2} runs")


# The history design estimates run-to-run noise from at least this many earlier runs of identical
# settings; with fewer, compare does not use the history at all.
MIN_HISTORY_RUNS = 5


def between_run_sd(history: list[float]) -> float | None:
    """The spread of one run's log median around the level, from successive differences of a
    history of run medians (robust: MAD of the differences / sqrt 2; their sd where the MAD is 0),
    or None under MIN_HISTORY_RUNS runs or when the runs do not vary at all."""
    h = np.log(np.asarray([v for v in history if v > 0], float))
    if len(h) < MIN_HISTORY_RUNS:
        return None
    dd = np.diff(h)
    sd = float(1.4826 * np.median(np.abs(dd - np.median(dd))) / math.sqrt(2))
    if not sd > 0:                  # half the differences alike: the MAD says 0, the runs do not
        sd = float(np.std(dd, ddof=1) / math.sqrt(2))
    return sd if sd > 0 else None   # an sd of 0 is never a measure of noise


def known_noise(base: list[float], new: list[float], sd: float, history_n: int) -> Estimate | None:
    """One (or a few) runs a side, judged against a between-run sd known from history_n runs."""
    if not base or not new or any(v <= 0 for v in base + new):
        return None
    diff = float(np.mean(np.log(new)) - np.mean(np.log(base)))
    se = sd * math.sqrt(1 / len(base) + 1 / len(new))
    return _t_estimate(diff, se, history_n - 1, f"{len(base)} vs {len(new)} runs, noise from {history_n} earlier")


def _t_estimate(diff: float, se: float, df: float, n: str) -> Estimate:
    if se <= 0:
        p = 1.0 if diff == 0 else 0.0
    else:
        p = float(2 * _t().sf(abs(diff) / se, df))
    return Estimate(math.exp(diff), p, _t_ci(diff, se, df), _mde(se, df), n)


def unpaired_detectable(a: list[float], b: list[float]) -> float | None:
    """The detectable change of two independent samples (logs, pooled variance)."""
    x, y = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    if len(x) < 2 or len(y) < 2 or np.any(~np.isfinite(x)) or np.any(~np.isfinite(y)):
        return None
    df = len(x) + len(y) - 2
    s2 = ((len(x) - 1) * x.var(ddof=1) + (len(y) - 1) * y.var(ddof=1)) / df
    return _mde(math.sqrt(s2 * (1 / len(x) + 1 / len(y))), df)
