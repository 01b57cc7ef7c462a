"""One case iteration, from a fresh pool to its record: the case lifecycle.

Order (class Lifecycle, the same for a single case, a duet and a duet taking turns): [a build A/B:
the case's OpenZFS build loaded] -> tunables (journaled; before the pool, so that a pool-scope
tunable applies to it) -> fresh pool (+ dataset properties) -> sampler -> [gate: workload in
rounds until steady] -> workload -> stop its processes -> tunables restored -> pool destroyed. What a case raises becomes its outcome in one place (absorb), and its
status is decided once, by results.record.CaseOutcome.decide_status()."""

from __future__ import annotations

import resource
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any, Callable

from . import proc, steady
from .control import Control, Interrupted
from .errors import InputError, TargetError, Unavailable, ZfsperfError
from .metrics import counts, cpucost, crosscheck, iostat, taskq, txgtable, zil
from .metrics.profile import Profiler, add_folded, fold, named_share, write_folded
from .metrics.sampler import Sampler
from .tunables import Journal, applied_entry
from .tunables.scope import Scope
from .pool import Pool, PoolManager, PoolSpec
from .results.record import CaseOutcome, CaseRecord, Status, SteadyMode, SteadyRecord, as_figures
from .results.directory import ResultsDir, profile_path, series_path
from .runfile import Case, TestSpec
from .targets.base import Daemon, Target, TurnPair
from .ui import Console
from .units import parse_duration
from .workloads import WORKLOADS
from .workloads.base import CaseContext, CaseTimeout, WorkloadFailed, figure

if TYPE_CHECKING:
    from .tunables.modswitch import ModuleSwitch


def dead_daemon(target: Target) -> Daemon | None:
    """zfs-fuse's daemon, when it died (None: alive, or a kernel OpenZFS, which has none to die)."""
    daemon = target.daemon() if target.capabilities().daemon_recovery else None
    return daemon if daemon is not None and not daemon.daemon_alive() else None


def judge_steady(samples: list[dict[str, Any]], spec: steady.SteadySpec, wl: Any, ctx: CaseContext,
                 figures: dict[str, Any]) -> SteadyRecord:
    """A recorded case's verdict at its workload's time scale (steady/timescale.py): the series in
    bins of whole cycles, decided, and the time scale said in the record."""
    cycle, what = wl.cycle(ctx, figures)
    width = steady.timescale.span(spec.interval, cycle)
    raw, judged = steady.timescale.judged(steady.decision_samples(samples), wl.series_headline, spec.interval, width)
    out = steady.summary(steady.decide(judged, spec.criteria, headline=wl.series_headline), judged, spec)
    out.timescale = {"span_s": round(width, 3), "cycle": what, "raw_samples": len(raw),
                     "samples": len(judged)}
    return out


def series_part(sampler: Sampler, span: tuple[float, float] | None) -> list[dict[str, Any]]:
    """The sampled series, or the part of it between span's two time.monotonic() times."""
    samples = sampler.snapshot()
    if span is None:
        return samples
    base = time.monotonic() - sampler.elapsed()          # the sampler's t = 0
    return [x for x in samples if span[0] - base <= x.get("t", 0.0) <= span[1] - base]


def absorb(outcome: CaseOutcome, e: BaseException, timeout: float, log: proc.CommandLog) -> None:
    """The one mapping from what a case raised to its outcome, for single, duet and turns cases
    alike (a duet side's exception from its thread included). The first reason a case got is kept."""
    if outcome.killed or outcome.skipped or outcome.failure:
        return
    if isinstance(e, CaseTimeout):
        outcome.killed = f"timeout of {timeout:g} s: {e}"
        log.write(f"# {e}")                 # also when a signal overtakes it (no record is kept then)
    elif isinstance(e, Unavailable):
        outcome.skipped = str(e)
    elif isinstance(e, (WorkloadFailed, TargetError, InputError, OSError)):
        outcome.failure = str(e)
    elif isinstance(e, Interrupted):
        pass                                # decided by the lifecycle's close, like any status a signal overtook
    else:                                   # a bug in zfsperf: FAIL with the traceback in the log
        log.write("".join(traceback.format_exception(e)))
        outcome.failure = f"internal error: {type(e).__name__}: {e}"


