"""Golden files: what report, compare and history print for a stored results directory.

`tests/fixtures/results-format2/receive-fio` is a real run (zfs-fuse, receive threads=1,2 and a
fio randread, 3 iterations, steady state recorded) written in results format 2. Every exporter's
text, compare's verdicts and the history series read from it must stay byte-for-byte what they
were when the directory was written (JSON: every float to 10 significant digits, since a new scipy
moves the last digits of a quantile): a reader that changes a figure, a unit, a verdict or a
column is caught here in a second, without ZFS. Run with UPDATE_GOLDEN=1 to rewrite the goldens
after a deliberate change, and review the diff.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from helpers import run_in_process


STORED = Path(__file__).resolve().parent / "fixtures" / "results-format2"
RUN = STORED / "receive-fio"
GOLDEN = STORED / "golden"
A, B = "receive threads=1", "receive threads=2"

VIEWS = {
    "report.json": ["report", "--format", "json"],
    "report.md": ["report", "--format", "md"],
    "report.csv": ["report", "--format", "csv"],
    "report.openmetrics": ["report", "--format", "openmetrics"],
    "report.results-csv": ["report", "--format", "results-csv"],
    "report.junit": ["report", "--format", "junit"],
    "compare-cases.json": ["compare", "--no-history", "--format", "json", "{run}", "--cases", A, B],
    "compare-cases.md": ["compare", "--no-history", "--format", "md", "{run}", "--cases", A, B],
    "compare-sweep.md": ["compare", "--no-history", "--format", "md", "{run}"],
    "report.terminal": ["report", "--format", "terminal"],
    "steady-run.txt": ["steady", "{run}"],
    "steady-series.txt": ["steady", "{run}/series/receive__threads=1.i1.jsonl"],
    "steady-series.json": ["steady", "--json", "{run}/series/receive__threads=1.i1.jsonl"],
}


def _cli(argv: list[str]) -> tuple[int, str]:
    """The view as it is piped with no COLUMNS (ui.PIPED_WIDTH): the golden's width, whatever the
    environment of the tests says (pytest-xdist's workers have COLUMNS=80)."""
    res = run_in_process(argv, {"COLUMNS": ""})
    assert "Traceback" not in res.stderr, res.stderr
    return res.returncode, res.stdout


def _view(name: str, run: Path) -> str:
    argv = [a.replace("{run}", str(run)) for a in VIEWS[name]]
    if argv[0] == "report":
        argv.append(str(run))
    if argv[0] == "steady" and argv[-1] == str(run):
        text = _cli(argv)[1]                  # reproduces the recorded verdicts: exit 0 when all agree
        return text.replace(str(run), "<RUN>")
    code, text = _cli(argv)
    assert code in (0, 1), (name, code)
    return text.replace(str(run), "<RUN>")


def _rounded(x: object) -> object:
    """A JSON value with every float to 10 significant digits: the last digits of a quantile or an
    interval are scipy's and numpy's (a new scipy moved a detectable change from ...2688 to ...2687),
    not the reader's; a changed figure, unit, verdict or key still differs."""
    if isinstance(x, float):
        return float(f"{x:.10g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_rounded(v) for v in x]
    return x


def _check(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    golden = path.read_bytes().decode()
    if name.endswith(".json") and text != golden:
        assert _rounded(json.loads(text)) == _rounded(json.loads(golden)), f"{name} differs from its golden file {path}"
        return
    assert text == golden, f"{name} differs from its golden file {path}"


@pytest.fixture
def run() -> Iterator[Path]:
    """A copy of the stored directory: readers must not write into it, and paths stay fixed. Its
    path has one length whatever the test's name (/tmp/zfsperf-golden-XXXXXXXX/receive-fio): the
    terminal view wraps its first line, the run's path, at the width."""
    top = Path(tempfile.mkdtemp(prefix="zfsperf-golden-", dir="/tmp"))
    dst = top / "receive-fio"
    shutil.copytree(RUN, dst)
    yield dst
    shutil.rmtree(top, ignore_errors=True)


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_view_matches_golden(name, run):
    _check(name, _view(name, run))


class _Skeleton(HTMLParser):
    """An HTML page as its structure: one line per element (indented by depth, with its id and
    class) and per run of text; an image is its kind and alt text, never its pixels (matplotlib's
    bytes are not the reader's)."""

    VOID = {"img", "br", "meta", "link", "hr", "input"}

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        extra = "".join(f" {k}={a[k]}" for k in ("id", "class") if a.get(k))
        if tag == "img":
            src = a.get("src") or ""
            extra += f" src={src.split(',', 1)[0] if src.startswith('data:') else src} alt={a.get('alt')}"
        self.lines.append("  " * self.depth + f"<{tag}{extra}>")
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID:
            self.depth = max(0, self.depth - 1)

    def handle_data(self, data: str) -> None:
        text = " ".join(data.split())
        if text:
            self.lines.append("  " * self.depth + text)


def test_html_structure_matches_golden(run):
    """report.html's structure and text (every heading, table cell and note; each picture by its
    kind and alt text), so that a section, a column or a chart that goes missing is caught."""
    code, text = _cli(["report", "--format", "html", str(run)])
    assert code in (0, 1) and text.count("<img ") >= 3
    sk = _Skeleton()
    sk.feed(text.replace(str(run), "<RUN>"))
    out = "\n".join(ln for ln in sk.lines if not ln.lstrip().startswith(("<style", "<script"))) + "\n"
    _check("report.html.structure", out)


def test_history_series_matches_golden(run, tmp_path):
    store = tmp_path / "history.sqlite"
    code, _ = _cli(["history", "--store", str(store), "import", str(run)])
    assert code == 0
    code, text = _cli(["history", "--store", str(store), "--json", "--case", A])
    assert code == 0
    series = json.loads(text)
    for s in series if isinstance(series, list) else [series]:
        for key in ("imported", "store"):
            s.pop(key, None)
    _check("history.json", json.dumps(series, indent=1, sort_keys=True).replace(str(run), "<RUN>") + "\n")


def test_format2_records_read_as_written(run):
    """Every record of the stored format-2 file is read: the sweep point from its `params`."""
    from zfsperf.report.model import load_run
    data = load_run(run)
    raw = [json.loads(x) for x in (RUN / "results.jsonl").read_text().splitlines() if x.strip()]
    assert len(data.records) == len(raw) == 9
    assert {c.case for c in data.cases.values()} == {A, B, "randread"}
    threads = sorted(int(c.sweep["threads"]) for c in data.cases.values() if c.test == "receive")
    assert threads == [1, 2]


def test_format3_reads_like_format2(run, tmp_path):
    """The same records written by this zfsperf (format 3: CaseRecord.to_json) read back to the same
    report, compare and every exporter's text as the stored format-2 file: one typed record, two formats."""
    from zfsperf.results.record import FORMAT_VERSION, CaseRecord
    from zfsperf.results.directory import ResultsDir
    assert FORMAT_VERSION == 3
    old = ResultsDir.open(run).results()
    info = json.loads((run / "run.json").read_text())
    assert info["format"] == 2
    (run / "run.json").write_text(json.dumps(info | {"format": 3}))
    lines = [json.dumps(r.to_json()) for r in old]
    assert all('"sweep"' in ln and '"params"' not in ln for ln in lines)
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    new = ResultsDir.open(run).results()
    assert new == old
    assert [CaseRecord.from_json(r.to_json()) for r in new] == new
    for name in VIEWS:
        _check(name, _view(name, run))


def test_record_keeps_workload_detail(run):
    """What a workload records beside its figures (receive's streams and rounds, fio's histograms,
    class table and latency kinds) survives a round trip: nothing a record carried is dropped."""
    from zfsperf.results.directory import ResultsDir
    recs = ResultsDir.open(run).results()
    raw = [json.loads(x) for x in (RUN / "results.jsonl").read_text().splitlines() if x.strip()]
    for r, d in zip(recs, raw):
        back = r.to_json()
        assert back.pop("sweep") == d.pop("params")
        assert back == d
    fio = [r for r in recs if r.workload == "fio"]
    assert fio and all(r.histograms and r.class_table and "latency_kind" in r.detail for r in fio)
    assert all(r.detail.get("rounds") for r in recs if r.workload == "receive")


def test_steady_verdict_is_typed(run):
    """A record's steady-state verdict reads as a SteadyRecord (typed fields, 1-based sample
    numbers, its window), and writes back the very dict it was read from."""
    from zfsperf.results.directory import ResultsDir
    from zfsperf.results.record import SteadyRecord
    raw = [json.loads(x) for x in (RUN / "results.jsonl").read_text().splitlines() if x.strip()]
    recs = ResultsDir.open(run).results()
    sampled = [(r, d["steady"]) for r, d in zip(recs, raw) if "steady" in d]
    assert sampled
    for r, d in sampled:
        v = r.steady
        assert isinstance(v, SteadyRecord) and isinstance(v.steady, bool) and v.samples == d["samples"]
        assert v.window == d["criteria"]["window"] and v.judged == (d["samples"] >= d["criteria"]["window"])
        assert v.onset is None or v.onset >= 1
        assert v.to_json() == d and SteadyRecord.from_json(d) == v


def test_run_record_reads_and_writes_run_json(run):
    """run.json is read and written by one typed RunRecord: every key a stored run.json holds comes
    back with its value, and what this zfsperf does not name is kept, not dropped."""
    from zfsperf.results.directory import ResultsDir
    from zfsperf.results.record import RunRecord
    raw = json.loads((RUN / "run.json").read_text())
    rec = ResultsDir.open(run).run_record()
    assert rec.format == 2 and rec.target["implementation"] == "zfs-fuse" and rec.cases
    back = rec.to_json()
    assert {k: back[k] for k in raw} == raw
    odd = RunRecord.from_json(raw | {"written_by_a_later_minor": [1, 2]})
    assert odd.other == {"written_by_a_later_minor": [1, 2]} and odd.to_json()["written_by_a_later_minor"] == [1, 2]


def test_a_malformed_record_is_a_clear_error(run):
    """A figure without its value is bad input named by file and line (exit 2), not a traceback."""
    lines = (run / "results.jsonl").read_text().splitlines()
    d = json.loads(lines[2])
    d["figures"]["throughput"] = {"unit": "MiB/s"}
    lines[2] = json.dumps(d)
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    from helpers import zfsperf
    res = zfsperf("report", str(run))
    assert res.returncode == 2 and "results.jsonl:3" in res.stderr and "value" in res.stderr


def test_figures_beside_the_headline_are_exploratory_with_a_holm_adjusted_p(run):
    """On the starvation mix's A/A in the guest (60 iterations in turns) compare called four of its
    thirteen figures, its headline none: each figure was judged at α on its own (issue 69 §7). The
    figures beside a case's headline are exploratory now: their p is Holm-adjusted over the case's
    other figures and their verdict decided on it; a note says so, counting the figures shown."""
    from zfsperf.report import compare
    from zfsperf.report.export.compare import text as comparetext
    from zfsperf.report.model import load_run
    data = load_run(run)
    rng = np.random.default_rng(5)
    same = list(rng.normal(100, 1, 8))
    up = [v * 1.2 for v in same]

    def cmp_of(*changes):
        c = compare.Comparison(data, data, changes=list(changes), workloads={"x → y": "receive"})
        compare.adjust_exploratory(c)
        return c, comparetext.notes(c)
    head = compare.compare_values("x → y", "throughput", "MiB/s", same, up)
    flat = compare.compare_values("x → y", "throughput", "MiB/s", same, list(rng.normal(100, 1, 8)))
    _c, only_head = cmp_of(head, flat)
    assert head.verdict.decided and not head.exploratory
    assert not any("exploratory" in n for n in only_head)
    # three figures beside the headline, each p 0.02-0.04 on its own: none survives Holm over three
    sides = [compare.compare_values("x → y", f, "blocks/s", same, [v * 1.01 for v in same]) for f in ("a", "b", "c")]
    for ch, p in zip(sides, (0.02, 0.03, 0.04)):
        ch.p, ch.verdict = p, compare.ChangeVerdict.BETTER
    c, beside = cmp_of(flat, *sides)
    assert [round(ch.p, 2) for ch in sides] == [0.06, 0.06, 0.06] and [ch.p_raw for ch in sides] == [0.02, 0.03, 0.04]
    assert all(ch.exploratory and ch.verdict == compare.ChangeVerdict.NOT_SIGNIFICANT for ch in sides)
    (note,) = [n for n in beside if "exploratory" in n]
    assert note.startswith("Note: 3 figure(s) shown besides") and "(0 still called)" in note and "(throughput)" in note
    assert "1 figure(s)" in [n for n in comparetext.notes(c, ["a"]) if "exploratory" in n][0]     # only those shown
    assert c.gate(5).judged == [flat]                                  # the gate judges the headline only
