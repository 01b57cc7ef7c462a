"""Output fits a terminal (issues 70, 83): at 100 columns, piped or with COLUMNS, and at 80, no
line of compare, report or history is wider, none ends in spaces, and wrapping never parts a
number from its unit or cuts one; COLUMNS is honoured when piped; a case's steady line takes at
most two lines."""

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
        row_lines = [ln for ln in lines if ln.startswith((" receive threads", " randread"))]
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


UNIT_FIRST = ("%", "MiB", "GiB", "KiB", "MiB/s", "us", "ms", "s", "IOPS", "blocks/s", "TXGs/s", "points")


def _fits(text: str, width: int, what: str, path: str = "\0") -> None:
    for ln in text.splitlines():           # a path is never broken: a line that holds one may be wider
        assert len(ln) <= width or path in ln, f"{what}: {len(ln)} > {width}: {ln!r}"
        assert ln == ln.rstrip(), f"{what}: ends in spaces: {ln!r}"
        assert not (ln.split() and ln.split()[0] in UNIT_FIRST), f"{what}: a unit parted from its number: {ln!r}"
    assert "…\n" not in text.replace(" …\n", ""), f"{what}: a cut cell"


@pytest.mark.parametrize("columns", ["80", "100"])
def test_compare_report_and_history_fit_the_width_without_trailing_spaces(columns, tmp_path, monkeypatch):
    """Issue 83: compare's and report's tables were 105-168 columns at COLUMNS=80 and 100, every
    line padded with spaces, report --wide's prose 160, history's 99 at any width, and a wrapped
    note split `+43` from ` %`."""
    import random
    from helpers import level_run, stored_results
    monkeypatch.setenv("COLUMNS", columns)
    width = int(columns)
    d = _copy(tmp_path)
    _fits(_cli("compare", "--no-history", str(d)), width, "compare", str(d))
    _fits(_cli("compare", "--no-history", str(d), "--cases", "receive threads=1", "receive threads=2"), width,
          "compare --cases", str(d))
    _fits(_cli("report", str(d)).split("\n", 1)[1], width, "report")        # the first line: the run's path
    wide = _cli("report", "--wide", str(d), "--no-histograms").split("\n", 1)[1]    # its nine number columns may not fit 80
    _fits("\n".join(ln for ln in wide.splitlines() if "─" not in ln and not ln.startswith((" ", "figure"))),
          width, "report --wide's prose")
    r = random.Random(3)
    runs = [stored_results(tmp_path / f"r{i}", level_run(100.0 if i < 6 else 80.0, r), start=1 + i,
                           case="a case whose name is long enough to wrap at eighty columns, threads=1")
            for i in range(12)]
    store = str(tmp_path / "h.sqlite")
    assert cli.main(["history", "import", *map(str, runs), "--store", store]) == 0
    hist = _cli("history", "--store", store)
    assert "change point" in hist and "-20" in hist.replace("−", "-"), hist
    _fits(hist, width, "history", str(tmp_path))


@pytest.mark.parametrize("columns", ["80", "100"])
def test_reports_first_line_wraps_at_the_width_and_keeps_the_path_whole(columns, tmp_path, monkeypatch):
    """The run's line at the top of `report` (its path, its ZFS, its runfile) was printed whole: 127
    columns at COLUMNS=80 for a README `ab` run. It wraps at spaces like the prose under it; only
    a path longer than the width may stand alone on a line of its own, uncut."""
    monkeypatch.setenv("COLUMNS", columns)
    width = int(columns)
    d = tmp_path / ("a-results-directory-whose-name-is-long-" * 2) / "run"
    shutil.copytree(RUN, d)
    text = _cli("report", str(d), "--no-histograms")
    head = text.split("\n")[:3]
    assert str(d) in text.split("\n")[0] and "zfs-fuse" in " ".join(head), head
    for ln in text.splitlines():
        assert len(ln) <= width or ln.rstrip(":") == str(d), f"{len(ln)} > {width}: {ln!r}"


AB_TURNS = Path(__file__).resolve().parent / "fixtures" / "results-format2" / "receive-ab-turns"


@pytest.mark.parametrize("columns", ["80", "100"])
def test_compare_of_the_readmes_ab_fits_with_its_interval_said_once(columns, tmp_path, monkeypatch):
    """The README's first A/B (`zfsperf ab checksum=fletcher2,fletcher4`, a receive in turns, its run
    kept here) compared at COLUMNS=80 was 84 wide: its rows' units (`2,668 blocks/s`) and
    verdicts beside an interval column that already held the interval they repeated
    (`WORSE (-13.0 … -1.8 %)` next to `-13.0 … -1.8 %`). Each row's interval is said once, and
    each row's change, interval and verdict stay on it."""
    monkeypatch.setenv("COLUMNS", columns)
    d = tmp_path / "run"
    shutil.copytree(AB_TURNS, d)
    text = _cli("compare", str(d))
    _fits(text, int(columns), "compare", str(d))
    rows = [ln for ln in text.splitlines() if ln.startswith((" throughput", " blocks", " receive_time"))]
    assert len(rows) == 3, text
    for ln in rows:
        cells = ln.replace(" … ", "…").split()
        assert sum("…" in c for c in cells) <= 1, ln          # the interval once a row
    throughput = rows[0].split()
    assert "WORSE" in throughput and throughput[throughput.index("WORSE") - 1].startswith("0.0"), rows[0]