class Lifecycle:
    """One iteration's resources on the target, taken in order and given back in reverse, the same
    for a single case, a duet and cases taking turns:

        enter:  [the case's build loaded] -> tunables (journaled, their scope checked first) -> a
                fresh pool -> its processes watched by the signal handler -> the sampler
                -> [measuring: --profile's perf record] -> profiles(): each side's folded stacks
        close:  sampler stopped -> [a profiler still running discarded] -> processes stopped -> [a signal: teardown, Interrupted]
                -> tunables restored -> a dead zfs-fuse restarted -> the pool destroyed (-k keeps a
                failed case's)

    close() decides each outcome's daemon and teardown parts; a signal that came in is raised from
    it as Interrupted after the teardown."""

    def __init__(self, runner: "CaseRunner", test: TestSpec, it: int, log: proc.CommandLog,
                 tunables: dict[str, Any], build: Any = None, procs: proc.ProcessSet | None = None,
                 spec: PoolSpec | None = None) -> None:
        self.runner, self.test, self.it, self.log = runner, test, it, log
        self.spec = spec if spec is not None else test.pool      # the case's pool (its swept pool keys)
        self.target = runner.target
        self.tunables, self.build = tunables, build
        self.session = self.target.tunable_session(runner.journal, log) if tunables else None
        # every process of the iteration: a signal stops them all (build turns: one set for both guests)
        self.procs = procs if procs is not None else proc.ProcessSet()
        self.pool: Pool | None = None
        self.sampler: Sampler | None = None
        self.txg0: int | None = None        # the pool's newest txg when the counted workload started
        self.t_measure = 0.0                 # the sampler's clock then
        self.zil0: dict[str, dict[str, float]] | None = None     # the pool's ZIL counters then
        self.zil1: dict[str, dict[str, float]] | None = None     # and once the workload ended
        self.io0: dict[str, int] | None = None     # the pool's I/Os per request class then (-r)
        self.arc0: float | None = None             # the ARC's misses then
        self.profiler: Profiler | None = None     # --profile: perf record over the counted workload
        self.cpu0: cpucost.Reading | None = None  # the CPU readings when the counted workload started
        self.cpu1: cpucost.Reading | None = None  # and when it ended (work_done), else when cpu_cost asks

    def enter(self, fs_properties: dict[str, str] | None = None, *, case: str = "",
              between_rounds: bool = False) -> tuple[Pool, dict[str, Any] | None]:
        """The case's build, its tunables, then its fresh pool: a tunable of pool scope is written
        before the pool exists, so that the pool uses it. between_rounds: the tunables will be
        written between rounds (turns), so each must take effect at run time. Returns the pool and
        what apply() did to each tunable (None without tunables)."""
        switch = self.runner.switch
        at_load = self._load_scope(between_rounds)
        if self.build is not None and switch is None:
            raise InputError(f"case {case} names a build, and this target has no builds to load", field="build")
        if switch is not None:
            switch.load(self.build, at_load)
            if switch.loaded:                 # which build each side ran, by srcversion
                self.log.write(f"# module: {switch.loaded}")
        rest = {k: v for k, v in self.tunables.items() if k not in at_load}
        applied = (self.session.apply(rest, between_rounds=between_rounds)
                   if self.session is not None else None)
        if at_load:
            assert switch is not None
            applied = (applied or {}) | {k: applied_entry(switch.original[k], v, Scope.LOAD) for k, v in at_load.items()}
        self.pool = self.runner.pools.create(self.spec, fs_properties=fs_properties)
        return self.pool, applied

    def _load_scope(self, between_rounds: bool) -> dict[str, str]:
        """The case's tunables that the module reads only when it loads (their scope on the live
        target), which the module switch sets by loading the module again. Without a switch (a
        target whose module zfsperf may not reload) or in turns, none: the session refuses them."""
        if self.session is None or self.runner.switch is None or between_rounds:
            return {}
        return {k: v for k, v in self.tunables.items() if self.session.scope(k)[0] is Scope.LOAD}

    def turn(self, values: dict[str, str]) -> Callable[[], dict[str, str]]:
        """For turns over a module tunable: what runs before each of one side's rounds (its values
        written through the case's journaled session, read back, and logged)."""
        session, log = self.session, self.log
        assert session is not None

        def write() -> dict[str, str]:
            now = session.switch(values)
            log.write("# turn: " + ", ".join(f"{n} = {v}" for n, v in now.items()))
            return now
        return write

    def measuring(self, slug: str = "") -> None:
        """The counted workload starts now: the txgs committed from here are the case's (kernel
        OpenZFS; a target without the txgs kstat has none), and with --profile the profiler starts
        (counted iterations only)."""
        if self.runner.profile and self.it > 0:
            data = profile_path(self.runner.rd.path, slug, self.it).with_suffix(".perf.data")
            self.profiler = Profiler(self.target, data, self.log)
            self.profiler.start(self.procs)
        if self.pool is not None and self.target.capabilities().txgs:
            try:
                self.txg0 = self.target.txg(self.pool.name)
            except (ZfsperfError, OSError) as e:      # context: never the case's failure
                self.log.write(f"# the txgs kstat could not be read at the start: {e}")
        if self.pool is not None:
            self.zil0, self.zil1 = self._zil_counters(), None
            self.io0, self.arc0 = self._io_counts(), self._arc_misses()
        self.cpu0, self.cpu1 = self.cpu_reading(), None
        if self.sampler is not None:
            self.t_measure = self.sampler.elapsed()

    def cpu_reading(self) -> cpucost.Reading | None:
        """The machine's busy CPU, zfsperf's own on it and ZFS's threads' (metrics/cpucost.py);
        None where the machine's cannot be read."""
        try:
            busy = self.target.busy_cpu_seconds()
            zfs = self.target.zfs_cpu() or {}
        except (ZfsperfError, OSError) as e:           # context: never the case's failure
            self.log.write(f"# the CPU times could not be read: {e}")
            return None
        if busy is None:
            return None
        own = 0.0
        if not self.target.remote:                     # zfsperf runs on the target's machine
            use = resource.getrusage(resource.RUSAGE_SELF)
            own = use.ru_utime + use.ru_stime
            iostat = self.sampler.iostat if self.sampler is not None else None
            own += (iostat.cpu_seconds() or 0.0) if iostat is not None else 0.0
        return cpucost.Reading(busy, own, zfs)

    def work_done(self) -> None:
        """The workload's counted work ended now: the CPU readings' end (only the first call counts)."""
        if self.cpu0 is not None and self.cpu1 is None:
            self.cpu1 = self.cpu_reading()

    def cpu_cost(self, work: dict[str, float] | None) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """A case alone on the machine's time: its CPU figures per GiB and per thousand operations
        of `work` (the workload's bytes and ops) and how they were taken, or None."""
        if self.cpu0 is None or not work:
            return None
        end = self.cpu1 or self.cpu_reading()
        if end is None:
            return None
        figs, how = cpucost.cost(self.cpu0, end, float(work.get("bytes") or 0), float(work.get("ops") or 0))
        return {k: figure(v, unit) for k, (v, unit) in figs.items()}, how

    def context(self, shared: bool = False) -> dict[str, Any]:
        """What the target tells of the counted workload besides its figures, for the record: the
        per-txg table and the I/O taskqs' queues (shared: one pool's, for both sides of a duet)."""
        out: dict[str, Any] = {"txgs": self.txg_table() | ({"shared": True} if shared else {})}
        if self.sampler is not None:
            tq = taskq.summary([x for x in self.sampler.snapshot() if x.get("t", 0) >= self.t_measure])
            if tq is not None:
                out["taskqs"] = tq | ({"shared": True} if shared else {})
        return out

    def vdev_counts(self, counts_: dict[str, float] | None, *, pool_wide: bool = False, alone: bool = True) -> None:
        """Add to a case's exact counts (a pool of its own) what ZFS did for its workload
        (metrics/counts.py), read after a `zpool sync` where the target has one: the bytes the
        pool wrote to its vdevs per byte written (the txgs kstat), the I/Os issued per request
        class per MiB written or read (`zpool iostat -Hp -r`), and, alone on the machine's time (the
        ARC is the machine's), the ARC's misses per MiB read; with pool_wide (a workload whose data
        stays to the case's end) the pool's dedup ratio and block cloning's savings then
        (Target.pool_sharing). Nothing where the workload neither wrote nor read."""
        wrote = (counts_ or {}).get("logical_bytes") or 0.0
        read = (counts_ or {}).get("read_bytes") or 0.0
        if counts_ is None or self.pool is None or not (wrote or read):
            return
        txgs = self.txg0 is not None and self.target.capabilities().txgs
        try:
            if txgs:
                self.target.run(["zpool", "sync", self.pool.name], log=self.log, timeout=300)
            rows = self.target.txgs(self.pool.name) if txgs and wrote else None
        except (ZfsperfError, OSError) as e:           # context: never the case's failure
            self.log.write(f"# the txgs kstat could not be read for the exact counts: {e}")
            return
        if rows is not None and self.txg0 is not None:
            counts_.update(counts.of_txgs(rows, self.txg0, wrote) or {})
        io1 = self._io_counts() if self.io0 is not None else None
        if self.io0 is not None and io1 is not None:
            counts_.update(counts.of_ios(self.io0, io1, wrote, read))
        arc1 = self._arc_misses() if alone and self.arc0 is not None else None
        if self.arc0 is not None and arc1 is not None:
            counts_.update(counts.of_arc(self.arc0, arc1, read))
        if pool_wide and wrote and txgs:           # synced: zfs-fuse's dedup statistics lag until a txg commits
            try:
                reading = self.target.pool_sharing(self.pool.name)
            except (ZfsperfError, OSError) as e:       # context: never the case's failure
                self.log.write(f"# the pool's dedup and cloning counters could not be read: {e}")
                return
            if reading is not None:
                counts_.update(counts.of_sharing(reading, wrote))

    def _io_counts(self) -> dict[str, int] | None:
        """The pool's I/Os per request class since its import (`zpool iostat -Hp -r`), or None
        where the target prints no such table."""
        forms = self.target.capabilities().iostat_forms
        if self.pool is None or "-r" not in forms or "-Hp" not in forms:
            return None
        try:
            return iostat.parse_hp_request_counts(self.target.request_sizes(self.pool.name, self.log),
                                                  self.pool.name)
        except (ZfsperfError, OSError) as e:           # context: never the case's failure
            self.log.write(f"# the pool's I/Os per request class could not be read: {e}")
            return None

    def _arc_misses(self) -> float | None:
        """The ARC's misses so far (arcstats), or None where the target has no arcstats."""
        try:
            got = self.target.kstat_fields("arcstats", ["misses"])
        except (ZfsperfError, OSError) as e:           # context: never the case's failure
            self.log.write(f"# the ARC's misses could not be read: {e}")
            return None
        return (got or {}).get("misses")

    def zil_growth(self, root: str) -> dict[str, Any] | None:
        """The ZIL counters' growth since measuring() of the datasets at and under root (a side's
        own, on a pool that two sides share), or None where the target publishes none."""
        if self.zil0 is None:
            return None
        if self.zil1 is None:
            self.zil1 = self._zil_counters()
        return zil.delta(self.zil0, self.zil1, root)

    def _zil_counters(self) -> dict[str, dict[str, float]] | None:
        assert self.pool is not None
        try:
            return self.target.zil_counters(self.pool.name)
        except (ZfsperfError, OSError) as e:        # context: never the case's failure
            self.log.write(f"# the ZIL counters could not be read: {e}")
            return None

    def profiles(self, sides: dict[str, list[tuple[float, float]] | None], *,
                 shared: bool = False) -> dict[str, dict[str, Any]]:
        """Stop the profiler and keep each side's folded stacks (slug -> the samples inside its
        spans; None: every sample). shared: the sides ran at the same time (a duet), so one profile
        of every sample, kept under the first side's name and marked shared in each record. What
        goes in each side's record under "profile" (a profiler that failed: why, never the case's
        failure)."""
        pr = self.profiler
        if pr is None:
            return {}
        self.profiler = None
        samples = pr.stop()
        how = pr.describe()
        if pr.error is not None:
            self.log.write(f"# profile: {pr.error}")
            return {slug: {"unavailable": pr.error} | how for slug in sides}
        if shared:
            first = next(iter(sides))
            one = self._keep(first, fold(samples), how)
            return {slug: one | {"shared": True} for slug in sides}
        out = {}
        for slug, spans in sides.items():
            out[slug] = self._keep(slug, fold(samples, spans), how)
            if spans is not None:
                out[slug]["rounds"] = len(spans)
        return out

    def _keep(self, slug: str, folded: Any, how: dict[str, Any]) -> dict[str, Any]:
        """One side's folded stacks written (the iteration's file, added into the case's)."""
        rd = self.runner.rd
        path = profile_path(rd.path, slug, self.it)
        write_folded(path, folded)
        add_folded(profile_path(rd.path, slug), folded)
        return how | {"folded": str(path.relative_to(rd.path)), "samples": sum(folded.values()),
                      "named": round(named_share(folded), 3)}

    def txg_table(self) -> dict[str, Any]:
        """The per-txg table of the txgs committed since measuring() (metrics/txgtable.py)."""
        if self.pool is None or not self.target.capabilities().txgs:
            return txgtable.table(None, None)
        try:
            rows = self.target.txgs(self.pool.name)
        except (ZfsperfError, OSError):                # context: never the case's failure
            rows = None
        if rows is None:
            return {"unavailable": f"the txgs kstat of {self.pool.name} could not be read"}
        return txgtable.table(rows, self.txg0)

    def watch(self) -> None:
        """From here a signal stops this iteration's processes."""
        self.runner.control.active = self.procs
        self.runner.control.check()

    def sample(self, slug: str, progress: Any) -> Sampler | None:
        """The sampler over the pool (None when the test does not sample: steady = off)."""
        t = self.test
        if t.steady.mode == SteadyMode.OFF or self.pool is None:
            return None
        self.sampler = Sampler(self.target, self.pool.name, series_path(self.runner.rd.path, slug, self.it),
                               interval=t.steady.interval, progress=progress, l2_capacity=self.pool.l2_capacity)
        self.sampler.start()
        return self.sampler

    def close(self, outcomes: list[CaseOutcome]) -> None:
        control, log = self.runner.control, self.log
        if self.sampler is not None:
            self.sampler.stop()             # idempotent; a failed case still keeps its series
        if self.profiler is not None:       # the workload failed: its profile is no result
            self.profiler.discard()
        stopped = self.procs.stop_all()
        if stopped:
            log.write(f"# stopped processes by pid: {stopped}")
        if control.interrupt is not None:   # whatever the case got to, it is not a result
            log.write(f"# interrupted by {control.signal_name()}: case abandoned")
            self._teardown(failed=True)
            control.active = None
            control.check()
        died = dead_daemon(self.target) is not None     # before the teardown restarts it
        for o in outcomes:
            o.daemon_died = died
        failed = any(o.decide_status()[0] is not Status.PASS for o in outcomes)
        err = self._teardown(failed=failed)
        for o in outcomes:              # build turns close two lifecycles: both teardowns' errors kept
            o.teardown_error = "; ".join(e for e in (o.teardown_error, err) if e) or None
        control.active = None

    def _teardown(self, *, failed: bool) -> str | None:
        errors = []
        log, pools = self.log, self.runner.pools
        if self.session is not None:
            try:
                self.session.restore()
            except ZfsperfError as e:
                errors.append(str(e))
        daemon = dead_daemon(self.target)
        if daemon is not None:
            try:
                daemon.recover()
                log.write("# zfs-fuse daemon restarted after it died")
            except ZfsperfError as e:
                errors.append(f"could not restart zfs-fuse: {e}")
        if self.pool is not None:
            if failed and self.runner.keep_failed:
                log.write(f"# -k: keeping pool {self.pool.name} and its vdev files")
            else:
                try:
                    pools.destroy(self.pool)
                except ZfsperfError as e:
                    errors.append(str(e))
        return "; ".join(errors) or None


