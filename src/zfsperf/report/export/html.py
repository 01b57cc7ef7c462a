"""One self-contained report.html: tables and matplotlib pictures embedded as data: URIs, no
network, no external files. A small inline script marks the page once every image has loaded
(data-images="loaded/total") so that a headless browser test can check it."""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..comparison import Comparison
from ..context import profile_diffs
from .compare.text import COLUMNS, design_lines, notes, setup_lines, table_rows
from ..flamegraph import svg as flame_svg
from ..profilediff import ProfileDiff
from ..model import RunData
from ...metrics.quantize import render as render_histogram
from .cells import STAT_COLUMNS, case_lines, class_rows, header_line, stat_cells, status


def _plots():
    """The pictures (report/plots.py): matplotlib is imported when a page is drawn, not when
    zfsperf starts (about 1 s on a host, 10 s in an emulated guest)."""
    from .. import plots
    return plots


if TYPE_CHECKING:
    from . import Exported
    from ..summary import RunReport

NAME, FILENAME = "html", "report.html"

CSS = """body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}h2{margin-top:1.6em}pre{background:#f6f6f6;padding:.5em;font-size:12px}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}svg.flame{border:1px solid #eee;margin:.5em 0}.warn{color:#a40}.note{color:#555}"""

SCRIPT = """(function(){var imgs=document.images,n=imgs.length,ok=0,bad=0;
function done(){document.body.setAttribute('data-images',ok+'/'+n);if(bad)document.body.setAttribute('data-broken',bad);}
for(var i=0;i<n;i++){var im=imgs[i];if(im.complete&&im.naturalWidth>0){ok++;}
else{im.addEventListener('load',function(){ok++;done();});im.addEventListener('error',function(){bad++;done();});}}
done();})();"""


def _img(png: bytes | None, alt: str) -> str:
    if not png:
        return ""
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _table(head: list[str], rows: list[list[str]]) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def profile_section(d: ProfileDiff) -> str:
    """Where the CPU went, B against A: the differential flame graph and the functions whose share
    changed most (report/profilediff.py)."""
    out = [f"<h3>Profile {html.escape(d.label)} <span class=note>(not judged)</span></h3>",
           f"<p>{html.escape(d.summary_line())}</p>"]
    if d.scope:
        out.append(f"<p class=note>profiled: {html.escape(d.scope)}; frames named by symbol: "
                   f"A {d.named[0] * 100:.0f} %, B {d.named[1] * 100:.0f} % (the rest by their object file)</p>")
    if d.b_folded:
        out.append(flame_svg(d.b_folded, d.a_folded, f"B against A: {d.label}"))
    if d.rows:
        out.append(_table(*d.table()))
    return "\n".join(out)


def run_section(run: RunData, rep: "RunReport", profiles: bool = True) -> str:
    out = [f"<h2>{html.escape(header_line(rep, full_path=False))}</h2>"]
    t = rep.target
    if t.get("accelerator") == "tcg":
        out.append('<p class="warn">This target ran under QEMU TCG (software emulation): its timings are '
                   "emulation artefacts, not speeds.</p>")
    out.append(_img(_plots().thread_scaling(run), "thread scaling"))
    for case in rep.cases:
        out.append(f"<h3>{html.escape(case.case)} <span class=note>({html.escape(status(case))})</span></h3>")
        if case.figures:
            out.append(_table(["figure", *STAT_COLUMNS], [[r.figure, *stat_cells(r)] for r in case.figures]))
        for e in case.errors:
            out.append(f'<p class="warn">{html.escape(e)}</p>')
        if case.class_table:
            out.append(_table(["class", "avg latency", "stddev", "iops", "throughput"], class_rows(case)))
        if case.histograms:
            out.append(_img(_plots().histograms([(run.label, case.histograms)]), f"latency histograms {case.case}"))
            out.append("<pre>" + html.escape("\n\n".join(render_histogram(h["buckets"], f"{h['title']} latency ({h['unit']})")
                                                         for h in case.histograms.values())) + "</pre>")
        for line in case_lines(case):
            out.append(f"<p>{html.escape(line)}</p>")
    for c in run.cases.values():               # the verdict that counts, across iterations, as it was made
        v = (rep_case := next((x for x in rep.cases if x.case == c.case), None)) and \
            (rep_case.steady or {}).get("verdict")
        if v and v.get("values"):
            out.append(_img(_plots().rounds_chart(c.case, c.unit(v.get("figure") or ""), v),
                            f"steady across iterations {c.case}"))
    for path, verdict, title in _plots().series_for(run):
        out.append(_img(_plots().steady_chart(path, verdict, title), f"steady state {path.name}"))
    if profiles:
        out += [profile_section(d) for d in profile_diffs(run)]
    for w in rep.warnings:
        out.append(f'<p class="warn">Warning: {html.escape(w)}</p>')
    return "\n".join(x for x in out if x)


