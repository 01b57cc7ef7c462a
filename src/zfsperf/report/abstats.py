"""The statistics behind compare's verdicts, one function per design.

All work on log values (a ratio new/old is what a performance change is; logs make it additive
and symmetric). Each returns the change as a ratio, a two-sided p-value, a 95 % interval for the
ratio when one exists, and the *detectable change*: the smallest change this data could have
called significant with 80 % power at alpha 0.05, from its own observed spread and n, by the
power of the test actually used: the exact sign-flip test's from SIGN_FLIP_K (simulated:
bench/signflip_power.py; at 6 pairs it needs 4.39 standard errors, where the t approximation
(t_{1-α/2} + t_{0.8}) · SE said 3.49 and so promised a change it saw with 61 % power), the
history test's from its own degrees of freedom. A verdict of "not significant" says nothing
without that figure: "~ (could see >= 2.4 %)" does; none is given where no change can be called.

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
- history(): one run a side, judged against the history store's earlier runs of identical
  settings: the log ratio in run-to-run standard errors, the sd from successive differences (drift
  in the history barely inflates it) with the degrees of freedom its efficiency gives
  (between_run_sd), judged against the heavier of two nulls: Student's t at those degrees of
  freedom (exact for normal run medians) and a simulated one for run medians with t₃ tails.
- iterations a side (compare.compare_values): the Mann-Whitney U test, exact for small samples
  (mann_whitney_p), its interval inverted on log values (ratio_ci), and the smallest p it can give
  (min_p, needed_per_side). ALPHA, the one significance level, is here.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..results.stats import chi2_ppf, norm_ppf, t_quantile, t_sf

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
    sd: float | None = None               # paired: the sd of the log ratios the test ran on
    pairs: int | None = None              # paired: how many


# The spread a printed "could see ≥ X %" is computed from: the SPREAD_BOUND one-sided upper confidence
# bound of the sample's, so that X holds for the verdict a user reads, not only for the median one. From
# the median-unbiased spread, X was seen with 80 % power at its median but 70-79 % on average over the
# verdicts that printed it and 22-46 % at their 5th percentile (bench/calibration.py, per-verdict
# power, 2026-12-05); at a 90 % bound 92-95 % on average and 62-73 % at the 5th percentile (an 80 %
# bound left history at 5 runs 45 % there). --detect stops on the same bound (a stop is not a lucky
# low sample sd).
SPREAD_BOUND = 0.90


def spread_at_bound(spread: float, df: float, conf: float = SPREAD_BOUND) -> float:
    """A sample sd (or a standard error made of one) at its conf one-sided upper confidence bound,
    σ ≤ spread·√(df / χ²_{1−conf}(df)): at 5 degrees of freedom 1.76 times the sample's."""
    return spread * math.sqrt(df / chi2_ppf(1 - conf, df))


def _mde(se: float, df: float, alpha: float = ALPHA, critical: float | None = None) -> float | None:
    """The 80 %-power change of a t test (its own power: the t approximation is the t test's),
    from the standard error at its upper bound (spread_at_bound); None when nothing spread (no
    power can be stated from a spread of 0) or the degrees of freedom are too few. critical: the
    test's own two-sided critical value where it is not Student's t at df (the history test's)."""
    if not (se > 0 and df >= 1 and alpha > 0):
        return None
    k = (t_quantile(1 - alpha / 2, df) if critical is None else critical) + t_quantile(POWER, df)
    return float(np.expm1(k * spread_at_bound(se, df)) * 100)


def _t_ci(mean: float, se: float, df: float) -> tuple[float, float] | None:
    if not (se >= 0 and df >= 1):
        return None
    h = t_quantile(1 - ALPHA / 2, df) * se
    return (float(math.exp(mean - h)), float(math.exp(mean + h)))


def alpha_text(alpha: float) -> str:
    """A level as said: four decimals, or two significant digits below 0.0001 (an early --detect
    look's, which four decimals would show as 0.0000)."""
    return f"{alpha:.4f}" if alpha >= 1e-4 else f"{alpha:.2g}"


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


def _share_as_far(sums: np.ndarray, obs: float) -> float:
    """The share of sign vectors' |sums| at least the observed one (np.mean's, without its overhead)."""
    return np.count_nonzero(sums >= obs - 1e-12 * max(1.0, obs)) / len(sums)