def turns_cpu_cost(turns: list[tuple[cpucost.Reading, cpucost.Reading]], work: dict[str, float] | None
                   ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """A side's CPU figures over its own counted turns (workloads/turns.py read them), or None."""
    if not turns or not work:
        return None
    figs, how = cpucost.cost(*cpucost.over_turns(turns), float(work.get("bytes") or 0), float(work.get("ops") or 0))
    return {k: figure(v, unit) for k, (v, unit) in figs.items()}, how | {"turns": len(turns)}


class Sides:
    """How the sides of one iteration share the machine, chosen once per case (sides.choose, the
    way hyperfine picks its executor once): the body (CaseRunner.iterate) asks it for the
    lifecycles, the places and contexts, the measuring, and the little that differs after it; it
    never asks which kind it is. The kinds: sides.Alone (a single case), sides.Together (a duet:
    both at once on one pool), sides.Turns (a duet taking turns on one pool: a dataset property or
    a module tunable), sides.GuestTurns (two builds, one guest each, taking turns)."""

    cases: tuple[Case, ...]     # the record order: A, then B
    sampled = True              # a sampler over the pool (a paused guest is not sampled)
    one_pool = False            # every side on one pool: its txgs and queues are all sides' at once
    at_once = False             # the sides ran at the same time: one profile of every sample

    def lives(self, runner: "CaseRunner", it: int, log: proc.CommandLog) -> dict[str, Lifecycle]:
        """Each side's lifecycle, by case id (a lifecycle may hold more than one side)."""
        raise NotImplementedError

    def place(self, runner: "CaseRunner", lives: dict[str, Lifecycle], records: dict[str, CaseRecord], wl: Any,
              it: int, log: proc.CommandLog, prepared: Any) -> dict[str, CaseContext]:
        """The lifecycles entered (builds, tunables, pools), each side's dataset and its context;
        the pool and tunables facts in each record."""
        raise NotImplementedError

    def progress(self, ctxs: dict[str, CaseContext]) -> Callable[[], dict[str, float] | None]:
        """What the sampler reads as the workload's own progress (every side's, added up)."""
        def every() -> dict[str, float] | None:
            parts = [p for p in (x.current_progress() for x in ctxs.values()) if p]
            return {k: sum(p.get(k, 0.0) for p in parts) for k in parts[0]} if parts else None
        return every

    def measure(self, wl: Any, ctxs: dict[str, CaseContext], it: int) -> dict[str, Any]:
        """The counted workload: each side's figures, or what it raised (by case id)."""
        raise NotImplementedError

    def spans(self, ctx: CaseContext) -> list[tuple[float, float]] | None:
        """The times a side ran, for its share of the profile (None: all of it)."""
        return ctx.spans

    def label(self, ctxs: dict[str, CaseContext], lives: dict[str, Lifecycle]) -> None:
        """What only this kind of side records beside its figures."""


class CaseRunner:
    """Runs case iterations on one target and pool manager into one results directory."""

    def __init__(self, target: Target, pools: PoolManager, journal: Journal, rd: ResultsDir, ui: Console,
                 control: Control, *, keep_failed: bool = False, verbose: bool = False,
                 switch: ModuleSwitch | None = None, profile: bool = False) -> None:
        self.target, self.pools, self.journal, self.rd = target, pools, journal, rd
        self.ui, self.control = ui, control
        self.keep_failed, self.verbose = keep_failed, verbose
        self.profile = profile            # --profile: on-CPU stacks of each counted iteration
        self.switch = switch              # a build A/B: loads each case's build before its pool
        # build turns (guest ab --turns): the twin guest's runner, and the pair that pauses one guest
        # while the other has its turn
        self.twin: CaseRunner | None = None
        self.guest_name = "guest"         # which guest this runner's target is (build turns' records)
        self.pair: TurnPair | None = None

    def hosts(self, it: int) -> tuple["CaseRunner", "CaseRunner"]:
        """Build turns: the runners of the guests that hold side A and side B in iteration `it`,
        crosswise in ABBA order over the iterations (A in the first guest in iterations 1, 4, 5,
        8, ...; guest/pair.py): each aligned two iterations hold both arrangements, and the guests
        change builds every other iteration, not every one (a change is a module swap in each)."""
        assert self.twin is not None
        return (self, self.twin) if (it // 2) % 2 == 0 else (self.twin, self)

    def _record(self, case: Case, it: int) -> CaseRecord:
        return CaseRecord(test=case.test.name, case=case.id, sweep=case.sweep, iteration=it,
                          workload=case.test.workload, start=time.time(),
                          accelerator=self.target.accelerator)     # "tcg": emulation

    def _lacking(self, *cases: Case) -> str | None:
        """Why the cases cannot run here (SKIP): a tunable they set that the target does not have."""
        missing = sorted({n for c in cases for n in c.tunables if not self.target.has_tunable(n)})
        return f"{self.target.impl} has no tunable {', '.join(missing)}" if missing else None

    def iterate(self, sides: "Sides", it: int, prepared: Any, prep_error: str | None) -> list[CaseRecord]:
        """One iteration (it < 0: a warm-up) of a case's sides, from fresh pools to a record per side,
        the same for every design: how the sides share the machine (alone, together on one pool,
        taking turns, two guests) is the strategy's (sides.py), chosen once per case; what every
        side gets -- FAIL/SKIP, pool facts, contexts, sampler, measuring, profiles, cross-checks,
        sampler cost, steady verdict, figures -- is here, once."""
        cases = sides.cases
        lead, t = cases[0], cases[0].test
        log = self.rd.case_log(lead.slug, it)
        self.target.log = log
        records = {c.id: self._record(c, it) for c in cases}
        outcomes = {c.id: CaseOutcome() for c in cases}
        t0 = time.monotonic()
        self.ui.case_start(" + ".join(c.id for c in cases), it)

        def finish() -> list[CaseRecord]:
            for cid, rec in records.items():
                rec.status, rec.error = outcomes[cid].decide_status()
                rec.duration = round(time.monotonic() - t0, 3)
            return [records[c.id] for c in cases]

        if prep_error:
            for o in outcomes.values():
                o.failure = prep_error
            return finish()
        lacking = self._lacking(*cases)
        if lacking:                              # a tunable this target does not have: SKIP
            for o in outcomes.values():
                o.skipped = lacking
            return finish()
        lives = sides.lives(self, it, log)
        life = lives[lead.id]                    # the lifecycle of the process set and the sampler
        own = list({id(x): x for x in lives.values()}.values())     # each lifecycle once
        try:
            wl = WORKLOADS[t.workload]
            ctxs = sides.place(self, lives, records, wl, it, log, prepared)
            life.watch()
            sampler = life.sample(lead.slug, sides.progress(ctxs)) if sides.sampled else None
            if sampler is not None:
                for rec in records.values():
                    rec.series = str(sampler.path.relative_to(self.rd.path))
            self.control.check()
            if sampler is not None and t.steady.mode == SteadyMode.GATE:     # the runfile: alone only
                records[lead.id].steady = self._precondition(ctxs[lead.id], wl, sampler, t.steady,
                                                             wl.active_bytes(lead.fields, prepared))
            arc0 = self._arcstats() if sampler is not None else None
            t_measure = sampler.elapsed() if sampler is not None else 0.0
            for x in own:
                x.measuring(lead.slug)
            if len(cases) == 1:                  # alone: the CPU's end when its work ends (cpu_cost)
                ctxs[lead.id].work_done = life.work_done
            elif not sides.at_once:              # turns: each side's CPU read around its own turns
                for c in cases:
                    if not lives[c.id].target.remote:     # over ssh a reading is a round trip each turn
                        ctxs[c.id].cpu_read = lives[c.id].cpu_reading
            results = sides.measure(wl, ctxs, it)
            self.control.check()                  # a workload whose processes a signal stopped is no result
            work = {c.id: ctxs[c.id].extra.pop("work", None) for c in cases}     # the CPU figures' denominators
            for c in cases:                      # alone: the machine's time is its; in turns: its turns'
                spent = (life.cpu_cost(work[lead.id]) if len(cases) == 1
                         else turns_cpu_cost(ctxs[c.id].cpu_turns, work[c.id]))
                if spent is not None and isinstance(results.get(c.id), dict):
                    results[c.id].update(spent[0])
                    ctxs[c.id].extra["cpu"] = spent[1]
            seen = {id(x): x.context(shared=sides.one_pool) for x in own}
            for c in cases:
                ctxs[c.id].extra.update(seen[id(lives[c.id])])
                if not sides.one_pool:                 # a side alone on its pool: what it wrote to the vdevs
                    lives[c.id].vdev_counts(ctxs[c.id].extra.get("counts"), pool_wide=wl.pool_counts_at_end,
                                            alone=len(cases) == 1)
                else:                                  # the pool-wide counts would be both sides'
                    counts.drop_pool_wide(ctxs[c.id].extra.get("counts"))
                z = lives[c.id].zil_growth(ctxs[c.id].pool.root)      # each side's datasets' own
                if z is not None:
                    ctxs[c.id].extra["zil"] = z
            profs = life.profiles({c.slug: sides.spans(ctxs[c.id]) for c in cases}, shared=sides.at_once)
            for c in cases:
                if c.slug in profs:
                    ctxs[c.id].extra["profile"] = profs[c.slug]
            # each side's own cross-checks (its workload's), then the sampled ones: the ARC hit ratio
            # (one ARC for every side); the pool's bandwidth and ops only for a side alone on its pool
            checks = {c.id: list(ctxs[c.id].cross_checks) for c in cases}
            if sampler is not None:
                window = [x for x in sampler.snapshot() if x.get("t", 0) >= t_measure]
                arc = crosscheck.arc_hit_ratio(window, arc0, self._arcstats())
                for c in cases:
                    checks[c.id].append(arc)
                if not sides.one_pool:
                    for c in cases:
                        checks[c.id] += self._pool_checks(window, wl, ctxs[c.id], results.get(c.id))
            for c in cases:
                self._keep_checks(records[c.id], checks[c.id], c.id)
            if sampler is not None:
                sampler.mark("workload end")
                sampler.stop()
                overhead = self._sampler_cost(sampler, " + ".join(c.id for c in cases),
                                              "case" if len(cases) == 1 else "iteration")
                figs = {k: v for c in cases if isinstance(results.get(c.id), dict) for k, v in results[c.id].items()}
                verdict = (judge_steady(series_part(sampler, ctxs[lead.id].series_span), t.steady, wl,
                                        ctxs[lead.id], figs)
                           if t.steady.mode == SteadyMode.RECORD else None)
                if verdict is not None and ctxs[lead.id].series_span is not None and verdict.timescale is not None:
                    verdict.timescale["part"] = "the unthrottled step (a latency search: its later steps run slower)"
                for rec in records.values():
                    rec.sampler = dict(overhead)
                    if verdict is not None:
                        rec.steady = verdict
            sides.label(ctxs, lives)
            for c in cases:
                self._side_result(results.get(c.id), outcomes[c.id], records[c.id], ctxs[c.id], t, log)
        except Exception as e:  # noqa: BLE001 - every exception becomes each side's outcome, in one place
            for o in outcomes.values():
                absorb(o, e, t.timeout, log)
        try:                                      # build turns: the twin's lifecycle closed first
            for x in own[1:]:
                x.close(list(outcomes.values()))
        finally:
            life.close(list(outcomes.values()))
        return finish()

    def _pool_checks(self, window: list[dict[str, Any]], wl: Any, ctx: CaseContext, figures: Any) -> list[Any]:
        """A side alone on its pool: its bandwidth (and fio's IOPS) against the pool's, sampled."""
        if not isinstance(figures, dict) or not wl.bandwidth_figure:
            return []
        bw = (figures.get(wl.bandwidth_figure) or {}).get("value")
        if not bw:
            return []
        props = self._dataset_properties(ctx)
        seconds = ctx.measure_seconds or parse_duration(ctx.fields.get("runtime", 10))
        between = crosscheck.bandwidth_obstacles(wl.name, ctx.fields, props, seconds)
        out = [crosscheck.pool_bandwidth(window, wl.bandwidth_figure, bw, between)]
        iops = (figures.get("iops") or {}).get("value") if wl.name == "fio" else None
        if iops:
            out.append(crosscheck.pool_ops(window, "iops", iops, between or crosscheck.ops_obstacles(ctx.fields, props)))
        return out

    def _keep_checks(self, record: CaseRecord, checks: list[Any], label: str) -> None:
        """A record's cross-checks (the ones that could be taken), each disagreement warned about."""
        record.cross_checks = [c for c in checks if c is not None]
        for c in record.cross_checks:
            if c.agrees is False:
                self.ui.say(f"warning: {label}: cross-check disagrees: {c.describe()}")

    def _sampler_cost(self, sampler: Sampler, label: str, what: str) -> dict[str, Any]:
        """The sampler's cost per sample, and the sources no sample could read -- said out loud: a
        null source must not pass for a quiet one."""
        cost = sampler.overhead()
        dead = sampler.unreadable()
        if dead:
            cost["unreadable"] = dead
            self.ui.say(f"warning: {label}: {', '.join(dead)} could not be read in any sample of this {what} "
                        f"(see {sampler.path.relative_to(self.rd.path)})")
        return cost

    @staticmethod
    def _side_result(res: Any, o: CaseOutcome, record: CaseRecord, ctx: CaseContext, t: TestSpec,
                     log: proc.CommandLog) -> None:
        """One side of a duet: what its workload raised or returned, into its outcome and record."""
        if isinstance(res, BaseException):
            absorb(o, res, t.timeout, log)
        elif res is not None:
            record.figures = as_figures(res)
            record.add_detail(ctx.extra | ctx.side_detail())
            o.figures = res
            o.unmet = [m for m in (e.check(res) for e in t.expect) if m]

    def _precondition(self, ctx: CaseContext, wl: Any, sampler: Sampler, spec: steady.SteadySpec,
                      active: int | None) -> SteadyRecord:
        """Run the workload in rounds until the sampled series is steady or spec.timeout passes
        (recorded as "not steady after N s", never hidden); the caller then measures once."""
        ctx.phase, ctx.stop = "precondition", threading.Event()
        errors: list[BaseException] = []
        rounds = 0

        def loop() -> None:
            nonlocal rounds
            try:
                while not ctx.stopping():
                    rounds += 1                    # rounds started (a time-based one is cut short)
                    wl.run(ctx)
                    ctx.round += 1
            except BaseException as e:  # noqa: BLE001 - handed to the runner's thread below
                if not ctx.stopping():
                    errors.append(e)

        worker = threading.Thread(target=loop, name="precondition", daemon=True)
        gate_until = time.monotonic() + min(spec.timeout, max(0.0, ctx.remaining() - 1))
        worker.start()
        verdict = None
        try:
            while self.control.interrupt is None:
                if errors:
                    raise errors[0]
                samples = sampler.snapshot()
                verdict = steady.decide(samples, spec.criteria, headline=wl.series_headline,
                                        active_bytes=active if spec.cache_gate else None)
                if verdict.steady or time.monotonic() >= gate_until:
                    sampler.mark("decided", samples=verdict.samples)
                    break
                if self.ui.is_tty:
                    self.ui.live(f"preconditioning: {len(samples)} samples, round {rounds}, "
                                 f"{sampler.elapsed():.0f} s")
                time.sleep(min(0.5, spec.interval / 2))
        finally:
            ctx.stop.set()
        worker.join(max(0.1, ctx.remaining()))
        self.control.check()
        if worker.is_alive():
            raise ctx.overdue("a precondition round")
        if errors:
            raise errors[0]
        samples = sampler.snapshot()
        out = steady.summary(verdict, samples, spec)
        out.rounds = rounds
        out.measure_start = round(sampler.elapsed(), 3)
        ctx.phase, ctx.stop, ctx.round = "measure", None, ctx.round + 1
        ctx.measure_seconds = spec.measure
        ctx.log.write(f"# steady state: {'steady' if verdict.steady else out.note} after {rounds} rounds; "
                      f"measuring from t={out.measure_start} s")
        return out

    def _dataset_properties(self, ctx: CaseContext) -> dict[str, str]:
        """compression and primarycache of the case's dataset as ZFS reports them (inherited ones
        included): what decides whether a cross-check against the pool can be judged."""
        res = self.target.run(["zfs", "get", "-H", "-o", "property,value", "compression,primarycache",
                               ctx.pool.root])
        return dict(ln.split("\t", 1) for ln in res.stdout.splitlines() if "\t" in ln) if res.ok else {}

    def _arcstats(self) -> dict[str, float] | None:
        """The ARC's raw counters now (the cross-check's start and end), or None where unreadable."""
        try:
            return self.target.kstat_fields("arcstats", ("hits", "iohits", "misses"))
        except (OSError, TargetError):
            return None
