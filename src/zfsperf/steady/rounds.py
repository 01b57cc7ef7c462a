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

The verdict has three outcomes (and unjudged): **steady** when no iteration is evidence against,
the iterations pass the rounds rule and the data rule out a drift beyond the tolerance (the
least-squares line's change across the window has its 95 % interval inside ±S); **not steady** (with
the reason in a few words) when a drift or spread is found; **can't tell** when none is found and
none is ruled out -- five iterations that spread more than about 2.5 % about their line cannot
exclude a drift of 10 %, and the verdict says which drift it could have missed and at what spread it
would not have (or, when the drift's interval lies all on one side of 0 but reaches past ±S, that
a drift was found which may pass the tolerance); unjudged when neither level has evidence (fewer
than 3 iterations, each too short).

Which rounds rule. SNIA's rule was made for solid-state drives, whose rounds agree to a few per
cent; it reads any excursion as a transient. zfsperf's iterations are each a fresh pool and a few
seconds of work on a shared machine: on the 2-core machines this was built on, the default
suite's iterations spread with a CV of 8-10 % with no transient in them (one iteration hit by a
second of host slowness; receive rounds 300 ms, then 500 ms, then 300 ms again). On pure noise
of that size, SNIA's least-squares slope over 5 points exceeds its 10 % a third of the time (its
standard error is about 1.26 CV), so the SNIA rounds rule called steady cases "not steady" at random.
The default (steady method "changepoint") therefore asks the two questions SNIA's criteria stand
for in a way noise cannot answer by itself:

- a trend: the iterations drift -- the least-squares slope differs from zero (t-test, p < 0.05)
  AND the Theil-Sen line (the median of pairwise slopes: one outlying iteration does not tilt it)
  changes by more than S = 10 % of the median across the window;
- a spread: after setting aside the one iteration farthest from the median (a burst that came
  back is not a level; it is named in the verdict), the others lie within R = 20 % of their mean.

