"""One exporter interface for every file zfsperf derives from results: the per-case report as
Markdown, CSV or JSON (`zfsperf report --format`), the per-iteration results.csv and junit.xml
(written into every results directory), and the HTML report with its pictures. Each exporter
reads the same Exported view and writes one file (or returns its text for stdout), as hyperfine
has one exporter per format."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..results import export
from . import formats, html, openmetrics
from ..results.record import CaseRecord
from .model import RunData


@dataclass
class Exported:
    """What exporters read: the runs (results directories) and their built reports."""
    runs: list[RunData]
    reports: list[dict[str, Any]]
    comparison: Any = None                           # report.compare.Comparison, for HTML A/B
    records: list[CaseRecord] = field(default_factory=list)   # every run's records, in order

    @classmethod
    def of(cls, runs: list[RunData], reports: list[dict[str, Any]], comparison: Any = None) -> "Exported":
        return cls(runs, reports, comparison, [r for run in runs for r in run.records])


class Exporter(Protocol):
    name: str           # the --format name
    filename: str       # its file in a results directory

    def render(self, x: Exported) -> str: ...

    def write(self, x: Exported, path: Path) -> Path: ...


class _TextExporter:
    name = ""
    filename = ""

    def render(self, x: Exported) -> str:
        raise NotImplementedError

    def write(self, x: Exported, path: Path) -> Path:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.render(x), encoding="utf-8")
        tmp.replace(path)
        return path


class Markdown(_TextExporter):
    name, filename = "md", "report.md"

    def render(self, x: Exported) -> str:
        return formats.to_markdown(x.reports)


class CaseCsv(_TextExporter):
    name, filename = "csv", "report.csv"

    def render(self, x: Exported) -> str:
        return formats.to_csv(x.reports)


class Json(_TextExporter):
    name, filename = "json", "report.json"

    def render(self, x: Exported) -> str:
        return formats.to_json(x.reports)


class OpenMetrics(_TextExporter):
    name, filename = "openmetrics", "report.prom"

    def render(self, x: Exported) -> str:
        return openmetrics.render(x.reports)


class ResultsCsv(_TextExporter):
    name, filename = "results-csv", "results.csv"

    def render(self, x: Exported) -> str:
        return export.results_csv(x.records)


class Junit(_TextExporter):
    name, filename = "junit", "junit.xml"

    def render(self, x: Exported) -> str:
        return export.junit_xml(x.records)


class Html:
    name, filename = "html", "report.html"

    def render(self, x: Exported) -> str:
        return html.document(list(zip(x.runs, x.reports)), x.comparison)

    def write(self, x: Exported, path: Path) -> Path:
        return html.write(Path(path), list(zip(x.runs, x.reports)), x.comparison)


EXPORTERS: dict[str, Exporter] = {e.name: e for e in (Markdown(), CaseCsv(), Json(), OpenMetrics(), ResultsCsv(),
                                                      Junit(), Html())}
RESULTS_DIR_FILES = ("junit", "results-csv", "html")      # written into every results directory


def write_results_dir(path: Path) -> dict[str, Path]:
    """junit.xml, results.csv and report.html of one results directory, from what it holds."""
    from . import summary
    from .model import load_run
    run = load_run(path)
    x = Exported.of([run], [summary.build(run)])
    return {name: EXPORTERS[name].write(x, Path(path) / EXPORTERS[name].filename) for name in RESULTS_DIR_FILES}
