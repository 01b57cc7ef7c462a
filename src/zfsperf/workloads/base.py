"""What every workload gets and gives: the case context in, figures out."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from .. import proc
from ..pool import Pool
from ..target.base import Target

Figures = dict[str, dict[str, Any]]      # {name: {"value": number, "unit": str}}


def figure(value: float, unit: str) -> dict[str, Any]:
    return {"value": float(value), "unit": unit}


class WorkloadFailed(Exception):
    """The workload ran and failed: the case is FAIL with this text (never PASS)."""


class CaseTimeout(Exception):
    """The case ran past its timeout: KILLED."""


@dataclass
class CaseContext:
    target: Target
    pool: Pool
    params: dict[str, Any]               # the test's fields with this case's sweep point filled in
    log: proc.CommandLog
    deadline: float                      # time.monotonic() after which the case is KILLED
    procs: proc.ProcessSet = field(default_factory=proc.ProcessSet)
    live: Callable[[str], None] | None = None     # shows the running case's live figure
    prepared: Any = None                 # what prepare() returned for this test (e.g. the corpus)
    workdir: Path | None = None          # results dir of the run (fio JSON etc.)
    case_id: str = ""

    def remaining(self) -> float:
        return self.deadline - time.monotonic()


class Workload(Protocol):
    name: str
    # field name -> (python type or tuple of types, sweepable); validated by runfile.py
    fields: dict[str, tuple[Any, bool]]

    def validate(self, test: dict[str, Any], where: Callable[[str], dict]) -> None:
        """Workload-specific checks beyond types; raise InputError with where(field)."""

    def prepare(self, test: dict[str, Any], target: Target, vdev_dir: Path,
                progress: Callable[[str], None] | None) -> Any:
        """Once per test, before its cases (e.g. make the corpus). Untimed."""

    def run(self, ctx: CaseContext) -> Figures:
        """Run one case on ctx.pool and return its figures, or raise WorkloadFailed."""
