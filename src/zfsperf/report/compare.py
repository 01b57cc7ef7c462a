"""`zfsperf compare BASE NEW`: the same cases in two results directories, figure by figure.

Per figure: old → new medians, change %, a distribution-free 95 % confidence interval for the
ratio new/old (the Mann-Whitney test inverted on log values: Bauer 1972 / Hodges-Lehmann; shown
only where the sample sizes allow a 95 % interval at all, never a bootstrap that undercovers at
n = 2-3), a Mann-Whitney U test (no normality assumed; benchstat's choice; exact permutation
p-value for small samples, ties included) and a verdict: better, worse, or not significant (`~`)
— knowing which way is better from the unit (MiB/s, IOPS up; µs, s down). With too few
iterations for the test to ever reach the significance level, it says so instead of guessing.
A geometric-mean row per figure summarises all matched cases.

A case that PASSed in BASE and has FAIL/KILLED iterations in NEW is a failure of its own: shown,
and it fails `--fail-on-regression` whatever its figures say.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..results.record import Status
from ..steady.rounds import case_verdict
from ..units import ChangeVerdict, better_or_worse, unit_direction
from ..workloads import figure_direction, headline
from . import abstats, classhist
from .abstats import ALPHA, min_p, mann_whitney_p, needed_per_side, ratio_ci
from .comparison import Comparison, FigureChange, StatusChange
from .context import (count_findings, latency_context, profile_context, taskq_context, txg_context,
                      warn_unsteady, zil_context)
from .designs import DRIFT_FLOOR_PCT, DRIFT_FLOOR_SOURCE, Design, beyond_floor, floor_span
from .model import CaseData, RunData
from .pairing import by_iteration, pairing, slice_pairs
from .setup import differences, same_run

# No noise floor by default: a significant change is better or WORSE whatever its size, and its size
# is told beside it ("smaller than ±5 %" when its whole interval lies inside the margin); the margin
# decides what is too small to matter, and the gate fails only on a change of --fail-on-regression
# or more. (A fixed 1 % floor printed 100 pairs at −0.87 % [−1.1 … −0.7 %], p < 10⁻⁴, as "same".)
# `--noise PCT` still sets one.
NOISE_PCT = 0.0
# The equivalence margin δ: a change whose whole 95 % interval lies inside ±δ is "same within ±δ"
# (two one-sided tests at α/2 each, so at least as strict as TOST at α). 5 %: the smallest change the
# changes users bring are argued about (OpenZFS pull requests quote 25 % or more), and about the
# interval a turns design reaches on receive in 1.5 min (±1.5 %) three times over. --margin sets it;
# a --detect PCT run is judged within its own PCT (margin_of).
MARGIN_PCT = 5.0


def _span(values: list[float]) -> float:
    """max / min of a side's iteration figures (1: nothing to span)."""
    pos = [v for v in values if v > 0]
    return max(pos) / min(pos) if len(pos) >= 2 else 1.0


def compare_values(case: str, figure: str, unit: str, old: list[float], new: list[float],
                   noise_pct: float = NOISE_PCT, way: int | None = None) -> FigureChange:
    """way: +1 higher is better, -1 lower, 0 not judged (default: by the unit)."""
    a, b = np.asarray(old, float), np.asarray(new, float)
    om, nm = float(np.median(a)), float(np.median(b))
    change = (nm / om - 1) * 100 if om else math.nan
    way = unit_direction(unit) if way is None else way
    ci = ratio_ci(a, b)
    detectable = abstats.unpaired_detectable(old, new)
    if min_p(len(a), len(b)) >= ALPHA:
        need = needed_per_side()
        return FigureChange(case=case, figure=figure, unit=unit, old=old, new=new, old_median=om, new_median=nm,
                            change_pct=change, ci_pct=ci, p=None, verdict=ChangeVerdict.TOO_FEW,
                            note=f"{len(a)} vs {len(b)} iterations: no test can reach p < {ALPHA} and no 95 % "
                                 f"interval exists (need ≥ {need} per side)")
    if np.all(a == a[0]) and np.all(b == b[0]) and a[0] == b[0]:
        p = 1.0
    else:
        p = mann_whitney_p(a, b)
    return FigureChange(case=case, figure=figure, unit=unit, old=old, new=new, old_median=om, new_median=nm,
                        change_pct=change, ci_pct=ci, p=p, verdict=verdict_of(change, p, way, noise_pct),
                        detectable_pct=detectable)


