"""Steady state from change points (the default, `method = "changepoint"`).

After Barrett et al. 2017 ("Virtual machine warmup blows hot and cold") and Traini et al. 2022:
each metric's series is cut into straight-line segments by PELT (pelt, ruptures' recursion with a
line cost: a drift is one sloped segment, not a staircase of flat ones), and classified by how it
ends:
  flat            steady from the first sample
  warm-up         it changed and settled at a better level (higher, or lower for a latency)
  slowdown        it changed and settled at a worse level
  no steady state it still trends, or changed less than W samples before the end
  can't tell      (a long series) a last level after levels that went one way and came back, held
                  no longer than OUTLAST times the longest of them (see outlasted)
  too short       fewer than W readings; unreadable: none; zero: 0 in every sample (no evidence)
Details that make it hold on real data (bench/steady_eval.py measures each):
- the noise scale σ is robust (MAD of first differences); a lone spike (beyond the running median
  ± 4 σ) is replaced by that median; the penalty is BETA · ln n per change, in units of σ²;
- trailing segments whose levels are within `tolerance` (5 %) of the last one are one segment;
- that segment must not trend (a slope significant at p < 0.01 that moves it more than
  `tolerance`); a fill that levels off is cut to the tail where it has (see steady_stretch);
- the steady stretch reaches back over blocks still within `tolerance` of the final level;
- a level that wanders further than `tolerance` but keeps coming back (an ARC hit-ratio swing, txg
  stalls, a receive's rounds) is a steady state too: see returning_stretch.
The system is steady when the headline metric of the workload (its throughput or IOPS) is steady
— a veto, not a vote — and a quorum of the other readable, non-zero metrics are; the onset is the
latest onset among the metrics that passed. Unreadable and all-zero metrics are reported, never
counted; with none readable the answer is "not steady".
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np

from ..results.stats import line_fit, median_filter5
from ..units import ChangeVerdict, better_or_worse, metric_direction
from .cache import cache_ok
from .series import matrix
from .verdict import WINDOW_PER, Criteria, MetricCheck, Verdict

BETA = 4.0               # penalty per change, × σ² ln n (tuned on bench/steady_eval.py: 2 and 3 split noise)
MIN_SEGMENT = 3          # samples: no segment is shorter (a single spike is not a regime)
CLIP_SIGMAS = 4.0
MAX_GRID = 150          # change points are searched among at most this many positions
TREND_P = 0.01
TAIL_P = 0.05           # a tail cut from a trending segment must show less than this
RETURNS = 8             # a wandering level: its W-sample moving mean crosses the stretch's mean this often
QUARTERS = 4            # ... and each of its quarters' means is within WANDER x tolerance of the stretch's
WANDER = 2.0
LEVEL_WINDOWS = 2        # an earlier level the series moved between holds this many windows (less: a burst)
OUTLAST = 1.5            # a last level after a back-and-forth outlasts the earlier ones this many times
BAND = 0.5               # ... counting a crossing only past ± BAND x tolerance of that mean (Criteria.strict)
# the headline metric when the workload names none, or its own is not readable: first one read
HEADLINE_FALLBACK = ("workload_mibs", "workload_iops", "pool_mibs", "pool_kops")


def noise_scale(y: np.ndarray) -> float:
    """σ of the noise, robust to level shifts (first differences) and to spikes (MAD)."""
    d = np.diff(y)
    s = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2) if len(d) else 0.0
    if s <= 0:
        s = float(np.std(y))            # mostly-constant with bursts (a pool written once per txg)
    return max(s, 1e-9 * float(np.max(np.abs(y))))


def line_costs(sums: np.ndarray, starts: np.ndarray, end: int) -> np.ndarray:
    """Cost of each segment [start, end): the residual sum of squares of its least-squares line, in
    O(1) a segment from the prefix sums of 1, t, t², y, ty, y² (line_sums, one row each). Segments
    of lines, not of constant means: a drift is one sloped segment, not a staircase of small steps
    each of which looks flat; a fill is a few lines of falling slope."""
    n, st, stt, sy, sty, syy = sums[:, end:end + 1] - sums[:, starts]
    vt, vy, cty = stt - st * st / n, syy - sy * sy / n, sty - st * sy / n
    fitted = np.divide(cty * cty, vt, out=np.zeros_like(vt), where=vt > 0)
    return np.maximum(vy - fitted, 0.0)


def line_sums(y: np.ndarray) -> np.ndarray:
    t = np.arange(len(y), dtype=float)
    return np.vstack([np.concatenate([[0.0], np.cumsum(a)]) for a in (np.ones_like(y), t, t * t, y, t * y, y * y)])


def pelt(y: np.ndarray, jump: int, pen: float) -> list[int]:
    """The ends of the optimal segmentation of y under line_costs + pen a segment (PELT, Killick et
    al. 2012), the last end len(y): ruptures.Pelt's recursion, grid, pruning and ties exactly
    (tests/test_steady.py holds the two to the same breakpoints), its inner loop over the candidates
    a numpy expression instead of a dict copied a candidate: about 10 times faster, and no ruptures
    import (scipy.signal and scipy.spatial) in a run."""
    n = len(y)
    sums = line_sums(y)
    total, before = np.zeros(n + 1), np.zeros(n + 1, dtype=int)
    known = np.zeros(n + 1, dtype=bool)          # a start with an optimal partition before it
    known[0] = True
    admissible = np.zeros(0, dtype=int)
    for end in [k for k in range(0, n, jump) if k >= MIN_SEGMENT] + [n]:
        admissible = np.append(admissible, (end - MIN_SEGMENT) // jump * jump)
        cand = admissible[known[admissible]]
        cost = total[cand] + (line_costs(sums, cand, end) + pen)
        best = int(np.argmin(cost))              # the first of equals, as min() takes
        total[end], before[end], known[end] = cost[best], cand[best], True
        admissible = cand[cost <= cost[best] + pen]
    ends, e = [], n
    while e > 0:
        ends.append(e)
        e = int(before[e])
    return ends[::-1]


def segments(y: np.ndarray, sigma: float) -> list[int]:
    """Start indices of the linear segments (the first is 0), by PELT with a BIC-like penalty."""
    n = len(y)
    jump = max(1, -(-n // MAX_GRID))     # candidates on a grid for long series
    bkps = pelt(y / sigma, jump, BETA * math.log(n))
    return [0] + [int(b) for b in bkps[:-1]]


def _line(seg: np.ndarray) -> tuple[float, float, float]:
    """(slope per sample, intercept, p of slope ≠ 0) of a least-squares line."""
    if len(seg) < 3 or np.ptp(seg) == 0:
        return 0.0, float(seg.mean()), 1.0
    fit = line_fit(np.arange(len(seg), dtype=float), seg)
    p = float(fit.pvalue) if math.isfinite(fit.pvalue) else 1.0
    return float(fit.slope), float(fit.intercept), p


def trending(seg: np.ndarray, tol: float, p_max: float = TREND_P) -> bool:
    """A trend worth the name: a significant slope that moves the level more than tol over seg."""
    b, _a, p = _line(seg)
    return p < p_max and abs(b) * (len(seg) - 1) > tol * abs(float(seg.mean()))


def zigzag(a: np.ndarray, b: np.ndarray, tol: float) -> bool:
    """Two neighbouring segments that each trend past tol, one up and one down: a level wandering
    on a path, whose segments' means may agree though none of them is a level. (A fill's segments
    rise, or fall, together: they may be one level.)"""
    return trending(a, tol) and trending(b, tol) and _line(a)[0] * _line(b)[0] < 0


def decelerating(prev: np.ndarray, seg: np.ndarray) -> bool:
    """The segment before is significantly steeper in the same direction (one-sided z > 2.33):
    the series is levelling off (a fill), not drifting at one rate."""
    (b1, se1), (b0, se0) = _slope_se(prev), _slope_se(seg)
    if b1 * b0 <= 0 or not math.isfinite(se1) or not math.isfinite(se0):
        return False
    return (abs(b1) - abs(b0)) / math.hypot(se1, se0) > 2.33


def _slope_se(seg: np.ndarray) -> tuple[float, float]:
    if len(seg) < 3 or np.ptp(seg) == 0:
        return 0.0, math.inf
    fit = line_fit(np.arange(len(seg), dtype=float), seg)
    return float(fit.slope), float(fit.stderr) if math.isfinite(fit.stderr) else math.inf


def level_and_excursion(tail: np.ndarray) -> tuple[float, float]:
    """A steady stretch's level (its mean) and the excursion of its line (|slope| x span)."""
    b, _a, _p = _line(tail)
    return float(tail.mean()), abs(b) * (len(tail) - 1)