def sign_flip_p(d: np.ndarray) -> float:
    """Exact two-sided sign-flip permutation p of mean(d) (seeded Monte Carlo beyond 2^16)."""
    d = np.asarray(d, float)
    return _share_as_far(np.abs(sign_vectors(len(d)) @ d), abs(d.sum()))


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
    signs = sign_vectors(n)
    signed, counts = signs @ d, signs.sum(axis=1)      # S·d and S·1, once: S·(d − δ) = S·d − δ·S·1

    def p_at(shift: float) -> float:
        """sign_flip_p(d - shift), without a product of every sign vector a step (the first row is
        all +1: the observed sum, in the same arithmetic as the others)."""
        sums = np.abs(signed - shift * counts)
        return _share_as_far(sums, sums[0])

    def edge(outside: float) -> float:
        """Bisect between a rejected shift and the mean; returns the outermost accepted shift."""
        rej, acc = outside, mean
        for _ in range(64):
            mid = (rej + acc) / 2
            if mid in (rej, acc):
                break
            if p_at(mid) > alpha:
                acc = mid
            else:
                rej = mid
        return acc
    return edge(float(d.min()) - span), edge(float(d.max()) + span)


# K(n): the shift, in standard errors of the mean log ratio (σ / √n), that the exact sign-flip test
# at α 0.05 detects with 80 % power on n normal pairs (bench/signflip_power.py --trials 10000,
# seeded). From 12 pairs on the simulation agrees with the t approximation within its own noise
# (12: 3.049 against 3.077; 18: 2.990 against 2.973), which is used there.
SIGN_FLIP_K = {6: 4.391, 7: 3.525, 8: 3.373, 9: 3.266, 10: 3.160, 11: 3.126}


def signflip_detectable(sd: float, n: int, alpha: float = ALPHA) -> float | None:
    """The change (in %) that the exact sign-flip test on n pairs of log-ratio spread sd sees with
    80 % power; None under MIN_BLOCKS pairs (no change can be called) or when nothing spread
    (sd 0: no spread measured, so no power can be stated). At another alpha (a --detect look)
    the t approximation at that alpha, scaled by the table's excess over it at 0.05."""
    if n < MIN_BLOCKS or not sd > 0:
        return None
    k_t = t_quantile(1 - ALPHA / 2, n - 1) + t_quantile(POWER, n - 1)
    k = SIGN_FLIP_K.get(n, k_t)
    if alpha != ALPHA:
        k *= (t_quantile(1 - alpha / 2, n - 1) + t_quantile(POWER, n - 1)) / k_t
    return float(np.expm1(k * spread_at_bound(sd, n - 1) / math.sqrt(n)) * 100)


def paired(a: list[float], b: list[float], alpha: float = ALPHA) -> Estimate | None:
    """a[i], b[i]: the same block's iterations of A and B (positive values). alpha: the level the
    interval and the detectable change are for (a --detect run's look: report.sequential)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if len(x) != len(y) or len(x) < 2 or np.any(x <= 0) or np.any(y <= 0):
        return None
    d = np.log(y) - np.log(x)
    n = len(d)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    p = 1.0 if np.all(d == 0) else sign_flip_p(d)
    # every pair's ratio alike: a zero-width interval estimates nothing (no spread was measured), so
    # none is given and no "same" can follow from it
    ci = sign_flip_ci(d, alpha) if alpha > 0 and sd > 0 else None
    return Estimate(math.exp(mean), p, None if ci is None else (math.exp(ci[0]), math.exp(ci[1])),
                    signflip_detectable(sd, n, alpha), f"{n} pairs", sd=sd, pairs=n)


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


# The history design needs at least this many earlier runs of identical settings; with fewer,
# compare does not use the history at all.
MIN_HISTORY_RUNS = 5


def between_run_sd(history: list[float]) -> tuple[float, float] | None:
    """The spread of one run's log median around the level, from the history's run medians, with its
    degrees of freedom: von Neumann's mean square successive difference, √(Σ Δ² / 2(n − 1)), which a
    slow drift or one step in the history barely inflates, and whose efficiency against the plain
    sd gives its degrees of freedom, 2(n − 1)² / (3n − 4) (Satterthwaite; 2.9 for 5 runs, 12.7 for
    20). None under MIN_HISTORY_RUNS runs or when the runs do not vary at all."""
    h = np.log(np.asarray([v for v in history if v > 0], float))
    n = len(h)
    if n < MIN_HISTORY_RUNS:
        return None
    sd = float(math.sqrt(np.mean(np.diff(h) ** 2) / 2))
    return (sd, 2 * (n - 1) ** 2 / (3 * n - 4)) if sd > 0 else None


# The history design's null is taken as the heavier of two: normal run medians (Student's t with
# between_run_sd's degrees of freedom) and run medians with Student's t₃ tails (an occasional far
# run), simulated once per history size from this seed with HEAVY_DRAWS draws. Normal alone called
# 7.0-7.3 % of heavy-tailed A/As at every history size (bench/calibration.py): the new run's own
# distance from the base is heavy-tailed there, which no estimate of the spread can make normal.
HEAVY_DRAWS = 100_000
HEAVY_SEED = 20261202


@functools.cache
def _heavy_null(n: int) -> np.ndarray:
    """|log(new / base)| / (√2 · between_run_sd) of A/As under t₃ run medians, n earlier runs,
    sorted: the history test's heavy-tailed null."""
    rng = np.random.default_rng(HEAVY_SEED + n)
    x = rng.standard_t(3, (HEAVY_DRAWS, n + 2))
    sd = np.sqrt(np.mean(np.diff(x[:, :n], axis=1) ** 2, axis=1) / 2)
    return np.sort(np.abs(x[:, -1] - x[:, -2]) / (sd * math.sqrt(2)))