def verdict_of(change_pct: float, p: float | None, way: int, noise_pct: float,
             alpha: float = ALPHA) -> ChangeVerdict:
    if way == 0:
        return ChangeVerdict.NONE
    if p is None:
        return ChangeVerdict.TOO_FEW
    if p >= alpha:
        return ChangeVerdict.NOT_SIGNIFICANT
    if not beyond_floor(change_pct, noise_pct):     # the one rule for a floor (a factor either way)
        return ChangeVerdict.WITHIN_NOISE
    return better_or_worse(change_pct, way) or ChangeVerdict.WITHIN_NOISE


def geometric_mean(values: list[float]) -> float | None:
    """exp(mean(log x)) of positive values, None when one is not positive."""
    v = np.asarray(values, float)
    return float(np.exp(np.mean(np.log(v)))) if len(v) and np.all(v > 0) else None


def from_estimate(case: str, figure: str, unit: str, old: list[float], new: list[float],
                  est: abstats.Estimate, way: int, noise_pct: float, design: Design, test: str,
                  alpha: float = ALPHA, pairs: tuple[list[float], list[float]] | None = None) -> FigureChange:
    """A FigureChange whose change, p and interval come from a design's estimate (abstats). pairs:
    the values a paired test ran on (a side's iterations or slices, in pair order), whose geometric
    means the old and new columns then show: a paired change is exactly their ratio."""
    change = (est.ratio - 1) * 100
    ci = None if est.ci is None else ((est.ci[0] - 1) * 100, (est.ci[1] - 1) * 100)
    centers = None if pairs is None else (geometric_mean(pairs[0]), geometric_mean(pairs[1]))
    if centers is None or None in centers:
        om, nm, center = float(np.median(old)), float(np.median(new)), "median"
    else:
        (om, nm), center = centers, "pairs"
    return FigureChange(case=case, figure=figure, unit=unit, old=old, new=new, old_median=om,
                        new_median=nm, change_pct=change, ci_pct=ci, p=est.p,
                        verdict=verdict_of(change, est.p, way, noise_pct, alpha), design=design,
                        test=f"{test}, {est.n}", detectable_pct=est.detectable_pct, pair_sd=est.sd,
                        pairs=est.pairs, center=center)


def headline_first(cmp: "Comparison") -> None:
    """Each case's headline figure is its first row, and a figure whose every value is the
    headline's (fio's `read_iops` beside `iops` in a read-only job) is not a row of its own but a
    note: one number per figure (issue 83: the headline was row 10 of 11, beside its twin with
    another p)."""
    heads = {ch.case: ch for ch in cmp.changes if ch.figure == headline(cmp.workload_of(ch.case))}
    kept, twins = [], {}
    for ch in cmp.changes:
        h = heads.get(ch.case)
        if h is not None and ch is not h and ch.unit == h.unit and ch.old == h.old and ch.new == h.new:
            twins.setdefault(ch.case, []).append(ch.figure)
            continue
        kept.append(ch)
    kept.sort(key=lambda ch: ch is not heads.get(ch.case))                  # stable: the rest keep their order
    cmp.changes = kept
    for case, names in twins.items():
        cmp.context.append(f"{case}: {', '.join(names)} the same values as its headline "
                           f"{heads[case].figure}, shown once")


def adjust_exploratory(cmp: "Comparison", alpha: float = ALPHA) -> None:
    """Every figure but a case's headline is exploratory: its p is Holm-adjusted over the case's other
    figures, its verdict decided on that p, and the gate never judges it. (Each figure at α on its
    own called some figure of the starvation mix's A/A in 7 of 30 windows, its headline in 1.)"""
    by_case: dict[str, list[FigureChange]] = {}
    for ch in cmp.changes:
        if ch.figure != headline(cmp.workload_of(ch.case)) and ch.verdict not in (ChangeVerdict.NONE,
                                                                                 ChangeVerdict.NOT_ALTERNATED):
            by_case.setdefault(ch.case, []).append(ch)
    for changes in by_case.values():
        tested = sorted((c for c in changes if c.p is not None), key=lambda c: c.p or 0.0)
        m, running = len(tested), 0.0
        for k, c in enumerate(tested):
            running = max(running, min(1.0, (m - k) * (c.p or 0.0)))
            c.exploratory, c.p_raw, c.p = True, c.p, running
            if c.verdict.decided and running >= alpha:
                c.verdict = ChangeVerdict.NOT_SIGNIFICANT
                c.margin_pct = None


History = Callable[[RunData, str, str], list[float]]     # (run, case, figure) -> earlier run medians


def compare(base: RunData, new: RunData, noise_pct: float = NOISE_PCT, *,
            history: History | None = None, drift_floor_pct: float = DRIFT_FLOOR_PCT,
            margin_pct: float = MARGIN_PCT) -> Comparison:
    """Two separate runs, one a side."""
    return compare_runs([base], [new], noise_pct, history=history, drift_floor_pct=drift_floor_pct,
                        margin_pct=margin_pct)


