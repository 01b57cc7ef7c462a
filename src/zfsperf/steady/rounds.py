"""A case's steady-state verdict: within each iteration, and across its iterations as SNIA's rounds.

SNIA PTS decides steady state across rounds: the round's measurement over the last W rounds must
stay within a range of R of its mean and its least-squares line must not rise or fall more than S
of the mean across them (W = 5, R = 20 %, S = 10 %). zfsperf applies that rule to a case's
iterations (each a round: a fresh pool, the workload, its headline figure), and adds what each
iteration's own series says at the workload's time scale (steady/timescale.py):

- an iteration whose series had a window of samples at its time scale and was not steady is
  evidence against ("not steady: iteration 3: headline workload_iops: no steady state");
- an iteration steady only after a warm-up or slowdown that began inside the measurement is too:
  its figure averages the transient in ("iteration 2: warm-up until 6.1 s of 20 s measured");
- an iteration too short for a window at its time scale says nothing either way.

The verdict: steady when no iteration is evidence against and the iterations pass the rounds rule;
not steady (with the reason in a few words) otherwise; unjudged when neither level has evidence
(fewer than 3 iterations, each too short).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..results.record import Status

ROUNDS_WINDOW = 5            # SNIA PTS: the last 5 rounds
ROUNDS_RANGE = 0.20          # max - min <= 20 % of the mean
ROUNDS_SLOPE = 0.10          # |slope| across the window <= 10 % of the mean
MIN_ROUNDS = 3               # fewer cannot show a trend


@dataclass
class CaseSteady:
    steady: bool | None          # None: not judged
    why: str                     # in a few words
    iterations: int              # PASS iterations the rounds rule saw
    range_pct: float | None = None
    slope_pct: float | None = None
    time_to_steady_s: float | None = None    # mean over the iterations that had one

    def short(self) -> str:
        if self.steady:
            return "steady"
        return ("not steady: " if self.steady is False else "unjudged: ") + self.why

    def as_dict(self) -> dict[str, Any]:
        return {"steady": self.steady, "why": self.why, "iterations": self.iterations,
                "range_pct": self.range_pct, "slope_pct": self.slope_pct,
                "time_to_steady_s": self.time_to_steady_s}


def rounds_rule(values: list[float]) -> tuple[bool, float, float]:
    """SNIA's range and slope over the last ROUNDS_WINDOW values: (ok, range %, slope %)."""
    y = np.asarray(values[-ROUNDS_WINDOW:], float)
    mean = float(y.mean())
    if mean == 0:
        return False, float("nan"), float("nan")
    rng = float(np.ptp(y)) / abs(mean)
    x = np.arange(len(y), dtype=float)
    slope = abs(float(np.polyfit(x, y, 1)[0])) * (len(y) - 1) / abs(mean) if len(y) > 1 else 0.0
    return rng <= ROUNDS_RANGE and slope <= ROUNDS_SLOPE, 100 * rng, 100 * slope


def within(steady: dict[str, Any], window: int) -> str | None:
    """What one iteration's own verdict says against steadiness, or None (steady, or no evidence)."""
    if not isinstance(steady, dict):
        return None
    n = steady.get("samples") or 0
    if n < window:
        return None                                   # too short at its time scale: no evidence
    if not steady.get("steady"):
        why = steady.get("why") or steady.get("note") or "not steady"
        return why
    kinds = steady.get("classes") or {}
    head = steady.get("headline")
    onset_t = steady.get("onset_time")
    span = steady.get("span_s")
    if head and kinds.get(head) in ("warm-up", "slowdown") and steady.get("mode") == "record" \
            and onset_t is not None and span and onset_t > 0.1 * span:
        return f"{kinds[head]} until {onset_t:.1f} s of {span:.0f} s measured"
    return None


def case_verdict(records: list[dict[str, Any]], headline: str) -> CaseSteady | None:
    """The verdict of one case from its records (None: nothing was sampled or measured)."""
    passed = [r for r in records if r.get("status") == Status.PASS and int(r.get("iteration", 1)) >= 1]
    sampled = [r for r in passed if isinstance(r.get("steady"), dict)]
    if not passed or not sampled:
        return None
    window = int(((sampled[0]["steady"].get("criteria") or {}).get("window")) or 10)
    for r in sampled:
        against = within(r["steady"], window)
        if against:
            return CaseSteady(False, f"iteration {r['iteration']}: {against}", len(passed))
    tts = [r["steady"]["time_to_steady"] for r in sampled if r["steady"].get("time_to_steady") is not None
           and r["steady"].get("samples", 0) >= window]
    tts_mean = sum(tts) / len(tts) if tts else None
    values = [float(r["figures"][headline]["value"]) for r in passed if headline in (r.get("figures") or {})]
    if len(values) < MIN_ROUNDS:
        judged = any((r["steady"].get("samples") or 0) >= window for r in sampled)
        if judged:
            return CaseSteady(True, "each iteration steady at its time scale", len(values),
                              time_to_steady_s=tts_mean)
        return CaseSteady(None, f"{len(values)} iteration(s), each too short for a window at its time scale "
                                f"(the rounds rule needs {MIN_ROUNDS})", len(values))
    ok, rng, slope = rounds_rule(values)
    last = min(len(values), ROUNDS_WINDOW)
    if not ok:
        return CaseSteady(False, f"the last {last} iterations vary {rng:.0f} % (range) / trend {slope:.0f} %",
                          len(values), rng, slope, tts_mean)
    return CaseSteady(True, f"the last {last} iterations within {rng:.1f} % (range), trend {slope:.1f} %",
                      len(values), rng, slope, tts_mean)
