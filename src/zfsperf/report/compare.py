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

import json
import re

import math
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ..metrics import taskq, txgtable
from ..errors import InputError, shown
from ..steady.rounds import case_verdict
from ..workloads import DURATIONS, figure_direction, headline
from ..workloads.base import SLICE_UNITS
from ..units import ChangeVerdict, better_or_worse, unit_direction
from . import abstats, classhist, profilediff
from .classhist import ClassChange
from .profilediff import ProfileDiff
from .model import CaseData, RunData
from .setup import SetupChange, differences, same_run
from .summary import details
from . import fit
from ..results.record import Status

ALPHA = 0.05
EXACT_LIMIT = 13_000      # tied samples: exact permutation p while C(n1+n2, n1) is at most this (8 vs 8)
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
# designs whose interval holds every variance the question has: only they can say "same" (one run a
# side without history cannot: the drift between runs is unknown; unpaired cases carry drift)
class Design(StrEnum):
    """What was compared with what (its value is what JSON carries; DESIGNS says it in words)."""
    ITERATIONS = "iterations"           # one run a side, iterations compared
    HISTORY = "history"                 # one run a side, against the history store's run-to-run noise
    RUNS = "runs"                       # several runs a side, the run as the unit
    PAIRED = "paired"                   # one run, interleaved blocks
    DUET = "duet"                       # one run, both sides at once on one pool
    TURNS = "turns"                     # one run, both sides on one pool taking turns (ABBA)
    UNPAIRED = "unpaired"               # one run, not interleaved


SAME_DESIGNS = frozenset({Design.PAIRED, Design.DUET, Design.TURNS, Design.RUNS, Design.HISTORY})


@dataclass
class FigureChange:
    case: str
    figure: str
    unit: str
    old: list[float]
    new: list[float]
    old_median: float
    new_median: float
    change_pct: float
    ci_pct: tuple[float, float] | None
    p: float | None
    verdict: ChangeVerdict
    note: str = ""
    design: Design = Design.ITERATIONS    # what was compared with what (DESIGNS says it in words)
    test: str = "Mann-Whitney U"          # the test behind p
    detectable_pct: float | None = None   # the smallest change this data sees with 80 % power
    margin_pct: float | None = None       # "same", or a significant change inside ±δ: the margin δ
    exploratory: bool = False             # not the case's headline: p Holm-adjusted within the case, never gated
    pair_sd: float | None = None          # paired designs: the sd of the log ratios and how many pairs
    pairs: int | None = None
    p_raw: float | None = None            # an exploratory figure's own p before that adjustment
    floor_pct: float | None = None        # separate runs: only a change beyond this factor (in %) is judged
    # what old_median and new_median hold: the centre the change is the ratio of (CENTERS), so that
    # the old, new and change columns are one estimate (issue 83: paired rows showed medians beside
    # a change computed from the pairs, `45.31 → 49.41 us −0.9 %`)
    center: str = "median"
    earlier_runs: int | None = None      # history asked for: its earlier runs of identical settings before BASE

    def __post_init__(self) -> None:
        self.verdict = ChangeVerdict(self.verdict)      # a verdict read back from JSON is its word
        self.design = Design(self.design)

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("case", "figure", "unit", "old", "new", "old_median", "new_median",
                                               "change_pct", "ci_pct", "p", "verdict", "note", "design", "test",
                                               "detectable_pct", "center")}
        if self.margin_pct is not None:
            out["margin_pct"] = self.margin_pct
        if self.exploratory:
            out["exploratory"], out["p_raw"] = True, self.p_raw
        if self.pairs is not None:
            out["pairs"], out["pair_sd"] = self.pairs, self.pair_sd
        if self.floor_pct is not None:
            out["floor_pct"] = self.floor_pct
        return out

    def judge_same(self, margin_pct: float) -> None:
        """The third outcome: a change that is not significant (or within a floor set on purpose),
        judged by a design whose interval holds the question's variance, with its whole 95 % interval
        inside ±margin, is "same within ±margin"; otherwise it stays what it was (can't tell, with
        the change the data could have seen). A significant change keeps its direction and is told
        as smaller than ±margin instead (verdict_text)."""
        inside = self.ci_pct is not None and -margin_pct <= self.ci_pct[0] and self.ci_pct[1] <= margin_pct
        if self.verdict.decided and inside:
            self.margin_pct = margin_pct            # "WORSE −0.9 % (…), smaller than ±5 %"
        elif (self.verdict in (ChangeVerdict.NOT_SIGNIFICANT, ChangeVerdict.WITHIN_NOISE)
              and self.design in SAME_DESIGNS and inside):
            self.verdict, self.margin_pct = ChangeVerdict.SAME, margin_pct


