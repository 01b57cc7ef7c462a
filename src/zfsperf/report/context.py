"""What a comparison shows beside its verdicts and never judges: the two sides' txgs and I/O
taskqs, their profiles function by function, and a side that was not in a steady state; and the
exact counts' findings, judged by their own rule (metrics/counts.py), never by the speed test."""

from __future__ import annotations

from ..metrics import counts, taskq, txgtable, zil
from ..steady.rounds import case_verdict
from ..workloads import headline, latsearch
from . import profilediff
from .comparison import Comparison
from .model import CaseData, RunData
from .pairing import ab_pairs, pairing
from .profilediff import ProfileDiff
from .summary import details


def txg_context(cmp: Comparison, label: str, olds: list[CaseData], news: list[CaseData]) -> None:
    """The per-txg tables of the two sides, median against median (kernel OpenZFS), as context: why
    a write workload changed, never a verdict. Sides that shared one pool (a duet) have one table."""
    ta, tb = txgtable.merged(details(olds, "txgs")), txgtable.merged(details(news, "txgs"))
    if not ta or not tb or not ta.get("count") or not tb.get("count") or ta.get("shared") or tb.get("shared"):
        return
    parts = [f"{ta[q]['what']} {txgtable.number(ta[q]['median'])} → {txgtable.number(tb[q]['median'])} {ta[q]['unit']}"
             for q in txgtable.QUANTITIES if q in ta and q in tb]
    cmp.context.append(f"{label}: txgs {ta['count']} → {tb['count']}; median per txg: " + "; ".join(parts))


def taskq_context(cmp: Comparison, label: str, olds: list[CaseData], news: list[CaseData]) -> None:
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


def zil_context(cmp: Comparison, label: str, olds: list[CaseData], news: list[CaseData]) -> None:
    """The two sides' ZIL counters per iteration (kernel OpenZFS 2.2+), as context: whether B
    committed to the log as often as A and where its log blocks went (each side's own datasets',
    in turns too)."""
    za, zb = zil.merged(details(olds, "zil")), zil.merged(details(news, "zil"))
    if not za or not zb:
        return
    cmp.context.append(f"{label}: the ZIL per iteration: {zil.words(za)} → {zil.words(zb)}")


def latency_context(cmp: Comparison, label: str, olds: list[CaseData], news: list[CaseData]) -> None:
    """The two sides' latency-target searches in words (workloads/latsearch.py): how far each held
    the same target; the verdict is latency_target_iops's row."""
    la, lb = latsearch.merged(details(olds, "latency_search")), latsearch.merged(details(news, "latency_search"))
    if not la or not lb:
        return
    what = latsearch.held_words(la)
    if what != latsearch.held_words(lb):
        cmp.context.append(f"{label}: the two sides searched other latency targets ({what}; {latsearch.held_words(lb)})")
        return
    a, b = (sum(m["iops"]) / len(m["iops"]) for m in (la, lb))
    change = f" ({(b / a - 1) * 100:+.1f} %)" if a > 0 else ""
    cmp.context.append(f"{label}: {what} held up to {a:,.0f} → {b:,.0f} IOPS{change}, mean of "
                       f"{len(la['iops'])} and {len(lb['iops'])} iterations (its figure: latency_target_iops)")


def count_findings(cmp: Comparison, label: str, olds: list[CaseData], news: list[CaseData]) -> None:
    """The two sides' exact counts (metrics/counts.py) compared exactly: each that differs beyond
    its tolerance becomes a finding of its own, whatever the speed verdict says."""
    for f in counts.findings(counts.merged(details(olds, "counts")), counts.merged(details(news, "counts"))):
        cmp.findings.append({"case": label, **f})


def profile_diffs(run: RunData) -> list[ProfileDiff]:
    """The differential profiles of a run's A/B pairs (report.html), paired as compare pairs them."""
    out = []
    for a, b in ab_pairs(run):
        d = profilediff.of_cases(run.path, a, run.path, b, f"{a.case} → {b.case}", paired=any(pairing(run, a, b)))
        if d is not None:
            out.append(d)
    return out


def profile_context(cmp: Comparison, a: tuple[RunData, CaseData], b: tuple[RunData, CaseData], label: str, *,
                     paired: bool) -> None:
    """The two sides' profiles, function by function (report/profilediff.py), when they were taken."""
    d = profilediff.of_cases(a[0].path, a[1], b[0].path, b[1], label, paired=paired)
    if d is not None:
        cmp.profiles.append(d)


def warn_unsteady(cmp: Comparison, sides: list[tuple[str, CaseData | None]]) -> None:
    """A figure measured outside a steady state compares transients: say so next to the verdict."""
    for label, c in sides:
        if c is None:
            continue
        v = case_verdict(c.records, headline(c.workload))
        if v is not None and v.steady is False:
            text = f"{label}: {c.case} was not in a steady state ({v.why}): its figures may hold a transient"
            if text not in cmp.warnings:
                cmp.warnings.append(text)