def compare_runs(bases: list[RunData], news: list[RunData], noise_pct: float = NOISE_PCT, *,
                 history: History | None = None, drift_floor_pct: float = DRIFT_FLOOR_PCT,
                 margin_pct: float = MARGIN_PCT) -> Comparison:
    """Separate runs: whole runs differ from each other by more than one run's iterations show, so
    the verdict is judged against run-to-run variance -- between the runs given (several a side),
    else from the history store's identical-settings runs, else a change below the drift floor is
    "within unknown drift" (and never fails a gate)."""
    base, new = bases[0], news[0]
    cmp = Comparison(base, new, bases=bases, news=news)
    cmp.setup = differences(bases, news)
    cmp.warnings += same_run(bases, news)
    ratios: dict[str, list[float]] = {}
    for key, bc in base.cases.items():
        bcs = [r.cases.get(key) for r in bases]
        ncs = [r.cases.get(key) for r in news]
        if any(c is None for c in ncs):
            cmp.unmatched.append(f"{bc.case} (only in {base.label})")
            continue
        for nc in ncs:
            bad = {s: n for s, n in nc.statuses().items() if s in (Status.FAIL, Status.KILLED)}
            if bad and bc.passed:
                err = next((r.error for r in nc.records if r.status in bad and r.error), "") or ""
                cmp.failures.append(StatusChange(bc.case, bc.statuses(), nc.statuses(),
                                                 err.splitlines()[0][:200] if err else ""))
        warn_unsteady(cmp, [(r.label, c) for r, c in zip(bases, bcs)] + [(r.label, c) for r, c in zip(news, ncs)])
        txg_context(cmp, bc.case, [c for c in bcs if c is not None], [c for c in ncs if c is not None])
        taskq_context(cmp, bc.case, [c for c in bcs if c is not None], [c for c in ncs if c is not None])
        zil_context(cmp, bc.case, [c for c in bcs if c is not None], [c for c in ncs if c is not None])
        latency_context(cmp, bc.case, [c for c in bcs if c is not None], [c for c in ncs if c is not None])
        count_findings(cmp, bc.case, [c for c in bcs if c is not None], [c for c in ncs if c is not None])
        profile_context(cmp, (base, bc), (new, ncs[0]), bc.case, paired=False)
        cmp.classes += classhist.changes(bc, ncs[0], bc.case, paired=False)
        for name in bc.figure_names():
            way = figure_direction(bc.workload, name, bc.unit(name))
            ch = _one_figure(bc, [c for c in bcs if c is not None], ncs, new, name, way, noise_pct, history,
                             drift_floor_pct)
            if ch is None:
                continue
            ch.judge_same(margin_pct)
            cmp.changes.append(ch)
            if ch.old_median > 0 and ch.new_median > 0:
                ratios.setdefault(name, []).append(ch.new_median / ch.old_median)
    for key, nc in new.cases.items():
        if key not in base.cases:
            cmp.unmatched.append(f"{nc.case} (only in {new.label})")
    headline_first(cmp)
    adjust_exploratory(cmp)
    # a geometric-mean row per figure once more than one case contributes to it
    cmp.geomeans = {k: float(np.exp(np.mean(np.log(v)))) for k, v in ratios.items() if len(v) > 1}
    cmp.history_store = getattr(history, "store_url", None)
    return cmp


def _one_figure(bc: CaseData, bcs: list[CaseData], ncs: list[CaseData], new_run: RunData, name: str, way: int,
                noise_pct: float, history: History | None, floor: float) -> FigureChange | None:
    old = [v for c in bcs for v in c.values(name)]
    newv = [v for c in ncs for v in c.values(name)]
    if not old or not newv:
        return None
    unit = bc.unit(name)
    if len(bcs) + len(ncs) >= 3:
        meds = ([float(np.median(c.values(name))) for c in bcs if c.values(name)],
                [float(np.median(c.values(name))) for c in ncs if c.values(name)])
        est = abstats.runs(*meds)
        if est is not None:
            ch = from_estimate(bc.case, name, unit, old, newv, est, way, noise_pct, Design.RUNS,
                               "Welch's t on log run medians")
            # the old and new columns show what the change is computed from: the geometric mean
            # of each side's run medians (not the median of every iteration pooled)
            gm = (geometric_mean(meds[0]), geometric_mean(meds[1]))
            if None not in gm:
                (ch.old_median, ch.new_median), ch.center = gm, "runs"
            return ch
    ch = compare_values(bc.case, name, unit, old, newv, noise_pct, way)
    earlier = history(new_run, bc.case, name) if history is not None else []
    if history is not None:
        ch.earlier_runs = len(earlier)
    if len(earlier) >= abstats.MIN_HISTORY_RUNS:
        est = abstats.history(float(np.median(old)), float(np.median(newv)), earlier)
        if est is not None:
            return from_estimate(bc.case, name, unit, old, newv, est, way, noise_pct, Design.HISTORY,
                                 "log run medians in run-to-run standard errors (the history's successive "
                                 "differences) against the heavier of Student's t and a t₃-tailed null")
    return _beyond_drift(ch, [*bcs, *ncs], name, floor, earlier)