def steady_stretch(y: np.ndarray, starts: list[int], c: Criteria) -> tuple[int | None, float, float]:
    """(first index of the steady stretch or None, its level, the excursion of its line).
    1. Trailing segments whose levels are within `tolerance` of the final one are one segment;
       segments of fewer than W samples in all away from the level, between two at it, are a burst
       inside the stretch (a txg stall, a neighbour's spike), not the stretch's start.
    2. That segment must not trend. If it does, and only if the segment before it was
       significantly steeper (the series is levelling off: a fill), its start moves on W/2
       samples at a time to a tail that does not trend and still covers at least half of it. A
       drift at one rate is one segment and is never cut down to a tail short enough for its
       noise to hide the slope.
    3. The stretch then reaches back, W/2 samples at a time, over blocks whose mean is within
       `tolerance` of the final level (a fill's last few per cent). Per sample it would follow
       the noise: at 15 % noise a 5-sample mean strays 7 %."""
    n = len(y)
    k = len(starts) - 1
    step = max(MIN_SEGMENT, c.window // 2)

    def near(a: np.ndarray, b: np.ndarray) -> bool:
        return abs(float(a.mean()) - float(b.mean())) <= c.tolerance * abs(float(b.mean()))
    while k > 0:
        if near(y[starts[k - 1]:starts[k]], y[starts[k]:]) and not (
                c.strict and zigzag(y[starts[k - 1]:starts[k]], y[starts[k]:starts[k + 1] if k + 1 < len(starts) else n],
                                    c.tolerance)):
            k -= 1          # one level (strict: unless the two are slopes that zigzag, a wander)
            continue
        # a short burst away from the level and back (one or more segments shorter than a window in
        # all -- too short to be a regime of their own -- at the level again before them): inside
        # the stretch, not its start
        j = k - 1
        while j > 0 and starts[k] - starts[j - 1] < c.window and not near(y[starts[j - 1]:starts[j]], y[starts[k]:]):
            j -= 1
        if j > 0 and starts[k] - starts[j] < c.window and near(y[starts[j - 1]:starts[j]], y[starts[k]:]):
            k = j - 1
        else:
            break
    s0 = starts[k]
    s: int | None = s0
    if n - s0 < c.window:
        s = None
    elif trending(y[s0:], c.tolerance):
        s = None
        if k > 0 and decelerating(y[starts[k - 1]:s0], y[s0:]):
            last = n - max(c.window, (n - s0 + 1) // 2)          # the tail covers half the segment or more
            s = next((cand for cand in range(s0 + step, last + 1, step)
                      if not trending(y[cand:], c.tolerance, TAIL_P)),
                     None)
    level, exc = level_and_excursion(y[s if s is not None else s0:])
    if s is None:
        return None, level, exc
    # reach back towards the level the series ends at: a fill still rising slowly has a stretch mean
    # below it, and blocks within tolerance of that mean would take its last climb in
    end = float(y[n - c.window:].mean())
    while s - step >= 0 and abs(float(y[s - step:s].mean()) - end) <= c.tolerance * abs(end) \
            and abs(float(y[s - step:s].mean()) - level) <= c.tolerance * abs(level):
        s -= step                       # the W/2 samples before s are still at the level
    if 0 < s < step and abs(float(y[:s].mean()) - level) <= c.tolerance * abs(level) \
            and abs(float(y[:s].mean()) - end) <= c.tolerance * abs(end):
        s = 0
    return s, level, exc


def returns(y: np.ndarray, w: int, band: float = 0.0) -> int:
    """How often the w-sample moving mean of y crosses y's mean: the times its level came back. With
    a band, a crossing counts only from below mean − band to above mean + band or back (hysteresis):
    a moving mean that dithers about the mean as a slow path passes through it crosses once."""
    dev = np.convolve(y - y.mean(), np.ones(w) / w, mode="valid")
    side = np.where(dev > band, 1, np.where(dev < -band, -1, 0))
    side = side[side != 0]
    return int(np.count_nonzero(side[1:] != side[:-1]))


def returning_stretch(y: np.ndarray, starts: list[int], c: Criteria) -> tuple[int, int] | None:
    """(first index, returns) of the earliest stretch whose level wanders further than `tolerance`
    but keeps coming back, or None. Real series settle that way: zfs-fuse's throughput moves by
    10-20 % over tens of seconds, an ARC hit ratio swings as the ARC evicts, a receive's rounds
    burst; the segments between change points then differ by more than the tolerance and no final
    segment is a level, though a rater sees one (bench/long). Tried from each segment start,
    earliest first, on stretches of at least RETURNS windows; a stretch is one when
      - its W-sample moving mean crosses the stretch's mean RETURNS times or more: at least four
        excursions each way, so a wander seen only a few times in the run (a period of a third of
        it) or a drift seen once is not taken for a level;
      - each of its QUARTERS means is within WANDER x tolerance of the stretch's: the excursions
        even out;
      - it does not trend beyond `tolerance` (as a final segment must not): a fill still rising
        slowly is not declared early.
    Stretches shorter than RETURNS windows (every default iteration: 10-60 samples) never get here."""
    for s0 in starts:
        tail = y[s0:]
        if len(tail) < RETURNS * c.window:
            return None
        level = float(tail.mean())
        quarters = np.array([float(q.mean()) for q in np.array_split(tail, QUARTERS)])
        if float(np.max(np.abs(quarters - level))) > WANDER * c.tolerance * abs(level):
            continue
        back = returns(tail, c.window, BAND * c.tolerance * abs(level) if c.strict else 0.0)
        if back >= RETURNS and not trending(tail, c.tolerance):
            return s0, back
    return None


def earlier_levels(y: np.ndarray, starts: list[int], s: int, c: Criteria) -> list[tuple[int, float]]:
    """The levels the series held before its steady stretch (from s): (samples, mean) of each run
    of segments within `tolerance` of each other, runs shorter than LEVEL_WINDOWS windows left out (a burst, a
    stall, a fill's knot), in order."""
    out: list[tuple[int, float]] = []
    bounds = [b for b in starts if b < s] + [s]
    for a, b in zip(bounds, bounds[1:]):
        level = float(y[a:b].mean())
        if out and abs(level - out[-1][1]) <= c.tolerance * abs(out[-1][1]):
            m = out[-1][0]
            out[-1] = (m + b - a, (out[-1][1] * m + level * (b - a)) / (m + b - a))
        else:
            out.append((b - a, level))
    return [(m, lv) for m, lv in out if m >= LEVEL_WINDOWS * c.window]


def outlasted(y: np.ndarray, starts: list[int], s: int, c: Criteria) -> tuple[int, int] | None:
    """None when the stretch from s may be called steady; else (its samples, the longest earlier
    level's). A series that went one way and came back (levels that rose then fell, or fell then
    rose, each past `tolerance`) has shown that its level moves; a last level no longer than the
    ones it left is what such a series looks like between two moves (a random walk, level shifts,
    a slow swing at its crest), so it must outlast OUTLAST times the longest of them. A warm-up
    or a fill that only ever went one way, and a series with no earlier level, are not asked."""
    levels = earlier_levels(y, starts, s, c)
    if not levels:
        return None
    seq = [lv for _m, lv in levels]
    steps = [b - a for a, b in zip(seq, seq[1:]) if abs(b - a) > c.tolerance * abs(a)]
    if not any(p * q < 0 for p, q in zip(steps, steps[1:])):
        return None                                   # one way only: a warm-up, a fill, a step
    longest = max(m for m, _lv in levels)
    return None if len(y) - s >= OUTLAST * longest else (len(y) - s, longest)


def held_words(held: tuple[int, int]) -> str:
    """A "can't tell" in words: how long the last level held, against what, and how much longer
    a series must be to decide."""
    last, longest = held
    more = max(1, math.ceil(OUTLAST * longest) - last)
    return (f"its last level held {last} samples, after levels that moved back and forth and held up to "
            f"{longest}; {more} more samples at it would decide")


def classify(name: str, values: np.ndarray, c: Criteria) -> MetricCheck:
    idx = np.flatnonzero(~np.isnan(values))
    y = values[idx]
    n = len(y)
    if n == 0:
        return MetricCheck(name, readable=False, kind="unreadable")
    mean = float(y.mean())
    if np.all(y == 0):
        return MetricCheck(name, readable=True, mean=mean, range=0.0, excursion=0.0, zero=True, kind="zero")
    if n < c.window:
        return MetricCheck(name, readable=True, mean=mean, range=float(np.ptp(y)), kind="too short")
    if c.strict and n < WINDOW_PER * c.window:
        c = replace(c, strict=False)            # the strict levels are for long series (and what they missed)
    sigma = noise_scale(y)
    med = median_filter5(y)
    yc = np.where(np.abs(y - med) > CLIP_SIGMAS * sigma, med, y)     # a lone spike is not a regime
    starts = segments(yc, sigma)
    cps = [int(idx[i]) for i in starts[1:]]
    s, level, exc = steady_stretch(yc, starts, c)
    back = None
    wander = returning_stretch(yc, starts, c) if c.wander else None
    if wander is not None and (s is None or wander[0] < s):       # the earlier of the two stretches
        s, back = wander
        level, exc = level_and_excursion(yc[s:])
    if s is None:
        return MetricCheck(name, readable=True, mean=level, range=float(np.ptp(y[starts[-1]:])), excursion=exc,
                           kind="no steady state",
                           changepoints=cps)
    short = outlasted(yc, starts, s, c) if c.strict and back is None else None
    if short is not None:
        return MetricCheck(name, readable=True, mean=level, range=float(np.ptp(y[s:])), excursion=exc,
                           kind="can't tell", changepoints=cps, held=short)
    kind = "flat"
    if s > 0:
        before = float(np.median(yc[max(0, s - c.window):s]))
        kind = "warm-up" if better_or_worse(level - before, metric_direction(name)) == ChangeVerdict.BETTER else "slowdown"
    return MetricCheck(name, readable=True, mean=level, range=float(np.ptp(y[s:])), excursion=exc, kind=kind,
                       onset=int(idx[s]) + 1, changepoints=cps, returns=back)


def decide(samples: list[dict[str, Any]], c: Criteria, *, active_bytes: int | None = None,
           headline: str | None = None) -> Verdict:
    t, names, y = matrix(samples)
    n = len(samples)
    checks = {name: classify(name, y[:, j], c) for j, name in enumerate(names)}
    head = headline if headline in checks and checks[headline].evidence else \
        next((h for h in HEADLINE_FALLBACK if h in checks and checks[h].evidence), None)
    if head is None:
        head = next((k for k in names if checks[k].evidence), None)
    if head is None:
        return Verdict(steady=False, first_steady_index=None, samples=n, criteria=c, metrics=checks,
                       note="no readable, non-zero metric")
    note = None if headline in (None, head) else f"headline {headline} not readable; {head} stands in"
    others = [m for k, m in checks.items() if k != head and m.evidence]
    others = [m for m in others if m.kind != "can't tell"]      # neither for nor against: not counted
    passing = [m for m in others if m.steady]
    h = checks[head]
    if not h.steady:
        return Verdict(steady=False, first_steady_index=None, samples=n, criteria=c, metrics=checks, headline=head,
                       note=f"headline {head}: {h.kind}" + (f": {held_words(h.held)}" if h.held else "")
                       + (f" ({note})" if note else ""))
    if len(passing) < c.quorum * len(others) - 1e-9:
        return Verdict(steady=False, first_steady_index=None, samples=n, criteria=c, metrics=checks, headline=head,
                       note=f"{len(passing)} of {len(others)} other metrics steady (quorum {c.quorum:.0%})")
    onset = max(m.onset for m in [h, *passing] if m.onset is not None)
    first = onset - 1 + c.window                 # 1-based count: W steady samples seen
    if active_bytes is not None:
        while first <= n and cache_ok(samples[first - 1], active_bytes) is False:
            first += 1
        if first > n:
            return Verdict(steady=False, first_steady_index=None, samples=n, criteria=c, metrics=checks, headline=head,
                           note="metrics steady, but the cache gate never held")
    return Verdict(steady=True, first_steady_index=first, samples=n, criteria=c, metrics=checks, onset=onset,
                   headline=head, note=note)
