"""Steady state: is the system in a steady state, and from which sample? (after "Array Level Steady State Detection for ZFS Storage Servers", SNIA SDC 2020)

Two methods behind one `decide()`, one record and one CLI (`zfsperf steady --method`):
- `changepoint` (the default): change points per metric (PELT), classes flat / warm-up / slowdown /
  no steady state, the workload's headline metric has a veto (steady/changepoint.py);
- `snia`: the SNIA PTS range/slope rule per window and a vote across metrics (steady/snia.py).
A series is a list of samples {"t": seconds, "metrics": {name: number | null}, "info": {...}}.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError, shown
from ..results.record import SteadyMode, SteadyRecord
from . import rounds, snia, timescale
from .cache import CACHE_FULL, CACHE_SHARE, cache_ok
from .series import decision_samples, matrix, read_series, resample
from .snia import check_metric, vote, window_checks
from .verdict import METHODS, STEADY_KINDS, UNDECIDED_KINDS, Criteria, MetricCheck, Verdict

__all__ = ["rounds", "timescale", "CACHE_FULL", "CACHE_SHARE", "METHODS", "MODES", "STEADY_KINDS", "UNDECIDED_KINDS", "Criteria", "MetricCheck",
           "SteadySpec", "Verdict", "cache_ok", "check_metric", "decide", "matrix", "read_series", "resample",
           "summary", "vote", "window_checks", "decision_samples"]


def decide(samples: list[dict[str, Any]], c: Criteria | None = None, *, active_bytes: int | None = None,
           headline: str | None = None) -> Verdict:
    """The verdict on a series by c.method. headline: the series metric of the workload's headline
    figure (workload_mibs, workload_iops), which has a veto in the changepoint method; with
    active_bytes, steady also needs the cache gate to hold."""
    c = c or Criteria()
    c.validate()
    samples = decision_samples(samples)
    c = c.for_series(len(samples))
    if c.method == "snia":
        return snia.decide(samples, c, active_bytes=active_bytes)
    # imported when first needed (numpy's statistics, scipy.special's distributions: results.stats)
    from . import changepoint
    return changepoint.decide(samples, c, active_bytes=active_bytes, headline=headline)


MODES = tuple(m.value for m in SteadyMode)


@dataclass
class SteadySpec:
    """A test's `steady = { … }`: how to sample, how to decide, and whether to gate the measurement."""
    mode: SteadyMode = SteadyMode.RECORD    # record the verdict, or gate: precondition until steady
    interval: float = 1.0           # seconds between samples (the SDC 2020 talk used 15 s)
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
                    raise InputError(f"expected {' | '.join(MODES)}, got {shown(v)}", **where(k))
                spec.mode = SteadyMode(v)
            elif k == "cache_gate":
                if not isinstance(v, bool):
                    raise InputError(f"expected true or false, got {shown(v)}", **where(k))
                spec.cache_gate = v
            elif k == "window":
                if not isinstance(v, int) or isinstance(v, bool) or v < 2:
                    raise InputError(f"expected a whole number of samples >= 2, got {shown(v)}", **where(k))
                spec.criteria.window, spec.criteria.scale = v, False
            elif k in ("interval", "timeout", "measure"):
                from ..units import parse_duration
                try:
                    secs = parse_duration(v)
                except ValueError as e:
                    raise InputError(str(e), **where(k)) from None
                if secs <= 0 or (k == "interval" and secs < 0.2):
                    raise InputError(f"{k} must be {'at least 0.2 s' if k == 'interval' else 'positive'}",
                                     **where(k))
                setattr(spec, k, secs)
            elif k == "method":
                if v not in METHODS:
                    raise InputError(f"expected {' | '.join(METHODS)}, got {shown(v)}", **where(k))
                spec.criteria.method = v
            elif k in ("range", "slope", "quorum", "tolerance"):
                if not number or not 0 < v <= (1 if k in ("quorum", "tolerance") else 10):
                    raise InputError(f"expected a fraction like 0.2, got {shown(v)}", **where(k))
                setattr(spec.criteria, k, float(v))
            else:
                raise InputError("unknown steady field (expected cache_gate, interval, measure, method, mode, "
                                 "quorum, range, slope, timeout, tolerance, window)", **where(k))
        return spec

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "interval": self.interval, "timeout": self.timeout,
                "cache_gate": self.cache_gate, "measure": self.measure, **self.criteria.__dict__}


def summary(v: Verdict, samples: list[dict[str, Any]], spec: SteadySpec) -> SteadyRecord:
    """What every result carries: the verdict, the time to steady, and which metrics passed."""
    samples = decision_samples(samples)
    first = v.first_steady_index
    out = SteadyRecord(
        mode=spec.mode, steady=v.steady, first_steady_index=first,
        time_to_steady=samples[first - 1]["t"] if first else None, samples=len(samples),
        method=v.criteria.method, onset=v.onset, headline=v.headline,
        passed=sorted(k for k, m in v.metrics.items() if m.evidence and m.steady),
        failed=sorted(k for k, m in v.metrics.items() if m.evidence and not m.steady),
        unreadable=sorted(k for k, m in v.metrics.items() if not m.readable),
        zero=sorted(k for k, m in v.metrics.items() if m.zero),
        criteria=spec.as_dict() | {"window_used": v.criteria.window},
        classes={k: m.kind for k, m in v.metrics.items() if m.kind is not None},
        why=v.note)
    if samples:
        out.span_s = round(samples[-1]["t"] - samples[0]["t"], 3)              # what was judged
        if v.onset:
            out.onset_time = round(samples[v.onset - 1]["t"] - samples[0]["t"], 3)
    if not v.steady:
        if len(samples) < spec.criteria.window:
            out.note = f"only {len(samples)} samples, fewer than the window of {spec.criteria.window}"
        else:
            span = samples[-1]["t"] if samples else 0
            out.note = f"{v.outcome} after {span:.0f} s"
    return out


def recorded_criteria(rec: SteadyRecord) -> Criteria:
    """The criteria an iteration's verdict was decided with, from its record."""
    k, d = rec.criteria or {}, Criteria()
    return Criteria(window=int(k.get("window", d.window)), range=float(k.get("range", d.range)),
                    slope=float(k.get("slope", d.slope)), quorum=float(k.get("quorum", d.quorum)),
                    method=str(k.get("method", rec.method or "snia")), tolerance=float(k.get("tolerance", d.tolerance)),
                    scale=bool(k.get("scale", False)),       # a verdict recorded before the window scaled: fixed
                    wander=bool(k.get("wander", False)),     # ... or before a wandering level counted
                    strict=bool(k.get("strict", False)))     # ... or before its levels were strict (issue 86)


def redecide(raw: list[dict[str, Any]], rec: SteadyRecord) -> tuple[Verdict, list[dict[str, Any]]]:
    """An iteration's verdict decided again from its recorded series, exactly as the run decided it:
    its criteria, its headline, and the samples at its recorded time scale (the running series in
    bins of the recorded span). Returns the verdict and the samples it judged."""
    width = float((rec.timescale or {}).get("span_s") or 0)
    _raw, judged = timescale.judged(decision_samples(raw), rec.headline,
                                    float((rec.criteria or {}).get("interval", 0) or 0), width)
    return decide(judged, recorded_criteria(rec), headline=rec.headline), judged
