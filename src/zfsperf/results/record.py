"""The typed result: a case iteration's record (`CaseRecord`, one line of results.jsonl) with its
`Figure`s and `Status`, the one place a status is decided, and the version of the results format.
The runner writes these classes and report, compare, steady and history read the same classes back
(as pyperf writes and reads its JSON with its own `Run` and `Benchmark`).

FORMAT_VERSION history:
  1  (no "format" key in run.json) zfsperf 0.1, until statuses became an enum
  2  run.json carries "format"; every record's status is one of Status
  3  a record's sweep point is its "sweep" (format 2 called it "params"); records are written
     and read by CaseRecord.to_json / CaseRecord.from_json, with typed figures, precision,
     cross-checks and steady-state verdict (SteadyRecord: the same keys as format 2's dict)
  (no new format) an implementation selector (zfs_fletcher_4_impl ...) is held as its chosen name
     ("fastest"); earlier runs held the module's text ("[fastest] scalar ..."): the readers below
     give both as the chosen name, so two runs across that change hold the same tunables
A reader refuses a results directory written in a newer format than it knows (exit 2) and reads
every older one."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from enum import Enum
from typing import Any, Mapping

from ..tunables.impls import chosen, chosen_all


FORMAT_VERSION = 3


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
class CrossCheck:
    """A case's headline quantity measured a second, independent way over the same interval
    (metrics/crosscheck.py makes them), kept in the record beside it with the margin the two are
    expected to agree within; a margin of None: recorded for the reader, judged by nobody."""
    name: str                   # what is compared, in words: "received data vs pool space"
    figure: str                 # the recorded figure (or metric) the check is about
    ours: float                 # zfsperf's measure
    independent: float          # the second measure
    unit: str
    margin_pct: float | None    # agree when |independent/ours - 1| <= margin (%); None: not judged
    how: str                    # the second measure and what it allows for

    @property
    def deviation_pct(self) -> float | None:
        if self.unit == "%":                         # ratios: the difference in percentage points
            return self.independent - self.ours
        return (self.independent / self.ours - 1) * 100 if self.ours else None

    @property
    def agrees(self) -> bool | None:
        d = self.deviation_pct
        if self.margin_pct is None or d is None:
            return None
        return abs(d) <= self.margin_pct

    def describe(self) -> str:
        d = self.deviation_pct
        dev = "n/a" if d is None else (f"{d:+.2f} points" if self.unit == "%" else f"{d:+.2f} %")
        margin = "not judged" if self.margin_pct is None else \
            f"margin {self.margin_pct:g}{' points' if self.unit == '%' else ' %'}"
        return (f"{self.name}: {self.ours:.6g} vs {self.independent:.6g} {self.unit} ({dev}; {margin}; "
                f"{self.how})")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "deviation_pct": self.deviation_pct, "agrees": self.agrees}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "CrossCheck":
        return cls(**{k: d[k] for k in ("name", "figure", "ours", "independent", "unit", "margin_pct", "how")})


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
        elif not self.figures:          # nothing measured is no result, whatever the workload said
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


@dataclass(frozen=True)
class Figure:
    """A number a case yields, with its unit (`throughput` 364.3 MiB/s)."""
    value: float
    unit: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Figure":
        return cls(value=float(d["value"]), unit=str(d.get("unit", "")))


class StopReason(StrEnum):
    """Why a case (adaptive precision) or a run of blocks (--detect) stopped where it did; the value
    is what results.jsonl and run.json carry."""
    ITERATIONS = "iterations"                       # no target: the iterations asked for
    PRECISION = "precision reached"
    FAILED = "an iteration did not PASS"
    MAX_ITERATIONS = "max_iterations"
    BUDGET = "time budget"
    DECIDED = "decided"                             # --detect: a verdict at the spent level
    DETECTABLE = "detectable change reached"        # --detect: the change asked for is visible
    NO_PAIR = "no A/B pair in this run"
    STEADY = "steady verdict decided"               # iterations = "steady": steady or not steady


@dataclass(frozen=True, kw_only=True)
class PrecisionVerdict:
    """Why a case's last iteration was its last, under adaptive precision (`--precision PCT`)."""
    stopped_by: StopReason | str     # str: a reason another zfsperf wrote
    target_pct: float | None = None  # the 95 % CI half-width wanted, % of the mean
    achieved_pct: float | None = None
    iterations: int | None = None
    figure: str | None = None        # the headline the precision is of
    until: str | None = None         # "steady": the case went on until its steady verdict was decided
    cap: int | None = None           # ... or these many iterations (max_iterations)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stopped_by": self.stopped_by}
        if self.target_pct is not None:
            out = {"target_pct": self.target_pct, "achieved_pct": self.achieved_pct, "iterations": self.iterations,
                   "figure": self.figure, "stopped_by": self.stopped_by}
        if self.until is not None:
            out.update(until=self.until, cap=self.cap, iterations=self.iterations, figure=self.figure)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "PrecisionVerdict":
        known = {k: d.get(k) for k in ("target_pct", "achieved_pct", "iterations", "figure", "until", "cap")}
        why = d.get("stopped_by")
        # a reason this zfsperf does not name (an older or newer writer's) is kept in its own words
        return cls(stopped_by=StopReason(why) if why in StopReason._value2member_map_ else why, **known)


