"""compare on a terminal: its lines wrapped and its table fitted to the width (report/fit.py)."""

from __future__ import annotations

from typing import Any

from ... import fit
from ...comparison import Comparison
from .text import (COLUMNS, design_lines, history_line, notes, setup_lines, table_rows,
                          title)


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
