"""One exporter per format, all from results.jsonl records: junit.xml, results.csv, summary text."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from typing import Any

from ..units import emulation_label, format_duration, format_figure
from .record import STATUSES, CaseRecord, Status


def junit_xml(records: list[CaseRecord], suite: str = "zfsperf") -> str:
    counts = {s: sum(1 for r in records if r.status == s) for s in STATUSES}
    total_time = sum(r.duration or 0.0 for r in records)
    ts = ET.Element("testsuites")
    s = ET.SubElement(ts, "testsuite", name=suite, tests=str(len(records)), failures=str(counts[Status.FAIL]),
                      errors=str(counts[Status.KILLED]), skipped=str(counts[Status.SKIP]), time=f"{total_time:.3f}")
    for r in records:
        tc = ET.SubElement(s, "testcase", classname=r.test, name=f"{r.case} iter={r.iteration}",
                           time=f"{r.duration or 0.0:.3f}")
        props = ET.SubElement(tc, "properties")
        for k, v in r.sweep.items():
            ET.SubElement(props, "property", name=f"param.{k}", value=str(v))
        for k, f in r.figures.items():
            ET.SubElement(props, "property", name=f"figure.{k}", value=f"{f.value:.6g} {f.unit}")
        if r.status is Status.FAIL:
            ET.SubElement(tc, "failure", message=(r.error or "")[:500]).text = r.error or ""
        elif r.status is Status.KILLED:
            ET.SubElement(tc, "error", message=Status.KILLED).text = r.error or "timed out"
        elif r.status is Status.SKIP:
            ET.SubElement(tc, "skipped", message=r.error or "")
    ET.indent(ts)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(ts, encoding="unicode") + "\n"


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
                     *[f"{figs[n].value:.6g}" if n in figs else "" for n in fig_names],
                     r.error or ""])
    return csv_text(header, rows)


def csv_text(header: list[str], rows: list[list[Any]]) -> str:
    """The one CSV writer: per-iteration results.csv and the report's per-case CSV both use it."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _cell(v: Any) -> str:
    if isinstance(v, dict):
        return " ".join(f"{k}={x}" for k, x in v.items())
    return str(v)


def status_line(r: CaseRecord, headline: str | None = None) -> str:
    """One line per case, in the ZFS Test Suite's style."""
    figs = r.figures
    text = f"Test: {r.case} iter={r.iteration} [{format_duration(r.duration or 0.0)}] [{r.status.value}]"
    if r.passed and headline and headline in figs:
        text += " " + format_figure(figs[headline].value, figs[headline].unit)
        if emulation_label(r.accelerator):
            text += "  " + emulation_label(r.accelerator)
    elif not r.passed and r.error:
        text += " " + r.error.splitlines()[0][:200]
    return text
