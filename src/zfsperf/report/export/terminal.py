"""`zfsperf report` on a terminal (rich tables); not a file format, so not in the exporter table."""

from __future__ import annotations

from textwrap import fill
from typing import TYPE_CHECKING, Any

from ...metrics.quantize import render
from ...units import emulation_label, format_bytes, format_number
from . import cells

if TYPE_CHECKING:
    from ..summary import RunReport


NARROW = ("n", "mean", "CV %", "95% CI")      # the default columns; --wide adds the rest of STAT_COLUMNS


def _num(x: float | None, unit: str) -> str:
    """A cell's number without its unit (the unit has its own column); bytes in binary units."""
    if x is None:
        return "-"
    if unit == "B":
        return format_bytes(x)
    return format_number(x)


def _cells(row: Any, columns: tuple[str, ...]) -> list[str]:
    u, (lo, hi) = row.unit, row.ci95
    two = row.n >= 2
    have = {"n": str(row.n), "mean": _num(row.mean, u), "median": _num(row.median, u),
            "stddev": _num(row.stddev, u) if two else "-",
            "CV %": f"{row.cv_pct:.1f}" if two and row.cv_pct is not None else "-",
            "min": _num(row.min, u), "max": _num(row.max, u),
            "95% CI": f"{_num(lo, u)} … {_num(hi, u)}" if two and lo is not None else "-"}
    return [have[c] for c in columns]


def show(reports: list["RunReport"], console: Any, histograms: bool = True, wide: bool = False) -> None:
    """Each case's figures as a table of figure, unit, n, mean, CV % and 95 % CI (wide: median,
    stddev, min and max too), numbers never cut (a cell does not wrap)."""
    from rich import box
    from rich.table import Table
    columns = cells.STAT_COLUMNS if wide else NARROW
    if wide:                                   # as wide as its columns need: a wide terminal's view
        from rich.console import Console
        console = Console(file=console.file, width=max(console.width, 160), highlight=False, soft_wrap=True)
    for rep in reports:
        console.print(cells.header_line(rep), highlight=False)
        label = emulation_label(rep.target.get("accelerator"))
        for case in rep.cases:
            t = Table(title=f"{case.case}  [{cells.status(case)}]" + (f"  {label}" if label else ""), title_justify="left",
                      box=box.SIMPLE_HEAD)
            for c in ("figure", "unit") + columns:
                t.add_column(c, justify="left" if c in ("figure", "unit") else "right", no_wrap=True)
            for row in case.figures:
                t.add_row(row.figure, "bytes" if row.unit == "B" else row.unit, *_cells(row, columns))
            if case.figures:                    # --wide: as wide as its columns (a wide terminal's view)
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
            for line in cells.case_lines(case):          # wrapped at the console's width
                console.print(fill(line, console.width), highlight=False, markup=False)
        for w in rep.warnings:
            console.print(fill(f"Warning: {w}", console.width), highlight=False, markup=False)
        console.print()
