"""Read results directories back into cases with their iterations (nothing is re-run).

A case is keyed by its test and parameters (the sweep point, the dataset properties and tunables
it ran with), so the same case from two runs can be matched by `compare`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..results.stats import Summary, summarise
from ..results.store import ResultsDir

# which way is better, by unit (figures without a known direction are shown, never judged)
# TXGs/s is context (how often the pool synced), not a goodness: more txgs is neither better nor worse
HIGHER_BETTER_UNITS = {"MiB/s", "IOPS", "blocks/s", "ops", "hosts"}
LOWER_BETTER_UNITS = {"us", "ms", "s", "x"}
NEUTRAL_FIGURES = {"bytes", "hosts", "sync_ops"}


def direction(name: str, unit: str) -> int:
    """+1 when higher is better, -1 when lower is better, 0 when not judged."""
    if name in NEUTRAL_FIGURES:
        return 0
    if unit in HIGHER_BETTER_UNITS:
        return 1
    if unit in LOWER_BETTER_UNITS:
        return -1
    return 0


@dataclass
class CaseData:
    test: str
    case: str
    workload: str
    params: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> str:
        return json.dumps([self.test, self.params], sort_keys=True, default=str)

    @property
    def passed(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["status"] == "PASS"]

    def statuses(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out

    def figure_names(self) -> list[str]:
        names: dict[str, None] = {}
        for r in self.passed:
            for k in r.get("figures") or {}:
                names.setdefault(k)
        return list(names)

    def values(self, name: str) -> list[float]:
        return [float(r["figures"][name]["value"]) for r in self.passed if name in (r.get("figures") or {})]

    def unit(self, name: str) -> str:
        for r in self.passed:
            f = (r.get("figures") or {}).get(name)
            if f:
                return str(f.get("unit", ""))
        return ""

    def summary(self, name: str) -> Summary:
        return summarise(self.values(name))

    def steady(self) -> list[dict[str, Any]]:
        return [r["steady"] for r in self.records if isinstance(r.get("steady"), dict)]


@dataclass
class RunData:
    path: Path
    info: dict[str, Any]
    cases: dict[str, CaseData]

    @property
    def label(self) -> str:
        return self.path.name

    def describe(self) -> str:
        t = self.info.get("target") or {}
        accel = t.get("accelerator")
        return (f"{self.path}: {t.get('implementation', '?')} {t.get('zfs_version', '?')}"
                + (f" under {accel}" if accel else "")
                + f", runfile {(self.info.get('runfile') or {}).get('source', '?')}")


def case_params(r: dict[str, Any]) -> dict[str, Any]:
    """What identifies a case across runs: its test and its sweep point (what a runfile sweeps,
    tunables and dataset properties included). Settings fixed for the whole run — the A/B itself —
    are deliberately not part of it."""
    return dict(r.get("params") or {})


def load_run(path: str | Path) -> RunData:
    p = Path(path).resolve()          # "current" names the run it points at
    if not p.is_dir():
        raise InputError("not a results directory", file=str(p))
    rd = ResultsDir.open(p)
    try:
        info = rd.run_info()
    except (OSError, ValueError):
        info = {}                   # a run killed before run.json: the records still count
    cases: dict[str, CaseData] = {}
    for r in rd.results():
        if not isinstance(r, dict) or "case" not in r or "status" not in r:
            continue
        if int(r.get("iteration", 1)) < 1:
            continue                # warm-up iterations are logged, never counted
        cd = CaseData(r.get("test", r["case"]), r["case"], r.get("workload", ""), case_params(r))
        cases.setdefault(cd.key, cd).records.append(r)
    return RunData(p, info, cases)
