"""One exporter per format, all from results.jsonl records: junit.xml, results.csv, summary text."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from typing import Any

from ..units import emulation_label, format_duration, format_figure
from .record import STATUSES, Status


def junit_xml(records: list[dict[str, Any]], suite: str = "zfsperf") -> str:
    counts = {s: sum(1 for r in records if r["status"] == s) for s in STATUSES}
    total_time = sum(float(r.get("duration", 0)) for r in records)
    ts = ET.Element("testsuites")
    s = ET.SubElement(ts, "testsuite", name=suite, tests=str(len(records)), failures=str(counts[Status.FAIL]),
                      errors=str(counts[Status.KILLED]), skipped=str(counts[Status.SKIP]), time=f"{total_time:.3f}")
    for r in records:
        tc = ET.SubElement(s, "testcase", classname=r["test"], name=f"{r['case']} iter={r['iteration']}",
                           time=f"{float(r.get('duration', 0)):.3f}")
        props = ET.SubElement(tc, "properties")
        for k, v in (r.get("params") or {}).items():
            ET.SubElement(props, "property", name=f"param.{k}", value=str(v))
        for k, f in (r.get("figures") or {}).items():
            ET.SubElement(props, "property", name=f"figure.{k}", value=f"{f['value']:.6g} {f['unit']}")
        if r["status"] == Status.FAIL:
            ET.SubElement(tc, "failure", message=(r.get("error") or "")[:500]).text = r.get("error") or ""
        elif r["status"] == Status.KILLED:
            ET.SubElement(tc, "error", message=Status.KILLED).text = r.get("error") or "timed out"
        elif r["status"] == Status.SKIP:
            ET.SubElement(tc, "skipped", message=r.get("error") or "")
    ET.indent(ts)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(ts, encoding="unicode") + "\n"


def results_csv(records: list[dict[str, Any]]) -> str:
    fig_names = sorted({k for r in records for k in (r.get("figures") or {})})
    units = {}
    for r in records:
        for k, f in (r.get("figures") or {}).items():
            units.setdefault(k, f["unit"])
    param_names = sorted({k for r in records for k in (r.get("params") or {})})
    header = ["test", "case", "iteration", "status", "duration_s", *param_names,
              *[f"{n} ({units[n]})" for n in fig_names], "error"]
    rows = []
    for r in records:
        figs = r.get("figures") or {}
        rows.append([r["test"], r["case"], r["iteration"], r["status"], f"{float(r.get('duration', 0)):.3f}",
                     *[_cell((r.get("params") or {}).get(p, "")) for p in param_names],
                     *[f"{figs[n]['value']:.6g}" if n in figs else "" for n in fig_names],
                     r.get("error") or ""])
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


def status_line(r: dict[str, Any], headline: str | None = None) -> str:
    """One line per case, in the ZFS Test Suite's style."""
    figs = r.get("figures") or {}
    text = f"Test: {r['case']} iter={r['iteration']} [{format_duration(float(r.get('duration', 0)))}] " \
           f"[{r['status']}]"
    if r["status"] == Status.PASS and headline and headline in figs:
        text += " " + format_figure(figs[headline]["value"], figs[headline]["unit"])
        if emulation_label(r.get("accelerator")):
            text += "  " + emulation_label(r.get("accelerator"))
    elif r["status"] != Status.PASS and r.get("error"):
        text += " " + r["error"].splitlines()[0][:200]
    return text