class SteadyMode(StrEnum):
    """How a test uses steady state (`steady = { mode = ... }`); the value is what JSON carries."""
    RECORD = "record"               # sample, and record the verdict on what was measured
    GATE = "gate"                   # precondition in rounds until steady (or the timeout), then measure
    OFF = "off"                     # no sampler, no verdict


@dataclass(kw_only=True)
class SteadyRecord:
    """The steady-state verdict on one iteration's sampled series, as steady.summary() decides it.
    Sample numbers (first_steady_index, onset) count from 1; times are seconds."""
    mode: SteadyMode | str                      # record (judged after) or gate (preconditioned until); str: unknown
    steady: bool
    method: str                                 # "changepoint" or "snia"
    samples: int                                # samples judged (at the workload's time scale)
    first_steady_index: int | None = None       # the sample at which it first counted as steady
    time_to_steady: float | None = None         # t of that sample, from the sampler's start
    onset: int | None = None                    # the first sample of the steady stretch
    headline: str | None = None                 # the metric with a veto (changepoint)
    passed: list[str] = field(default_factory=list)       # metrics with evidence, steady
    failed: list[str] = field(default_factory=list)       # metrics with evidence, not steady
    unreadable: list[str] = field(default_factory=list)   # never counted
    zero: list[str] = field(default_factory=list)         # 0 in every sample: no evidence
    criteria: dict[str, Any] = field(default_factory=dict)  # SteadySpec.as_dict(): mode, interval, window, ...
    span_s: float | None = None                 # first to last judged sample
    onset_time: float | None = None             # the onset, from the first judged sample
    classes: dict[str, str] = field(default_factory=dict)  # metric -> flat, warm-up, slowdown, ...
    why: str | None = None                      # the method's own words (the decisive metric)
    note: str | None = None                     # why not steady ("not steady after 12 s", too few samples)
    timescale: dict[str, Any] | None = None     # the bins judged: span_s, cycle, raw_samples, samples
    rounds: int | None = None                   # gate: workload rounds run to precondition
    measure_start: float | None = None          # gate: when the measurement began (sampler seconds)
    other: dict[str, Any] = field(default_factory=dict)   # keys this zfsperf does not name

    @property
    def window(self) -> int:
        """The shortest steady segment the verdict needed, in samples (SNIA's window)."""
        return int(self.criteria.get("window") or 10)

    @property
    def judged(self) -> bool:
        """Enough samples for a window: a verdict with evidence either way."""
        return self.samples >= self.window

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mode": self.mode, "steady": self.steady, "first_steady_index": self.first_steady_index,
            "time_to_steady": self.time_to_steady, "samples": self.samples, "method": self.method,
            "onset": self.onset, "headline": self.headline, "passed": self.passed, "failed": self.failed,
            "unreadable": self.unreadable, "zero": self.zero, "criteria": self.criteria}
        for k in ("span_s", "onset_time", "classes", "why", "note", "timescale", "rounds", "measure_start"):
            v = getattr(self, k)
            if v:
                out[k] = v
            elif v is not None and k in ("span_s", "onset_time", "rounds", "measure_start"):
                out[k] = v                      # a real 0
        return out | self.other

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "SteadyRecord":
        names = {f for f in cls.__dataclass_fields__ if f != "other"}
        known = {k: d[k] for k in names if d.get(k) is not None}
        mode = known.get("mode", SteadyMode.RECORD)
        known["mode"] = SteadyMode(mode) if mode in SteadyMode._value2member_map_ else mode
        known.setdefault("steady", False)
        known.setdefault("method", (d.get("criteria") or {}).get("method") or "changepoint")
        known.setdefault("samples", 0)
        return cls(**known, other={k: v for k, v in d.items() if k not in names})


