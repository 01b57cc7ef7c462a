"""`zfsperf report` on a terminal (rich tables); not a file format, so not in the exporter table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...metrics.quantize import render
from ...units import emulation_label
from . import cells

if TYPE_CHECKING:
    from ..summary import RunReport


def show(reports: list["RunReport"], console: Any, histograms: bool = True) -> None:
    from rich.table import Table
    for rep in reports:
        console.print(cells.header_line(rep), highlight=False)
        label = emulation_label(rep.target.get("accelerator"))
        for case in rep.cases:
            t = Table(title=f"{case.case}  [{cells.status(case)}]" + (f"  {label}" if label else ""), title_justify="left")
            for c in ("figure",) + cells.STAT_COLUMNS:
                t.add_column(c, justify="left" if c == "figure" else "right")
            for row in case.figures:
                t.add_row(row.figure, *cells.stat_cells(row))
            if case.figures:
                console.print(t)
            else:
                console.print(f"{case.case}  [{cells.status(case)}]" +
                              (f": {case.errors[0]}" if case.errors else ""), highlight=False)
            if case.class_table:
                ct = Table(title="per I/O class (mean over iterations)", title_justify="left")
                for c in ("class", "avg latency", "stddev", "iops", "throughput"):
                    ct.add_column(c, justify="right")
                for r in cells.class_rows(case):
                    ct.add_row(*r)
                console.print(ct)
            if histograms:
                for h in case.histograms.values():
                    console.print(render(h["buckets"], f"{h['title']} latency ({h['unit']})"), highlight=False,
                                  markup=False)
            for line in cells.case_lines(case):
                console.print(line, highlight=False, markup=False)
        for w in rep.warnings:
            console.print(f"Warning: {w}", highlight=False, markup=False)
        console.print()
