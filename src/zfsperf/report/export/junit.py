"""Every iteration as a JUnit test case (junit.xml in every results directory; `--format junit`):
CI systems show FAIL, KILLED (as an error) and SKIP the way they show tests."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from ...results.record import STATUSES, CaseRecord, Status
from ...units import exact_number

if TYPE_CHECKING:
    from . import Exported

NAME, FILENAME = "junit", "junit.xml"


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
            ET.SubElement(props, "property", name=f"figure.{k}", value=f"{exact_number(f.value)} {f.unit}")
        if r.status is Status.FAIL:
            ET.SubElement(tc, "failure", message=(r.error or "")[:500]).text = r.error or ""
        elif r.status is Status.KILLED:
            ET.SubElement(tc, "error", message=Status.KILLED).text = r.error or "timed out"
        elif r.status is Status.SKIP:
            ET.SubElement(tc, "skipped", message=r.error or "")
    ET.indent(ts)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(ts, encoding="unicode") + "\n"


def render(x: "Exported") -> str:
    return junit_xml(x.records)
