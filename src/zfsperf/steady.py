"""Steady state: the SNIA PTS range/slope rule per metric and a vote across metrics (seed 004).

Per metric y over the last W samples (times t):
  range:  max(y) − min(y) ≤ R · mean(y)                        (R = 0.20)
  slope:  |b| · (t_last − t_first) ≤ S · mean(y), b the least-squares slope of y on t   (S = 0.10)
The system is steady when the metrics that pass, plus those that could not be read in the window
(which count as steady and are flagged: "do no harm"), are at least a quorum of the metrics present
(default 70 %). A metric that never appears in the series (no L2ARC) is absent, not failing.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError


@dataclass
class Criteria:
    window: int = 20
    range: float = 0.20
    slope: float = 0.10
    quorum: float = 0.70

    def validate(self) -> None:
        if self.window < 2:
            raise InputError(f"window must be at least 2 samples, got {self.window}", field="window")
        for name in ("range", "slope"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name} must be positive", field=name)
        if not 0 < self.quorum <= 1:
            raise InputError(f"quorum must be in (0, 1], got {self.quorum}", field="quorum")


@dataclass
class MetricCheck:
    name: str
    readable: bool
    mean: float = math.nan
    range: float = math.nan               # max − min over the window
    excursion: float = math.nan           # |slope| · window span
    range_ok: bool = True
    slope_ok: bool = True

    @property
    def steady(self) -> bool:
        return self.range_ok and self.slope_ok

    def as_dict(self) -> dict[str, Any]:
        return {"readable": self.readable, "mean": _num(self.mean), "range": _num(self.range),
                "excursion": _num(self.excursion), "range_ok": self.range_ok, "slope_ok": self.slope_ok,
                "steady": self.steady}


def _num(x: float) -> float | None:
    return None if x != x else round(float(x), 9)


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
    return MetricCheck(name, True, mean, rng, exc, rng <= c.range * tol + 1e-12, exc <= c.slope * tol + 1e-12)


@dataclass
class Verdict:
    steady: bool
    first_steady_index: int | None        # 1-based sample count at which it first counts as steady
    samples: int
    criteria: Criteria
    metrics: dict[str, MetricCheck] = field(default_factory=dict)   # at the decision point (or the end)

    def as_dict(self) -> dict[str, Any]:
        return {"steady": self.steady, "first_steady_index": self.first_steady_index, "samples": self.samples,
                "criteria": self.criteria.__dict__, "metrics": {k: m.as_dict() for k, m in self.metrics.items()},
                "unreadable": sorted(k for k, m in self.metrics.items() if not m.readable)}


def _matrix(samples: list[dict[str, Any]]) -> tuple[np.ndarray, list[str], np.ndarray]:
    names = sorted({k for s in samples for k in (s.get("metrics") or {})})
    t = np.array([float(s["t"]) for s in samples], dtype=float)
    y = np.full((len(samples), len(names)), np.nan)
    for i, s in enumerate(samples):
        for j, n in enumerate(names):
            v = (s.get("metrics") or {}).get(n)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                y[i, j] = float(v)
    return t, names, y


def vote(checks: dict[str, MetricCheck], quorum: float) -> bool:
    if not checks:
        return True
    passing = sum(1 for m in checks.values() if m.steady)       # unreadable ones pass by construction
    return passing >= quorum * len(checks) - 1e-9


def window_checks(t: np.ndarray, names: list[str], y: np.ndarray, end: int, c: Criteria) -> dict[str, MetricCheck]:
    lo = end - c.window
    return {n: check_metric(n, t[lo:end], y[lo:end, j], c) for j, n in enumerate(names)}


def decide(samples: list[dict[str, Any]], c: Criteria | None = None) -> Verdict:
    """First window (sliding one sample at a time) in which the vote says steady."""
    c = c or Criteria()
    c.validate()
    t, names, y = _matrix(samples)
    n = len(samples)
    last: dict[str, MetricCheck] = {}
    for end in range(c.window, n + 1):
        last = window_checks(t, names, y, end, c)
        if vote(last, c.quorum):
            return Verdict(True, end, n, c, last)
    return Verdict(False, None, n, c, last)


def read_series(path: str) -> list[dict[str, Any]]:
    """series/<case>.jsonl: one {"t": seconds, "metrics": {name: number|null}} per line."""
    out = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise InputError(f"cannot read series: {e.strerror}", file=path) from None
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            if i == len(lines):
                break                     # torn last line of a killed run
            raise InputError(f"not JSON: {e}", file=path, line=i) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("t"), (int, float)) or \
                not isinstance(obj.get("metrics", {}), dict):
            raise InputError('expected {"t": seconds, "metrics": {...}}', file=path, line=i)
        out.append(obj)
    return out


def resample(samples: list[dict[str, Any]], interval: float) -> list[dict[str, Any]]:
    """Keep one sample per interval seconds (re-decide a 1 s series at the talk's 15 s)."""
    out, next_t = [], None
    for s in samples:
        if next_t is None or s["t"] >= next_t - 1e-9:
            out.append(s)
            next_t = s["t"] + interval
    return out
