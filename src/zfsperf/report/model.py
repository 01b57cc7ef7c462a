"""Read results directories back into cases with their iterations (nothing is re-run).

A case is keyed by its test and parameters (the sweep point, the dataset properties and tunables
it ran with), so the same case from two runs can be matched by `compare`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..results.record import CaseRecord, RunRecord, SteadyRecord
from ..results.stats import Summary, summarise
from ..results.directory import ResultsDir

@dataclass
class CaseData:
    test: str
    case: str
    workload: str
    sweep: dict[str, Any]
    records: list[CaseRecord] = field(default_factory=list)

    @property
    def key(self) -> str:
        return json.dumps([self.test, self.sweep], sort_keys=True, default=str)

    @property
    def passed(self) -> list[CaseRecord]:
        return [r for r in self.records if r.passed]

    def statuses(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.records:
            out[r.status.value] = out.get(r.status.value, 0) + 1
        return out

    def figure_names(self) -> list[str]:
        names: dict[str, None] = {}
        for r in self.passed:
            for k in r.figures:
                names.setdefault(k)
        return list(names)

    def values(self, name: str) -> list[float]:
        return [r.figures[name].value for r in self.passed if name in r.figures]

    def unit(self, name: str) -> str:
        for r in self.passed:
            f = r.figures.get(name)
            if f:
                return f.unit
        return ""

    def summary(self, name: str) -> Summary:
        return summarise(self.values(name))

    def steady(self) -> list[SteadyRecord]:
        return [r.steady for r in self.records if r.steady is not None]


def zfs_text(target: dict[str, Any]) -> str:
    """"zfs-fuse 0.7.0", "openzfs-linux 2.3.2": the implementation once (zfs-fuse's version
    already starts with its name)."""
    impl, version = target.get("implementation") or "?", target.get("zfs_version") or "?"
    return str(version) if str(version).startswith(str(impl)) else f"{impl} {version}"


@dataclass
class RunData:
    path: Path
    run: RunRecord                  # run.json
    cases: dict[str, CaseData]
    records: list[CaseRecord] = field(default_factory=list)    # every counted record, in run order

    @property
    def label(self) -> str:
        return self.path.name

    @property
    def accelerator(self) -> str | None:
        """"tcg" / "kvm" for a QEMU guest (under TCG every figure is emulation), else None."""
        return self.run.accelerator

    @property
    def identity(self) -> str:
        """What makes a run itself wherever its directory is: its host, its start time and the sha256
        of its records (a copy, a download or a restored backup has the same one; so has a copy whose
        results.jsonl was written again with its keys in another order or other spacing: each
        record is read and hashed in one canonical form, a line that is no JSON as it is)."""
        h = hashlib.sha256()
        h.update(f"{self.run.host}\0{self.run.start!r}\0".encode())
        jsonl = self.path / "results.jsonl"
        for line in (jsonl.read_bytes() if jsonl.is_file() else b"").splitlines():
            try:
                line = json.dumps(json.loads(line), sort_keys=True, separators=(",", ":")).encode()
            except ValueError:
                line = line.strip()
            if line:
                h.update(line + b"\n")
        return h.hexdigest()[:32]

    def describe(self) -> str:
        from ..units import emulation_label
        t = self.run.target
        accel = self.accelerator
        return (f"{self.path}: {zfs_text(t)}"
                + (f" under {accel.upper()}" if accel else "")
                + (f" {emulation_label(accel)}" if emulation_label(accel) else "")
                + f", runfile {self.run.runfile.get('source', '?')}")


def load_run(path: str | Path) -> RunData:
    p = Path(path).resolve()          # "current" names the run it points at
    if not p.is_dir():
        raise InputError("not a results directory", file=str(p))
    rd = ResultsDir.open(p)
    try:
        info = rd.run_record()
    except InputError as e:
        if e.field == "format":
            raise                   # written by a newer zfsperf: refused by name
        info = RunRecord()          # a run killed while writing run.json: the records still count
    cases: dict[str, CaseData] = {}
    records: list[CaseRecord] = []
    for r in rd.results():          # refuses a newer format by name
        if r.iteration < 1:
            continue                # warm-up iterations are logged, never counted
        # a case is its test and its sweep point (tunables and dataset properties it sweeps
        # included); settings fixed for the whole run (the A/B itself) are deliberately not part of it
        cd = CaseData(r.test, r.case, r.workload, dict(r.sweep))
        cases.setdefault(cd.key, cd).records.append(r)
        records.append(r)
    # the plan's order (run.json "cases"), not the order records happened to be written in: in an
    # interleaved run the first block is shuffled, and an A/B's A is its sweep's first point
    plan = {cid: i for i, cid in enumerate(info.cases)}
    ordered = sorted(enumerate(cases.values()), key=lambda ic: (plan.get(ic[1].case, len(plan)), ic[0]))
    cases = {cd.key: cd for _i, cd in ordered}
    return RunData(path=p, run=info, cases=cases, records=records)