def history_critical(n: int, df: float, alpha: float = ALPHA) -> float:
    """The history test's two-sided critical value, in standard errors: the larger of Student's t at
    df and the heavy-tailed null's (1 − alpha) quantile at n earlier runs."""
    null = _heavy_null(n)
    return max(float(t_quantile(1 - alpha / 2, df)), float(null[min(len(null) - 1, math.ceil((1 - alpha) * len(null)) - 1)]))


def history_p(z: float, n: int, df: float) -> float:
    """Two-sided p of |z| standard errors: the larger of Student's t's and the heavy-tailed null's."""
    null = _heavy_null(n)
    heavy = (len(null) - int(np.searchsorted(null, z, side="left")) + 1) / (len(null) + 1)
    return max(2 * t_sf(z, df), heavy)


def history_detectable(se: float, n: int, df: float, alpha: float = ALPHA) -> float | None:
    """The change the history test sees with 80 % power: its own critical value plus t₀.₈ at df, times
    the median-unbiased standard error."""
    return _mde(se, df, alpha, history_critical(n, df, alpha)) if se > 0 and df >= 1 else None


def history(base: float, new: float, earlier: list[float], alpha: float = ALPHA) -> Estimate | None:
    """One run a side (their medians) judged against earlier runs of identical settings: the log
    ratio in units of √2 · between_run_sd, against the heavier of the normal and t₃ nulls (p, interval
    and detectable change alike). It replaced a robust MAD of successive differences taken as exact
    with n − 1 degrees of freedom, which called 14 % of A/As with 5 history runs, and then Student's t
    alone, which called 7 % of heavy-tailed ones (bench/calibration.py measures this one)."""
    est = between_run_sd(earlier)
    if est is None or base <= 0 or new <= 0:
        return None
    sd, df = est
    n = len([v for v in earlier if v > 0])
    diff = math.log(new) - math.log(base)
    se = sd * math.sqrt(2)
    half = history_critical(n, df) * se
    return Estimate(math.exp(diff), history_p(abs(diff) / se, n, df), (math.exp(diff - half), math.exp(diff + half)),
                    history_detectable(se, n, df, alpha), f"{n} earlier runs of identical settings")


def separate_runs_detectable(sd: float, n: int, df: float) -> float | None:
    """What the history design sees with 80 % power between two runs whose medians each spread sd
    (log scale), measured over n runs with df degrees of freedom (zfsperf calibrate prints it)."""
    return history_detectable(sd * math.sqrt(2), n, df)


def _t_estimate(diff: float, se: float, df: float, n: str, alpha: float = ALPHA) -> Estimate:
    if se <= 0:
        p = 1.0 if diff == 0 else 0.0
    else:
        p = 2 * t_sf(abs(diff) / se, df)
    return Estimate(math.exp(diff), p, _t_ci(diff, se, df), _mde(se, df, alpha) if se > 0 else None, n)


