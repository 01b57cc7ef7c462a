"""The typed side of a result: its Status, the one place a case's status is decided, the keys of
a record, and the version of the results format (as pyperf versions its JSON).

FORMAT_VERSION history:
  1  (no "format" key in run.json) zfsperf 0.1, until statuses became an enum
  2  run.json carries "format"; every record's status is one of Status
A reader refuses a results directory written in a newer format than it knows (exit 2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypedDict

FORMAT_VERSION = 2


class Status(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    SKIP = "SKIP"        # the target lacks something the case needs: nothing was measured
    KILLED = "KILLED"    # the case ran past its timeout

    def __str__(self) -> str:
        return self.value

    @property
    def failed(self) -> bool:
        return self in (Status.FAIL, Status.KILLED)


STATUSES = tuple(s.value for s in Status)


@dataclass
class CaseOutcome:
    """What happened to a case, gathered as it runs; decide_status() turns it into a status."""
    figures: dict[str, dict[str, Any]] | None = None
    unmet: list[str] = field(default_factory=list)     # `expect` lines the figures did not meet
    failure: str | None = None          # the workload, the target or zfsperf failed
    killed: str | None = None           # the case timeout
    skipped: str | None = None          # the target lacks a tunable, a feature, ...
    teardown_error: str | None = None   # tunables not restored, pool not destroyed
    daemon_died: bool = False           # zfs-fuse died during the case (zfsperf restarted it)

    def decide_status(self) -> tuple[Status, str | None]:
        """The only place a case becomes PASS: it ran, returned figures, met every expectation,
        and everything after it (restore, destroy) worked and the daemon lived."""
        if self.killed is not None:
            status, error = Status.KILLED, self.killed
        elif self.skipped is not None:
            status, error = Status.SKIP, self.skipped
        elif self.failure is not None:
            status, error = Status.FAIL, self.failure
        elif self.figures is None:
            status, error = Status.FAIL, "the workload returned no figures"
        elif self.unmet:
            status, error = Status.FAIL, "; ".join(self.unmet)
        else:
            status, error = Status.PASS, None
        if self.teardown_error:
            if status is Status.PASS:
                status = Status.FAIL
            error = "; ".join(x for x in (error, self.teardown_error) if x)
        if self.daemon_died:
            status = Status.FAIL
            error = (error + " " if error else "") + "(the zfs-fuse daemon died during the case; zfsperf restarted it)"
        return status, error


class CaseRecord(TypedDict, total=False):
    """One line of results.jsonl (documented in the README's results section)."""
    test: str
    case: str
    params: dict[str, Any]
    iteration: int               # from 1; warm-ups (negative) are never recorded
    workload: str
    status: str                  # a Status value
    error: str | None
    figures: dict[str, dict[str, Any]]     # name -> {"value": number, "unit": str}
    start: float
    duration: float
    pool: dict[str, Any]
    tunables: dict[str, dict[str, str]]
    steady: dict[str, Any]
    series: str
    sampler: dict[str, Any]
    accelerator: str
    precision: dict[str, Any]
