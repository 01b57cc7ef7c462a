"""Output fits a terminal (issue 70): at 100 columns, piped or with COLUMNS, no table row wraps and
no number is cut; COLUMNS is honoured when piped; a case's steady line takes at most two lines."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest

from zfsperf import cli
from zfsperf.report.tables import case_tables
from zfsperf.results.directory import ResultsDir
from zfsperf.ui import Console
from zfsperf.workloads import SUMMARY_FIGURES

RUN = Path(__file__).resolve().parent / "fixtures" / "results-format2" / "receive-fio"


def _cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        cli.main(list(argv))
    return out.getvalue()


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(RUN, d)                        # a short path: the header line is the run's path
    return d


@pytest.mark.parametrize("columns", [None, "100", "80"])
def test_report_fits_the_width_and_cuts_no_number(columns, tmp_path, monkeypatch):
    d = _copy(tmp_path)
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    width = int(columns or 100)
    text = _cli("report", str(d), "--no-histograms")
    lines = text.splitlines()[1:]                  # the first: the run's path
    assert max(len(ln.rstrip()) for ln in lines) <= width and "…  " not in text.replace(" … ", "")
    steady = [ln for ln in text.split("\n") if ln.startswith("steady state")]
    for first in steady:                           # the line and what wraps after it, up to the next one
        rest = text.split(first, 1)[1].split("\n")[1:]
        more = next(i for i, ln in enumerate(rest) if ln.startswith(("cross-checks", "txgs", "receive", "fio",
                                                                     "Warning", "")))
        assert 1 + more <= 3, first                # at most three lines at 80 columns, two at 100
        if width == 100:
            assert 1 + more <= 2, first


def test_the_run_summary_is_a_table_a_workload_with_one_word_in_its_steady_cell_and_fits(tmp_path):
    recs = ResultsDir.open(_copy(tmp_path)).results()
    tables = case_tables(recs, SUMMARY_FIGURES)
    assert [t.title.split(":")[0] for t in tables] == ["receive", "fio"]
    for t in tables:
        lines = Console(file=io.StringIO()).render_table(t).splitlines()
        assert max(len(ln.rstrip()) for ln in lines) <= 100
        row_lines = [ln for ln in lines if ln.startswith(("  receive threads", "  randread"))]
        assert len(row_lines) == len(t.rows)       # one line a row: nothing wrapped
        assert all(r[3] in ("steady", "not steady", "can't tell", "-", "unjudged") for r in t.rows)
    assert any(n.startswith("receive threads=1: not steady: ") for n in tables[0].notes)


def test_compare_rows_do_not_wrap(tmp_path, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    d = _copy(tmp_path)
    text = _cli("compare", "--no-history", str(d), "--cases", "receive threads=1", "receive threads=2")
    rows = [ln for ln in text.splitlines() if "throughput" in ln and "MiB/s" in ln]
    assert rows and all("…" not in r.split("MiB/s")[0] for r in rows)
    assert max(len(ln) for ln in text.splitlines() if "MiB/s" in ln) <= 100
