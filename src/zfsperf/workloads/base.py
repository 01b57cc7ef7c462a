"""What every workload gets and gives: the case context in, figures out."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from .. import proc
from ..pool import Pool
from ..targets.base import Target

Figures = dict[str, dict[str, Any]]      # {name: {"value": number, "unit": str}}


def figure(value: float, unit: str) -> dict[str, Any]:
    return {"value": float(value), "unit": unit}


# Figures a turns record also keeps slice by slice (fio's slices, the mix's turns), for compare to
# judge on slice pairs: throughput. Latency percentiles are judged per iteration, from each side's
# merged bins: a slice's own p99 is read from a second of I/Os (bench/power.py's A/A of 240 fio
# iterations: a slice pair's p99 ratio spread 15.4 % against 10.3 % for an iteration's, and windows
# of 6 called 3 of 40 against 1 of 40).
SLICE_UNITS = ("IOPS", "MiB/s")


def figure_unit(wl: "Workload", name: str) -> str | None:
    """The unit of the workload's figure `name`, or None when it reports no such figure."""
    for pattern, unit in wl.figure_units:
        if re.fullmatch(pattern, name):
            return unit
    return None


def figure_names(wl: "Workload") -> list[str]:
    """Its figures' names as a user would type them (patterns shown with their first choice)."""
    return [re.sub(r"\((?:\.\+_)\)\?|\\", "", re.sub(r"\(([^|()]+)\|[^()]*\)", r"\1", p)).replace(".+", "x")
            for p, _u in wl.figure_units]


def slice_figures(figs: Figures) -> dict[str, float]:
    """The figures of one slice (or turn) a turns record keeps: those in SLICE_UNITS, by value."""
    return {k: f["value"] for k, f in figs.items() if f["unit"] in SLICE_UNITS}


class WorkloadFailed(Exception):
    """The workload ran and failed: the case is FAIL with this text (never PASS)."""


SIGNAL_GRACE = 15.0    # seconds a signalled case's processes get to end before its waits give up


class CaseTimeout(Exception):
    """The case ran past its timeout: KILLED."""


@dataclass
class CaseContext:
    target: Target
    pool: Pool
    fields: dict[str, Any]               # the test's workload fields with this case's sweep point filled in
    log: proc.CommandLog
    deadline: float                      # time.monotonic() after which the case is KILLED
    procs: proc.ProcessSet = field(default_factory=proc.ProcessSet)
    live: Callable[[str], None] | None = None     # shows the running case's live figure
    prepared: Any = None                 # what prepare() returned for this test (e.g. the corpus)
    workdir: Path | None = None          # results dir of the run (fio JSON etc.)
    case_id: str = ""
    iteration: int = 1                   # negative for warm-up iterations
    # steady-state gating: the runner runs the workload in rounds ("precondition") until the
    # sampler's series is steady, sets stop, then runs it once more ("measure")
    phase: str = "measure"
    round: int = 0
    stop: threading.Event | None = None
    measure_seconds: float | None = None  # gate: length of the measurement for time-based workloads
    progress: Callable[[], dict[str, float] | None] | None = None   # set by the workload while it runs
    extra: dict[str, Any] = field(default_factory=dict)   # stored with the result (histograms, hosts, …)
    # called by the workload the moment its counted work ends, before what it reads afterwards (a
    # receive's zdb check): the CPU figures' end (case.Lifecycle.work_done)
    work_done: Callable[[], None] | None = None
    sharers: int = 1                     # workloads filling this pool at once (a duet: 2)
    # taking turns over a module tunable: called before each of this side's rounds, it writes the
    # side's values and returns what they read back (recorded with the round)
    before_turn: Callable[[], dict[str, Any]] | None = None
    turn_key: str = "turn_tunables"      # the record's key for turn_reads
    after_turn: Callable[[], Any] | None = None    # after each of this side's turns, however it ended
                                         # (build turns: the other guest resumed)
    machine: str | None = None           # build turns: which of the two machines ran this side ("guest"
                                         # or "twin"), recorded as the record's `guest`
    turn_order: str | None = None        # taking turns: the order the sides took them in ("ABBA")
    turn_reads: list[Any] = field(default_factory=list)   # taking turns: each turn's before_turn result
    settled: int = 0                     # taking turns: the settling turns that were run and left out
    settle_turns: int = 0                # taking turns: each side's first turns of the iteration, run
                                         # and left out (build turns: a fresh pool in each guest)
    spans: list[tuple[float, float]] = field(default_factory=list)   # taking turns: this side's
                                         # rounds, (start, end) in time.monotonic() seconds
    # the part of the sampled series that is one load, (start, end) in time.monotonic() seconds, or
    # None for all of it (a latency search: its unthrottled step; its later steps run at other rates)
    series_span: tuple[float, float] | None = None
    # taking turns: read around each of this side's counted turns (its hooks left out), the CPU
    # readings kept in cpu_turns, (start, end) a turn (metrics/cpucost.py: a side's CPU figures)
    cpu_read: Callable[[], Any] | None = None
    cpu_turns: list[tuple[Any, Any]] = field(default_factory=list)
    cross_checks: list[Any] = field(default_factory=list)   # metrics/crosscheck.CrossCheck: the
                                         # measured quantities counted a second, independent way
    _progress_base: dict[str, float] = field(default_factory=dict)
    _progress_lock: threading.Lock = field(default_factory=threading.Lock)

    def side_detail(self) -> dict[str, Any]:
        """What the kind of side this context was records beside its figures, under the record's
        keys: which machine ran it (build turns), its turns' order, settling turns and read-backs."""
        out: dict[str, Any] = {}
        if self.machine:
            out["guest"] = self.machine
        if self.turn_order:
            out["turns"] = self.turn_order
        if self.settled:
            out["settle_turns"] = self.settled
        if self.turn_reads:
            out[self.turn_key] = list(self.turn_reads)
        return out

    def set_progress(self, fn: Callable[[], dict[str, float] | None]) -> None:
        self.progress = fn

    def end_progress(self) -> None:
        """A round ended: fold its final count into the base, so the case's count never goes back."""
        with self._progress_lock:
            fn, self.progress = self.progress, None
            last = fn() if fn is not None else None
            for k, v in (last or {}).items():
                self._progress_base[k] = self._progress_base.get(k, 0.0) + v

    def current_progress(self) -> dict[str, float] | None:
        """What the sampler reads: cumulative bytes and I/Os of the workload over the whole case."""
        with self._progress_lock:
            fn = self.progress
            cur = fn() if fn is not None else None
            if cur is None and not self._progress_base:
                return None
            keys = set(self._progress_base) | set(cur or {})
            return {k: self._progress_base.get(k, 0.0) + (cur or {}).get(k, 0.0) for k in keys}

    def stopping(self) -> bool:
        return self.stop is not None and self.stop.is_set()

    def remaining(self) -> float:
        """Seconds left to wait for this case's processes: to the case timeout, and once a signal
        has asked them to end (procs.cancel()), no more than SIGNAL_GRACE after it. A process that
        outlives its SIGTERM is then SIGKILLed by the teardown: a Ctrl-C'd
        run ends within seconds, never at the case timeout (minutes)."""
        left = self.deadline - time.monotonic()
        at = self.procs.cancelled_at
        return left if at is None else min(left, at + SIGNAL_GRACE - time.monotonic())

    def overdue(self, what: str) -> "CaseTimeout":
        """The error for a wait that remaining() ended: what was still running, and when."""
        when = ("at the case timeout" if self.procs.cancelled_at is None
                else f"{SIGNAL_GRACE:g} s after a signal asked it to end")
        return CaseTimeout(f"{what} still running {when}")


