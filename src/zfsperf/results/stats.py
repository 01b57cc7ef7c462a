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


@lru_cache(maxsize=4096)
def t_quantile(q: float, df: float) -> float:
    """Student's t quantile, kept once computed: reports summarise thousands of cases, a growing
    window asks the same few after every iteration, a calibration the same few thousand times
    (scipy's ppf is ~0.2 ms a call; scipy.stats is imported here, when first needed: ~0.5 s)."""
    from scipy import stats as sps
    return float(sps.t.ppf(q, df))


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