What that costs, measured on simulated iterations (bench/steady_eval.py prints it): on pure noise
it says "not steady" 3 % of the time at a 5 % CV and 11 % at 8 % (SNIA's rule: 13 % and 52 %); a
15 % drift over the 5 iterations it calls not steady 95 % of the time at a 2 % CV but only 41 % at
5 % (SNIA: 99 %, 82 %) -- five noisy numbers cannot show a drift, and the verdict says how far the
line moved and how sure the test was, so a reader can judge. `method = "snia"` applies the SNIA PTS
rule exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..results.record import CaseRecord, SteadyMode, SteadyRecord, StopReason
from ..results.stats import line_fit, t_quantile, theil_slope

ROUNDS_WINDOW = 5            # SNIA PTS: the last 5 rounds
ROUNDS_RANGE = 0.20          # max - min <= 20 % of the mean
ROUNDS_SLOPE = 0.10          # |slope| across the window <= 10 % of the mean
MIN_ROUNDS = 3               # fewer cannot show a trend
TREND_ALPHA = 0.05           # Mann-Kendall's significance for a trend (default method)
# iterations = "steady": the case goes on until its verdict is decided, judged on a window that grows
# with it (every counted iteration), its first look at GROW_FIRST iterations, one a new iteration
GROW_FIRST = ROUNDS_WINDOW
GROW_CAP = 12                # the default cap (max_iterations) of such a case
# each look's level: a verdict read after every iteration and stopped at the first decided one errs
# more often than one read once (measured, bench/steady_eval.py --growing: at 95 % a look, "steady"
# for a 15 % drift 6-8 % of cases and "not steady" for none 7-9 % at a 10 % spread); 1 % a look kept
# both within 5 % for caps up to 20 iterations (16 looks); beyond, Bonferroni's α / looks
LOOK_ALPHA = 0.01
MORE_LIMIT = 200             # iterations beyond which "how many more would decide it" is not said


@dataclass
class CaseSteady:
    steady: bool | None          # None: not judged
    why: str                     # in a few words
    iterations: int              # PASS iterations the rounds rule saw
    range_pct: float | None = None
    slope_pct: float | None = None
    time_to_steady_s: float | None = None    # mean over the iterations that had one
    # the evidence the rounds rule judged, stored with the verdict (run.json "verdicts") so that a
    # report shows, and a chart draws, the verdict as it was made
    rule: str | None = None                  # "changepoint" (zfsperf's rounds rule) or "snia"
    figure: str | None = None                # the headline judged
    window: list[int] | None = None          # the iterations of the window
    values: list[float] | None = None        # their figures
    apart: int | None = None                 # the iteration set aside (the default rule)
    line: list[float] | None = None          # the judged line's value at the window's first and last iteration
    trend_ci: list[float] | None = None      # the drift across the window a 95 % interval allows, % (default rule)
    # iterations = "steady": the growing window's level a look, and how many more iterations would
    # decide a "can't tell" at the spread seen (None: decided, or beyond MORE_LIMIT)
    look_alpha: float | None = None
    more: int | None = None

    @property
    def word(self) -> str:
        """The three outcomes, and unjudged: steady (a drift beyond the tolerance ruled out), not
        steady (a drift or change found), can't tell (neither: too few iterations or too much
        spread), unjudged (nothing to judge)."""
        if self.steady:
            return "steady"
        if self.steady is False:
            return "not steady"
        return "can't tell" if self.trend_ci is not None else "unjudged"

    @property
    def drift_found(self) -> bool:
        """The drift's 95 % interval lies all on one side of 0."""
        return one_sided(self.trend_ci)

    def short(self) -> str:
        return "steady" if self.steady else f"{self.word}: {self.why}"

    def as_dict(self) -> dict[str, Any]:
        return {"steady": self.steady, "why": self.why, "iterations": self.iterations,
                "range_pct": self.range_pct, "slope_pct": self.slope_pct,
                "time_to_steady_s": self.time_to_steady_s, "rule": self.rule, "figure": self.figure,
                "window": self.window, "values": self.values, "apart": self.apart, "line": self.line,
                "trend_ci": self.trend_ci,
                # a growing window's (iterations = "steady"), only there: stored verdicts stay as they were
                **({"look_alpha": self.look_alpha, "more": self.more} if self.look_alpha is not None else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CaseSteady":
        return cls(**{k: d.get(k) for k in ("steady", "why", "iterations", "range_pct", "slope_pct",
                                             "time_to_steady_s", "rule", "figure", "window", "values", "apart",
                                             "line", "trend_ci", "look_alpha", "more")})


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


@dataclass
class NoiseAware:
    """The default rounds rule over the last ROUNDS_WINDOW values, or every value when the window
    grows (see the module's doc)."""
    ok: bool
    range_pct: float             # of the window without its farthest value (growing: of its last ROUNDS_WINDOW)
    slope_pct: float             # the Theil-Sen line's change across ROUNDS_WINDOW iterations, % of the median
    trend_p: float               # the least-squares slope's t-test
    apart: int | None            # 0-based index in the window of the value set aside
    apart_pct: float | None      # how far it lay from the median, %
    trend_lo: float = float("nan")   # the least-squares line's change across ROUNDS_WINDOW iterations:
    trend_hi: float = float("nan")   # its interval at 1 - alpha, % of the median
    spread_pct: float = float("nan")  # the values' spread about that line (residual sd, % of the median)
    spread_needed: float = float("nan")  # the spread at which they would have ruled out ±ROUNDS_SLOPE
    alpha: float = TREND_ALPHA   # the level of the trend's test and its interval (a growing window: a look's)

    @property
    def ruled_out(self) -> bool:
        """A drift larger than the tolerance (ROUNDS_SLOPE across ROUNDS_WINDOW iterations) is ruled
        out: the trend's whole interval lies inside ±ROUNDS_SLOPE."""
        return -100 * ROUNDS_SLOPE <= self.trend_lo and self.trend_hi <= 100 * ROUNDS_SLOPE

    @property
    def trend(self) -> bool:
        return abs(self.slope_pct) > 100 * ROUNDS_SLOPE and self.trend_p < self.alpha


def noise_aware_rule(values: list[float], *, grow: bool = False, alpha: float = TREND_ALPHA) -> NoiseAware:
    """The rule on the last ROUNDS_WINDOW values; grow: on every value, the drift still stated across
    ROUNDS_WINDOW iterations (SNIA's tolerance as a rate: a longer window narrows its interval, it
    does not loosen the tolerance) and the range judged on the last ROUNDS_WINDOW."""
    y = np.asarray(values if grow else values[-ROUNDS_WINDOW:], float)
    med = float(np.median(y))
    if med == 0 or len(y) < MIN_ROUNDS:
        return NoiseAware(False, float("nan"), float("nan"), 1.0, None, None, alpha=alpha)
    span = ROUNDS_WINDOW - 1 if grow else len(y) - 1       # the steps the drift is stated across
    far = int(np.argmax(np.abs(y - med))) if len(y) >= 4 else None
    keep = np.delete(y, far) if far is not None else y
    last = [v for i, v in enumerate(y) if i >= len(y) - ROUNDS_WINDOW and i != far]
    rng = 100 * float(np.ptp(last)) / abs(float(np.mean(last)))
    x = np.arange(len(y), dtype=float)
    slope = 100 * theil_slope(x, y) * span / abs(med)
    fit = line_fit(x, y)
    p = float(fit.pvalue) if np.isfinite(fit.pvalue) else 1.0
    out = NoiseAware(True, rng, slope, p, far, 100 * (float(y[far]) - med) / abs(med) if far is not None else None,
                     alpha=alpha)
    # a growing window's spread is no verdict: noise about a level is not a drift, and more
    # iterations narrow the drift's interval (the range is still stated)
    out.ok = not out.trend if grow else rng <= 100 * ROUNDS_RANGE and not out.trend
    # the line's change across the span and its interval (Student's t, n - 2 degrees of freedom),
    # from the values the spread is judged on (the one set apart left out: a burst that came back is
    # not a level)
    kx = np.delete(x, far) if far is not None else x
    kfit = line_fit(kx, keep) if len(keep) >= 3 else fit
    across = 100 * span / abs(med)
    err = float(kfit.stderr) if np.isfinite(kfit.stderr) else 0.0
    half = t_quantile(1 - alpha / 2, len(keep) - 2) * err
    out.trend_lo, out.trend_hi = (float(kfit.slope) - half) * across, (float(kfit.slope) + half) * across
    out.spread_pct = 100 * err * np.sqrt(float(((kx - kx.mean()) ** 2).sum())) / abs(med)   # residual sd
    out.spread_needed = cv_that_rules_out(kx, span, alpha) if len(kx) >= 3 else float("nan")
    return out


def one_sided(ci: list[float] | None) -> bool:
    """An interval that holds no 0: a drift (or change) found."""
    return ci is not None and (ci[0] > 0 or ci[1] < 0)


def cv_that_rules_out(x: np.ndarray, span: int, alpha: float = TREND_ALPHA) -> float:
    """The spread (residual sd, % of the median) at which iterations at positions x with no drift in
    them rule out one of ±ROUNDS_SLOPE across `span` steps: 2.5 % for SNIA's window of 5, less when
    one of the 5 is set apart (1.3-1.8 %)."""
    sxx = float(((x - x.mean()) ** 2).sum())
    return 100 * ROUNDS_SLOPE * np.sqrt(sxx) / (t_quantile(1 - alpha / 2, len(x) - 2) * span)


def look_alpha(cap: int) -> float:
    """A growing window's level a look, for a case of at most `cap` iterations (see LOOK_ALPHA)."""
    looks = max(1, cap - GROW_FIRST + 1)
    return LOOK_ALPHA if looks <= 16 else TREND_ALPHA / looks


def more_to_decide(n: int, spread_pct: float, alpha: float, drift_pct: float = 0.0) -> int | None:
    """How many iterations beyond n would rule out the tolerance's drift at this spread, were the
    line's drift (per ROUNDS_WINDOW iterations) to stay what it is: its interval, narrowed by them,
    inside ±ROUNDS_SLOPE (one value set apart, as the rule does). None beyond MORE_LIMIT, with no
    spread measured, or with a drift at or past the tolerance (more iterations would find it)."""
    room = 1 - abs(drift_pct) / (100 * ROUNDS_SLOPE)       # the share of the tolerance the drift leaves
    if not spread_pct == spread_pct or spread_pct <= 0 or not room > 0:
        return None

    def enough(m: int) -> bool:            # the spread m iterations rule the drift out at (it grows with m)
        return spread_pct <= room * cv_that_rules_out(np.arange(m - 1, dtype=float), ROUNDS_WINDOW - 1, alpha)
    lo, hi = n + 1, n + MORE_LIMIT
    if not enough(hi):
        return None
    while lo < hi:                          # the fewest that are enough
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
    return lo - n


def within(steady: SteadyRecord) -> str | None:
    """What one iteration's own verdict says against steadiness, or None (steady, or no evidence)."""
    if not steady.judged:
        return None                                   # too short at its time scale: no evidence
    head, onset_t, span = steady.headline, steady.onset_time, steady.span_s
    kind = steady.classes.get(head) if head else None
    if not steady.steady:
        if kind == "can't tell":                      # its last level has not yet outlasted the others
            return None
        return steady.why or steady.note or "not steady"
    if kind in ("warm-up", "slowdown") and steady.mode == SteadyMode.RECORD \
            and onset_t is not None and span and onset_t > 0.1 * span:
        return f"{kind} until {onset_t:.1f} s of {span:.0f} s measured"
    return None


def growing_cap(records: list[CaseRecord]) -> int | None:
    """The cap of a case that ran with iterations = "steady" (its last record says so), else None."""
    for r in records:
        if r.precision is not None and r.precision.until == "steady":
            return r.precision.cap or GROW_CAP
    return None


def case_verdict(records: list[CaseRecord], headline: str, cap: int | None = None) -> CaseSteady | None:
    """The verdict of one case from its records (None: nothing was sampled or measured). cap: the
    case iterates until its verdict is decided, at most cap iterations (its records say so when
    it has ended): judged on a window that grows, at each look's level."""
    passed = [r for r in records if r.passed and r.iteration >= 1]
    sampled = [(r, r.steady) for r in passed if r.steady is not None]
    if not passed or not sampled:
        return None
    first = sampled[0][1]
    for r, st in sampled:
        against = within(st)
        if against:
            return CaseSteady(False, f"iteration {r.iteration}: {against}", len(passed))
    tts = [st.time_to_steady for _r, st in sampled if st.time_to_steady is not None and st.judged]
    tts_mean = sum(tts) / len(tts) if tts else None
    measured = [r for r in passed if headline in r.figures]
    values = [r.figures[headline].value for r in measured]
    cap = cap or growing_cap(records)
    if len(values) < MIN_ROUNDS or (cap is not None and len(values) < GROW_FIRST):
        if cap is not None:
            return CaseSteady(None, f"{len(values)} iteration(s): the growing window's first look is at "
                                    f"{GROW_FIRST}", len(values))
        undecided = next(((r, st) for r, st in sampled if st.judged and not st.steady), None)
        if undecided:                     # within() had nothing against it, and it is not steady either
            r, st = undecided
            reason = st.why or st.note or "can't tell"
            return CaseSteady(None, f"iteration {r.iteration}: {reason}", len(values))
        if any(st.judged for _r, st in sampled):
            return CaseSteady(True, "each iteration steady at its time scale", len(values),
                              time_to_steady_s=tts_mean)
        return CaseSteady(None, f"{len(values)} iteration(s), each too short for a window at its time scale "
                                f"(the rounds rule needs {MIN_ROUNDS})", len(values))
    last = len(values) if cap is not None else min(len(values), ROUNDS_WINDOW)
    method = first.criteria.get("method") or first.method
    window_its = [m.iteration for m in measured][-last:]       # the window's iteration numbers
    if method == "snia":
        return _snia_verdict(values, last, headline, window_its, tts_mean)
    if cap is None:
        return _noise_aware_verdict(values, last, headline, window_its, tts_mean)
    out = _noise_aware_verdict(values, last, headline, window_its, tts_mean, look_alpha(cap))
    stop = next((r.precision for r in reversed(records) if r.precision is not None), None)
    if out.steady is None and stop is not None and stop.stopped_by != StopReason.STEADY:
        out.why += f" (stopped by {stop.stopped_by} after {len(values)} iterations)"
    return out


def growing_verdict(values: list[float], cap: int) -> CaseSteady:
    """The verdict a case of iterations = "steady" gets after these values (a look of the growing
    window; at least GROW_FIRST of them): what the run stops on, and what bench/steady_eval.py
    --growing calibrates."""
    return _noise_aware_verdict(values, len(values), "", list(range(1, len(values) + 1)), None, look_alpha(cap))


def _snia_verdict(values: list[float], last: int, headline: str, window_its: list[int],
                  tts_mean: float | None) -> CaseSteady:
    """SNIA's rounds rule on the last iterations: range and trend within their bounds."""
    ok, rng, slope = rounds_rule(values)
    y = np.asarray(values[-last:], float)
    fit = np.polyfit(np.arange(last, dtype=float), y, 1) if last > 1 else [0.0, float(y[0])]
    out = CaseSteady(bool(ok), (f"the last {last} iterations within {rng:.1f} % (range), trend {slope:.1f} %" if ok
                                else f"the last {last} iterations vary {rng:.0f} % (range) / trend {slope:.0f} %"),
                     len(values), range_pct=rng, slope_pct=slope, time_to_steady_s=tts_mean)
    return _evidence(out, "snia", headline, window_its, values[-last:], None,
                     [float(fit[1]), float(fit[1] + fit[0] * (last - 1))])


def _noise_aware_verdict(values: list[float], last: int, headline: str, window_its: list[int],
                         tts_mean: float | None, alpha: float | None = None) -> CaseSteady:
    """The default rule on the last iterations (alpha: on all of them, a growing window's look at
    that level): steady, not steady (a drift, a range too wide), or can't tell (a drift found or
    not ruled out, whose size the noise hides), with its evidence."""
    grow = alpha is not None
    na = noise_aware_rule(values, grow=True, alpha=alpha) if alpha is not None else noise_aware_rule(values)
    which = f"the {last} iterations" if grow else f"the last {last} iterations"
    per = f" per {ROUNDS_WINDOW} iterations" if grow else ""
    level = f"{100 * (1 - na.alpha):g} %"
    span = f" of the last {ROUNDS_WINDOW}" if grow and last > ROUNDS_WINDOW else ""   # a growing window's range
    full = 100 * float(np.ptp(values[-last:])) / abs(float(np.mean(values[-last:])))
    apart = (f", iteration {window_its[na.apart]} set apart at {na.apart_pct:+.0f} %"   # named where it mattered
             if na.apart is not None and full > 100 * ROUNDS_RANGE else "")
    kw: dict[str, Any] = dict(range_pct=na.range_pct, slope_pct=na.slope_pct, time_to_steady_s=tts_mean)
    if na.trend:
        out = CaseSteady(False, f"{which} drift {na.slope_pct:+.0f} %{per} (slope p {na.trend_p:.3f})", len(values),
                         **kw)
    elif not na.ok:
        out = CaseSteady(False, f"{which} vary {na.range_pct:.0f} % (range{apart})", len(values), **kw)
    elif na.ruled_out:
        out = CaseSteady(True, f"{which} within {na.range_pct:.1f} % (range{span}{apart}), a drift beyond "
                               f"±{100 * ROUNDS_SLOPE:.0f} %{per} ruled out (line {na.slope_pct:+.0f} %, {level} "
                               f"interval {na.trend_lo:+.0f} … {na.trend_hi:+.0f} %)", len(values), **kw)
    elif one_sided([na.trend_lo, na.trend_hi]):   # a drift found; whether it passes the tolerance, not known
        out = CaseSteady(None, f"a drift of {na.trend_lo:+.0f} … {na.trend_hi:+.0f} %{per} across {which} "
                               f"({level} interval), which may pass ±{100 * ROUNDS_SLOPE:.0f} %", len(values), **kw)
    else:          # no drift found, none ruled out: too few noisy numbers cannot tell (issue 75)
        out = CaseSteady(None, f"no drift found, but {na.trend_lo:+.0f} … {na.trend_hi:+.0f} %{per} across {which} "
                               f"is not ruled out (it is at a spread of ≤ {na.spread_needed:.1f} %; these "
                               f"{na.spread_pct:.1f} %)", len(values), **kw)
    if na.trend_lo == na.trend_lo:
        out.trend_ci = [na.trend_lo, na.trend_hi]
    if grow:
        out.look_alpha = na.alpha
        if out.steady is None:
            drift = (na.trend_lo + na.trend_hi) / 2
            out.more = more_to_decide(last, na.spread_pct, na.alpha, drift)
            out.why += (f"; about {out.more} more iteration(s) would decide it at this spread and drift" if out.more
                        else f"; its line drifts {drift:+.0f} %, at or past the tolerance: more iterations would "
                             "more likely find the drift" if abs(drift) >= 100 * ROUNDS_SLOPE
                        else f"; more than {MORE_LIMIT} more iterations would be needed at this spread")
    med = float(np.median(values[-last:]))
    half = na.slope_pct / 100 * med / 2 if na.slope_pct == na.slope_pct else 0.0    # Theil-Sen, through the median
    if grow:                                      # the line's change across the window, not across a rate's span
        half *= (last - 1) / (ROUNDS_WINDOW - 1)
    return _evidence(out, "changepoint", headline, window_its, values[-last:],
                     window_its[na.apart] if na.apart is not None and apart else None, [med - half, med + half])


def _evidence(out: CaseSteady, rule: str, figure: str, window: list[int], values: list[float], apart: int | None,
              line: list[float]) -> CaseSteady:
    out.rule, out.figure, out.window, out.apart = rule, figure, list(window), apart
    out.values = [float(v) for v in values]
    out.line = [float(x) for x in line]
    return out


def case_verdicts(records: list[CaseRecord], headlines: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Every case's verdict across its iterations, as run.json stores it: {case: CaseSteady dict}."""
    by: dict[str, list[CaseRecord]] = {}
    for r in records:
        by.setdefault(r.case, []).append(r)
    out = {}
    for case, recs in by.items():
        v = case_verdict(recs, headlines.get(recs[0].workload, ""))
        if v is not None:
            out[case] = v.as_dict()
    return out
