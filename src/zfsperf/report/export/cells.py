"""What every report format writes the same way: the statistics columns of a figure, a case's
statuses, its steady-state and cross-check lines, the per-class table, the run's header line and
the one CSV writer."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...units import EMULATED, format_figure
from ...metrics import counts, cpucost, profile, taskq, txgtable, zil
from ...workloads import latsearch
from ..model import zfs_text

if TYPE_CHECKING:
    from ..summary import CaseReport, FigureRow, RunReport

STAT_COLUMNS = ("n", "mean", "median", "stddev", "CV %", "min", "max", "95% CI")


def stat(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    return format_figure(x, unit) if unit else f"{x:.4g}"


def stat_cells(row: "FigureRow") -> list[str]:
    u = row.unit
    lo, hi = row.ci95
    ci = "-" if lo is None or row.n < 2 else f"{stat(lo, u)} … {stat(hi, u)}"
    cv = "-" if row.cv_pct is None or row.n < 2 else f"{row.cv_pct:.1f}"
    return [str(row.n), stat(row.mean, u), stat(row.median, u), stat(row.stddev, u) if row.n > 1 else "-",
            cv, stat(row.min, u), stat(row.max, u), ci]


def status(case: "CaseReport") -> str:
    return ", ".join(f"{n} {s}" for s, n in sorted(case.statuses.items()))


def steady_line(st: dict[str, Any] | None) -> str | None:
    if not st:
        return None
    text = f"steady state ({st['mode']}): "
    if st.get("verdict"):
        v = st["verdict"]
        text += v["text"] + (f" ({v['why']})" if v.get("steady") else "")
        if v.get("today"):          # a stored verdict that today's rule would give differently: both said
            text += f" [as recorded; today's rule: {v['today']['text']}]"
        text += "; "
    parts = []
    if st["of"]:
        parts.append(f"steady in {st['steady']} of {st['of']}")
    if st.get("too_short"):
        parts.append(f"{st['too_short']} too short for a {st.get('window', 10)}-sample window"
                     + (" (judged across iterations)" if st.get("verdict") else ""))
    text += "within iterations"
    if st.get("timescales"):
        text += f" ({'; '.join(st['timescales'])})"
    text += ": " + ", ".join(parts)
    tts = st.get("time_to_steady")
    if tts and tts.get("ci_s"):
        lo, hi = tts["ci_s"]
        text += (f", time to steady {tts['mean_s']:.1f} s [{max(lo, 0.0):.1f} … {hi:.1f} s] (mean and 95 % CI over "
                 f"{tts['n']} iterations" + (f"; {tts['never']} never steady" if tts["never"] else "") + ")")
    elif st["mean_time_to_steady_s"] is not None:
        text += f", mean time to steady {st['mean_time_to_steady_s']:.1f} s"
    if st["failed_metrics"]:
        text += "; metrics not steady: " + ", ".join(f"{k} ({v})" for k, v in sorted(st["failed_metrics"].items()))
    for n in st["notes"]:
        text += f"; {n}"
    return text


def cross_check_line(case: "CaseReport") -> str | None:
    """The case's cross-checks in one line: each pair's largest deviation and how many agreed."""
    parts = []
    for c in case.cross_checks or []:
        d = c["max_deviation"]
        dev = "n/a" if d is None else (f"{d:+.2f} points" if c["unit"] == "%" else f"{d:+.2f} %")
        judged = (f"{c['agreed']} of {c['judged']} within {c['margin_pct']:g}{' points' if c['unit'] == '%' else ' %'}"
                  if c["judged"] else "not judged")
        parts.append(f"{c['name']} {dev} ({judged})")
    return "cross-checks: " + "; ".join(parts) if parts else None


def case_lines(case: "CaseReport") -> list[str]:
    """The lines under a case's tables, in every format: steady state, cross-checks, the txgs, the
    I/O taskqs' queues, the ZIL's counters, the profile."""
    return [x for x in (steady_line(case.steady), cross_check_line(case), txgtable.line(case.txgs),
                        taskq.line(case.taskqs), zil.line(case.zil), counts.line(case.counts),
                        cpucost.line(case.cpu), latsearch.line(case.latency_search),
                        profile.line(case.profile)) if x]


def class_rows(case: "CaseReport") -> list[list[str]]:
    return [[r["class"] + (" (total latency)" if r.get("latency") == "total" else ""), f"{r['avg_latency_us']:.0f}us", f"{r['stddev_us']:.0f}us", f"{r['iops']:.0f}/s",
             f"{r['throughput_kib_s']:.0f}k/s"] for r in case.class_table]


def header_line(rep: "RunReport", *, full_path: bool = True) -> str:
    """The run a report is of. full_path=False (Markdown, CSV, HTML: text that leaves this machine):
    the results directory's name, not where it lives here."""
    t = rep.target
    accel = f" under TCG {EMULATED}" if t.get("accelerator") == "tcg" else ""
    where = rep.path if full_path else Path(rep.path).name
    return f"{where}: {zfs_text(t)}{accel}, runfile {rep.runfile or 'not recorded'}"


def csv_text(header: list[str], rows: list[list[Any]]) -> str:
    """The one CSV writer: per-iteration results.csv and the report's per-case CSV both use it."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()
