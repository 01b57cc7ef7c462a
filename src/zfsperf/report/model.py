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
from ..results.record import FORMAT_VERSION, Status
from ..results.stats import Summary, summarise
from ..results.store import ResultsDir

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
        return [r for r in self.records if r["status"] == Status.PASS]

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
    records: list[dict[str, Any]] = field(default_factory=list)    # every counted record, in run order

    @property
    def label(self) -> str:
        return self.path.name

    @property
    def accelerator(self) -> str | None:
        """"tcg" / "kvm" for a QEMU guest (under TCG every figure is emulation), else None."""
        return (self.info.get("target") or {}).get("accelerator")

    def describe(self) -> str:
        from ..units import emulation_label
        t = self.info.get("target") or {}
        accel = self.accelerator
        return (f"{self.path}: {t.get('implementation', '?')} {t.get('zfs_version', '?')}"
                + (f" under {accel.upper()}" if accel else "")
                + (f" {emulation_label(accel)}" if emulation_label(accel) else "")
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
    fmt = info.get("format", 1)
    if not isinstance(fmt, int) or fmt > FORMAT_VERSION:
        raise InputError(f"results format {fmt!r} is newer than this zfsperf reads ({FORMAT_VERSION}): "
                         "read it with the zfsperf that wrote it", file=str(p / "run.json"), field="format")
    cases: dict[str, CaseData] = {}
    records: list[dict[str, Any]] = []
    for r in rd.results():
        if not isinstance(r, dict) or "case" not in r or "status" not in r:
            continue
        if int(r.get("iteration", 1)) < 1:
            continue                # warm-up iterations are logged, never counted
        cd = CaseData(r.get("test", r["case"]), r["case"], r.get("workload", ""), case_params(r))
        cases.setdefault(cd.key, cd).records.append(r)
        records.append(r)
    # the plan's order (run.json "cases"), not the order records happened to be written in: in an
    # interleaved run the first block is shuffled, and an A/B's A is its sweep's first point
    plan = {cid: i for i, cid in enumerate(info.get("cases") or [])}
    ordered = sorted(enumerate(cases.values()), key=lambda ic: (plan.get(ic[1].case, len(plan)), ic[0]))
    cases = {cd.key: cd for _i, cd in ordered}
    return RunData(p, info, cases, records)
