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
    window: int = 10
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


CACHE_SHARE = 0.85       # of the active data set in cache ...
CACHE_FULL = 0.80        # ... unless the ARC (and L2ARC) are this full


def cache_ok(sample: dict[str, Any], active_bytes: int) -> bool | None:
    """The talk's cache gate on one sample's info: ≥ 85 % of the active data set is in ARC (+L2ARC),
    or the caches are ≥ 80 % full. None when the sample does not say (unreadable: passes)."""
    info = sample.get("info") or {}
    arc_b, c_max = info.get("arc_bytes"), info.get("arc_c_max")
    if not isinstance(arc_b, (int, float)) or not isinstance(c_max, (int, float)) or c_max <= 0:
        return None
    l2_b = info.get("l2_bytes") if isinstance(info.get("l2_bytes"), (int, float)) else 0
    if arc_b + l2_b >= CACHE_SHARE * active_bytes:
        return True
    l2_cap = info.get("l2_capacity")
    l2_full = not isinstance(l2_cap, (int, float)) or l2_cap <= 0 or l2_b >= CACHE_FULL * l2_cap
    return arc_b >= CACHE_FULL * c_max and l2_full


def decide(samples: list[dict[str, Any]], c: Criteria | None = None, *,
           active_bytes: int | None = None) -> Verdict:
    """First window (sliding one sample at a time) in which the vote says steady (and, with
    active_bytes, the cache gate holds at the window's last sample)."""
    c = c or Criteria()
    c.validate()
    t, names, y = _matrix(samples)
    n = len(samples)
    last: dict[str, MetricCheck] = {}
    for end in range(c.window, n + 1):
        last = window_checks(t, names, y, end, c)
        if vote(last, c.quorum) and (active_bytes is None or cache_ok(samples[end - 1], active_bytes) is not False):
            return Verdict(True, end, n, c, last)
    return Verdict(False, None, n, c, last)


MODES = ("record", "gate", "off")


@dataclass
class SteadySpec:
    """A test's `steady = { … }`: how to sample, how to decide, and whether to gate the measurement."""
    mode: str = "record"            # record: sample and record the verdict; gate: precondition until steady
    interval: float = 1.0           # seconds between samples (the talk used 15 s)
    criteria: Criteria = field(default_factory=Criteria)
    timeout: float = 300.0          # gate: give up preconditioning after this long (recorded, never hidden)
    cache_gate: bool = False        # gate also on ≥ 85 % of the active data set in cache
    measure: float | None = None    # gate: seconds of the measurement for time-based workloads

    @classmethod
    def from_dict(cls, d: dict[str, Any], where: Any) -> "SteadySpec":
        """Validate a runfile table; where(key) gives the location of that key for errors."""
        spec = cls()
        for k, v in d.items():
            number = isinstance(v, (int, float)) and not isinstance(v, bool)
            if k == "mode":
                if v not in MODES:
                    raise InputError(f"expected {' | '.join(MODES)}, got {v!r}", **where(k))
                spec.mode = v
            elif k == "cache_gate":
                if not isinstance(v, bool):
                    raise InputError(f"expected true or false, got {v!r}", **where(k))
                spec.cache_gate = v
            elif k == "window":
                if not isinstance(v, int) or isinstance(v, bool) or v < 2:
                    raise InputError(f"expected a whole number of samples >= 2, got {v!r}", **where(k))
                spec.criteria.window = v
            elif k in ("interval", "timeout", "measure"):
                from .units import parse_duration
                try:
                    secs = parse_duration(v)
                except ValueError as e:
                    raise InputError(str(e), **where(k)) from None
                if secs <= 0 or (k == "interval" and secs < 0.2):
                    raise InputError(f"{k} must be {'at least 0.2 s' if k == 'interval' else 'positive'}",
                                     **where(k))
                setattr(spec, k, secs)
            elif k in ("range", "slope", "quorum"):
                if not number or not 0 < v <= (1 if k == "quorum" else 10):
                    raise InputError(f"expected a fraction like 0.2, got {v!r}", **where(k))
                setattr(spec.criteria, k, float(v))
            else:
                raise InputError("unknown steady field (expected cache_gate, interval, measure, mode, quorum, "
                                 "range, slope, timeout, window)", **where(k))
        return spec

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "interval": self.interval, "timeout": self.timeout,
                "cache_gate": self.cache_gate, "measure": self.measure, **self.criteria.__dict__}


def summary(v: Verdict, samples: list[dict[str, Any]], spec: SteadySpec) -> dict[str, Any]:
    """What every result carries: the verdict, the time to steady, and which metrics passed."""
    first = v.first_steady_index
    out: dict[str, Any] = {
        "mode": spec.mode, "steady": v.steady, "first_steady_index": first,
        "time_to_steady": samples[first - 1]["t"] if first else None, "samples": len(samples),
        "passed": sorted(k for k, m in v.metrics.items() if m.readable and m.steady),
        "failed": sorted(k for k, m in v.metrics.items() if not m.steady),
        "unreadable": sorted(k for k, m in v.metrics.items() if not m.readable),
        "criteria": spec.as_dict(),
    }
    if not v.steady:
        if len(samples) < spec.criteria.window:
            out["note"] = f"only {len(samples)} samples, fewer than the window of {spec.criteria.window}"
        else:
            span = samples[-1]["t"] if samples else 0
            out["note"] = f"not steady after {span:.0f} s"
    return out


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
            if i == len(lines) and out:
                break                     # torn last line of a killed run
            raise InputError(f"not JSON: {e}", file=path, line=i) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("t"), (int, float)) or \
                not isinstance(obj.get("metrics"), dict):
            raise InputError('not a series sample: expected {"t": seconds, "metrics": {...}}', file=path, line=i,
                             field="t" if not isinstance(obj, dict) or "t" not in obj else "metrics")
        out.append(obj)
    if not out:
        raise InputError("no samples: not a zfsperf series file (series/<case>.i<N>.jsonl)", file=path)
    return out


def resample(samples: list[dict[str, Any]], interval: float) -> list[dict[str, Any]]:
    """Keep one sample per interval seconds (re-decide a 1 s series at the talk's 15 s)."""
    out, next_t = [], None
    for s in samples:
        if next_t is None or s["t"] >= next_t - 1e-9:
            out.append(s)
            next_t = s["t"] + interval
    return out