def as_figures(figures: dict[str, dict[str, Any]]) -> dict[str, Figure]:
    """A workload's figures ({name: {"value", "unit"}}) as Figures."""
    return {k: Figure.from_json(f) for k, f in figures.items()}


# keys of a record's JSON that CaseRecord names (every other key is workload detail); the optional
# ones are written only when they hold something
_OPTIONAL = ("pool", "tunables", "series", "steady", "sampler", "cross_checks", "precision", "accelerator",
             "histograms", "class_table")
_FIELDS = ("test", "case", "sweep", "iteration", "workload", "status", "error", "figures", "start",
           "duration") + _OPTIONAL


@dataclass(kw_only=True)
class CaseRecord:
    """One iteration of one case: what was measured and how (one line of results.jsonl)."""
    test: str                    # the runfile's [[test]] name
    case: str                    # the case id: the test at its sweep point ("receive threads=2")
    sweep: dict[str, Any]        # the sweep point: the value of every key the test sweeps
    iteration: int               # from 1; warm-ups (negative) are logged, never recorded
    workload: str                # receive, fio, mixed
    status: Status = Status.FAIL
    error: str | None = None     # why it is not PASS (or what its teardown could not do)
    figures: dict[str, Figure] = field(default_factory=dict)
    start: float = 0.0           # wall clock (epoch seconds) at the case's start
    duration: float | None = None     # seconds, from a fresh pool to the record
    pool: dict[str, Any] | None = None        # name, layout, dataset properties
    tunables: dict[str, dict[str, str]] | None = None   # name -> {"before", "set"}
    series: str | None = None    # the sampled series, relative to the results directory
    steady: SteadyRecord | None = None        # the steady-state verdict of the series (steady.summary)
    sampler: dict[str, Any] | None = None     # the sampler's overhead and unreadable sources
    cross_checks: list[CrossCheck] | None = None       # headlines measured a second, independent way
    precision: PrecisionVerdict | None = None # adaptive: why this was the case's last iteration
    accelerator: str | None = None            # "tcg"/"kvm" in a QEMU guest: under TCG, emulation
    histograms: dict[str, Any] | None = None  # latency histograms by class (fio, zpool iostat -w)
    class_table: list[dict[str, Any]] | None = None    # fio's per-class latency table
    detail: dict[str, Any] = field(default_factory=dict)  # workload detail: streams, rounds, hosts

    @property
    def passed(self) -> bool:
        return self.status is Status.PASS

    def value(self, name: str) -> float | None:
        f = self.figures.get(name)
        return None if f is None else f.value

    def slice_values(self, name: str) -> list[float] | None:
        """A figure slice by slice, where the workload recorded it so (fio turns: each slice's IOPS
        and MiB/s, detail["slices"]["figures"]), else None."""
        per = (self.detail.get("slices") or {}).get("figures")
        if not per or any(name not in s for s in per):
            return None
        return [float(s[name]) for s in per]

    def add_detail(self, extra: dict[str, Any]) -> None:
        """What a workload recorded beside its figures (CaseContext.extra)."""
        for k, v in extra.items():
            if k in ("histograms", "class_table"):
                setattr(self, k, v)
            else:
                self.detail[k] = v

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"test": self.test, "case": self.case, "sweep": self.sweep,
                               "iteration": self.iteration, "workload": self.workload,
                               "status": self.status.value, "error": self.error,
                               "figures": {k: f.to_json() for k, f in self.figures.items()},
                               "start": self.start, "duration": self.duration}
        for k in _OPTIONAL:
            v = getattr(self, k)
            if k == "cross_checks" and v is not None:
                v = [c.to_json() for c in v]
            elif k in ("precision", "steady") and v is not None:
                v = v.to_json()
            if v is not None:
                out[k] = v
        out.update(self.detail)
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any], fmt: int = FORMAT_VERSION) -> "CaseRecord":
        """A record of results format fmt (1, 2 or 3). A format-2 directory resumed by this zfsperf
        holds records of both formats: each is read by its own keys."""
        known = {k: d[k] for k in _OPTIONAL if d.get(k) is not None}
        if "cross_checks" in known:
            known["cross_checks"] = [CrossCheck.from_json(c) for c in known["cross_checks"]]
        if "precision" in known:
            known["precision"] = PrecisionVerdict.from_json(known["precision"])
        if "steady" in known:
            known["steady"] = SteadyRecord.from_json(known["steady"])
        if "tunables" in known:
            known["tunables"] = {n: t | {"before": chosen(t["before"])} if isinstance(t.get("before"), str) else t
                                 for n, t in known["tunables"].items()}
        sweep = d["sweep"] if "sweep" in d else d.get("params") if fmt < 3 else None
        return cls(test=str(d.get("test", d["case"])), case=str(d["case"]), sweep=dict(sweep or {}),
                   iteration=int(d.get("iteration", 1)), workload=str(d.get("workload", "")),
                   status=Status(d["status"]), error=d.get("error"),
                   figures={k: Figure.from_json(f) for k, f in (d.get("figures") or {}).items()},
                   start=float(d.get("start") or 0.0),
                   duration=float(d["duration"]) if isinstance(d.get("duration"), (int, float)) else None,
                   detail={k: v for k, v in d.items() if k not in _FIELDS and k != "params"}, **known)


