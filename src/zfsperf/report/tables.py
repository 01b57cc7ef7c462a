"""The per-case table printed after a run and by `zfsperf report`: mean over iterations with CV %."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results.record import CaseRecord
from ..results.stats import summarise
from ..steady.rounds import case_verdict
from ..workloads import headline
from ..units import format_number

# preferred column order; other figures follow alphabetically
ORDER = ["throughput", "blocks", "txgs", "per_stream", "iops", "bw", "read_iops", "write_iops", "read_bw", "write_bw",
         "read_lat_mean", "read_lat_p99", "write_lat_mean", "write_lat_p99", "receive_time"]
@dataclass
class Table:
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    title: str = ""


def case_table(records: list[CaseRecord], summary: dict[str, list[str]] | None = None,
               full: bool = False) -> Table:
    """summary: workload -> the figures its summary shows (the workloads say; None: every figure)."""
    summary = summary or {}
    cases: dict[str, list[CaseRecord]] = {}
    for r in records:
        cases.setdefault(r.case, []).append(r)
    figs: dict[str, str] = {}
    for r in records:
        if r.passed:
            keep = summary.get(r.workload)
            for k, f in r.figures.items():
                if full or keep is None or k in keep:
                    figs.setdefault(k, f.unit)
    order = ORDER + [n for w in summary.values() for n in w if n not in ORDER]
    names = [n for n in order if n in figs] + sorted(n for n in figs if n not in order and n != "bytes")
    sampled = any(r.steady is not None for r in records)
    t = Table(columns=["case", "status", "n"] + (["steady"] if sampled else [])
              + [f"{n} ({figs[n]})" for n in names], title="mean over iterations (CV %)")
    for case, recs in cases.items():
        passed = [r for r in recs if r.passed]
        statuses = sorted({r.status.value for r in recs})
        row = [case, "/".join(statuses), str(len(passed))]
        if sampled:
            row.append(steady_cell(recs))
        for n in names:
            vals = [r.figures[n].value for r in passed if n in r.figures]
            if not vals:
                row.append("-")
                continue
            s = summarise(vals)
            row.append(format_number(s.mean) + (f" ({s.cv:.1f}%)" if s.n > 1 and s.cv == s.cv else ""))
        t.rows.append(row)
    return t


def steady_cell(recs: list[CaseRecord]) -> str:
    """The case's steady-state verdict in a few words, with its time to steady when it had one."""
    v = case_verdict(recs, headline(recs[0].workload))
    if v is None:
        return "-"
    text = v.short()
    if v.steady and v.time_to_steady_s is not None:
        text += f" (after {v.time_to_steady_s:.1f} s)"
    return text
