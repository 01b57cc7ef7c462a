"""One renderer per output format of `zfsperf report` (terminal, Markdown, CSV, JSON), all from the
structure report/summary.py builds."""

from __future__ import annotations

import json
from typing import Any

from ..results.export import csv_text
from ..units import EMULATED, emulation_label, format_figure
from ..metrics.quantize import render

STAT_COLUMNS = ("n", "mean", "median", "stddev", "CV %", "min", "max", "95% CI")


def _f(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    return format_figure(x, unit) if unit else f"{x:.4g}"


def _stat_cells(row: dict[str, Any]) -> list[str]:
    u = row["unit"]
    lo, hi = row["ci95"]
    ci = "-" if lo is None or row["n"] < 2 else f"{_f(lo, u)} … {_f(hi, u)}"
    cv = "-" if row["cv_pct"] is None or row["n"] < 2 else f"{row['cv_pct']:.1f}"
    return [str(row["n"]), _f(row["mean"], u), _f(row["median"], u), _f(row["stddev"], u) if row["n"] > 1 else "-",
            cv, _f(row["min"], u), _f(row["max"], u), ci]


def _status(case: dict[str, Any]) -> str:
    return ", ".join(f"{n} {s}" for s, n in sorted(case["statuses"].items()))


def _steady_line(st: dict[str, Any] | None) -> str | None:
    if not st:
        return None
    text = f"steady state ({st['mode']}): "
    if st.get("verdict"):
        v = st["verdict"]
        text += v["text"] + (f" ({v['why']})" if v.get("steady") else "") + "; "
    parts = []
    if st["of"]:
        parts.append(f"steady in {st['steady']} of {st['of']}")
    if st.get("too_short"):
        parts.append(f"{st['too_short']} too short for a window of {st.get('window', 10)} samples"
                     + (", so judged across iterations" if st.get("verdict") else ""))
    text += "within iterations"
    if st.get("timescales"):
        text += f", judged on samples spanning {', '.join(st['timescales'])}"
    text += ": " + ", ".join(parts)
    if st["mean_time_to_steady_s"] is not None:
        text += f", mean time to steady {st['mean_time_to_steady_s']:.1f} s"
    if st["failed_metrics"]:
        text += "; metrics not steady: " + ", ".join(f"{k} ({v})" for k, v in sorted(st["failed_metrics"].items()))
    for n in st["notes"]:
        text += f"; {n}"
    return text


def cross_check_line(case: dict[str, Any]) -> str | None:
    """The case's cross-checks in one line: each pair's largest deviation and how many agreed."""
    parts = []
    for c in case.get("cross_checks") or []:
        d = c["max_deviation"]
        dev = "n/a" if d is None else (f"{d:+.2f} points" if c["unit"] == "%" else f"{d:+.2f} %")
        judged = (f"{c['agreed']} of {c['judged']} within {c['margin_pct']:g}{' points' if c['unit'] == '%' else ' %'}"
                  if c["judged"] else "not judged")
        parts.append(f"{c['name']} {dev} ({judged})")
    return "cross-checks: " + "; ".join(parts) if parts else None


def class_rows(case: dict[str, Any]) -> list[list[str]]:
    return [[r["class"] + (" (total latency)" if r.get("latency") == "total" else ""), f"{r['avg_latency_us']:.0f}us", f"{r['stddev_us']:.0f}us", f"{r['iops']:.0f}/s",
             f"{r['throughput_kib_s']:.0f}k/s"] for r in case["class_table"]]


def header_line(rep: dict[str, Any]) -> str:
    t = rep["target"]
    accel = f" under TCG {EMULATED}" if t.get("accelerator") == "tcg" else ""
    return (f"{rep['path']}: {t.get('implementation', '?')} {t.get('zfs_version', '?')}{accel}, "
            f"runfile {rep['runfile']}")


# ---------------------------------------------------------------------------- terminal
def to_terminal(reports: list[dict[str, Any]], console: Any, histograms: bool = True) -> None:
    from rich.table import Table
    for rep in reports:
        console.print(header_line(rep), highlight=False)
        label = emulation_label(rep["target"].get("accelerator"))
        for case in rep["cases"]:
            t = Table(title=f"{case['case']}  [{_status(case)}]" + (f"  {label}" if label else ""), title_justify="left")
            for c in ("figure",) + STAT_COLUMNS:
                t.add_column(c, justify="left" if c == "figure" else "right")
            for row in case["figures"]:
                t.add_row(row["figure"], *_stat_cells(row))
            if case["figures"]:
                console.print(t)
            else:
                console.print(f"{case['case']}  [{_status(case)}]" +
                              (f": {case['errors'][0]}" if case["errors"] else ""), highlight=False)
            if case["class_table"]:
                ct = Table(title="per I/O class (mean over iterations)", title_justify="left")
                for c in ("class", "avg latency", "stddev", "iops", "throughput"):
                    ct.add_column(c, justify="right")
                for r in class_rows(case):
                    ct.add_row(*r)
                console.print(ct)
            if histograms:
                for h in case["histograms"].values():
                    console.print(render(h["buckets"], f"{h['title']} latency ({h['unit']})"), highlight=False,
                                  markup=False)
            for line in (_steady_line(case["steady"]), cross_check_line(case)):
                if line:
                    console.print(line, highlight=False, markup=False)
        for w in rep["warnings"]:
            console.print(f"Warning: {w}", highlight=False, markup=False)
        console.print()


# ---------------------------------------------------------------------------- markdown
def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def to_markdown(reports: list[dict[str, Any]]) -> str:
    out: list[str] = []
    for rep in reports:
        out += [f"# {header_line(rep)}", ""]
        for case in rep["cases"]:
            out += [f"## {case['case']} ({_status(case)})", ""]
            if case["figures"]:
                out += _md_table(["figure", *STAT_COLUMNS], [[r["figure"], *_stat_cells(r)] for r in case["figures"]])
                out.append("")
            if case["class_table"]:
                out += _md_table(["class", "avg latency", "stddev", "iops", "throughput"], class_rows(case)) + [""]
            for h in case["histograms"].values():
                out += ["```", render(h["buckets"], f"{h['title']} latency ({h['unit']})"), "```", ""]
            for line in (_steady_line(case["steady"]), cross_check_line(case)):
                if line:
                    out += [line, ""]
            for e in case["errors"]:
                out += [f"> {e}", ""]
        out += [f"- Warning: {w}" for w in rep["warnings"]]
    return "\n".join(out).rstrip() + "\n"


# ---------------------------------------------------------------------------- csv / json
def to_csv(reports: list[dict[str, Any]]) -> str:
    rows = []
    for rep in reports:
        for case in rep["cases"]:
            for r in case["figures"]:
                rows.append([rep["path"], case["test"], case["case"], r["figure"], r["unit"], r["n"],
                             *(("" if r[k] is None else f"{r[k]:.6g}") for k in ("mean", "median", "stddev",
                                                                               "cv_pct", "min", "max")),
                             *("" if x is None else f"{x:.6g}" for x in r["ci95"]),
                             " ".join(str(i) for i in r["outliers"])])
    return csv_text(["results", "test", "case", "figure", "unit", "n", "mean", "median", "stddev", "cv_pct", "min",
                     "max", "ci95_low", "ci95_high", "outlier_iterations"], rows)


def to_json(reports: list[dict[str, Any]]) -> str:
    return json.dumps(reports, indent=1, default=str) + "\n"