def machine_label(hardware: dict[str, Any], storage: dict[str, Any], target: dict[str, Any]) -> str:
    """A machine's class in words (a fleet's verdicts are combined per class): its CPUs, memory,
    the disk under its vdevs and the target's ZFS. Over ssh (`--target guest` too) the machine is the
    one measured, `target.machine`, not the one zfsperf ran on, and its disk the one the target read
    (`storage.read_on`; a run recorded before that has the controller's storage: no disk)."""
    if target.get("machine"):
        hardware = target["machine"]
        storage = storage if storage.get("read_on") == "target" else {}
    cpus = f"{hardware.get('cpus')} × {hardware.get('cpu_model')}" if hardware.get("cpus") else "CPUs not recorded"
    if hardware.get("cpu_limit"):
        cpus += f" limited to {hardware['cpu_limit']:g} CPUs"
    mem = f"{round(hardware['memory_bytes'] / 2 ** 30)} GiB" if hardware.get("memory_bytes") else "memory not recorded"
    impl, ver = str(target.get("implementation") or "target not recorded"), str(target.get("zfs_version") or "")
    disk = f", {storage['disk']} disk" if storage.get("disk") else ""
    return f"{cpus}, {mem}{disk}, {ver if ver.startswith(impl) else f'{impl} {ver}'.strip()}"


# keys of run.json that RunRecord names; any other key is kept in `other` and written back
_RUN_FIELDS = ("format", "zfsperf_version", "command_line", "host", "os", "kernel", "python", "target",
               "fio_version", "start", "end", "interrupted", "runfile", "selection", "params", "vdev_dir",
               "pools", "cases", "tunables", "machine", "duets", "turns", "ab", "history_store", "detect",
               "resumed", "builds", "implementations", "software", "hardware", "storage", "machine_class", "fleet",
               "inputs", "verdicts")


