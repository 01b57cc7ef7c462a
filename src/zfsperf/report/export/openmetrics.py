"""A run's figures as OpenMetrics text (the Prometheus exposition format), for a node_exporter
textfile directory or any scraper, and so for Grafana: `zfsperf report --format openmetrics`.

One gauge family per figure and unit, named as Prometheus names things (`zfsperf_` + figure +
unit, e.g. `zfsperf_throughput_mib_per_second`), one sample per case and statistic:
  {run, host, implementation, zfs_version, accelerator, test, case, stat}
stat is mean, median, stddev, ci95_low or ci95_high over the case's PASS iterations. Beside them:
`zfsperf_case_iterations{..., status}` (how many iterations ended PASS/FAIL/SKIP/KILLED),
`zfsperf_case_steady{...}` (1 steady, 0 not, absent when not judged) and
`zfsperf_run_start_timestamp_seconds`. Under emulation (accelerator="tcg") timings are not
speeds: the label says so on every sample, as the terminal does on every line.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import Exported
    from ..summary import RunReport

NAME, FILENAME = "openmetrics", "report.prom"

UNIT_WORDS = {"%": "percent", "B": "bytes", "s": "seconds", "us": "microseconds", "ms": "milliseconds",
              "ns": "nanoseconds", "x": "ratio"}
STATS = (("mean", "mean"), ("median", "median"), ("stddev", "stddev"))


def _name(text: str) -> str:
    s = re.sub(r"[^a-zA-Z0-9_]+", "_", text).strip("_").lower()
    return s if s and not s[0].isdigit() else f"_{s}"


def unit_suffix(unit: str) -> str:
    if unit in UNIT_WORDS:
        return UNIT_WORDS[unit]
    per = unit.endswith("/s")
    base = unit[:-2] if per else unit
    return _name(UNIT_WORDS.get(base, base)) + ("_per_second" if per else "")


def metric_name(figure: str, unit: str) -> str:
    """zfsperf_ + figure + unit, the unit not repeated (blocks in blocks/s: zfsperf_blocks_per_second)."""
    fig, suffix = _name(figure), unit_suffix(unit)
    if suffix == fig or suffix.startswith(fig + "_"):
        return f"zfsperf_{suffix}"
    return f"zfsperf_{fig}_{suffix}"


def _esc(v: Any) -> str:
    return str(v).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(d: dict[str, Any]) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in d.items()) + "}"


def _num(x: float) -> str:
    return repr(float(x)) if math.isfinite(x) else ("+Inf" if x > 0 else "-Inf" if x < 0 else "NaN")


def render_reports(reports: list["RunReport"]) -> str:
    families: dict[str, dict[str, Any]] = {}

    def add(name: str, kind: str, help_: str, labels: dict[str, Any], value: float) -> None:
        fam = families.setdefault(name, {"type": kind, "help": help_, "samples": []})
        fam["samples"].append((labels, value))

    for rep in reports:
        t = rep.target or {}
        run = {"run": str(rep.path).rstrip("/").rsplit("/", 1)[-1], "host": rep.host or "",
               "implementation": t.get("implementation", ""), "zfs_version": t.get("zfs_version", ""),
               "accelerator": t.get("accelerator") or "none"}
        if rep.start:
            add("zfsperf_run_start_timestamp_seconds", "gauge", "when the run started (Unix time)", run,
                float(rep.start))
        for case in rep.cases:
            base = {**run, "test": case.test, "case": case.case}
            for status, n in sorted(case.statuses.items()):
                add("zfsperf_case_iterations", "gauge", "iterations of the case that ended with this status",
                    {**base, "status": status}, float(n))
            verdict = (case.steady or {}).get("verdict") or {}
            if verdict.get("steady") is not None:
                add("zfsperf_case_steady", "gauge", "1 if the case was in a steady state, 0 if not",
                    base, 1.0 if verdict["steady"] else 0.0)
            for row in case.figures:
                if not row.n:
                    continue
                name = metric_name(row.figure, row.unit)
                help_ = f"{row.figure} in {row.unit} over the case's PASS iterations"
                for stat, key in STATS:
                    value = getattr(row, key)
                    if value is not None and (key != "stddev" or row.n > 1):
                        add(name, "gauge", help_, {**base, "stat": stat}, float(value))
                lo, hi = row.ci95 or (None, None)
                if lo is not None and hi is not None and row.n > 1:
                    add(name, "gauge", help_, {**base, "stat": "ci95_low"}, float(lo))
                    add(name, "gauge", help_, {**base, "stat": "ci95_high"}, float(hi))
    out = []
    for name, fam in families.items():
        out.append(f"# TYPE {name} {fam['type']}")
        out.append(f"# HELP {name} {_esc(fam['help'])}")
        out += [f"{name}{_labels(lab)} {_num(v)}" for lab, v in fam["samples"]]
    out.append("# EOF")
    return "\n".join(out) + "\n"


def render(x: "Exported") -> str:
    return render_reports(x.reports)