def unpaired_detectable(a: list[float], b: list[float]) -> float | None:
    """The detectable change of two independent samples (logs, pooled variance)."""
    x, y = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    if len(x) < 2 or len(y) < 2 or np.any(~np.isfinite(x)) or np.any(~np.isfinite(y)):
        return None
    df = len(x) + len(y) - 2
    s2 = ((len(x) - 1) * x.var(ddof=1) + (len(y) - 1) * y.var(ddof=1)) / df
    return _mde(math.sqrt(s2 * (1 / len(x) + 1 / len(y))), df)


# ---------------------------------------------------------------- iterations a side (Mann-Whitney)
EXACT_LIMIT = 13_000      # tied samples: exact permutation p while C(n1+n2, n1) is at most this (8 vs 8)


def min_p(n1: int, n2: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney test can give for these sample sizes."""
    return 2.0 / math.comb(n1 + n2, n1) if n1 and n2 else 1.0


def needed_per_side(alpha: float = ALPHA) -> int:
    n = 2
    while min_p(n, n) >= alpha:
        n += 1
    return n


@functools.lru_cache(maxsize=512)
def _u_cdf(n1: int, n2: int) -> np.ndarray:
    """P(U <= u) for u = 0 … n1·n2 under the null hypothesis, no ties (exact counts)."""
    # f[m][n] = counts of U over the arrangements of m and n values; f(m,n,u) = f(m-1,n,u-n) + f(m,n-1,u)
    prev = [np.ones(1)] + [None] * n2          # m = 0: U is 0 in the one arrangement
    for n in range(1, n2 + 1):
        prev[n] = np.ones(1)
    for m in range(1, n1 + 1):
        cur: list = [np.ones(1)] + [None] * n2
        for n in range(1, n2 + 1):
            a = np.concatenate([np.zeros(n), prev[n]])       # f(m-1, n, u-n)
            b = cur[n - 1]
            size = m * n + 1
            out = np.zeros(size)
            out[:len(a)] += a[:size]
            out[:len(b)] += b[:size]
            cur[n] = out
        prev = cur
    counts = prev[n2]
    return np.cumsum(counts) / counts.sum()


def ratio_ci(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free CI for new/old as a percentage change: the Mann-Whitney test inverted on
    log values (pairwise differences log b_j - log a_i, order statistics k and n1·n2 + 1 - k).
    None when the sizes cannot give `level` (2 vs 2 at 95 %) or a value is not positive."""
    n1, n2 = len(a), len(b)
    if n1 < 1 or n2 < 1 or np.any(a <= 0) or np.any(b <= 0):
        return None
    d = np.sort((np.log(b)[:, None] - np.log(a)[None, :]).ravel())
    tail = (1 - level) / 2
    if n1 * n2 <= 2500:
        cdf = _u_cdf(min(n1, n2), max(n1, n2))
        ok = np.nonzero(cdf <= tail)[0]          # P(U <= k-1) <= tail  <=>  k-1 in ok
        if len(ok) == 0:
            return None
        k = int(ok[-1]) + 1
    else:
        mu, sd = n1 * n2 / 2, math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
        k = max(1, int(math.floor(mu - norm_ppf(1 - tail) * sd)))
    lo, hi = d[k - 1], d[n1 * n2 - k]
    return (float(np.expm1(lo) * 100), float(np.expm1(hi) * 100))


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value, exact for small samples: without ties scipy's exact null
    distribution; with ties an exact permutation test over every arrangement (midranks), where the
    normal approximation is far off ([1,1,1,1] vs [2,2,2,2]: exact 0.029, approximation 0.013);
    the tie-corrected normal approximation only beyond EXACT_LIMIT arrangements (n ≥ 9 a side)."""
    # scipy.stats is imported here, not with the module: every `zfsperf run` imports this module
    # (the HTML exporter) and paid for it, ~0.8 s on a host, ~23 s in a guest under emulation
    from scipy import stats as sps
    tied = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
    if not tied and len(a) + len(b) <= 100:
        return float(sps.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)
    if tied and math.comb(len(a) + len(b), len(a)) <= EXACT_LIMIT:
        res = sps.permutation_test((a, b), lambda x, y, axis: sps.mannwhitneyu(x, y, axis=axis,
                                                                             method="asymptotic").statistic,
                                   permutation_type="independent", alternative="two-sided",
                                   n_resamples=np.inf, vectorized=True)
        return float(min(1.0, res.pvalue))
    return float(sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)