def comparison_section(cmp: Comparison) -> str:
    head = (f"A/B: {html.escape(cmp.base.label)} → {html.escape(cmp.new.label)}" if cmp.base is not cmp.new
            else f"A/B inside {html.escape(cmp.base.label)}")
    out = [f"<h2>{head}</h2>"] + [f'<p class="warn">{html.escape(line)}</p>' for line in setup_lines(cmp)]
    out += [f"<p>{html.escape(line)}</p>" for line in design_lines(cmp)]
    out += [_table(list(COLUMNS), table_rows(cmp)), _img(_plots().ab_bars(cmp.changes), "A/B changes")]
    out += [f"<p>{html.escape(line)}</p>" for line in notes(cmp)]
    out += [profile_section(d) for d in cmp.profiles]
    by_pair: dict[str, list[Any]] = {}
    for c in cmp.classes:                    # each A/B pair's classes, side by side in one picture
        by_pair.setdefault(c.label, []).append(c)
    for label, cs in by_pair.items():
        def side(k: int) -> dict[str, dict[str, Any]]:
            return {c.cls: {"title": c.title, "unit": c.unit, "buckets": c.b if k else c.a} for c in cs}
        out.append(_img(_plots().histograms([("A", side(0)), ("B", side(1))]), f"A/B histograms {label}"))
        out.append(_table(["A → B", "class", "p99 A", "p99 B", "change", "95 % interval"],
                          [[c.label, c.title, f"{c.a_p99:.4g} {c.unit}", f"{c.b_p99:.4g} {c.unit}",
                            f"{c.change_pct:+.1f} %",
                            "-" if c.ci_pct is None else f"{c.ci_pct[0]:+.1f} … {c.ci_pct[1]:+.1f} %"] for c in cs]))
    return "\n".join(out)


def document(runs: list[tuple[RunData, dict[str, Any]]], comparison: Comparison | None = None) -> str:
    body = [comparison_section(comparison)] if comparison is not None else []
    body += [run_section(run, rep, profiles=comparison is None) for run, rep in runs]
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>zfsperf report</title>"
            f"<style>{CSS}</style></head><body><h1>zfsperf report</h1>{''.join(body)}"
            f"<script>{SCRIPT}</script></body></html>")


def write(path: Path, runs: list[tuple[RunData, dict[str, Any]]], comparison: Comparison | None = None) -> Path:
    doc = document(runs, comparison)
    path = Path(path)
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(doc, encoding="utf-8")
    tmp.replace(path)
    return path


def history_document(series: list[Any], store: str) -> str:
    """The trend page of `zfsperf history --html`: a chart per case and figure, change points marked."""
    out = [f"<h2>History: {html.escape(store)}</h2>"]
    for s in series:
        out.append(f"<h3>{html.escape(s.case)} — {html.escape(s.figure)} ({html.escape(s.unit)})</h3>")
        out.append(_img(_plots().trend_chart(s), f"trend {s.case} {s.figure}"))
        notes = getattr(s, "annotations", [])
        if notes:
            out.append("<p>runs where the set-up changed: " + "; ".join(
                f"run {i + 1} ({html.escape(s.points[i].run.name)}): {html.escape(w)}" for i, w in notes) + "</p>")
        if s.change_points:
            rows = "".join(f"<tr><td>{html.escape(c.run)}</td><td>{c.before:.4g} → {c.after:.4g}</td>"
                           f"<td>{c.change_pct:+.1f} %</td><td>{c.p:.4f}</td><td>{c.verdict}</td>"
                           f"<td>{html.escape('; '.join(c.what_changed) or '-')}</td>"
                           f"<td>{html.escape(c.accepted or '-')}</td></tr>" for c in s.change_points)
            out.append("<table><tr><th>run</th><th>mean before → after</th><th>change</th><th>p</th>"
                       f"<th>verdict</th><th>what changed</th><th>accepted</th></tr>{rows}</table>")
        if getattr(s, "outliers", None):
            out.append("<p>outlier run(s), not a change: "
                       + html.escape(", ".join(s.points[i].run.name for i in s.outliers)) + "</p>")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>zfsperf history</title>"
            f"<style>{CSS}</style></head><body><h1>zfsperf history</h1>{''.join(out)}"
            f"<script>{SCRIPT}</script></body></html>")


def render(x: "Exported") -> str:
    return document(list(zip(x.runs, x.reports)), x.comparison)


def write_export(x: "Exported", path: Path) -> Path:
    return write(Path(path), list(zip(x.runs, x.reports)), x.comparison)
