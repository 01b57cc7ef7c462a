"""A latency-target search (issue 73, 4): the highest IOPS at which a fio job's latency percentile
stays under a target, the figure storage engineers size systems by.

One iteration is a bisection over fio's `rate_iops`: first the job unthrottled (its full load: the
most it does, and the latency there), then `latency_steps` runs each at the middle of the bracket
[highest rate that held, lowest that did not]. A step holds when the chosen percentile of the
chosen class's completion latency is at most the target and fio delivered at least HELD_SHARE of
the asked rate (a rate the machine cannot deliver is not held, whatever its latency). The figure
is the bracket's low end (`latency_target_iops`, IOPS): 0 when even the lowest rate tried missed
the target, the full load's IOPS when that held. The bracket, each step's rate, IOPS and latency
are kept with the record (extra["latency_search"]) and said in the case log; an A/B compares the
figure across iterations like any other ("B holds p99 ≤ 2 ms up to 18 % more IOPS")."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

HELD_SHARE = 0.9          # of the asked rate fio must deliver for a step to hold
PERCENTILES = {50: "p50", 90: "p90", 99: "p99", 99.9: "p99.9"}   # the ones fio's figures carry
DEFAULT_STEPS = 5
MAX_STEPS = 12


@dataclass
class Step:
    rate: float | None       # IOPS asked (None: unthrottled, the full load)
    iops: float              # IOPS delivered
    latency_us: float        # the chosen percentile of the chosen class's latency
    held: bool


@dataclass
class Search:
    target_us: float
    percentile: float
    klass: str
    steps: list[Step] = field(default_factory=list)
    low: float = 0.0                 # the highest rate that held (the figure)
    high: float | None = None        # the lowest that did not (None: the full load held)

    def as_dict(self) -> dict[str, Any]:
        return {"target_us": self.target_us, "percentile": self.percentile, "class": self.klass,
                "iops": self.low, "bracket": [self.low, self.high], "steps": [asdict(s) for s in self.steps]}

    def sentence(self) -> str:
        pct = f"p{self.percentile:g}"
        lat = f"{self.klass} {pct} ≤ {format_us(self.target_us)}"
        if self.high is None:
            return f"{lat} held at full load ({self.low:,.0f} IOPS)"
        if self.low == 0:
            return f"{lat} held at no rate tried (the lowest, {self.high:,.0f} IOPS, missed it)"
        return f"{lat} held up to {self.low:,.0f} IOPS (missed at {self.high:,.0f})"


_TARGET_UNITS = {"us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}


def parse_target(value: Any) -> float:
    """A latency target in µs, from "500us", "2ms", "0.5s" or a number of µs (as fio's latency_target)."""
    if isinstance(value, bool):
        raise ValueError(f"not a latency: {value!r}")
    if isinstance(value, (int, float)):
        us = float(value)
    else:
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(us|µs|ms|s)\s*", str(value))
        if not m:
            raise ValueError(f"not a latency: {value!r} (expected e.g. 500us, 2ms, 0.5s)")
        us = float(m.group(1)) * _TARGET_UNITS[m.group(2)]
    if not math.isfinite(us) or us <= 0:
        raise ValueError("must be more than 0")
    return us


def format_us(us: float) -> str:
    return f"{us / 1e6:g} s" if us >= 1e6 else f"{us / 1000:g} ms" if us >= 1000 else f"{us:g} µs"


def search(run: Callable[[float | None], tuple[float, float]], target_us: float, percentile: float, klass: str,
           steps: int = DEFAULT_STEPS) -> Search:
    """Bisect: run(rate) runs the job at that rate (None: unthrottled) and returns (IOPS delivered,
    latency in µs at the percentile)."""
    out = Search(target_us, percentile, klass)
    iops, lat = run(None)
    held = lat <= target_us
    out.steps.append(Step(None, iops, lat, held))
    if held:
        out.low, out.high = iops, None
        return out
    low, high = 0.0, float(int(iops))
    for _ in range(steps):
        rate = float(round((low + high) / 2))       # fio's rate_iops takes whole I/Os a second
        if rate <= low or rate >= high:             # the bracket is as narrow as whole I/Os make it
            break
        got, lat = run(rate)
        held = lat <= target_us and got >= HELD_SHARE * rate
        out.steps.append(Step(rate, got, lat, held))
        if held:
            low = rate
        else:
            high = rate
    out.low, out.high = low, high
    return out


def merged(summaries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A case's searches as one (the passed iterations' extra["latency_search"])."""
    have = [s for s in summaries if s and "steps" in s]
    if not have:
        return None
    first = have[0]
    return {"target_us": first["target_us"], "percentile": first["percentile"], "class": first["class"],
            "iops": [s["iops"] for s in have], "brackets": [s["bracket"] for s in have],
            "steps": [len(s["steps"]) for s in have]}


def held_words(m: dict[str, Any]) -> str:
    """What was held: "read p99 ≤ 2 ms"."""
    return f"{m['class']} p{m['percentile']:g} ≤ {format_us(m['target_us'])}"


def line(m: dict[str, Any] | None) -> str | None:
    """One line for a report: what held, in every iteration."""
    if not m:
        return None
    lows = m["iops"]
    each = "; ".join(f"{lo:,.0f} … {'full load' if hi is None else f'{hi:,.0f}'}" for lo, hi in m["brackets"])
    mean = sum(lows) / len(lows)
    return (f"latency target: {held_words(m)} held up to "
            f"{mean:,.0f} IOPS (mean of {len(lows)} iteration{'s' if len(lows) != 1 else ''}; held … missed: {each})")
