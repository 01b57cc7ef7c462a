"""The SNIA PTS range/slope rule per metric and a vote across metrics (the SDC 2020 talk): `method = "snia"`.

Per metric y over the last W samples (times t):
  range:  max(y) − min(y) ≤ R · mean(y)                        (R = 0.20)
  slope:  |b| · (t_last − t_first) ≤ S · mean(y), b the least-squares slope of y on t   (S = 0.10)
The system is steady when the metrics that pass, plus those that could not be read in the window
(which count as steady and are flagged: "do no harm"), are at least a quorum of the metrics present
(default 70 %). A metric that never appears in the series (no L2ARC) is absent, not failing; one
that is 0 throughout is no evidence (excluded); with no readable, non-zero metric at all the answer
is "not steady", never a vacuous yes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cache import cache_ok
from .series import matrix
from .verdict import Criteria, MetricCheck, Verdict


def check_metric(name: str, t: np.ndarray, y: np.ndarray, c: Criteria) -> MetricCheck:
    ok = ~np.isnan(y)
    if ok.sum() < 2:
        return MetricCheck(name, readable=False)          # counts as steady, flagged
    t, y = t[ok], y[ok]
    mean = float(y.mean())
    rng = float(y.max() - y.min())
    span = float(t[-1] - t[0])
    slope = float(np.polyfit(t, y, 1)[0]) if span > 0 else 0.0
    exc = abs(slope) * span
    tol = abs(mean)
    return MetricCheck(name, readable=True, mean=mean, range=rng, excursion=exc,
                       range_ok=rng <= c.range * tol + 1e-12, slope_ok=exc <= c.slope * tol + 1e-12,
                       zero=bool(np.all(y == 0)))


def vote(checks: dict[str, MetricCheck], quorum: float) -> bool:
    counted = [m for m in checks.values() if not m.zero]
    if not any(m.evidence for m in counted):
        return False                                  # nothing read, or only zeros: no evidence
    passing = sum(1 for m in counted if m.steady)     # unreadable ones pass by construction
    return passing >= quorum * len(counted) - 1e-9


def window_checks(t: np.ndarray, names: list[str], y: np.ndarray, end: int, c: Criteria) -> dict[str, MetricCheck]:
    lo = end - c.window
    return {n: check_metric(n, t[lo:end], y[lo:end, j], c) for j, n in enumerate(names)}


def decide(samples: list[dict[str, Any]], c: Criteria, *, active_bytes: int | None = None) -> Verdict:
    """First window (sliding one sample at a time) in which the vote says steady (and, with
    active_bytes, the cache gate holds at the window's last sample)."""
    t, names, y = matrix(samples)
    n = len(samples)
    last: dict[str, MetricCheck] = {}
    for end in range(c.window, n + 1):
        last = window_checks(t, names, y, end, c)
        if vote(last, c.quorum) and (active_bytes is None or cache_ok(samples[end - 1], active_bytes) is not False):
            return Verdict(steady=True, first_steady_index=end, samples=n, criteria=c, metrics=last,
                           onset=end - c.window + 1)
    note = None
    if last and not any(m.evidence for m in last.values()):
        note = "no readable, non-zero metric"
    return Verdict(steady=False, first_steady_index=None, samples=n, criteria=c, metrics=last, note=note)