def _beyond_drift(ch: FigureChange, sides: list[CaseData], name: str, floor: float,
                  earlier: list[float]) -> FigureChange:
    """One run a side, judged on its iterations: a change is called only beyond the drift floor
    (widened by the spread of a side that was not in a steady state), and the floor is what is
    said instead of a detectable change."""
    judge = ("to judge it, run both sides in one run (duet = \"turns\", or --interleave / ab = true), give "
             "several runs a side (--vs), or keep a history of identical runs")
    unsteady = [c for c in sides if (v := case_verdict(c.records, headline(c.workload))) is not None
                and v.steady is False]
    # a side not in a steady state: its own iterations' spread (max / min) widens the floor, so only
    # a change no transient inside that run could make is judged (a 50 % drop beside a run that
    # wandered by 66 % is not; gzip-9's −84 % beside a 20 % wander is)
    span = max((_span(c.values(name)) for c in unsteady), default=1.0)
    wide = ((1 + floor / 100) * span - 1) * 100
    if ch.verdict.decided and unsteady and not beyond_floor(ch.change_pct, wide):
        ch.verdict = ChangeVerdict.UNKNOWN_DRIFT
        ch.note = (f"one run a side, and a side was not in a steady state (its iterations span {(span - 1) * 100:.0f} %): "
                   f"a change within a factor of {1 + wide / 100:.3g} (the drift floor times that span) cannot be "
                   f"told from a transient in one run; {judge}")
    elif ch.verdict.decided and unsteady:
        ch.note = (f"a side was not in a steady state (its iterations span {(span - 1) * 100:.0f} %); the change is "
                   f"beyond the drift floor times that span (a factor of {1 + wide / 100:.3g})")
    elif ch.verdict.decided and not beyond_floor(ch.change_pct, floor):
        ch.verdict = ChangeVerdict.UNKNOWN_DRIFT
        had = ("no history of these settings" if not earlier else
               f"only {len(earlier)} earlier run(s) of these settings in history before BASE (the history design "
               f"needs {abstats.MIN_HISTORY_RUNS})")
        ch.note = (f"one run a side and {had}: a change within a factor of {1 + floor / 100:g} "
                   f"({floor_span(floor)}) cannot be judged between separate runs ({DRIFT_FLOOR_SOURCE}"
                   f"{'' if floor == DRIFT_FLOOR_PCT else f'; set by --drift-floor {floor:g}'}); {judge}")
    if ch.design is Design.ITERATIONS:
        # only a change beyond the floor is judged, and how far apart two runs land is not known here:
        # no change can be promised with 80 % power (the floor times the test's own detectable change
        # was seen with 61-74 %, bench/calibration.py), so the floor is what is said
        ch.detectable_pct, ch.floor_pct = None, wide if unsteady else floor
        if ch.verdict.decided:
            # nor an interval: the iterations' is of one run each, and printed after an A/A's call beyond
            # the floor it read as the change's (`WORSE (−34.6 … −32.3 %)`)
            ch.ci_pct = None
            beyond = (f"beyond the drift floor ({floor_span(wide if unsteady else floor)}); how far two runs land "
                      "apart is not known here, so no interval of the change is given (the iterations' is of one "
                      "run each)")
            ch.note = f"{ch.note}; {beyond}" if ch.note else beyond
    return ch


def margin_of(run: RunData) -> float:
    """The equivalence margin a run is judged at by default: a --detect run's own PCT (it ran until
    it could see that change, or decided: "same" then means within it, never a wider ±MARGIN_PCT),
    else MARGIN_PCT."""
    target = (run.run.detect or {}).get("target_pct")
    return float(target) if target else MARGIN_PCT


