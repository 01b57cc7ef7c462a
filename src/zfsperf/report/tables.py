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
TABLE_ROOM = 240     # a table on a terminal takes the width its cells need, up to this (most fit 100)


@dataclass
class Table:
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    title: str = ""
    notes: list[str] = field(default_factory=list)     # lines under it (what a cell says in one word)


def case_tables(records: list[CaseRecord], summary: dict[str, list[str]] | None = None) -> list[Table]:
    """The run summary's tables: one per workload, each with its own figures' columns (a run of
    receive and fio cases in one table would show every column, mostly "-")."""
    by: dict[str, list[CaseRecord]] = {}
    for r in records:
        by.setdefault(r.workload, []).append(r)
    tables = [case_table(recs, summary) for recs in by.values()]
    if len(tables) > 1:
        for t, w in zip(tables, by):
            t.title = f"{w}: {t.title}"
    return tables


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
            word, why = steady_cell(recs)
            row.append(word)
            if why:
                t.notes.append(f"{case}: {why}")
        for n in names:
            vals = [r.figures[n].value for r in passed if n in r.figures]
            if not vals:
                row.append("-")
                continue
            s = summarise(vals)
            row.append(format_number(s.mean) + (f" ({s.cv:.1f}%)" if s.n > 1 and s.cv == s.cv else ""))
        t.rows.append(row)
    return t


def steady_cell(recs: list[CaseRecord]) -> tuple[str, str | None]:
    """The case's steady-state verdict in a word or two for its cell, and, when that is not a plain
    "steady", the verdict in full for a line under the table."""
    v = case_verdict(recs, headline(recs[0].workload))
    if v is None:
        return "-", None
    text = v.short()
    if v.steady:
        return "steady", (f"steady after {v.time_to_steady_s:.1f} s" if v.time_to_steady_s is not None else None)
    return text.split(":", 1)[0].split(" (", 1)[0], text
