"""Executes a plan of cases: statuses, timeouts, iterations, tunables, resume, signals.

Order per case and iteration (case.Lifecycle): tunables (journaled) -> fresh pool (+ dataset
properties) -> workload -> stop its processes -> tunables restored -> pool destroyed -> result
appended. The runner owns that order; workloads, targets and the store are plain components it calls.
"""

from __future__ import annotations

import os
import platform
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import proc
from .errors import InputError, ZfsperfError
from .redact import redact
from .disks import check_disks
from .pool import PoolManager, finish_pools, fit_problem, hold_problem, room_problem
from . import machine
from . import leftovers, runinfo, safepaths
from .results.statusline import status_line
from .report import export
from .report.export import junit, results_csv
from .results.stats import summarise
from .results.directory import RUN_JSON, SUMMARY, ResultsDir, log_path
from .metrics.quantize import render_histograms
from .report.summary import cut_short
from .report.tables import case_tables
from .runfile import Case, Runfile, refuse_load_scope
from .sides import Sides, choose
from .plan import Choice, Plan
from .buildref import BuildSources
from .opentarget import Expected, check_spec, elsewhere, expected, open_target, open_twin, reloads_modules, turn_pair
from . import dryrun
from .targets.base import Target
from .tunables import Journal, replay
from .tunables.journal import journal_path
from .ui import Console
from .case import CaseRunner
from .tunables.modswitch import ModuleSwitch, userland_note
from .tunables.impls import ImplPin
from .control import Control, Interrupted
from .workloads import SUMMARY_FIGURES, WORKLOADS
from .workloads.corpus import Corpus, cache_dir
from .steady.rounds import case_verdict, case_verdicts
from .results.record import STATUSES, CaseRecord, PrecisionVerdict, RunRecord, Status, StopReason
from .report.abstats import ALPHA, MIN_BLOCKS, alpha_text

HEADLINE = {name: wl.headline for name, wl in WORKLOADS.items()}     # the workloads say which figure


@dataclass(kw_only=True)
class Storage:
    """Where ZFS and the test pools live."""
    target: str = "auto"                 # a TARGET spec (opentarget.py)
    tunables_dir: str | None = None      # a directory laid out like /sys/module/zfs/parameters
    vdev_dir: str = "/var/tmp/zfsperf"   # where file vdevs go
    vdev_size: int | None = None         # -s: every test's vdev size
    prefill: bool = False                # --prefill: every test's vdev files written through first
    disks: list[str] = field(default_factory=list)   # DISKS: block devices instead of files
    force: bool = False                  # --force: a disk with stale data may be taken (never one in use)
    arc_max_mb: int | None = None        # the embedded zfs-fuse's ARC size


@dataclass(kw_only=True)
class Output:
    """What the run writes and says."""
    outdir: str = "zfsperf-results"
    keep_failed: bool = False            # keep a failed case's pool for a post-mortem
    verbose: bool = False
    quiet: bool = False
    html: bool = True                    # draw report.html at the end (--no-html: junit.xml and results.csv only)
    store: str | None = None             # the history store the run is added to ("": the default; None: none)
    profile: bool = False                # --profile: on-CPU stacks of every counted iteration (perf), per side
    machine_class: str | None = None     # --class: the machine's class in run.json (else derived)
    fleet: dict[str, str] | None = None  # --fleet-id/--fleet-host: a host's run of `zfsperf fleet run`


@dataclass(kw_only=True)
class RunOptions:
    """A `zfsperf run` as the command line gave it: what to measure, where, what to write, and how
    the run itself behaves. `RunOptions.of(**flat)` builds it from the fields' names."""
    choice: Choice = field(default_factory=Choice)
    storage: Storage = field(default_factory=Storage)
    output: Output = field(default_factory=Output)
    resume: str | None = None            # the results directory of a run to finish
    cleanup: bool = False                # -x: remove what earlier zfsperf processes left behind
    dry_run: bool = False                # every check a run makes before it touches anything, then stop
    check: str = "warn"                  # the machine check before and after: warn | strict (refuse if busy) | off
    argv: list[str] = field(default_factory=list)
    # the CLI's process ends right after run(): keep recording signals to the end, so that one that
    # lands after the summary is moot instead of killing a run that had finished
    keep_signal_handlers: bool = False
    build_sources: BuildSources | None = None   # how --build sides given as source are compiled (buildsource.py)
    # what a finished run says last, before its Log directory, read from its results directory (a
    # build A/B: the rebuild floors it kept or that hold it, buildab.run_floors)
    closing: Callable[[Path], list[str]] | None = None

    @classmethod
    def of(cls, **flat: Any) -> "RunOptions":
        """From flat keywords, each given to the group that has a field of its name."""
        groups: dict[str, dict[str, Any]] = {"choice": {}, "storage": {}, "output": {}}
        own: dict[str, Any] = {}
        for k, v in flat.items():
            group = next((g for g, tp in (("choice", Choice), ("storage", Storage), ("output", Output))
                          if k in tp.__dataclass_fields__), None)
            (groups[group] if group else own)[k] = v
        return cls(choice=Choice(**groups["choice"]), storage=Storage(**groups["storage"]),
                   output=Output(**groups["output"]), **own)


