"""Every file zfsperf derives from results, one module per format (as hyperfine has one exporter
per format): the per-case report as Markdown (`markdown.py`), CSV (`csv.py`), JSON (`json.py`) and
OpenMetrics text (`openmetrics.py`); every iteration as results.csv (`results_csv.py`) and
junit.xml (`junit.py`); the HTML report with its pictures (`html.py`). Each module has NAME (its
`--format`), FILENAME (its file in a results directory) and render(Exported); what they share
is in `cells.py`. The terminal view is `terminal.py` (not a file format)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ...results.record import CaseRecord
from ..model import RunData
from . import csv, html, json, junit, markdown, openmetrics, results_csv

if TYPE_CHECKING:
    from ..summary import RunReport


@dataclass
class Exported:
    """What exporters read: the runs (results directories) and their built reports."""
    runs: list[RunData]
    reports: list["RunReport"]
    comparison: Any = None                           # report.compare.Comparison, for HTML A/B
    records: list[CaseRecord] = field(default_factory=list)   # every run's records, in order

    @classmethod
    def of(cls, runs: list[RunData], reports: list["RunReport"], comparison: Any = None) -> "Exported":
        return cls(runs, reports, comparison, [r for run in runs for r in run.records])


@dataclass(frozen=True)
class Exporter:
    name: str                                   # the --format name
    filename: str                               # its file in a results directory
    render: Callable[[Exported], str]
    own_write: Callable[[Exported, Path], Path] | None = None    # html: pictures rendered as it writes

    def write(self, x: Exported, path: Path) -> Path:
        """The file at path, replaced whole (written beside it, then renamed)."""
        if self.own_write is not None:
            return self.own_write(x, path)
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        tmp.write_text(self.render(x), encoding="utf-8")
        tmp.replace(path)
        return path


EXPORTERS: dict[str, Exporter] = {e.name: e for e in (
    *(Exporter(m.NAME, m.FILENAME, m.render) for m in (markdown, csv, json, openmetrics, results_csv, junit)),
    Exporter(html.NAME, html.FILENAME, html.render, html.write_export),
)}
RESULTS_DIR_FILES = ("junit", "results-csv", "html")      # written into every results directory


def write_results_dir(path: Path, html: bool = True) -> dict[str, Path]:
    """junit.xml, results.csv and (unless html is False) report.html of one results directory,
    from what it holds."""
    from .. import summary
    from ..model import load_run
    run = load_run(path)
    x = Exported.of([run], [summary.build(run)])
    return {name: EXPORTERS[name].write(x, Path(path) / EXPORTERS[name].filename) for name in RESULTS_DIR_FILES
            if html or name != "html"}