@dataclass(kw_only=True)
class RunRecord:
    """How a run's results were obtained (run.json): versions, host, target, runfile, selection,
    pool layouts, every tunable before and after, the machine before and after."""
    format: int = FORMAT_VERSION
    zfsperf_version: str | None = None
    command_line: list[str] = field(default_factory=list)      # argv, secrets redacted
    host: str | None = None
    os: str | None = None
    kernel: str | None = None
    python: str | None = None
    target: dict[str, Any] = field(default_factory=dict)       # Target.info(): implementation, versions, capabilities
    fio_version: str | None = None
    start: float | None = None                # epoch seconds
    end: float | None = None                  # None while the run goes on (or when it was killed)
    interrupted: bool | None = None
    runfile: dict[str, Any] = field(default_factory=dict)      # {"source", "text"} as loaded
    selection: dict[str, Any] = field(default_factory=dict)    # tags, test, iterations, precision, interleave, seed, detect, defines
    params: dict[str, Any] = field(default_factory=dict)       # the runfile's [params] with -D applied
    vdev_dir: str | None = None
    pools: dict[str, str] = field(default_factory=dict)        # test -> pool layout
    cases: list[str] = field(default_factory=list)             # the plan's case ids, in order
    tunables: dict[str, Any] = field(default_factory=lambda: {"before": {}, "after": None})
    machine: dict[str, Any] | None = None     # machine.Check before and after, and what rose
    duets: list[str] = field(default_factory=list)             # tests whose two sides ran at once
    turns: list[str] = field(default_factory=list)             # ... of them, those that took turns (ABBA)
    ab: list[str] = field(default_factory=list)                # tests run in blocks (`ab = true`; all with --interleave)
    history_store: str | None = None          # where the run was added (credentials redacted)
    detect: dict[str, Any] | None = None      # --detect: what the blocks reached and what stopped them
    resumed: list[dict[str, Any]] = field(default_factory=list)
    # a build A/B in the guest: build name -> what it is (label, version, commit, dirty, modules,
    # the loaded module's srcversion); each record's sweep names its build
    builds: dict[str, Any] = field(default_factory=dict)
    # a run that loaded the module again: the implementations each load picked (fletcher4, sha256,
    # sha512, blake3, raidz) and the pins every load was given, the run's first load's picks
    # (tunables/impls.py ImplPin.as_dict)
    implementations: dict[str, Any] = field(default_factory=dict)
    # what defends a number (runinfo.py): zfsperf commit and libraries, CPU and memory, the
    # filesystem under the vdev files, each test's inputs (a corpus: its path, size and sha256)
    software: dict[str, Any] = field(default_factory=dict)
    hardware: dict[str, Any] = field(default_factory=dict)
    storage: dict[str, Any] = field(default_factory=dict)
    # the machine's class (a fleet combines hosts' verdicts per class): label, and whether the user
    # gave it (run --class) or it was derived from hardware, storage and target (machine_label)
    machine_class: dict[str, Any] = field(default_factory=dict)
    # a run of `zfsperf fleet run`: {"id": the fleet's id, "host": this host's inventory name}
    fleet: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    # each case's steady-state verdict across its iterations as the run judged it (steady/rounds.py
    # CaseSteady.as_dict: the rule, the window's iterations and figures, the line): read back as
    # stored, never re-judged silently
    verdicts: dict[str, Any] = field(default_factory=dict)
    other: dict[str, Any] = field(default_factory=dict)        # keys this zfsperf does not name

    @property
    def accelerator(self) -> str | None:
        """"tcg" / "kvm" for a QEMU guest (under TCG every figure is emulation), else None."""
        return self.target.get("accelerator")

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in _RUN_FIELDS} | self.other

    def class_label(self) -> str:
        """The machine's class as the run recorded it (run --class, or derived as it ran), else
        derived now from its hardware, storage and target (a run older than the record of it)."""
        return str((self.machine_class or {}).get("label")
                   or machine_label(self.hardware or {}, self.storage or {}, self.target or {}))

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "RunRecord":
        """run.json of any format (1: no "format" key)."""
        known = {k: d[k] for k in _RUN_FIELDS if k in d and d[k] is not None}
        if isinstance(known.get("tunables"), dict):
            known["tunables"] = {when: chosen_all(vals) if isinstance(vals, dict) else vals
                                 for when, vals in known["tunables"].items()}
        return cls(**({"format": 1} | known), other={k: v for k, v in d.items() if k not in _RUN_FIELDS})
