"""The per-case report as Markdown (`--format md`): a pull request comment or a CI step summary."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...metrics.quantize import render as render_histogram
from . import cells

if TYPE_CHECKING:
    from . import Exported
    from ..summary import RunReport

NAME, FILENAME = "md", "report.md"


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def render_reports(reports: list["RunReport"]) -> str:
    out: list[str] = []
    for rep in reports:
        out += [f"# {cells.header_line(rep, full_path=False)}", ""]
        for case in rep.cases:
            out += [f"## {case.case} ({cells.status(case)})", ""]
            if case.figures:
                out += _md_table(["figure", *cells.STAT_COLUMNS], [[r.figure, *cells.stat_cells(r)] for r in case.figures])
                out.append("")
            if case.class_table:
                out += _md_table(["class", "avg latency", "stddev", "iops", "throughput"], cells.class_rows(case)) + [""]
            for h in case.histograms.values():
                out += ["```", render_histogram(h["buckets"], f"{h['title']} latency ({h['unit']})"), "```", ""]
            for line in cells.case_lines(case):
                out += [line, ""]
            for e in case.errors:
                out += [f"> {e}", ""]
        out += [f"- Warning: {w}" for w in rep.warnings]
    return "\n".join(out).rstrip() + "\n"


def render(x: "Exported") -> str:
    return render_reports(x.reports)