def compare_within(run: RunData, pairs: list[tuple[CaseData, CaseData]],
                   noise_pct: float = NOISE_PCT, margin_pct: float | None = None,
                   alpha: float | None = None) -> Comparison:
    """Points of one run (an A/B sweep): paired by block when the run was interleaved, by iteration
    when they ran as a duet; else compared as independent samples (and said so). alpha: the level
    of the paired verdicts; by default ALPHA, or for a --detect run that looked after every block
    the level of its last look (recorded in run.json: report.sequential). margin_pct: by default
    the run's own (margin_of)."""
    cmp = Comparison(run, run, bases=[run], news=[run])
    margin_pct = margin_of(run) if margin_pct is None else margin_pct
    seq = (run.run.detect or {}).get("sequential") or {}
    looked = alpha is None and seq.get("alpha") is not None
    if alpha is None:
        alpha = float(seq["alpha"]) if looked else ALPHA
    look = (f"--detect's look {seq.get('looks')} ({seq.get('method', '')})" if looked else "a look of --detect")
    for a, b in pairs:
        label = f"{a.case} → {b.case}"
        cmp.workloads[label] = a.workload
        warn_unsteady(cmp, [(run.label, a), (run.label, b)])
        txg_context(cmp, label, [a], [b])
        taskq_context(cmp, label, [a], [b])
        zil_context(cmp, label, [a], [b])
        latency_context(cmp, label, [a], [b])
        count_findings(cmp, label, [a], [b])
        duet, interleaved = pairing(run, a, b)
        profile_context(cmp, (run, a), (run, b), label, paired=interleaved or duet)
        cmp.classes += classhist.changes(a, b, label, paired=interleaved or duet)
        for name in a.figure_names():
            if interleaved or duet:
                design = (Design.TURNS if a.test in run.run.turns else Design.DUET) if duet else Design.PAIRED
                ch = _paired_change(a, b, name, design, noise_pct, alpha, look)
                if ch is not None:
                    ch.judge_same(margin_pct)
            else:
                ch = _sweep_point(a, b, name, noise_pct)
            if ch is not None:
                cmp.changes.append(ch)
    headline_first(cmp)
    adjust_exploratory(cmp)
    return cmp


def _paired_change(a: CaseData, b: CaseData, name: str, design: Design, noise_pct: float, alpha: float,
                   look: str) -> FigureChange | None:
    """One figure of two sides paired by block or iteration (sign-flip test on the log ratios); the
    throughput of sides taking turns in slices judged on slice pairs. None: no pair holds it."""
    by_a, by_b = by_iteration(a, name), by_iteration(b, name)
    blocks = sorted(set(by_a) & set(by_b))
    old, newv = [by_a[i] for i in blocks], [by_b[i] for i in blocks]
    # fio's slices and the mix's turns: throughput judged on slice pairs; the medians shown stay
    # the iterations'
    slices = slice_pairs(a, b, name, blocks) if design is Design.TURNS else None
    est = abstats.paired(*(slices or (old, newv)), alpha) if old else None
    if est is None:
        return None
    if slices:
        est.n = f"{len(slices[0])} slice pairs of {len(blocks)} iterations"
    ch = from_estimate(f"{a.case} → {b.case}", name, a.unit(name), old, newv, est,
                       figure_direction(a.workload, name, a.unit(name)), noise_pct, design,
                       "sign-flip permutation on log ratios (exact)", alpha, pairs=slices or (old, newv))
    if alpha != ALPHA:
        ch.note = f"judged at α = {abstats.alpha_text(alpha)}, interval {(1 - alpha) * 100:.1f} %: {look}"
    if len(blocks) < abstats.MIN_BLOCKS:
        ch.note = f"{len(blocks)} blocks: p < {ALPHA} needs ≥ {abstats.MIN_BLOCKS}"
        ch.verdict = ChangeVerdict.TOO_FEW if ch.verdict != ChangeVerdict.NONE else ch.verdict
    return ch


def _sweep_point(a: CaseData, b: CaseData, name: str, noise_pct: float) -> FigureChange | None:
    """Two sweep points of a run that was not interleaved: a scaling row, never a verdict, and no
    test behind it (consecutive cases carry drift). None: a side lacks the figure."""
    old, newv = list(by_iteration(a, name).values()), list(by_iteration(b, name).values())
    if not old or not newv:
        return None
    ch = compare_values(f"{a.case} → {b.case}", name, a.unit(name), old, newv, noise_pct,
                        figure_direction(a.workload, name, a.unit(name)))
    ch.design = Design.UNPAIRED
    if ch.verdict is not ChangeVerdict.NONE:
        ch.verdict = ChangeVerdict.NOT_ALTERNATED
    ch.detectable_pct, ch.p = None, None
    ch.note, ch.test = "", "none (the interval: Hodges-Lehmann on the iterations)"
    return ch