class Workload(Protocol):
    name: str
    headline: str               # the figure a case is summarised and judged by (throughput, iops)
    series_headline: str        # the sampled metric that tracks it live (workload_mibs): the steady veto
    bandwidth_figure: str | None  # its figure in MiB/s that the pool's own bandwidth cross-checks, if any
    summary_figures: list[str]  # the run summary's columns (every figure is in results.jsonl and reports)
    directions: dict[str, int]  # figure -> +1 higher is better, -1 lower is better, 0 context (not judged);
                                # figures not named here go by their unit (unit_direction)
    # every figure it reports, as (a name pattern, fully matched, and its unit): `expect` is checked
    # against it before anything starts (figure_unit)
    figure_units: tuple[tuple[str, str], ...]
    # field name -> (python type or tuple of types, sweepable); validated by runfile.py
    fields: dict[str, tuple[Any, bool]]
    # the duets it can run (runfile.py checks a test's `duet` against it): "together" (both sides at
    # once, run() in a thread each), "turns" (round by round, run_turns()); () for none
    duet_modes: tuple[str, ...]
    # its run_turns() takes sides on two targets (a pool each: build turns in two guests), reading
    # each pool's own txgs and room; a workload whose turns assume one pool says False
    turns_across_guests: bool
    # its run_turns() keeps a side's files from turn to turn (fio, the mix): sides that differ only
    # in a module tunable then run on one set of datasets; False where each round makes fresh
    # datasets named per side (receive), which keeps a dataset a side
    turns_share_files: bool
    # its data stays on the pool to the case's end (fio's files, the mix's): the pool-wide exact
    # counts (dedup ratio, block cloning) are read then, after a `zpool sync` (metrics/counts.py);
    # False where each round reads them itself before it removes its datasets (receive)
    pool_counts_at_end: bool

    def validate(self, test: dict[str, Any], where: Callable[[str], dict]) -> None:
        """Workload-specific checks beyond types; raise InputError with where(field)."""

    def prepare(self, test: dict[str, Any], target: Target, vdev_dir: Path,
                progress: Callable[[str], None] | None) -> Any:
        """Once per test, before its cases (e.g. make the corpus). Untimed."""

    def run(self, ctx: CaseContext) -> Figures:
        """Run one case (or one precondition round, ctx.phase) on ctx.pool and return its figures,
        or raise WorkloadFailed. Must be re-runnable on the same pool (ctx.round differs)."""

    def run_turns(self, ctxs: list[CaseContext]) -> list[Figures]:
        """("turns" in duet_modes) Both sides of a duet on one pool, taking turns round by round;
        each side's figures over its own rounds. ctxs[0] goes first."""

    def active_bytes(self, fields: dict[str, Any], prepared: Any) -> int | None:
        """The active data set of a case, for the steady-state cache gate."""

    def asked_seconds(self, fields: dict[str, Any]) -> float | None:
        """The time a measured iteration is asked to take (a duration, fio's runtime), known before
        anything starts, or None where it is however long its work takes: the dry run holds it
        against the iteration's timeout and adds it up into the plan's estimate."""

    def kept_bytes(self, fields: dict[str, Any]) -> int | None:
        """The data a measured iteration leaves on its pool by its end, known before anything starts
        (a fixed number of receive rounds), or None where it depends on time or on nothing."""

    def cycle(self, ctx: CaseContext, figures: Figures) -> tuple[float | None, str]:
        """The workload's own cycle in seconds and what it is, in words: the shortest span over
        which its sampled figure is a level rather than a phase (steady/timescale.py)."""


def work_ended(ctx: CaseContext) -> None:
    """The counted work of a case has ended: what its lifecycle reads then (the CPU's end)."""
    if ctx.phase == "measure" and ctx.work_done is not None:
        ctx.work_done()
