"""The per-case report as CSV (`--format csv`): one row per case and figure, its statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import cells
from ...units import exact_number
from pathlib import Path

if TYPE_CHECKING:
    from . import Exported
    from ..summary import RunReport

NAME, FILENAME = "csv", "report.csv"


def render_reports(reports: list["RunReport"]) -> str:
    rows = []
    for rep in reports:
        for case in rep.cases:
            for r in case.figures:
                rows.append([Path(rep.path).name, case.test, case.case, r.figure, r.unit, r.n,
                             *("" if x is None else exact_number(x) for x in (r.mean, r.median, r.stddev, r.cv_pct,
                                                                             r.min, r.max)),
                             *("" if x is None else exact_number(x) for x in r.ci95),
                             " ".join(str(i) for i in r.outliers)])
    return cells.csv_text(["results", "test", "case", "figure", "unit", "n", "mean", "median", "stddev", "cv_pct", "min",
                     "max", "ci95_low", "ci95_high", "outlier_iterations"], rows)


def render(x: "Exported") -> str:
    return render_reports(x.reports)
