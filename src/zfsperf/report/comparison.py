"""The typed result of a comparison: each figure's change (`FigureChange`), a case that stopped
passing (`StatusChange`), the whole `Comparison` and the CI gate's judgement on it (`Gate`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..units import ChangeVerdict
from ..workloads import DURATIONS, headline
from .abstats import ALPHA, min_p, needed_per_side
from .classhist import ClassChange
from .designs import SAME_DESIGNS, Design
from .model import RunData
from .profilediff import ProfileDiff
from .setup import SetupChange


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
    # exact counts that differ beyond their tolerance, each with its case (metrics/counts.py)
    findings: list[dict[str, Any]] = field(default_factory=list)
    profiles: list[ProfileDiff] = field(default_factory=list)   # where the CPU went, A against B (--profile)
    classes: list[ClassChange] = field(default_factory=list)    # per-class latency histograms, A against B
    workloads: dict[str, str] = field(default_factory=dict)     # an in-run pair's label "A → B": its workload
    history_store: str | None = None                           # the store the history design read

    @property
    def one_side_then_the_other(self) -> bool:
        """Several runs a side, every run of one side started before every run of the other: the
        between-run test cannot tell a drift of the machine over that time from the change
        (bench/calibration.py: 9.0-9.3 % false alarms with 3 runs a side under a 1 % drift a run,
        1.8 % when they alternate)."""
        starts = [[r.run.start for r in runs] for runs in (self.bases, self.news)]
        if len(self.bases) + len(self.news) < 3 or not all(s is not None for side in starts for s in side):
            return False
        return max(starts[0]) < min(starts[1]) or max(starts[1]) < min(starts[0])

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

    @property
    def cannot_fail(self) -> bool:
        """No judged figure can be called, whatever its change: none has a p-value (sweep points,
        too few iterations) or each that has is one the rank test's smallest p keeps above Holm."""
        blind = {id(c) for c in self.blind}
        return not any(c.p is not None and id(c) not in blind for c in self.judged)

    def describe(self) -> str:
        what = f"figure {self.figure}" if self.figure else "each case's headline figure"
        return (f"the gate judges {what} ({len(self.judged)} comparisons, {self.tested} with a p-value), "
                f"at a family-wise α of {self.alpha:g} (Holm's step-down across them)")