DESIGNS = {
    Design.ITERATIONS: "one run a side, iterations compared; run-to-run drift unknown (changes below the drift "
                  "floor are not called)",
    Design.HISTORY: "one run a side, judged against the run-to-run noise of identical settings in the history store "
                    "(their successive differences)",
    Design.RUNS: "several runs a side, the run as the unit (between-run variance)",
    Design.PAIRED: "one run, interleaved blocks: within-block ratios (drift cancels)",
    Design.DUET: "one run, both sides at once on one pool (duet): within-iteration ratios (noise hits both alike)",
    Design.TURNS: "one run, both sides on one pool taking turns round by round (ABBA): within-iteration ratios "
             "(what drifts over seconds hits both alike; each turn pays its own costs, a receive round "
             "its own txg sync)",
    Design.UNPAIRED: "one run, not interleaved: its cases are sweep points, not an A/B (consecutive cases carry "
                     "drift, so no change is judged): each point's ratio to the first, its interval from the "
                     "iterations; run the points in blocks (--interleave, ab = true) or in turns to judge them",
}
# what the design column says, short
DESIGN_WORDS = {Design.ITERATIONS: "runs (iterations)", Design.HISTORY: "history", Design.RUNS: "runs",
                Design.PAIRED: "blocks", Design.DUET: "duet", Design.TURNS: "turns", Design.UNPAIRED: "sweep"}
# turns whose sides are two builds (guest ab --turns): the same statistics, a different machine
BUILD_TURNS = ("one run, each build in a guest of its own taking turns round by round (ABBA), the other guest "
               "paused; the builds change guests every iteration{settled}: within-iteration ratios (what drifts "
               "over seconds hits both alike)")
SETTLED = ", and each side's first turn (after the fresh pools) is run and left out"
# One run a side and no history: a change is judged only beyond the run-to-run drift seen between
# separate runs of identical settings. Measured on zfs-fuse on a 2-core machine (docs/benchmarks.md):
# consecutive default runs differed by up to +33.3 % (threads=4: 586.5 → 781.7 MiB/s) while each
# run's own iterations varied 5-13 %. The floor is a factor of 1.5 either way (−33.3 % … +50 %),
# above every such A/A difference; a 50 % drop (a factor of 2) is beyond it.
DRIFT_FLOOR_PCT = 50.0
DRIFT_FLOOR_SOURCE = ("the default floor, uncalibrated: consecutive runs of identical settings on one zfs-fuse "
                      "machine differed by up to +33 %, docs/benchmarks.md; `zfsperf calibrate` measures this "
                      "machine's run-to-run noise, after which compare judges these settings on it")


def _span(values: list[float]) -> float:
    """max / min of a side's iteration figures (1: nothing to span)."""
    pos = [v for v in values if v > 0]
    return max(pos) / min(pos) if len(pos) >= 2 else 1.0


def floor_span(floor_pct: float) -> str:
    """A floor of a factor (1 + floor_pct/100) either way, as the changes it spans: "−33.3 … +50 %"."""
    return f"−{(1 - 1 / (1 + floor_pct / 100)) * 100:.1f} … +{floor_pct:.3g} %"


def beyond_floor(change_pct: float, floor_pct: float) -> bool:
    """A change of change_pct % is outside a factor of (1 + floor_pct/100) either way."""
    ratio = 1 + change_pct / 100
    if ratio <= 0:
        return True
    return abs(math.log(ratio)) >= math.log1p(floor_pct / 100) - 1e-12


@dataclass
class StatusChange:
    """A case that passed in BASE and did not (all or some iterations) in NEW."""
    case: str
    old: dict[str, int]          # status -> iterations
    new: dict[str, int]
    error: str

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "old": self.old, "new": self.new, "error": self.error}

    @staticmethod
    def text(counts: dict[str, int]) -> str:
        return ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"


@dataclass
class Comparison:
    base: RunData
    new: RunData
    changes: list[FigureChange] = field(default_factory=list)
    bases: list[RunData] = field(default_factory=list)          # every BASE run (several: --vs)
    news: list[RunData] = field(default_factory=list)
    geomeans: dict[str, float] = field(default_factory=dict)     # figure -> geometric mean of new/old ratios
    unmatched: list[str] = field(default_factory=list)
    failures: list[StatusChange] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)     # e.g. a side that was not in a steady state
    setup: list[SetupChange] = field(default_factory=list)  # what differs between the sides' set-ups
    context: list[str] = field(default_factory=list)      # A against B, shown and never judged (the txgs)
    profiles: list[ProfileDiff] = field(default_factory=list)   # where the CPU went, A against B (--profile)
    classes: list[ClassChange] = field(default_factory=list)    # per-class latency histograms, A against B
    workloads: dict[str, str] = field(default_factory=dict)     # an in-run pair's label "A → B": its workload
    history_store: str | None = None                           # the store the history design read

    def regressions(self, pct: float) -> list[FigureChange]:
        return [c for c in self.changes if c.verdict == ChangeVerdict.WORSE and abs(c.change_pct) >= pct]

    def workload_of(self, case: str) -> str:
        if case in self.workloads:              # a pair inside one run (turns, duet, interleaved blocks)
            return self.workloads[case]
        for run in (self.base, self.new):
            for cd in run.cases.values():
                if cd.case == case:
                    return cd.workload
        return ""

    def gate(self, pct: float, figure: str | None = None, alpha: float = ALPHA) -> "Gate":
        """The CI gate's judgement: one figure per case (its workload's headline, or `figure`),
        never a duration the runfile bounds, worse by pct % or more and significant after Holm's
        step-down correction across the judged cases (family-wise error at alpha)."""
        judged = [c for c in self.changes
                  if c.figure == (figure or headline(self.workload_of(c.case))) and c.figure not in DURATIONS]
        tested = sorted((c for c in judged if c.p is not None), key=lambda c: c.p)
        m = len(judged)             # the family: every judged case (one without a p never rejects)
        held: set[int] = set()
        for k, c in enumerate(tested):          # Holm: the k-th smallest p against alpha / (m - k)
            if c.p is None or c.p > alpha / (m - k):
                break
            held.add(id(c))
        worse = [c for c in judged if id(c) in held and c.verdict == ChangeVerdict.WORSE and abs(c.change_pct) >= pct]
        # iterations compared by the exact rank test have a smallest p: above Holm's first step the
        # gate cannot fail there however large the change
        first = alpha / max(m, 1)
        blind = [c for c in judged if c.design == Design.ITERATIONS and min_p(len(c.old), len(c.new)) > first]
        return Gate(judged=judged, regressions=worse, tested=len(tested), alpha=alpha, figure=figure, blind=blind,
                    needed=needed_per_side(first))



