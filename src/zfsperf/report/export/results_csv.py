"""Every iteration as a CSV row (results.csv in every results directory; `--format results-csv`):
its sweep point, status, duration and every figure with its unit in the column name."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...results.record import CaseRecord
from .cells import csv_text
from ...units import exact_number

if TYPE_CHECKING:
    from . import Exported

NAME, FILENAME = "results-csv", "results.csv"


def results_csv(records: list[CaseRecord]) -> str:
    fig_names = sorted({k for r in records for k in r.figures})
    units = {}
    for r in records:
        for k, f in r.figures.items():
            units.setdefault(k, f.unit)
    param_names = sorted({k for r in records for k in r.sweep})
    header = ["test", "case", "iteration", "status", "duration_s", *param_names,
              *[f"{n} ({units[n]})" for n in fig_names], "error"]
    rows = []
    for r in records:
        figs = r.figures
        rows.append([r.test, r.case, r.iteration, r.status.value, f"{r.duration or 0.0:.3f}",
                     *[_cell(r.sweep.get(p, "")) for p in param_names],
                     *[exact_number(figs[n].value) if n in figs else "" for n in fig_names],
                     r.error or ""])
    return csv_text(header, rows)


def _cell(v: Any) -> str:
    if isinstance(v, dict):
        return " ".join(f"{k}={x}" for k, x in v.items())
    return str(v)


def render(x: "Exported") -> str:
    return results_csv(x.records)