def check_profiler(spec: str) -> None:
    """--profile needs perf on this machine, and a target on it (perf runs here: a target over ssh
    is profiled by running zfsperf on its machine)."""
    if elsewhere(spec):
        raise InputError(f"--profile profiles this machine, and --target {spec} runs ZFS on another: run zfsperf "
                         "there (`zfsperf guest run -- run --profile ...` for the guest)", field="--profile")
    if shutil.which("perf") is None:
        raise InputError("--profile needs perf (Debian package linux-perf), and it is not installed", field="--profile")


class Precision:
    """When a case has run enough iterations. Without a target: its fixed count. With one (percent):
    at least `minimum`, then until the 95 % CI half-width of the headline figure's mean is <= that
    share of the mean, max_iterations, the time budget, or an iteration that did not PASS
    (measuring on would not make a failing case precise). until_steady (iterations = "steady"):
    from the growing window's first look until the case's steady verdict is steady or not steady,
    with the same limits. The verdict says which stopped it."""

    def __init__(self, target_pct: float | None, minimum: int, maximum: int, budget: float,
                 headline: str, until_steady: bool = False) -> None:
        self.target_pct, self.minimum, self.maximum, self.budget = target_pct, minimum, maximum, budget
        self.headline = headline
        self.until_steady = until_steady
        self.values: list[float] = []
        self.records: list[CaseRecord] = []
        self.failed = False
        # the budget's clock: started when the case is first asked whether it wants an iteration
        # (its first), not when the run made every case's stop (a case after others lost their time)
        self.t0: float | None = None

    def add(self, record: CaseRecord) -> None:
        self.records.append(record)
        if not record.passed:
            self.failed = True
            return
        v = record.value(self.headline)
        if v is not None:
            self.values.append(v)

    def achieved_pct(self) -> float | None:
        s = summarise(self.values)
        if s.n < 2 or not s.mean:
            return None
        return 100 * (s.ci_high - s.mean) / abs(s.mean)

    def decided(self, n: int) -> PrecisionVerdict | None:
        """None while more iterations are wanted after n; else why they stop."""
        if self.t0 is None:
            self.t0 = time.monotonic()
        if self.until_steady:
            return self._steady_decided(n)
        if self.target_pct is None:
            return PrecisionVerdict(stopped_by=StopReason.ITERATIONS) if n >= self.minimum else None
        if n < self.minimum and not self.failed:
            return None
        achieved = self.achieved_pct()
        why: StopReason | None = None
        if self.failed:
            why = StopReason.FAILED
        elif achieved is not None and achieved <= self.target_pct:
            why = StopReason.PRECISION
        else:
            why = self._limit(n)
        if why is None:
            return None
        return PrecisionVerdict(target_pct=self.target_pct, achieved_pct=None if achieved is None else round(achieved, 3),
                                iterations=n, figure=self.headline, stopped_by=why)

    def _limit(self, n: int) -> StopReason | None:
        if n >= self.maximum:
            return StopReason.MAX_ITERATIONS
        if self.t0 is not None and time.monotonic() - self.t0 >= self.budget:
            return StopReason.BUDGET
        return None

    def _steady_decided(self, n: int) -> PrecisionVerdict | None:
        why: StopReason | None = None
        if self.failed:
            why = StopReason.FAILED
        elif n >= self.minimum:
            v = case_verdict(self.records, self.headline, cap=self.maximum)
            why = StopReason.STEADY if v is not None and v.steady is not None else self._limit(n)
        if why is None:
            return None
        return PrecisionVerdict(stopped_by=why, iterations=n, figure=self.headline, until="steady", cap=self.maximum)


@dataclass
class _CaseState:
    case: Case
    adaptive: Precision
    sides: Sides                         # how its sides share the machine (sides.choose), once
    it: int = 0                          # the last iteration started
    finished: bool = False
    partner: Case | None = None          # a duet: the other side, run at the same time


def detect_line(d: dict[str, Any]) -> str:
    """--detect's line of the summary: the change wanted, the one reached, after how many blocks and
    why it stopped (and, looking after every block, the level of its last look)."""
    worst = "-" if d["worst_pct"] is None else f"{d['worst_pct']:.2f} %"
    seq = d.get("sequential")
    return (f"Detect:\t\t{d['target_pct']:.3g} % wanted (\"same\": within ±{d['target_pct']:.3g} %), {worst} reached "
            f"after {d['blocks']} blocks (stopped by {d['stopped_by'] or 'the end of the run'})"
            + (f"; judged at α = {alpha_text(seq['alpha'])}, look {seq['looks']} of at most "
               f"{seq['max_blocks'] - seq['first_look'] + 1} (α spent across looks)" if seq else ""))


