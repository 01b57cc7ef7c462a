"""`zfsperf report` on a terminal (rich tables); not a file format, so not in the exporter table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...metrics.quantize import render
from ...units import emulation_label, format_bytes, format_number
from .. import fit
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
    stddev, min and max too), fitted to the console's width (.. fit: an interval wraps at its
    dots, a number is never cut), and its lines of prose wrapped at that width."""
    columns = cells.STAT_COLUMNS if wide else NARROW
    w = console.width

    def say(text: str) -> None:
        console.print(fit.wrap(text, w, "  "), highlight=False, markup=False)

    for rep in reports:
        say(cells.header_line(rep))          # wrapped at spaces: a path is one word, never cut
        label = emulation_label(rep.target.get("accelerator"))
        for case in rep.cases:
            head = f"{case.case}  [{cells.status(case)}]" + (f"  {label}" if label else "")
            if case.figures:
                cols = [fit.Column(c, right=c not in ("figure", "unit"), wraps=c == "95% CI")
                        for c in ("figure", "unit") + columns]
                fit.table(console, cols, [[row.figure, "bytes" if row.unit == "B" else row.unit,
                                           *_cells(row, columns)] for row in case.figures], head)
            else:
                say(head + (f": {case.errors[0]}" if case.errors else ""))
            if case.class_table:
                fit.table(console, [fit.Column(c, right=True) for c in ("class", "avg latency", "stddev", "iops",
                                                                          "throughput")],
                          cells.class_rows(case), "per I/O class (mean over iterations)")
            if histograms:
                for h in case.histograms.values():
                    console.print(fit.stripped(render(h["buckets"], f"{h['title']} latency ({h['unit']})")),
                                  highlight=False, markup=False)
            for line in cells.case_lines(case):
                say(line)
        for warning in rep.warnings:
            say(f"Warning: {warning}")
        console.print()
