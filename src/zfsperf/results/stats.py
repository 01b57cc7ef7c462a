"""Statistics over iterations: what a performance engineer needs to trust a number."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass
class Summary:
    n: int
    mean: float
    median: float
    stddev: float
    cv: float              # % (stddev / mean)
    min: float
    max: float
    ci_low: float          # 95 % confidence interval of the mean (Student t)
    ci_high: float
    outliers: list[int]    # indexes flagged by the median/MAD rule

    def as_dict(self) -> dict:
        return self.__dict__.copy()


# Distributions from scipy.special, not scipy.stats: every `zfsperf run` that decides steady state or
# judges an A/B needs them, and scipy.stats costs 13-15 s to import inside the OpenZFS guest under
# emulation (scipy.special 2 s, measured 2026-12-05), ~0.5 s on a host: 10-20 s of every in-guest
# run. scipy.stats stays for what only compare of separate runs asks (Mann-Whitney, permutations).
# tests/test_stats_special.py holds each equal to scipy.stats's.

@lru_cache(maxsize=4096)
def t_quantile(q: float, df: float) -> float:
    """Student's t quantile, kept once computed: reports summarise thousands of cases, a growing
    window asks the same few after every iteration, a calibration the same few thousand times."""
    from scipy import special
    return float(special.stdtrit(df, q))


def t_sf(x: float, df: float) -> float:
    """Student's t survival function, P(T > x)."""
    from scipy import special
    return float(special.stdtr(df, -x))


@lru_cache(maxsize=4096)
def chi2_ppf(q: float, df: float) -> float:
    """The chi-squared quantile."""
    from scipy import special
    return float(special.chdtri(df, 1 - q))


def norm_ppf(q: float) -> float:
    from scipy import special
    return float(special.ndtri(q))


def norm_cdf(x: float) -> float:
    from scipy import special
    return float(special.ndtr(x))


def norm_sf(x: float) -> float:
    from scipy import special
    return float(special.ndtr(-x))


@dataclass
class Line:
    """A least-squares line, as scipy.stats.linregress gives it (the fields zfsperf reads)."""
    slope: float
    intercept: float
    pvalue: float           # two-sided, of slope = 0 (Student's t, n − 2 degrees of freedom)
    stderr: float           # of the slope


def line_fit(x: np.ndarray, y: np.ndarray) -> Line:
    """Ordinary least squares of y on x (n ≥ 3 points, x not all equal)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    n = len(x)
    dx, dy = x - x.mean(), y - y.mean()
    sxx, sxy, syy = float(dx @ dx), float(dx @ dy), float(dy @ dy)
    slope = sxy / sxx
    intercept = float(y.mean()) - slope * float(x.mean())
    df = n - 2
    if syy == 0 or df <= 0:                  # y constant (no correlation to test) or 2 points: as scipy
        return Line(slope, intercept, float("nan"), float("nan"))
    r = min(max(sxy / math.sqrt(sxx * syy), -1.0), 1.0)   # the correlation, and from it t, as scipy does
    stderr = math.sqrt((1 - r * r) * syy / sxx / df)
    t = r * math.sqrt(df / ((1 - r + 1e-20) * (1 + r + 1e-20)))
    p = 2 * t_sf(abs(t), df)
    return Line(slope, intercept, p, stderr)


def theil_slope(x: np.ndarray, y: np.ndarray) -> float:
    """The Theil-Sen slope: the median of the slopes between every two points of distinct x."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    dx = x[:, None] - x[None, :]
    dy = y[:, None] - y[None, :]
    up = dx > 0
    return float(np.median(dy[up] / dx[up]))


def median_filter5(y: np.ndarray) -> np.ndarray:
    """A running median of 5, the ends mirrored (d c b | a b c d | c b a): scipy.ndimage's
    median_filter(y, 5, mode="mirror") without its import (7 s in the guest). Fewer than 3 values
    are returned as they are."""
    y = np.asarray(y, float)
    if len(y) < 3:
        return y.copy()
    ext = np.pad(y, 2, mode="reflect")
    return np.median(np.lib.stride_tricks.sliding_window_view(ext, 5), axis=1)


def t975(df: int) -> float:
    """Student's t quantile for a two-sided 95 % interval."""
    return t_quantile(0.975, df)


def mad_outliers(values: np.ndarray, threshold: float = 3.5) -> list[int]:
    """Indexes whose modified z-score 0.6745·|x − median| / MAD exceeds threshold (Iglewicz-Hoaglin)."""
    if len(values) < 3:
        return []
    med = float(np.median(values))
    mad = float(np.median(np.abs(values - med)))
    if mad == 0:
        return []
    z = 0.6745 * np.abs(values - med) / mad
    return [int(i) for i in np.nonzero(z > threshold)[0]]


def summarise(values: list[float]) -> Summary:
    a = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    n = len(a)
    if n == 0:
        nan = float("nan")
        return Summary(0, nan, nan, nan, nan, nan, nan, nan, nan, [])
    mean = float(a.mean())
    sd = float(a.std(ddof=1)) if n > 1 else 0.0
    if n > 1 and sd > 0:
        half = t975(n - 1) * sd / math.sqrt(n)
    else:
        half = 0.0 if n > 1 else float("nan")
    return Summary(n, mean, float(np.median(a)), sd, (100 * sd / mean) if mean else float("nan"),
                   float(a.min()), float(a.max()), mean - half, mean + half, mad_outliers(a))