@dataclass
class Gate:
    judged: list[FigureChange]
    regressions: list[FigureChange]
    tested: int
    alpha: float
    figure: str | None
    blind: list[FigureChange] = field(default_factory=list)    # cases no change of any size could fail
    needed: int = 0                                             # iterations a side that would let them

    def describe(self) -> str:
        what = f"figure {self.figure}" if self.figure else "each case's headline figure"
        return (f"the gate judges {what} ({len(self.judged)} comparisons, {self.tested} with a p-value), "
                f"at a family-wise α of {self.alpha:g} (Holm's step-down across them)")


def min_p(n1: int, n2: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney test can give for these sample sizes."""
    return 2.0 / math.comb(n1 + n2, n1) if n1 and n2 else 1.0


def needed_per_side(alpha: float = ALPHA) -> int:
    n = 2
    while min_p(n, n) >= alpha:
        n += 1
    return n


@lru_cache(maxsize=512)
def _u_cdf(n1: int, n2: int) -> np.ndarray:
    """P(U <= u) for u = 0 … n1·n2 under the null hypothesis, no ties (exact counts)."""
    # f[m][n] = counts of U over the arrangements of m and n values; f(m,n,u) = f(m-1,n,u-n) + f(m,n-1,u)
    prev = [np.ones(1)] + [None] * n2          # m = 0: U is 0 in the one arrangement
    for n in range(1, n2 + 1):
        prev[n] = np.ones(1)
    for m in range(1, n1 + 1):
        cur: list = [np.ones(1)] + [None] * n2
        for n in range(1, n2 + 1):
            a = np.concatenate([np.zeros(n), prev[n]])       # f(m-1, n, u-n)
            b = cur[n - 1]
            size = m * n + 1
            out = np.zeros(size)
            out[:len(a)] += a[:size]
            out[:len(b)] += b[:size]
            cur[n] = out
        prev = cur
    counts = prev[n2]
    return np.cumsum(counts) / counts.sum()


def ratio_ci(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free CI for new/old as a percentage change: the Mann-Whitney test inverted on
    log values (pairwise differences log b_j - log a_i, order statistics k and n1·n2 + 1 - k).
    None when the sizes cannot give `level` (2 vs 2 at 95 %) or a value is not positive."""
    n1, n2 = len(a), len(b)
    if n1 < 1 or n2 < 1 or np.any(a <= 0) or np.any(b <= 0):
        return None
    d = np.sort((np.log(b)[:, None] - np.log(a)[None, :]).ravel())
    tail = (1 - level) / 2
    if n1 * n2 <= 2500:
        cdf = _u_cdf(min(n1, n2), max(n1, n2))
        ok = np.nonzero(cdf <= tail)[0]          # P(U <= k-1) <= tail  <=>  k-1 in ok
        if len(ok) == 0:
            return None
        k = int(ok[-1]) + 1
    else:
        from scipy import stats as sps       # here, not at import: see mann_whitney_p
        mu, sd = n1 * n2 / 2, math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
        k = max(1, int(math.floor(mu - sps.norm.ppf(1 - tail) * sd)))
    lo, hi = d[k - 1], d[n1 * n2 - k]
    return (float(np.expm1(lo) * 100), float(np.expm1(hi) * 100))


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value, exact for small samples: without ties scipy's exact null
    distribution; with ties an exact permutation test over every arrangement (midranks), where the
    normal approximation is far off ([1,1,1,1] vs [2,2,2,2]: exact 0.029, approximation 0.013);
    the tie-corrected normal approximation only beyond EXACT_LIMIT arrangements (n ≥ 9 a side)."""
    # scipy.stats is imported here, not with the module: every `zfsperf run` imports this module
    # (the HTML exporter) and paid for it, ~0.8 s on a host, ~23 s in a guest under emulation
    from scipy import stats as sps
    tied = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
    if not tied and len(a) + len(b) <= 100:
        return float(sps.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)
    if tied and math.comb(len(a) + len(b), len(a)) <= EXACT_LIMIT:
        res = sps.permutation_test((a, b), lambda x, y, axis: sps.mannwhitneyu(x, y, axis=axis,
                                                                             method="asymptotic").statistic,
                                   permutation_type="independent", alternative="two-sided",
                                   n_resamples=np.inf, vectorized=True)
        return float(min(1.0, res.pvalue))
    return float(sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)


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
                        change_pct=change, ci_pct=ci, p=p, verdict=_verdict(change, p, way, noise_pct),
                        detectable_pct=detectable)


def _verdict(change_pct: float, p: float | None, way: int, noise_pct: float,
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


# what a row's old and new columns hold (FigureChange.center), said in the table's title
CENTERS = {"median": "medians", "pairs": "geometric means of the pairs",
           "runs": "geometric means of run medians"}


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
                        verdict=_verdict(change, est.p, way, noise_pct, alpha), design=design,
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
        _warn_unsteady(cmp, [(r.label, c) for r, c in zip(bases, bcs)] + [(r.label, c) for r, c in zip(news, ncs)])
        _txg_context(cmp, bc.case, [c for c in bcs if c is not None], [c for c in ncs if c is not None])
        _taskq_context(cmp, bc.case, [c for c in bcs if c is not None], [c for c in ncs if c is not None])
        _profile_context(cmp, (base, bc), (new, ncs[0]), bc.case, paired=False)
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
    judge = ("to judge it, run both sides in one run (duet = \"turns\", or --interleave / ab = true), give "
             "several runs a side (--vs), or keep a history of identical runs")
    unsteady = [c for c in [*bcs, *ncs] if (v := case_verdict(c.records, headline(c.workload))) is not None
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
    turns = set(run.run.turns)
    for a, b in pairs:
        cmp.workloads[f"{a.case} → {b.case}"] = a.workload
        _warn_unsteady(cmp, [(run.label, a), (run.label, b)])
        _txg_context(cmp, f"{a.case} → {b.case}", [a], [b])
        _taskq_context(cmp, f"{a.case} → {b.case}", [a], [b])
        duet, interleaved = pairing(run, a, b)
        _profile_context(cmp, (run, a), (run, b), f"{a.case} → {b.case}", paired=interleaved or duet)
        cmp.classes += classhist.changes(a, b, f"{a.case} → {b.case}", paired=interleaved or duet)
        for name in a.figure_names():
            way = figure_direction(a.workload, name, a.unit(name))
            by_a = _by_iteration(a, name)
            by_b = _by_iteration(b, name)
            if interleaved or duet:
                blocks = sorted(set(by_a) & set(by_b))
                old, newv = [by_a[i] for i in blocks], [by_b[i] for i in blocks]
                # fio's slices and the mix's turns: throughput judged on slice pairs; the medians
                # shown stay the iterations'
                slices = _slice_pairs(a, b, name, blocks) if duet and a.test in turns else None
                est = abstats.paired(*(slices or (old, newv)), alpha) if old else None
                if est is None:
                    continue
                if slices:
                    est.n = f"{len(slices[0])} slice pairs of {len(blocks)} iterations"
                ch = from_estimate(f"{a.case} → {b.case}", name, a.unit(name), old, newv, est, way, noise_pct,
                                   (Design.TURNS if a.test in turns else Design.DUET) if duet else Design.PAIRED,
                                   "sign-flip permutation on log ratios (exact)", alpha, pairs=slices or (old, newv))
                if alpha != ALPHA:
                    ch.note = (f"judged at α = {alpha:.4f}, interval {(1 - alpha) * 100:.1f} %: "
                               + (f"--detect's look {seq.get('looks')} ({seq.get('method', '')})" if looked
                                  else "a look of --detect"))
                if len(blocks) < abstats.MIN_BLOCKS:
                    ch.note = f"{len(blocks)} blocks: p < {ALPHA} needs ≥ {abstats.MIN_BLOCKS}"
                    ch.verdict = ChangeVerdict.TOO_FEW if ch.verdict != ChangeVerdict.NONE else ch.verdict
            else:
                old, newv = list(by_a.values()), list(by_b.values())
                if not old or not newv:
                    continue
                ch = compare_values(f"{a.case} → {b.case}", name, a.unit(name), old, newv, noise_pct, way)
                ch.design = Design.UNPAIRED
                # sweep points: a scaling row, never a verdict, and no test behind it
                if ch.verdict is not ChangeVerdict.NONE:
                    ch.verdict = ChangeVerdict.NOT_ALTERNATED
                ch.detectable_pct, ch.p = None, None
                ch.note, ch.test = "", "none (the interval: Hodges-Lehmann on the iterations)"
                cmp.changes.append(ch)
                continue
            ch.judge_same(margin_pct)
            cmp.changes.append(ch)
    headline_first(cmp)
    adjust_exploratory(cmp)
    return cmp


def _txg_context(cmp: Comparison, label: str, olds: list[CaseData], news: list[CaseData]) -> None:
    """The per-txg tables of the two sides, median against median (kernel OpenZFS), as context: why
    a write workload changed, never a verdict. Sides that shared one pool (a duet) have one table."""
    ta, tb = txgtable.merged(details(olds, "txgs")), txgtable.merged(details(news, "txgs"))
    if not ta or not tb or not ta.get("count") or not tb.get("count") or ta.get("shared") or tb.get("shared"):
        return
    parts = [f"{ta[q]['what']} {txgtable.number(ta[q]['median'])} → {txgtable.number(tb[q]['median'])} {ta[q]['unit']}"
             for q in txgtable.QUANTITIES if q in ta and q in tb]
    cmp.context.append(f"{label}: txgs {ta['count']} → {tb['count']}; median per txg: " + "; ".join(parts))


def _taskq_context(cmp: Comparison, label: str, olds: list[CaseData], news: list[CaseData]) -> None:
    """The I/O taskqs' pending tasks of the two sides, mean and peak (OpenZFS 2.2+), as context:
    writes starving reads shows as z_wr_iss piling up. Sides that shared one pool have one queue."""
    qa, qb = taskq.merged(details(olds, "taskqs")), taskq.merged(details(news, "taskqs"))
    if not qa or not qb or qa.get("shared") or qb.get("shared"):
        return
    parts = [f"{n} {qa['queues'][n]['pending_mean']:g} → {qb['queues'][n]['pending_mean']:g} "
             f"(peak {qa['queues'][n]['pending_max']} → {qb['queues'][n]['pending_max']})"
             for n in taskq.WATCHED if n in qa["queues"] and n in qb["queues"]]
    if parts:
        cmp.context.append(f"{label}: taskqs, tasks pending (mean): " + "; ".join(parts))


def pairing(run: RunData, a: CaseData, b: CaseData) -> tuple[bool, bool]:
    """How a run paired two of its cases: (they ran as a duet, in turns or at once; they ran in
    interleaved blocks). Neither: independent samples."""
    duet = a.test == b.test and a.test in set(run.run.duets)
    ab = set(run.run.ab)
    return duet, bool(run.run.selection.get("interleave")) or (a.test in ab and b.test in ab)


def profile_diffs(run: RunData) -> list[ProfileDiff]:
    """The differential profiles of a run's A/B pairs (report.html), paired as compare pairs them."""
    out = []
    for a, b in ab_pairs(run):
        d = profilediff.of_cases(run.path, a, run.path, b, f"{a.case} → {b.case}", paired=any(pairing(run, a, b)))
        if d is not None:
            out.append(d)
    return out


def _profile_context(cmp: Comparison, a: tuple[RunData, CaseData], b: tuple[RunData, CaseData], label: str, *,
                     paired: bool) -> None:
    """The two sides' profiles, function by function (report/profilediff.py), when they were taken."""
    d = profilediff.of_cases(a[0].path, a[1], b[0].path, b[1], label, paired=paired)
    if d is not None:
        cmp.profiles.append(d)


def _warn_unsteady(cmp: Comparison, sides: list[tuple[str, CaseData | None]]) -> None:
    """A figure measured outside a steady state compares transients: say so next to the verdict."""
    for label, c in sides:
        if c is None:
            continue
        v = case_verdict(c.records, headline(c.workload))
        if v is not None and v.steady is False:
            text = f"{label}: {c.case} was not in a steady state ({v.why}): its figures may hold a transient"
            if text not in cmp.warnings:
                cmp.warnings.append(text)


def _by_iteration(c: CaseData, name: str) -> dict[int, float]:
    return {r.iteration: r.figures[name].value for r in c.passed if name in r.figures}


def _slice_pairs(a: CaseData, b: CaseData, name: str, its: list[int]) -> tuple[list[float], list[float]] | None:
    """A figure of two sides taking turns in slices (fio's, or the starvation mix's turns of its two
    phases), as slice pairs: in each iteration, A's k-th slice against B's k-th, which ran beside it
    (A1 B1 B2 A2, or B1 A1 A2 B2). The unit turns' throughput is judged on: twice the pairs of the
    iterations for one ABBA group, and two slice pairs of one iteration are about as independent as
    two iterations (bench/power.py's A/As of 240 iterations: fio's log ratios correlated 0.04, the
    mix's -0.12 to 0.08), so windows of 6 iterations saw a planted 8 % (fio) and 10-15 % (the mix)
    where their iteration pairs saw 15 % and 15-25 %, at 0-1 of 40 false alarms. None unless every
    iteration's records hold the figure slice by slice, as many a side (older records: per iteration)."""
    recs = [{r.iteration: r for r in c.passed} for c in (a, b)]
    old: list[float] = []
    new: list[float] = []
    for it in its:
        sa, sb = recs[0][it].slice_values(name), recs[1][it].slice_values(name)
        if not sa or not sb or len(sa) != len(sb) or min(sa + sb) <= 0:
            return None
        old += sa
        new += sb
    return (old, new) if old else None


def ab_pairs(run: RunData, names: list[str] | None = None) -> list[tuple[CaseData, CaseData]]:
    """The comparisons inside one run: the two (or more) named cases against the first, else each
    test's sweep points against its first point."""
    cases = list(run.cases.values())
    if names:
        found = []
        for n in names:
            c = next((c for c in cases if c.case == n), None)
            if c is None:
                raise InputError(f"no case {shown(n)} in this run (it has: {', '.join(c.case for c in cases)})",
                                 file=str(run.path), field="--cases")
            found.append(c)
        return [(found[0], c) for c in found[1:]]
    builds = list(run.run.builds)
    if builds:          # a build A/B: each case on the first build against the same case on the others
        by_point: dict[str, dict[Any, CaseData]] = {}
        for c in cases:
            rest = {k: v for k, v in c.sweep.items() if k != "build"}
            by_point.setdefault(json.dumps([c.test, rest], sort_keys=True, default=str), {})[c.sweep.get("build")] = c
        return [(m[builds[0]], m[b]) for m in by_point.values() if builds[0] in m for b in builds[1:] if b in m]
    by_test: dict[str, list[CaseData]] = {}
    for c in cases:
        by_test.setdefault(c.test, []).append(c)
    return [(group[0], c) for group in by_test.values() for c in group[1:]]


SYMBOL = {ChangeVerdict.BETTER: "better", ChangeVerdict.WORSE: "WORSE", ChangeVerdict.SAME: "= same",
          ChangeVerdict.NOT_SIGNIFICANT: "~ (not significant)", ChangeVerdict.WITHIN_NOISE: "~ (within noise)",
          ChangeVerdict.UNKNOWN_DRIFT: "~ (cannot be judged between separate runs)",
          ChangeVerdict.TOO_FEW: "? too few iterations", ChangeVerdict.NONE: "(not judged)",
          ChangeVerdict.NOT_ALTERNATED: "(sweep point: not an A/B)"}


def verdict_text(ch: FigureChange) -> str:
    """The verdict as people read it: a significant change with its interval, anything else with
    the change this data could have seen."""
    text = SYMBOL[ch.verdict]
    if ch.verdict.decided and ch.ci_pct is not None:
        small = f", smaller than ±{ch.margin_pct:.3g} %" if ch.margin_pct is not None else ""
        return f"{text} ({ch.ci_pct[0]:+.1f} … {ch.ci_pct[1]:+.1f} %){small}"
    if ch.verdict == ChangeVerdict.SAME and ch.ci_pct is not None and ch.margin_pct is not None:
        return f"{text} within ±{ch.margin_pct:.3g} % ({ch.ci_pct[0]:+.1f} … {ch.ci_pct[1]:+.1f} %)"
    if ch.verdict == ChangeVerdict.TOO_FEW:
        pairs = ch.design in (Design.PAIRED, Design.DUET, Design.TURNS)
        return f"{text} (p < {ALPHA:g} needs ≥ {abstats.MIN_BLOCKS if pairs else needed_per_side()} " \
               f"{'pairs' if pairs else 'iterations a side'})"
    if ch.verdict in (ChangeVerdict.NONE, ChangeVerdict.NOT_ALTERNATED):
        return text
    if ch.detectable_pct is not None:
        return f"{text} (could see ≥ {ch.detectable_pct:.1f} %)"
    if ch.floor_pct is not None:
        return f"{text} (separate runs: only beyond {floor_span(ch.floor_pct)} judged)"
    if ch.p is not None and ch.verdict == ChangeVerdict.NOT_SIGNIFICANT and _no_spread(ch):
        return f"{text} (no spread measured)"
    return text


def _no_spread(ch: FigureChange) -> bool:
    """Every iteration of both sides the same (or every pair's ratio): no power can be stated."""
    return len(set(ch.old)) <= 1 and len(set(ch.new)) <= 1 or (
        len(ch.old) == len(ch.new) and len({round(b / a, 12) for a, b in zip(ch.old, ch.new) if a > 0}) <= 1)


COLUMNS = ("case", "figure", "design", "old", "new", "change", "95% CI", "p", "verdict")


def design_lines(cmp: Comparison) -> list[str]:
    """What was compared with what, and by which test: said above every comparison table."""
    out = []
    designs = sorted({ch.design for ch in cmp.changes}, key=list(DESIGNS).index)
    for d in designs:
        tests = sorted({ch.test for ch in cmp.changes if ch.design == d})
        # more than one design: each line names its figures, so that no two lines read as one claim
        which = "" if len(designs) == 1 else f" ({', '.join(dict.fromkeys(ch.figure for ch in cmp.changes if ch.design == d))})"
        if d is Design.TURNS and cmp.base.run.selection.get("build_turns"):
            settled = any(r.detail.get("settle_turns") for r in cmp.base.records)
            text = BUILD_TURNS.format(settled=SETTLED if settled else "")
        elif d is Design.HISTORY:
            text = ("one run a side, judged against earlier runs of identical settings: their run-to-run spread "
                    "(successive differences, with the degrees of freedom its efficiency gives), judged against the "
                    "heavier of Student's t and a null for heavy-tailed (t₃) run medians")
        else:
            text = DESIGNS[d]
        out.append(f"design{which}: {text}; test: {_tests_text(tests)}; α = {ALPHA}")
    return out


def _tests_text(tests: list[str]) -> str:
    """The tests of one design, each method once with the counts it ran on ("sign-flip … (exact),
    12 slice pairs of 6 iterations (IOPS and MiB/s) and 6 pairs (the other figures)"), not the
    method repeated for each count."""
    counts: dict[str, list[str]] = {}
    for t in tests:
        m = re.fullmatch(r"(.+), (\d.*)", t)
        method, n = (m.group(1), m.group(2)) if m else (t, "")
        counts.setdefault(method, [])
        if n:
            counts[method].append(n)
    parts = []
    for method, ns in counts.items():
        if len(ns) > 1 and any("slice pairs" in n for n in ns):
            ns = [f"{n} ({' and '.join(SLICE_UNITS)})" if "slice pairs" in n else f"{n} (the other figures)"
                  for n in ns]
        parts.append(f"{method}, {' and '.join(ns)}" if ns else method)
    return ", ".join(parts)


def history_line(cmp: Comparison) -> list[str]:
    """The first line of a comparison judged on history: which store, how many runs."""
    ns = sorted({ch.test.rsplit(", ", 1)[-1] for ch in cmp.changes if ch.design is Design.HISTORY})
    short = sorted({ch.earlier_runs for ch in cmp.changes if ch.earlier_runs is not None
                    and ch.earlier_runs < abstats.MIN_HISTORY_RUNS})
    if not ns and short:            # asked for, and too short: said, never silently another design
        return [f"not judged on history: {' / '.join(map(str, short))} earlier run(s) of identical settings before "
                f"BASE in {cmp.history_store or 'the history store'} (the history design needs "
                f"{abstats.MIN_HISTORY_RUNS}; a run after these is judged on them)"]
    if not ns:
        return []
    return [f"judged on history: {' / '.join(ns)} from {cmp.history_store or 'the history store'}"]


def emulated(cmp: Comparison) -> bool:
    """Some figure compared was taken under QEMU TCG."""
    return any(r.accelerator == "tcg" for r in [*(cmp.bases or [cmp.base]), *(cmp.news or [cmp.new])])


def title(cmp: Comparison) -> str:
    from ..units import EMULATED
    label = f"  {EMULATED}" if emulated(cmp) else ""
    centers = "; ".join(dict.fromkeys(CENTERS[ch.center] for ch in cmp.changes)) or "medians"
    what = f"(old, new: {centers}; change: new / old)"
    if len(cmp.bases) > 1 or len(cmp.news) > 1:
        return f"{len(cmp.bases)} run(s) → {len(cmp.news)} run(s) {what}{label}"
    if cmp.base is cmp.new:
        return f"inside {cmp.base.label} {what}{label}"
    return f"{cmp.base.label} → {cmp.new.label} {what}{label}"


def table_rows(cmp: Comparison, figures: list[str] | None = None) -> list[list[str]]:
    """The comparison's rows as text, the same in every output format (terminal, Markdown, HTML)."""
    from ..units import format_figure
    rows = []
    for ch in cmp.changes:
        if figures and ch.figure not in figures:
            continue
        ci = "-" if ch.ci_pct is None else f"{ch.ci_pct[0]:+.1f} … {ch.ci_pct[1]:+.1f} %"
        p = "-" if ch.p is None else f"{ch.p:.3f}" + ("ᴴ" if ch.exploratory else "")
        rows.append([ch.case, ch.figure, DESIGN_WORDS[ch.design], format_figure(ch.old_median, ch.unit),
                     format_figure(ch.new_median, ch.unit), f"{ch.change_pct:+.1f} %", ci, p, verdict_text(ch)])
    for name, g in cmp.geomeans.items():
        if not figures or name in figures:
            rows.append(["(geomean)", name, "", "", "", f"{(g - 1) * 100:+.1f} %", "", "", ""])
    for f in cmp.failures:
        rows.append([f.case, "(status)", "", StatusChange.text(f.old), StatusChange.text(f.new), "", "", "",
                     "FAILED" + (f": {f.error}" if f.error else "")])
    return rows


def setup_lines(cmp: Comparison) -> list[str]:
    """What differs between the two sides' set-ups, said above every comparison table."""
    return [f"set-up differs: {c.text}" for c in cmp.setup]


def by_chance(cmp: Comparison, figures: list[str] | None = None) -> str | None:
    """Figures other than a case's headline are exploratory (adjust_exploratory): the words say so,
    counting only the figures shown."""
    shown_ = [ch for ch in cmp.changes if ch.exploratory and (not figures or ch.figure in figures)]
    if not shown_:
        return None
    called = sum(ch.verdict.decided for ch in shown_)
    heads = sorted({headline(cmp.workload_of(ch.case)) for ch in shown_} - {""})
    return (f"{len(shown_)} figure(s) shown besides a case's headline are exploratory: their p (ᴴ) is Holm-adjusted "
            f"over the case's other figures ({called} still called), and neither they nor their calls fail the gate; "
            "a case's verdict, and the gate's, is its headline figure" + (f" ({', '.join(heads)})" if heads else ""))


def notes(cmp: Comparison, figures: list[str] | None = None) -> list[str]:
    tcg = (["Note: figures taken under QEMU TCG (software emulation): only relative, CPU-bound differences "
            "mean anything; none of them is a speed"] if emulated(cmp) else [])
    chance = by_chance(cmp, figures)
    return tcg + ([f"Note: {chance}"] if chance else []) + ([f"Note: {n}" for n in sorted({ch.note for ch in cmp.changes if ch.note})]
            + [f"Context (not judged): {c}" for c in cmp.context]
            + [f"Profile (not judged): {d.summary_line()}" for d in cmp.profiles]
            + [f"Latency histogram (not judged): {c.line()}" for c in cmp.classes]
            + [f"Warning: {w}" for w in cmp.warnings] + [f"Unmatched: {u}" for u in cmp.unmatched])


def render(cmp: Comparison, console: Any, figures: list[str] | None = None) -> None:
    """compare on a terminal, fitted to its width (report/fit.py): prose wrapped, the table's
    verdicts, cases and intervals wrapped where it would be wider, numbers never."""
    for line in history_line(cmp):
        console.print(fit.wrap(line, console.width, "  "), highlight=False, markup=False)
    for r in cmp.bases or [cmp.base]:
        console.print(fit.wrap(f"base: {r.describe()}", console.width, "  "), highlight=False, markup=False)
    if cmp.new is not cmp.base:
        for r in cmp.news or [cmp.new]:
            console.print(fit.wrap(f"new:  {r.describe()}", console.width, "  "), highlight=False, markup=False)
    for line in setup_lines(cmp) + design_lines(cmp):
        console.print(fit.wrap(line, console.width, "  "), highlight=False, markup=False)
    rows = table_rows(cmp, figures)
    one_case = len({r[0] for r in rows}) == 1 and len(rows) > 1     # said once, in the title
    # on a terminal the design column only where rows differ in it: one design is named, for every
    # row, by the design line above (--format md and --json carry it on every row); the interval
    # only where the verdict does not already say it
    ci = COLUMNS.index("95% CI")
    keep = [i for i, c in enumerate(COLUMNS) if (c != "design" or len({r[2] for r in rows if r[2]}) > 1)
            and (i != ci or any(r[ci] != "-" and r[ci] not in r[-1] for r in rows)) and (c != "case" or not one_case)]
    if ci in keep:                 # the interval has a column: a verdict does not say it again
        rows = [r[:-1] + [r[-1].replace(f" ({r[ci]})", "")] for r in rows]
    cols = [fit.Column(COLUMNS[i], right=COLUMNS[i] not in ("case", "figure", "design", "verdict"),
                       wraps=COLUMNS[i] in ("case", "design", "95% CI", "verdict")) for i in keep]
    cells = [[row[i] for i in keep] for row in rows]
    if fit.measure(fit.fitted(cols, cells, console.width)) > console.width:
        cells = _unit_once(cells, keep.index(COLUMNS.index("old")), keep.index(COLUMNS.index("new")))
    fit.table(console, cols, cells, title(cmp) + (f": {rows[0][0]}" if one_case else ""))
    for line in notes(cmp, figures):
        console.print(fit.wrap(line, console.width, "  "), highlight=False, markup=False)


def _unit_once(rows: list[list[str]], old: int, new: int) -> list[list[str]]:
    """Rows too wide for the terminal: where old and new carry the same unit, only new says it
    (`331.7  307.2 MiB/s`), so that a row's numbers keep one line each."""
    out = []
    for r in rows:
        a, b = r[old].rpartition(" "), r[new].rpartition(" ")
        same = a[1] and b[1] and a[2] == b[2] and not a[2][:1].isdigit()
        out.append(r[:old] + [a[0]] + r[old + 1:] if same else r)
    return out


def markdown(cmp: Comparison, figures: list[str] | None = None) -> str:
    """For a pull request comment or a CI step summary."""
    def cell(x: str) -> str:
        return x.replace("|", "\\|")
    out = [f"### zfsperf compare: {title(cmp)}", ""] + [f"**{line}**\n" for line in history_line(cmp)]
    out += [f"- {line}" for line in setup_lines(cmp) + design_lines(cmp)] + [""]
    out.append("| " + " | ".join(COLUMNS) + " |")
    out.append("|" + "|".join("---" if c in ("case", "figure", "design", "verdict") else "---:" for c in COLUMNS) + "|")
    out += ["| " + " | ".join(cell(x) for x in row) + " |" for row in table_rows(cmp, figures)]
    extra = notes(cmp, figures)
    for d in cmp.profiles:
        if not d.rows:
            continue
        head, rows = d.table()
        extra += ["", f"#### Profile {d.label} (not judged): share of {d.scope or 'the samples'}", "",
                  "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 2) + "---|"]
        extra += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    if cmp.classes:
        extra += ["", "#### Latency histograms, A | B (not judged)", "", "```"]
        extra += [f"{c.label}\n{c.side_by_side()}\n" for c in cmp.classes] + ["```"]
    return "\n".join(out + ([""] + extra if extra else [])) + "\n"