class Runner:
    def __init__(self, opts: RunOptions, console: Console | None = None) -> None:
        self.opts = opts
        self.ui = console or Console(quiet=opts.output.quiet, verbose=opts.output.verbose)
        self.control = Control()                     # signals: recorded, acted on at safe points
        self.cases: CaseRunner | None = None
        self.plan: Plan                              # what the run measures: decided once in run()
        self.expected: Expected | None = None        # the target the spec reaches, told before it is opened
        self.switch: ModuleSwitch | None = None     # a build A/B: which build the guest has loaded
        self.results_dir: Path | None = None        # once created (or reopened to resume)
        self.detected: dict[str, Any] | None = None  # --detect: what the blocks reached, and what stopped them
        self.lock = machine.RunLock()
        self.before: machine.Check | None = None
        self.busier: str | None = None               # what rose on the machine while the run ran
        self.not_added: str | None = None            # why the run is not in history (nothing passed)

    # ------------------------------------------------------------------ entry
    def run(self) -> int:
        try:
            return self._run()
        finally:
            self.lock.release()

    def _checked_input(self) -> tuple[list[Case], str | None]:
        """The plan (from the command line, or from run.json on --resume), its cases with the
        command line's pool overrides, and every check that needs nothing started: each case's pool
        fits its filesystem and its data, DISKS, the target spec, the history store. Returns the
        cases and the store's URL."""
        opts = self.opts
        if opts.resume:
            self.plan = Plan.resumed(ResultsDir.open(Path(opts.resume)), opts.choice.builds)
        else:
            self.plan = Plan.new(opts.choice)
        cases = self.plan.cases()
        for c in cases:
            if opts.storage.vdev_size is not None:
                c.test.pool.vdev_size = opts.storage.vdev_size
            if opts.storage.prefill:
                c.test.pool.prefill = True
            c.test.pool.validate()
            wl, comp = WORKLOADS[c.test.workload], str(c.dataset["compression"]) if "compression" in c.dataset else None
            kept, sides = wl.kept_bytes(c.fields), 2 if c.test.duet else 1     # a duet's sides share a pool
            why = ((None if opts.storage.disks else room_problem(c.pool, opts.storage.vdev_dir))
                   or fit_problem(c.pool, wl.active_bytes(c.fields, None), comp)
                   or (None if opts.storage.disks else hold_problem(c.pool, kept and kept * sides, comp)))
            if why:
                at = (self.plan.runfile.where(c.test, "pool.vdev_size") if opts.storage.vdev_size is None
                      else {"field": "-s"})
                raise InputError(f"{c.id}: {why}", **at)
        check_disks(opts.storage.disks, opts.storage.force)
        check_spec(opts.storage.target, opts.storage.tunables_dir)
        dryrun.time_check(cases, self.plan.iterations, self.plan.runfile)
        self._check_places()
        refuse_load_scope(sorted({id(c.test): c.test for c in cases}.values(), key=lambda t: t.line or 0),
                          reload=reloads_modules(opts.storage.target))
        if opts.output.profile:
            check_profiler(opts.storage.target)
        self.expected = expected(opts.storage.target, opts.storage.tunables_dir)
        if self.plan.builds and self.expected.impl == "zfs-fuse":
            raise InputError("zfs-fuse has no kernel module to swap: a build A/B needs kernel OpenZFS (--target "
                             "openzfs, guest or ssh://)", field="--build")
        if self.plan.builds and self.expected.impl == "openzfs-freebsd":
            raise InputError("a build A/B swaps the zfs module as Linux does (rmmod, insmod, srcversion read "
                             "back); FreeBSD's kldunload and kldload are not done by zfsperf: compare two runs, "
                             "one on each build (`zfsperf compare A B`)", field="--build")
        if any(b.unbuilt() for b in self.plan.builds.values()):
            if self.opts.build_sources is None:        # never taken for the machine's own build
                raise InputError("a build given as source needs a compiler of sources (the command line's)",
                                 field="--build")
            self.opts.build_sources.check(self.plan.builds)
        dryrun.target_check(cases, self.expected.impl, self.plan.runfile, tunables=self.expected.tunables)
        return cases, self._check_store()

    def _run_record(self, target: Target, cases: list[Case], t_start: float, tun_names: list[str],
                    store_url: str | None) -> RunRecord:
        """run.json as the run starts: how its results are obtained, and the plan as one unit."""
        plan = self.plan
        info = runinfo.run_info(plan.runfile, target, cases, t_start, tun_names, argv=self.opts.argv,
                                vdev_dir=self.opts.storage.vdev_dir, selection=plan.selection(),
                                klass=self.opts.output.machine_class, fleet=self.opts.output.fleet)
        info.history_store = store_url
        info.machine = {"before": self.before.as_dict() if self.before else None, "after": None}
        info.duets = sorted({c.test.name for c in cases if c.test.duet})   # compare pairs their sides
        info.turns = sorted({c.test.name for c in cases if c.test.turns})   # ... and names the design
        info.ab = sorted({c.test.name for c in cases if c.test.ab})         # compare pairs by block
        info.builds = {k: b.to_json() for k, b in plan.builds.items()}
        return info

    def _run(self) -> int:
        opts = self.opts
        # 1. Everything about the input is checked before anything on disk is touched.
        cases, store_url = self._checked_input()
        rf = self.plan.runfile
        if opts.dry_run:
            for line in dryrun.plan_lines(self.plan, cases, self.expected, outdir=opts.output.outdir,
                                          vdev_dir=opts.storage.vdev_dir, disks=opts.storage.disks,
                                          store_url=store_url, past=self._past_seconds([c.id for c in cases])):
                self.ui.say(line)
            return 0
        # one run at a time on a machine, and the machine looked at before anything is touched
        self.lock.acquire(opts.argv)
        if self.opts.build_sources is not None:   # sides given as source compiled first, before the machine is looked at
            self.opts.build_sources.compile(self.plan.builds, self.ui.say)
        self.before = self._machine_check(strict=opts.check == "strict")
        # 2. Nothing of an earlier zfsperf may run beside this one's measurements.
        leftovers.before_a_run(opts.cleanup, self.ui.say)
        # 3. A zfsperf that died left tunables changed: put them back first, and say so.
        journal = Journal()
        for line in replay(journal, skip=("module",)):
            self.ui.say(f"journal: {line}")

        self.plan = plan = self.plan.seeded(self.plan.interleave or any(c.test.ab for c in cases))
        rd = ResultsDir.open(Path(opts.resume)) if opts.resume else ResultsDir.create(Path(opts.output.outdir))
        self.results_dir = rd.path
        target_log = proc.CommandLog(log_path(rd.path, "target.log"))
        old_handlers = self.control.install()
        t_start = time.time()
        target: Target | None = None
        interrupted = False
        try:
            self.ui.say(f"Starting ZFS target ({opts.storage.target}) ...")
            target = open_target(opts.storage.target, log=target_log, arc_max_mb=opts.storage.arc_max_mb,
                                 tunables_dir=opts.storage.tunables_dir)
            if target.accelerator == "tcg":
                self.ui.say("warning: the target is a QEMU guest under TCG (software emulation): its formats, "
                            "behaviour and tunables are real, its timings are not speeds")
            if self.expected is not None and self.expected.impl is None:   # an ssh host: known once connected
                dryrun.target_check(cases, target.impl, rf)
            self.control.check()
            leftovers.on_the_target(target, Path(opts.storage.vdev_dir), self.ui.say, cleanup=opts.cleanup,
                                    resume_owner=rd.path.name if opts.resume else None)
            for line in replay(journal):        # a module to load again waits for a dead run's pools to go
                self.ui.say(f"journal: {line}")
            vdev_dir = Path(opts.storage.vdev_dir) / f"run-{os.getpid()}"
            daemon = target.daemon() if target.capabilities().owns_daemon else None
            if daemon is not None:
                daemon.note_vdev_dir(vdev_dir)              # so a teardown without us removes them too
            pools = PoolManager(target, vdev_dir, run_id=rd.path.name, disks=opts.storage.disks)
            if plan.builds or any(c.test.load_scope for c in cases):
                self.switch = self._module_switch(target, cases, rd, journal, target_log)
            self.cases = CaseRunner(target, pools, journal, rd, self.ui, self.control,
                                    keep_failed=opts.output.keep_failed, verbose=opts.output.verbose, switch=self.switch,
                                    profile=opts.output.profile)
            if plan.build_turns:
                self._open_twin(target_log, rd, vdev_dir, journal)
            # every tunable the target exposes, before and after (the ones the runfile sets included)
            tun_names = sorted(set(target.tunable_names()) | {n for c in cases for n in c.tunables})
            run_info = self._run_record(target, cases, t_start, tun_names, store_url)
            if self.cases.twin is not None:
                run_info.target["twin"] = self.cases.twin.target.info()
            if not opts.resume:
                rd.write_run(run_info)
            try:
                interrupted = self._run_cases(rf, cases, set(plan.done), rd, target, pools, journal)
            except Interrupted:
                interrupted = True
            finally:
                self._resume_guests()
                finish_pools(pools, keep_failed=opts.output.keep_failed, say=self.ui.say)
                if self.cases.twin is not None:
                    finish_pools(self.cases.twin.pools, keep_failed=opts.output.keep_failed, say=self.ui.say)
                self._restore_build()
            rd.write_run(self._finished_record(rd, run_info, target, tun_names, t_start, interrupted))
        except Interrupted:
            interrupted = True
        finally:
            if target is not None:
                self._resume_guests()
                self._restore_build()
                self._close_target(target, rd)
                if self.cases is not None and self.cases.twin is not None:
                    self._close_target(self.cases.twin.target, rd)
                    if self.cases.pair is not None:
                        self.cases.pair.close()
            for line in replay(journal):       # anything an interrupt cut short
                self.ui.say(f"journal: {line}")
            self._machine_after(rd)
        try:                                   # a signal while summarising is still recorded, not raised
            stored: tuple[str, str | None] | None = None
            if not (interrupted or self.control.interrupt is not None):    # a partial run is no point
                stored = self._add_to_history(rd)
            return self._summarise(rd, t_start, interrupted or self.control.interrupt is not None, stored)
        finally:
            if not self.opts.keep_signal_handlers:
                self.control.restore(old_handlers)

    def _module_switch(self, target: Target, cases: list[Case], rd: ResultsDir, journal: Journal,
                       target_log: proc.CommandLog) -> ModuleSwitch:
        """A build A/B, or a load-scope tunable: the module loaded again between cases, the
        implementations it picks pinned to the first load's (a resumed run: to the stored ones)."""
        leave = {n for c in cases for n in c.tunables}
        pin = ImplPin.resumed(rd.run_record().implementations, leave) if self.opts.resume else ImplPin(leave)
        pin.on_load = lambda pins: self._store_pins(rd, pins)
        # how the case logs and run.json name the machine: the guest (build turns: the first of the
        # two guests), or the machine zfsperf runs on
        where = "guest" if self.opts.storage.target == "guest" or self.plan.build_turns else "this machine"
        switch = ModuleSwitch(target, self.plan.builds, journal, target_log, pin=pin, where=where)
        switch.check()
        for w in switch.warnings:
            self.ui.say(f"warning: {w}")
        return switch

    def _finished_record(self, rd: ResultsDir, run_info: RunRecord, target: Target, tun_names: list[str],
                         t_start: float, interrupted: bool) -> RunRecord:
        """run.json once the cases ran: the builds' srcversions, the pins, --detect's outcome, the
        inputs, the case verdicts, the tunables after, the end (a resumed run: the stored record,
        with what this part adds)."""
        if self.opts.resume:
            run_info = rd.run_record()
            run_info.resumed.append({"time": t_start, "argv": self.opts.argv})
        if self.switch is not None:
            for k, src in self.switch.srcversions.items():
                run_info.builds.setdefault(k, {})["srcversion"] = src
            for k, ver in self.switch.versions.items():       # what each side ran: its module, its userland
                own = self.plan.builds[k].userland if k in self.plan.builds else None
                run_info.builds.setdefault(k, {}).update({"module_version": ver, "userland": self.switch.userland_of(k),
                                                          "userland_dir": own.root if own else None})
                note = userland_note(ver, self.switch.userland_of(k))
                if note:
                    run_info.builds[k]["userland_note"] = note
        twin = self.cases.twin if self.cases is not None else None
        if twin is not None and twin.switch is not None:
            for k, src in twin.switch.srcversions.items():     # the same build, the other guest
                run_info.builds.setdefault(k, {})["srcversion_twin"] = src
        if self.switch is not None and self.switch.pin.loads:
            run_info.implementations = self.switch.pin.as_dict()
        if self.detected is not None:
            run_info.detect = self.detected
        run_info.inputs.update(self._inputs())
        run_info.verdicts = case_verdicts(rd.results(), HEADLINE)
        run_info.tunables["after"] = runinfo.read_tunables(target, tun_names)
        run_info.end = time.time()
        run_info.interrupted = interrupted or self.control.interrupt is not None
        return run_info

    def _inputs(self) -> dict[str, Any]:
        """Each test's prepared inputs as run.json records them: a receive test's corpora with
        their streams' paths, sizes and sha256 (what makes two runs' data the same data)."""
        out: dict[str, Any] = {}
        for name, prepared in self._prepared.items():
            if isinstance(prepared, dict):
                ids = {k: c.identity() for k, c in prepared.items() if isinstance(c, Corpus)}
                if ids:
                    out[name] = ids
        return out

    # ------------------------------------------------------------------ cases
    def _run_cases(self, rf: Runfile, cases: list[Case], done: set[tuple[str, int]], rd: ResultsDir,
                   target: Target, pools: PoolManager, journal: Journal) -> bool:
        """Every case's iterations: one case after another, or with --interleave round-robin
        (iteration 1 of every case, then iteration 2 of every case, …), so that drift over the
        minutes of a run hits every case alike instead of whichever ran last."""
        self._prepared: dict[str, Any] = {}
        self._prep_error: dict[str, str] = {}
        self._warmed: set[str] = set()
        total = sum(self._iterations(c) for c in cases)
        asked = {self.plan.iterations or c.test.iterations for c in cases if self._iterations(c) > (
            self.plan.iterations or c.test.iterations)}
        if asked:                     # never silently more than asked for: said once, with why
            self.ui.say(f"iterations: {' / '.join(map(str, sorted(asked)))} asked for, {MIN_BLOCKS} run: an A/B's "
                        f"paired test cannot call a change (p < {ALPHA:g}) with fewer pairs")
        if self.plan.smoke:
            self.ui.say(f"smoke: {' / '.join(map(str, sorted({self._iterations(c) for c in cases})))} iteration(s) a "
                        f"case, a check that the run works and not a measurement: an A/B's paired test needs "
                        f"{MIN_BLOCKS} blocks to call a change (p < {ALPHA:g}), and it is not added to history")
        remaining = {c.id: self._iterations(c) - sum(1 for cid, it in done if cid == c.id and it >= 1) for c in cases}
        self.ui.start_progress(total - len(done), remaining, self._past_seconds([c.id for c in cases]))
        states = []
        partners = {id(c): next(x for x in cases if x.test is c.test and x is not c) for c in cases
                    if c.test.duet}
        for case in cases:
            partner = partners.get(id(case))
            if partner is not None and cases.index(partner) < cases.index(case):
                continue                     # the duet's other side: run with its first case
            # --detect: the blocks go on until _detected() says so (or max_iterations)
            least = case.test.max_iterations if self.plan.detect is not None else self._iterations(case)
            t, until = case.test, self.plan.until_steady(case.test)
            adaptive = Precision(self._precision(case), least, t.steady_cap if until else t.max_iterations,
                                 t.steady_budget if until else t.budget, HEADLINE.get(t.workload, ""), until)
            if done:                         # --resume: what the interrupted run measured counts
                for r in rd.results():
                    if r.case == case.id and r.iteration >= 1:
                        adaptive.add(r)
            states.append(_CaseState(case, adaptive, choose(case, partner, self.cases), partner=partner))
        # --interleave: every case in blocks; else an `ab` test's cases in blocks, the rest one after another
        blocked = [st for st in states if self.plan.interleave or st.case.test.ab]
        try:
            if blocked:
                # blocks: one iteration of every case each, in an order drawn from the recorded seed
                # (no case always first, so no fixed order effect; the same seed, the same order)
                rng = random.Random(self.plan.seed)
                t0, blocks = time.monotonic(), 0
                while any(not st.finished for st in blocked):
                    order = list(blocked)
                    rng.shuffle(order)
                    for st in order:
                        if not st.finished:
                            self._step(st, done, rd, target, pools, journal)
                    blocks += 1
                    if self.plan.detect is not None and self._detected(rd, blocked, blocks, time.monotonic() - t0):
                        for st in blocked:
                            st.finished = True
            for st in states:
                while not st.finished:
                    self._step(st, done, rd, target, pools, journal)
        except Interrupted:
            return True
        return False

    def _step(self, st: "_CaseState", done: set[tuple[str, int]], rd: ResultsDir, target: Target,
              pools: PoolManager, journal: Journal) -> None:
        """The case's next iteration (or none, when it has had enough)."""
        case, adaptive = st.case, st.adaptive
        st.it += 1
        while (case.id, st.it) in done:
            st.it += 1
        if adaptive.decided(st.it - 1) is not None:
            st.finished = True
            return
        self.control.check()
        t = case.test
        if t.name not in self._prepared and t.name not in self._prep_error:
            try:
                self._prepared[t.name] = WORKLOADS[t.workload].prepare(
                    {**t.fields}, target, pools.vdev_dir.path, self.ui.progress_text)
                twin = self.cases.twin if self.cases is not None else None
                if twin is not None:        # build turns: the twin guest gets its own copy, at the same path
                    WORKLOADS[t.workload].prepare({**t.fields}, twin.target, pools.vdev_dir.path,
                                                  self.ui.progress_text)
                for name, ident in self._inputs().get(t.name, {}).items():     # said, before any iteration
                    self.ui.say(f"{t.name}: corpus {name} ready: {ident['stream']['bytes']} bytes, "
                                f"sha256 {ident['stream']['sha256'][:12]}, on disk (synced)")
            except (ZfsperfError, OSError) as e:
                self._prep_error[t.name] = f"preparing {t.name} failed: {e}"
            self.control.check()
        prepared, prep_error = self._prepared.get(t.name), self._prep_error.get(t.name)
        if case.id not in self._warmed:
            self._warmed.add(case.id)
            self._warmup(st, rd, target, pools, journal, prepared, prep_error)
        record, *others = self.cases.iterate(st.sides, st.it, prepared, prep_error)
        other = others[0] if others else None
        adaptive.add(record)
        verdict = adaptive.decided(st.it)
        if verdict is not None:
            st.finished = True
            if adaptive.target_pct is not None or adaptive.until_steady:
                record.precision = verdict        # why this was the case's last iteration
        for rec in (record, other) if other is not None else (record,):
            rd.append_result(rec)
            self.ui.case_done(rec, HEADLINE.get(t.workload))
        if self.opts.output.verbose and record.histograms:
            self.ui.say(render_histograms(record.histograms))

    def _warmup(self, st: "_CaseState", rd: ResultsDir, target: Target, pools: PoolManager, journal: Journal,
                prepared: Any, prep_error: str | None) -> None:
        """The case's warm-up iterations, before its first counted one: logged, never recorded
        (hyperfine's --warmup; zfs-fuse's first write into fresh vdev extents is much slower)."""
        case = st.case
        if prep_error:
            return
        for w in range(1, case.test.warmup + 1):
            rec = self.cases.iterate(st.sides, -w, prepared, None)[0]
            if self.opts.output.verbose:
                self.ui.say(f"Warmup: {case.id} {w}/{case.test.warmup} [{rec.status.value}]"
                            + (f" {rec.error}" if rec.error else ""))
            if not rec.passed:
                return

    def _detected(self, rd: ResultsDir, states: list["_CaseState"], blocks: int, elapsed: float) -> bool:
        """--detect: after each block from the MIN_BLOCKS-th, a look at every A/B pair's headline
        (report/detectlook.py: decided, detectable change reached, max_iterations, the time budget).
        True when the run should stop; what it reached goes to run.json."""
        from .report.detectlook import look
        from .report.model import load_run
        why, self.detected = look(load_run(rd.path), self.plan.detect, blocks,
                                  max(st.case.test.max_iterations for st in states),
                                  at_cap=all(st.it >= st.case.test.max_iterations for st in states),
                                  over_budget=elapsed >= min(st.case.test.budget for st in states))
        return why is not None

    def _past_seconds(self, case_ids: list[str]) -> dict[str, float]:
        """Seconds per iteration of these cases in the history store's runs on this host (the ETA);
        none when there is no store or it cannot be read -- the ETA then learns from this run."""
        if self.opts.output.store is None:
            return {}
        try:
            from .history.store import Store
            with Store.open(self.opts.output.store or None, create=False) as st:
                return st.seconds_per_iteration(case_ids, platform.node())
        except Exception:              # noqa: BLE001 -- an estimate never stops a run (the store was checked)
            return {}

    def _iterations(self, case: Case) -> int:
        return self.plan.iterations_of(case.test)

    def _precision(self, case: Case) -> float | None:
        if self.plan.smoke:                  # a smoke run stops at its count, whatever the runfile asks
            return None
        return self.plan.precision if self.plan.precision is not None else case.test.precision

    def _machine_check(self, *, strict: bool) -> "machine.Check | None":
        """The machine before the run: findings printed; with strict, a busy machine is refused
        (exit 2, nothing created)."""
        if self.opts.check == "off":
            return None
        c = machine.measure(machine.RUN_WINDOW_S)
        if strict and c.busy:
            raise InputError("the machine is busy (--check strict):\n  " + "\n  ".join(f.line() for f in c.findings),
                             field="--check")
        for f in c.findings:
            self.ui.say(f"machine: {f.line()}")
        return c

    def _machine_after(self, rd: ResultsDir) -> None:
        """The machine after the run (zfsperf's own processes stopped): recorded, and said if busier."""
        if self.before is None or not (rd.path / RUN_JSON).exists():
            return
        after = machine.measure(machine.RUN_WINDOW_S)
        self.busier = machine.busier(self.before.as_dict(), after)
        info = rd.run_record()
        info.machine = {"before": self.before.as_dict(), "after": after.as_dict(), "busier": self.busier}
        rd.write_run(info)

    @staticmethod
    def _store_pins(rd: ResultsDir, pins: dict[str, Any]) -> None:
        """The run's pins and loads into run.json after every module load, so that a run killed
        with -9 leaves them for --resume (run.json is written at the start, before any load)."""
        rec = rd.run_record()
        rec.implementations = pins
        rd.write_run(rec)

    def _open_twin(self, log: proc.CommandLog, rd: ResultsDir, vdev_dir: Path, journal: Journal) -> None:
        """Build turns: the twin guest as a second target with its own pools and module switch,
        and the pair that pauses one guest while the other has its turn (opentarget: the guest's)."""
        opts = self.opts
        twin = open_twin(opts.storage.target, log=log, say=self.ui.say)
        try:
            leftovers.on_the_target(twin, Path(opts.storage.vdev_dir), self.ui.say, cleanup=opts.cleanup,
                                    resume_owner=rd.path.name if opts.resume else None)
            switch = ModuleSwitch(twin, self.plan.builds, journal, log, where="twin",
                                  pin=self.switch.pin if self.switch is not None else None)
            switch.check()
        except BaseException:           # the twin's ssh connection closed with it (the run's finally knows no twin yet)
            twin.close()
            raise
        runner = CaseRunner(twin, PoolManager(twin, vdev_dir, run_id=rd.path.name), journal, rd, self.ui,
                            self.control, keep_failed=opts.output.keep_failed, verbose=opts.output.verbose,
                            switch=switch)
        runner.guest_name = "twin"
        self.cases.twin = runner
        self.cases.pair = turn_pair(opts.storage.target)

    def _resume_guests(self) -> None:
        """Build turns: neither guest left paused, however the run ended."""
        pair = self.cases.pair if self.cases is not None else None
        if pair is None:
            return
        try:
            for name in pair.resume_all():
                self.ui.say(f"the {name} was paused when the run ended: resumed")
        except ZfsperfError as e:
            self.ui.say(f"warning: resuming the guests: {e}")

    def _restore_build(self) -> None:
        """The machine's own OpenZFS build loaded again after a build A/B, however the run ended."""
        twin = self.cases.twin if self.cases is not None else None
        if twin is not None and twin.switch is not None:
            try:
                twin.switch.restore()
            except ZfsperfError as e:
                self.ui.say(f"warning: loading the twin guest's own OpenZFS build back: {e}")
        if self.switch is None:
            return
        try:
            self.switch.restore()
        except ZfsperfError as e:
            self.ui.say(f"warning: loading the own OpenZFS build back ({self.switch.where}): {e}")

    def _close_target(self, target: Target, rd: ResultsDir) -> None:
        lab = target.daemon()
        if lab is not None:
            text, _ = lab.syslog_since(0)
            with open(log_path(rd.path, "daemon.log"), "a") as f:
                f.write(text)
        try:
            target.close()
        except ZfsperfError as e:
            self.ui.say(f"warning: stopping the target: {e}")

    # ------------------------------------------------------------------ summary
    def _summarise(self, rd: ResultsDir, t_start: float, interrupted: bool,
                   stored: tuple[str, str | None] | None = None) -> int:
        """The summary on the terminal and in summary.txt, and the exit status: 0 all PASS, 1 a case
        did not PASS, 2 nothing ran, 3 interrupted, 4 every case passed but the run could not be
        added to its history store (so the regression gate would not see it)."""
        self.ui.stop_progress()
        records = rd.results()
        counts = {s: sum(1 for r in records if r.status == s) for s in STATUSES}
        tables = case_tables(records, SUMMARY_FIGURES)
        elapsed = time.time() - t_start
        lines = ["", "Results Summary"]
        lines += [f"{s}\t{counts[s]:4d}" for s in STATUSES if counts[s]]
        ran = len(records)
        pct = 100.0 * counts[Status.PASS] / ran if ran else 0.0
        from .units import format_duration
        lines += ["", f"Running Time:\t{format_duration(elapsed)}", f"Percent passed:\t{pct:.1f}%"]
        if interrupted:
            lines.append("Interrupted:\tyes (resume with --resume " + str(rd.path) + ")")
        if self.busier:
            lines.append(f"Machine:\t{self.busier}")
        for case in dict.fromkeys(r.case for r in records):   # iterations cut short measured less work
            short = cut_short([r for r in records if r.case == case])
            if short:
                lines.append(f"Cut short:\t{short}")
        if self.detected is not None:
            lines.append(detect_line(self.detected))
        history_failed = stored is not None and stored[1] is not None
        if self.plan.smoke:
            lines.append("Smoke:\ta check that the run works, not a measurement (--smoke): not added to history")
        if self.not_added is not None:
            lines.append(f"History:\tnot added: {self.not_added}")
        if stored is not None:
            lines.append(f"History:\tadded to {stored[0]}" if not history_failed else
                         f"History:\tNOT added to {stored[0]}: {stored[1]} -- this run is not in the history "
                         f"(add it later with `zfsperf history import {rd.path}`)")
        if self.opts.closing is not None and not interrupted:
            lines += self.opts.closing(rd.path)
        lines.append(f"Log directory:\t{rd.shown()}")
        text_table = "\n".join(self.ui.render_table(t) for t in tables)
        summary = "\n".join(status_line(r, HEADLINE.get(r.workload)) for r in records)
        rd.write_text(SUMMARY, summary + "\n\n" + text_table + "\n" + "\n".join(lines) + "\n")
        report = self._write_derived(rd)
        if report:
            lines.insert(-1, f"Report:\t\t{rd.shown(report)}")
        for t in tables:
            self.ui.print_table(t)
        for ln in lines:
            self.ui.summary_line(ln)
        if self.control.interrupt is not None and not interrupted:
            self.ui.summary_line(f"Interrupted:\t{self.control.signal_name()} came while the run "
                                 "was finishing; every case above had ended")
            return 3
        if interrupted:
            return 3
        if not ran:
            return 2
        if counts[Status.FAIL] or counts[Status.KILLED]:
            return 1
        return 4 if history_failed else 0

    def _check_places(self) -> None:
        """Every directory the run writes into is its own: none under a system directory, none that
        already holds another's files (safepaths.py). Read only: nothing is made here."""
        opts = self.opts
        if not opts.resume:
            safepaths.check_own_dir(opts.output.outdir, "--outdir", "the output directory", safepaths.results_entry)
        if not elsewhere(opts.storage.target) and not opts.storage.disks:    # the vdev directory is here
            safepaths.check_own_dir(opts.storage.vdev_dir, "--vdev-dir", "the vdev directory", safepaths.vdev_entry)
        else:
            safepaths.check_place(opts.storage.vdev_dir, "--vdev-dir", "the vdev directory")
        safepaths.check_place(journal_path().parent, "ZFSPERF_STATE", "the state directory")
        safepaths.check_place(cache_dir(), "ZFSPERF_CACHE", "the corpus cache")

    def _check_store(self) -> str | None:
        """The history store the run will be added to, opened, its schema checked or created and a
        write tried before anything else is touched: a store that cannot take the run is bad input
        (exit 2), not a warning after an hour of measuring. Returns its URL without secrets."""
        if self.opts.output.store is None:
            return None
        from .history.store import Store
        try:
            if self.opts.dry_run:                   # found out without making the store
                return Store.probe(self.opts.output.store or None)
            with Store.open(self.opts.output.store or None) as store:
                store.check_writable()
                return store.url
        except InputError:
            raise
        except Exception as e:  # noqa: BLE001 - whatever the driver says, said without secrets
            raise InputError(f"the history store cannot take this run: {redact(str(e))} (--no-history runs "
                             "without one)", field="--store") from None

    def _add_to_history(self, rd: ResultsDir) -> tuple[str, str | None] | None:
        """Every run goes into the history store as it ends: (the store, None) or (the store, why
        not) -- the summary says it and the exit status is 4."""
        if self.opts.output.store is None:
            return None
        from .history.store import Store, default_url, unfit
        from .report.model import load_run
        url = redact(self.opts.output.store or default_url())
        try:
            run = load_run(rd.path)
            self.not_added = unfit(run)
            if self.not_added is not None:
                return None
            with Store.open(self.opts.output.store or None) as store:
                store.add(run)
            return store.url, None
        except Exception as e:  # noqa: BLE001 - the results directory is what counts
            return url, redact(f"{type(e).__name__}: {e}")

    def _write_derived(self, rd: ResultsDir) -> Path | None:
        """junit.xml, results.csv and report.html (report/export/); a failure here never
        fails the run, and the first two are written from the records even then."""
        try:
            return export.write_results_dir(rd.path, html=self.opts.output.html).get("html")
        except Exception as e:  # noqa: BLE001
            self.ui.say(f"warning: could not write the derived files: {type(e).__name__}: {e}")
            records = rd.results()
            rd.write_text("junit.xml", junit.junit_xml(records))
            rd.write_text("results.csv", results_csv.results_csv(records))
            return None
