"""What a steady-state decision takes (Criteria) and gives (a Verdict of per-metric checks).
Both methods fill the same records, so results, `zfsperf steady` and the charts read one shape."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError, shown

METHODS = ("changepoint", "snia")
# The changepoint method's window follows the series: n / WINDOW_PER samples (100 at 3,000), never
# fewer than the window given (10 by default) nor more than WINDOW_MAX. A 10-sample window on a
# series of thousands restarts the steady stretch after every short excursion, so its onset lands
# near the end (issue 43: a median onset error of 1,353 samples on 3,000-sample series, 247 with a
# window of 100). A default iteration (10-60 samples at its time scale) keeps the window of 10.
WINDOW_PER = 30
WINDOW_MAX = 300
STEADY_KINDS = ("flat", "warm-up", "slowdown")     # a changepoint class that has a steady final segment
UNDECIDED_KINDS = ("too short", "can't tell")       # ... that neither has one nor rules one out


@dataclass
class Criteria:
    window: int = 10            # W: SNIA's window; the changepoint method's shortest steady final segment
    range: float = 0.20         # SNIA: max − min ≤ R · mean
    slope: float = 0.10         # SNIA: |slope| · span ≤ S · mean
    quorum: float = 0.70        # share of the (other) metrics that must pass
    method: str = "changepoint"
    tolerance: float = 0.05     # changepoint: a level change or trend below this share of the level is none
    scale: bool = True          # changepoint: the window grows with the series (for_series); False: as given
    wander: bool = True         # changepoint: a level that wanders and comes back is steady (returning_stretch)
    strict: bool = True         # changepoint (issue 86), on series of WINDOW_PER windows or more: slopes that
                                # zigzag are not one level, a wander's returns counted past a band, a last level
                                # after a back-and-forth must outlast the others (else can't tell)

    def for_series(self, n: int) -> "Criteria":
        """The criteria a series of n samples is judged by: the changepoint window scaled to its
        length (see WINDOW_PER), unless the window was given; SNIA's window is its rule's own."""
        if not self.scale or self.method != "changepoint":
            return self
        return replace(self, window=min(WINDOW_MAX, max(self.window, n // WINDOW_PER)))

    def validate(self) -> None:
        if self.window < 2:
            raise InputError(f"window must be at least 2 samples, got {self.window}", field="window")
        for name in ("range", "slope", "tolerance"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name} must be positive", field=name)
        if not 0 < self.quorum <= 1:
            raise InputError(f"quorum must be in (0, 1], got {self.quorum}", field="quorum")
        if self.method not in METHODS:
            raise InputError(f"method must be one of {', '.join(METHODS)}, got {shown(self.method)}", field="method")


def num(x: float) -> float | None:
    return None if x != x else round(float(x), 9)


@dataclass
class MetricCheck:
    """One metric's answer. SNIA fills range/excursion and the two oks over its window; the
    changepoint method fills kind (flat, warm-up, slowdown, no steady state, can't tell, too short), the onset
    of the steady stretch, the change points it found and, for a level that wanders and comes
    back, how often its moving mean crossed the stretch's mean."""
    name: str
    readable: bool
    mean: float = math.nan
    range: float = math.nan               # max − min over the window
    excursion: float = math.nan           # |slope| · span (SNIA: the window; changepoint: the final segment)
    range_ok: bool = True
    slope_ok: bool = True
    zero: bool = False                    # readable but 0 in every sample: not evidence of anything
    kind: str | None = None               # changepoint class
    onset: int | None = None              # changepoint: the 1-based first sample of the steady segment
    changepoints: list[int] = field(default_factory=list)
    returns: int | None = None            # changepoint: a wandering level, how often it crossed its mean
    held: tuple[int, int] | None = None   # changepoint, "can't tell": (samples its last level held, the longest earlier)

    @property
    def steady(self) -> bool:
        if self.kind is not None:
            return self.kind in STEADY_KINDS
        return self.range_ok and self.slope_ok

    @property
    def evidence(self) -> bool:
        """Counts in the vote: it was read and it is not a constant zero."""
        return self.readable and not self.zero

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"readable": self.readable, "mean": num(self.mean), "range": num(self.range),
                               "excursion": num(self.excursion), "steady": self.steady}
        if self.kind is None:
            out.update(range_ok=self.range_ok, slope_ok=self.slope_ok)
        else:
            out.update(kind=self.kind, onset=self.onset, changepoints=self.changepoints)
            if self.returns is not None:
                out["returns"] = self.returns
            if self.held is not None:
                out["held"] = {"last": self.held[0], "longest_before": self.held[1]}
        if self.zero:
            out["zero"] = True
        return out


@dataclass
class Verdict:
    steady: bool
    first_steady_index: int | None        # 1-based sample count at which it first counts as steady
    samples: int
    criteria: Criteria
    metrics: dict[str, MetricCheck] = field(default_factory=dict)   # at the decision point (or the end)
    onset: int | None = None              # 1-based first sample of the steady stretch
    headline: str | None = None           # the metric with a veto (changepoint method)
    note: str | None = None               # why not steady, in words

    @property
    def outcome(self) -> str:
        """steady, not steady, or can't tell: too few samples for a window, or (changepoint) a
        headline whose last level has not yet outlasted the levels it moved between."""
        if self.steady:
            return "steady"
        head = self.metrics.get(self.headline or "")
        if self.samples < self.criteria.window or (head is not None and head.kind in UNDECIDED_KINDS):
            return "can't tell"
        return "not steady"

    def as_dict(self) -> dict[str, Any]:
        return {"steady": self.steady, "outcome": self.outcome, "method": self.criteria.method, "first_steady_index": self.first_steady_index,
                "onset": self.onset, "samples": self.samples, "headline": self.headline, "note": self.note,
                "criteria": dict(self.criteria.__dict__),
                "metrics": {k: m.as_dict() for k, m in self.metrics.items()},
                "unreadable": sorted(k for k, m in self.metrics.items() if not m.readable),
                "zero": sorted(k for k, m in self.metrics.items() if m.zero)}
