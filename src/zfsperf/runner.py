"""Executes a plan of cases: statuses, timeouts, iterations, tunables, resume, signals.

Order per case and iteration: fresh pool (+ dataset properties) -> tunables (journaled) ->
workload -> stop its processes -> tunables restored -> pool destroyed -> result appended.
The runner owns that order; workloads, targets and the store are plain components it calls.
"""

from __future__ import annotations

import os
import platform
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import __version__, proc, steady
from .metrics.sampler import Sampler, series_path
from .errors import InputError, TargetError, Unavailable, ZfsperfError
from .pool import (PoolManager, VdevDir, check_disks, destroy_busy, keep_list, leftover_pools,
                   leftover_vdev_dirs)
from .results import export
from .results.stats import summarise
from .results.store import ResultsDir
from .report.quantize import render_histograms
from .results.tables import case_table
from .runfile import Case, Runfile, load, loads
from .target import open_target
from .target.base import Target
from .tunables import Journal, TunableSession, replay
from .ui import Console
from .workloads import WORKLOADS
from .workloads.base import CaseContext, CaseTimeout, WorkloadFailed

HEADLINE = {name: wl.headline for name, wl in WORKLOADS.items()}     # the workloads say which figure


class Interrupted(Exception):
    """Raised by the runner itself, at a safe point, once a SIGINT/SIGTERM has been recorded
    (never from the signal handler: an exception from a handler can land anywhere)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class RunOptions:
    runfile: str = "quick"
    tags: list[str] | None = None
    test: str | None = None
    iterations: int | None = None
    vdev_dir: str = "/var/tmp/zfsperf"
    vdev_size: int | None = None
    prefill: bool = False
    outdir: str = "zfsperf-results"
    keep_failed: bool = False
    verbose: bool = False
    quiet: bool = False
    target: str = "auto"
    params_dir: str | None = None
    resume: str | None = None
    cleanup: bool = False
    disks: list[str] = field(default_factory=list)
    force: bool = False
    arc_max_mb: int | None = None
    defines: dict[str, str] = field(default_factory=dict)
    argv: list[str] = field(default_factory=list)
    precision: float | None = None       # --precision PCT: adaptive iterations for every test
    interleave: bool = False             # --interleave: iterations round-robin over the cases
    # the CLI's process ends right after run(): keep recording signals to the end, so that one that
    # lands after the summary is moot instead of killing a run that had finished
    keep_signal_handlers: bool = False


class Precision:
    """When a case has run enough iterations. Without a target: its fixed count. With one (percent):
    at least `minimum`, then until the 95 % CI half-width of the headline figure's mean is <= that
    share of the mean, max_iterations, the time budget, or an iteration that did not PASS
    (measuring on would not make a failing case precise). The verdict says which stopped it."""

    def __init__(self, target_pct: float | None, minimum: int, maximum: int, budget: float,
                 headline: str) -> None:
        self.target_pct, self.minimum, self.maximum, self.budget = target_pct, minimum, maximum, budget
        self.headline = headline
        self.values: list[float] = []
        self.failed = False
        self.t0 = time.monotonic()

    def add(self, record: dict[str, Any]) -> None:
        if record.get("status") != "PASS":
            self.failed = True
            return
        fig = (record.get("figures") or {}).get(self.headline)
        if fig is not None:
            self.values.append(float(fig["value"]))

    def achieved_pct(self) -> float | None:
        s = summarise(self.values)
        if s.n < 2 or not s.mean:
            return None
        return 100 * (s.ci_high - s.mean) / abs(s.mean)

    def decided(self, n: int) -> dict[str, Any] | None:
        """None while more iterations are wanted after n; else why they stop."""
        if self.target_pct is None:
            return {"stopped_by": "iterations"} if n >= self.minimum else None
        if n < self.minimum and not self.failed:
            return None
        achieved = self.achieved_pct()
        why = None
        if self.failed:
            why = "an iteration did not PASS"
        elif achieved is not None and achieved <= self.target_pct:
            why = "precision reached"
        elif n >= self.maximum:
            why = "max_iterations"
        elif time.monotonic() - self.t0 >= self.budget:
            why = "time budget"
        if why is None:
            return None
        return {"target_pct": self.target_pct, "achieved_pct": None if achieved is None else round(achieved, 3),
                "iterations": n, "figure": self.headline, "stopped_by": why}


@dataclass
class _CaseState:
    case: Case
    adaptive: Precision
    it: int = 0                          # the last iteration started
    finished: bool = False


class Runner:
    def __init__(self, opts: RunOptions, console: Console | None = None) -> None:
        self.opts = opts
        self.ui = console or Console(quiet=opts.quiet, verbose=opts.verbose)
        self._interrupt: int | None = None          # the first SIGINT/SIGTERM received
        self._active: proc.ProcessSet | None = None   # the running case's processes (the handler stops them)

    # ------------------------------------------------------------------ entry
    def run(self) -> int:
        opts = self.opts
        # 1. Everything about the input is checked before anything on disk is touched.
        done: set[tuple[str, int]] = set()
        if opts.resume:
            rd = ResultsDir.open(Path(opts.resume))
            info = rd.run_info()
            sel = info.get("selection", {})
            rf = loads(info["runfile"]["text"], info["runfile"]["source"], sel.get("defines") or {})
            opts.tags, opts.test = sel.get("tags"), sel.get("test")
            opts.iterations = sel.get("iterations", opts.iterations)
            opts.precision = sel.get("precision", opts.precision)
            opts.interleave = sel.get("interleave", opts.interleave)
            done = {(r["case"], r["iteration"]) for r in rd.results()}
        else:
            rf = load(opts.runfile, opts.defines)
        cases = rf.cases(tags=opts.tags, test=opts.test)
        if not cases:
            raise InputError(f"no test matches the selection (tags {opts.tags}, test {opts.test})",
                             file=rf.source)
        for c in cases:
            if opts.vdev_size is not None:
                c.test.pool.vdev_size = opts.vdev_size
            if opts.prefill:
                c.test.pool.prefill = True
            c.test.pool.validate()
        check_disks(opts.disks, opts.force)
        # 2. A zfsperf that died left tunables changed: put them back first, and say so.
        journal = Journal()
        for line in replay(journal):
            self.ui.say(f"journal: {line}")

        rd = ResultsDir.open(Path(opts.resume)) if opts.resume else ResultsDir.create(Path(opts.outdir))
        target_log = proc.CommandLog(rd.path / "logs" / "target.log")
        old_handlers = self._install_signals()
        t_start = time.time()
        target: Target | None = None
        interrupted = False
        try:
            self.ui.say(f"Starting ZFS target ({opts.target}) ...")
            target = open_target(opts.target, log=target_log, arc_max_mb=opts.arc_max_mb,
                                 params_dir=opts.params_dir)
            if target.accelerator == "tcg":
                self.ui.say("warning: the target is a QEMU guest under TCG (software emulation): its formats, "
                            "behaviour and tunables are real, its timings are not speeds")
            self._check()
            if opts.cleanup:
                self._cleanup_leftovers(target)
            elif opts.resume:
                self._cleanup_leftovers(target, only_owner=rd.path.name)
            else:
                self._report_leftovers(target)
            vdev_dir = Path(opts.vdev_dir) / f"run-{os.getpid()}"
            pools = PoolManager(target, vdev_dir, run_id=rd.path.name, disks=opts.disks)
            # every tunable the target exposes, before and after (the ones the runfile sets included)
            tun_names = sorted(set(target.tunable_names()) | {n for c in cases for n in c.tunables})
            run_info = self._run_info(rf, rd, target, cases, t_start, tun_names)
            if not opts.resume:
                rd.write_json("run.json", run_info)
            try:
                interrupted = self._run_cases(rf, cases, done, rd, target, pools, journal)
            except Interrupted:
                interrupted = True
            finally:
                self._finish_target(target, pools, rd)
            if opts.resume:
                run_info = rd.run_info()
                run_info.setdefault("resumed", []).append({"time": t_start, "argv": opts.argv})
            run_info["tunables"]["after"] = self._read_tunables(target, tun_names)
            run_info["end"] = time.time()
            run_info["interrupted"] = interrupted or self._interrupt is not None
            rd.write_json("run.json", run_info)
        except Interrupted:
            interrupted = True
        finally:
            if target is not None:
                self._close_target(target, rd)
            for line in replay(journal):       # anything an interrupt cut short
                self.ui.say(f"journal: {line}")
        try:                                   # a signal while summarising is still recorded, not raised
            return self._summarise(rd, t_start, interrupted or self._interrupt is not None)
        finally:
            if not self.opts.keep_signal_handlers:
                self._restore_signals(old_handlers)

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
        self.ui.start_progress(total - len(done))
        states = []
        for case in cases:
            adaptive = Precision(self._precision(case), self._iterations(case), case.test.max_iterations,
                                 case.test.budget, HEADLINE.get(case.test.workload, ""))
            if done:                         # --resume: what the interrupted run measured counts
                for r in rd.results():
                    if r.get("case") == case.id and int(r.get("iteration", 0)) >= 1:
                        adaptive.add(r)
            states.append(_CaseState(case, adaptive))
        try:
            if self.opts.interleave:
                while any(not st.finished for st in states):
                    for st in states:
                        if not st.finished:
                            self._step(st, done, rd, target, pools, journal)
            else:
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
        self._check()
        t = case.test
        if t.name not in self._prepared and t.name not in self._prep_error:
            try:
                self._prepared[t.name] = WORKLOADS[t.workload].prepare(
                    {**t.fields}, target, pools.vdev_dir.path, self.ui.progress_text)
            except (ZfsperfError, OSError) as e:
                self._prep_error[t.name] = f"preparing {t.name} failed: {e}"
            self._check()
        prepared, prep_error = self._prepared.get(t.name), self._prep_error.get(t.name)
        if case.id not in self._warmed:
            self._warmed.add(case.id)
            self._warmup(case, rd, target, pools, journal, prepared, prep_error)
        record = self._run_case(case, st.it, rd, target, pools, journal, prepared, prep_error)
        adaptive.add(record)
        verdict = adaptive.decided(st.it)
        if verdict is not None:
            st.finished = True
            if adaptive.target_pct is not None:
                record["precision"] = verdict        # why this was the case's last iteration
        rd.append_result(record)
        self.ui.case_done(record, HEADLINE.get(t.workload))
        if self.opts.verbose and record.get("histograms"):
            self.ui.say(render_histograms(record))

    def _warmup(self, case: Case, rd: ResultsDir, target: Target, pools: PoolManager, journal: Journal,
                prepared: Any, prep_error: str | None) -> None:
        """The case's warm-up iterations, before its first counted one: logged, never recorded
        (hyperfine's --warmup; zfs-fuse's first write into fresh vdev extents is much slower)."""
        if prep_error:
            return
        for w in range(1, case.test.warmup + 1):
            rec = self._run_case(case, -w, rd, target, pools, journal, prepared, None)
            if self.opts.verbose:
                self.ui.say(f"Warmup: {case.id} {w}/{case.test.warmup} [{rec['status']}]"
                            + (f" {rec['error']}" if rec.get("error") else ""))
            if rec["status"] != "PASS":
                return

    def _iterations(self, case: Case) -> int:
        return self.opts.iterations or case.test.iterations

    def _precision(self, case: Case) -> float | None:
        return self.opts.precision if self.opts.precision is not None else case.test.precision

    def _run_case(self, case: Case, it: int, rd: ResultsDir, target: Target, pools: PoolManager,
                  journal: Journal, prepared: Any, prep_error: str | None) -> dict[str, Any]:
        t = case.test
        log = rd.case_log(case.slug, it)
        target.log = log
        record: dict[str, Any] = {"test": t.name, "case": case.id, "params": case.sweep, "iteration": it,
                                  "workload": t.workload, "status": "FAIL", "figures": {}, "error": None,
                                  "start": time.time()}
        if target.accelerator:
            record["accelerator"] = target.accelerator      # "tcg": every figure is emulation
        t0 = time.monotonic()
        self.ui.case_start(case.id, it)

        def finish(status: str, error: str | None = None) -> dict[str, Any]:
            record["status"], record["error"] = status, error
            record["duration"] = round(time.monotonic() - t0, 3)
            return record

        if prep_error:
            return finish("FAIL", prep_error)
        missing = [n for n in case.tunables if not target.has_tunable(n)]
        if missing:
            return finish("SKIP", f"{target.impl} has no tunable {', '.join(missing)}")

        pool = None
        session = TunableSession(target.params, journal, log) if case.tunables else None
        ctx = None
        sampler: Sampler | None = None
        status, error = "FAIL", None
        try:
            pool = pools.create(t.pool, fs_properties=case.dataset)
            record["pool"] = {"name": pool.name, "layout": t.pool.describe(), "dataset": case.dataset}
            if session is not None:
                record["tunables"] = session.apply(case.tunables)
            ctx = CaseContext(target=target, pool=pool, params=case.params, log=log,
                              deadline=time.monotonic() + t.timeout, prepared=prepared,
                              live=self.ui.live if (self.opts.verbose or self.ui.is_tty) else None,
                              workdir=rd.path, case_id=case.slug, iteration=it)
            self._active = ctx.procs
            self._check()
            wl = WORKLOADS[t.workload]
            if t.steady.mode != "off":
                sampler = Sampler(target, pool.name, series_path(rd.path, case.slug, it),
                                  interval=t.steady.interval, progress=ctx.current_progress,
                                  l2_capacity=pool.l2_capacity)
                sampler.start()
                record["series"] = str(sampler.path.relative_to(rd.path))
                self._check()
            if t.steady.mode == "gate":
                record["steady"] = self._precondition(ctx, wl, sampler, t.steady,
                                                      wl.active_bytes(case.params, prepared))
            figures = wl.run(ctx)
            self._check()                   # a workload whose processes a signal stopped is no result
            if sampler is not None:
                sampler.mark("workload end")
                sampler.stop()
                if t.steady.mode == "record":
                    samples = sampler.snapshot()
                    record["steady"] = steady.summary(steady.decide(samples, t.steady.criteria,
                                                                    headline=wl.series_headline), samples,
                                                      t.steady)
                record["sampler"] = sampler.overhead()
                dead = sampler.unreadable()
                if dead:                     # said out loud: a null source must not pass for a quiet one
                    record["sampler"]["unreadable"] = dead
                    self.ui.say(f"warning: {case.id}: {', '.join(dead)} could not be read in any sample "
                                f"of this case (see {record['series']})")
            record["figures"] = figures
            record.update(ctx.extra)
            unmet = [m for m in (e.check(figures) for e in t.expect) if m]
            status, error = ("FAIL", "; ".join(unmet)) if unmet else ("PASS", None)
        except CaseTimeout as e:
            status, error = "KILLED", f"timeout of {t.timeout:g} s: {e}"
        except WorkloadFailed as e:
            status, error = "FAIL", str(e)
        except Unavailable as e:
            status, error = "SKIP", str(e)
        except (TargetError, InputError, OSError) as e:
            status, error = "FAIL", str(e)
        except Interrupted:
            pass                            # handled below, like any status a signal overtook
        except Exception as e:  # noqa: BLE001 - a bug in zfsperf: FAIL with the traceback in the log
            log.write(traceback.format_exc())
            status, error = "FAIL", f"internal error: {type(e).__name__}: {e}"
        if sampler is not None:
            sampler.stop()                  # idempotent; a failed case still keeps its series
        if self._interrupt is not None:     # whatever the case got to, it is not a result
            log.write(f"# interrupted by {signal.Signals(self._interrupt).name}: case abandoned")
            self._teardown(ctx, session, pools, pool, failed=True, log=log)
            self._active = None
            raise Interrupted(self._interrupt)
        daemon_died = self._daemon_gone(target)         # before teardown restarts it
        teardown_error = self._teardown(ctx, session, pools, pool, failed=status != "PASS", log=log)
        self._active = None
        if teardown_error:
            if status == "PASS":
                status = "FAIL"
            error = "; ".join(x for x in (error, teardown_error) if x)
        if daemon_died:
            status = "FAIL"
            error = (error + " " if error else "") + "(the zfs-fuse daemon died during the case; zfsperf restarted it)"
        return finish(status, error)

    def _precondition(self, ctx: CaseContext, wl: Any, sampler: Sampler, spec: steady.SteadySpec,
                      active: int | None) -> dict[str, Any]:
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
            while self._interrupt is None:
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
        self._check()
        if worker.is_alive():
            raise CaseTimeout("a precondition round was still running at the case timeout")
        if errors:
            raise errors[0]
        samples = sampler.snapshot()
        out = steady.summary(verdict, samples, spec)
        out["rounds"] = rounds
        out["measure_start"] = round(sampler.elapsed(), 3)
        ctx.phase, ctx.stop, ctx.round = "measure", None, ctx.round + 1
        ctx.measure_seconds = spec.measure
        ctx.log.write(f"# steady state: {'steady' if verdict.steady else out.get('note')} after {rounds} rounds; "
                      f"measuring from t={out['measure_start']} s")
        return out

    def _teardown(self, ctx: CaseContext | None, session: TunableSession | None, pools: PoolManager,
                  pool, *, failed: bool, log: proc.CommandLog) -> str | None:
        errors = []
        if ctx is not None:
            stopped = ctx.procs.stop_all()
            if stopped:
                log.write(f"# stopped processes by pid: {stopped}")
        if session is not None:
            try:
                session.restore()
            except ZfsperfError as e:
                errors.append(str(e))
        target = pools.target
        if self._daemon_gone(target):
            try:
                target.lab.recover()            # type: ignore[attr-defined]
                log.write("# zfs-fuse daemon restarted after it died")
            except ZfsperfError as e:
                errors.append(f"could not restart zfs-fuse: {e}")
        if pool is not None:
            if failed and self.opts.keep_failed:
                log.write(f"# -k: keeping pool {pool.name} and its vdev files")
            else:
                try:
                    pools.destroy(pool)
                except ZfsperfError as e:
                    errors.append(str(e))
        return "; ".join(errors) or None

    @staticmethod
    def _daemon_gone(target: Target) -> bool:
        lab = getattr(target, "lab", None)
        return lab is not None and not lab.daemon_alive()

    # ------------------------------------------------------------------ target lifecycle
    def _cleanup_leftovers(self, target: Target, only_owner: str | None = None) -> None:
        """-x: remove pools and vdev files that earlier zfsperf runs marked as theirs (never KEEP).
        With only_owner (--resume), just what the interrupted run itself left."""
        keep = keep_list()
        for name, owner in leftover_pools(target):
            if only_owner is not None and owner != only_owner:
                continue
            if name in keep:
                self.ui.say(f"-x: keeping {name} (in KEEP)")
                continue
            try:
                destroy_busy(target, name)
                self.ui.say(f"-x: destroyed leftover zfsperf pool {name} (run {owner})")
            except ZfsperfError as e:
                self.ui.say(f"-x: could not destroy {name}: {e}")
        if only_owner is not None:
            return
        for d in leftover_vdev_dirs(target, Path(self.opts.vdev_dir)):
            removed = VdevDir(target, d).remove_all()
            if removed:
                self.ui.say(f"-x: removed {len(removed)} leftover vdev files in {d}")

    def _report_leftovers(self, target: Target) -> None:
        """What an earlier zfsperf left (killed with -9, or -k): named, never touched without -x."""
        pools = [f"{n} (run {o})" for n, o in leftover_pools(target)]
        dirs = [str(d) for d in leftover_vdev_dirs(target, Path(self.opts.vdev_dir))]
        if pools:
            self.ui.say(f"leftover zfsperf pools: {', '.join(pools)} (remove with -x; KEEP=... keeps one)")
        if dirs:
            self.ui.say(f"leftover zfsperf vdev files in: {', '.join(dirs)} (remove with -x)")

    def _finish_target(self, target: Target, pools: PoolManager, rd: ResultsDir) -> None:
        leftovers = [n for n, _o in leftover_pools(target) if n not in pools.preexisting]
        if not self.opts.keep_failed:
            for name in leftovers:
                try:
                    pools.destroy(name)
                except ZfsperfError as e:
                    self.ui.say(f"warning: {e}")
            pools.cleanup_files()
        elif leftovers:
            self.ui.say(f"-k: kept pools {', '.join(leftovers)} and vdev files in {pools.vdev_dir.path}")

    def _close_target(self, target: Target, rd: ResultsDir) -> None:
        lab = getattr(target, "lab", None)
        if lab is not None:
            text, _ = lab.syslog_since(0)
            with open(rd.path / "logs" / "daemon.log", "a") as f:
                f.write(text)
        try:
            target.close()
        except ZfsperfError as e:
            self.ui.say(f"warning: stopping the target: {e}")

    # ------------------------------------------------------------------ run.json
    def _read_tunables(self, target: Target, names: list[str]) -> dict[str, str | None]:
        bulk = getattr(target.params, "read_all", None)
        values = bulk() if bulk is not None else {}          # one read for hundreds (ssh targets)
        out: dict[str, str | None] = {}
        for n in names:
            if n in values:
                out[n] = values[n]
                continue
            try:
                out[n] = target.get_tunable(n)
            except ZfsperfError:
                out[n] = None
        return out

    def _run_info(self, rf: Runfile, rd: ResultsDir, target: Target, cases: list[Case], t_start: float,
                  tun_names: list[str]) -> dict[str, Any]:
        fio = proc.run(["fio", "--version"])
        return {
            "zfsperf_version": __version__,
            "command_line": self.opts.argv,
            "host": platform.node(),
            "os": platform.platform(),
            "kernel": platform.release(),
            "python": sys.version.split()[0],
            "target": target.info(),
            "fio_version": fio.stdout.strip() if fio.ok else None,
            "start": t_start,
            "end": None,
            "runfile": {"source": rf.source, "text": rf.text},
            "selection": {"tags": self.opts.tags, "test": self.opts.test, "iterations": self.opts.iterations, "precision": self.opts.precision,
                          "interleave": self.opts.interleave,
                          "defines": self.opts.defines},
            "params": rf.params,
            "vdev_dir": self.opts.vdev_dir,
            "pools": {t.name: t.pool.describe() for t in {c.test.name: c.test for c in cases}.values()},
            "cases": [c.id for c in cases],
            "tunables": {"before": self._read_tunables(target, tun_names), "after": None},
        }

    # ------------------------------------------------------------------ summary
    def _summarise(self, rd: ResultsDir, t_start: float, interrupted: bool) -> int:
        self.ui.stop_progress()
        records = rd.results()
        counts = {s: sum(1 for r in records if r["status"] == s) for s in ("PASS", "FAIL", "SKIP", "KILLED")}
        table = case_table(records)
        elapsed = time.time() - t_start
        lines = ["", "Results Summary"]
        lines += [f"{s}\t{counts[s]:4d}" for s in ("PASS", "FAIL", "SKIP", "KILLED") if counts[s]]
        ran = len(records)
        pct = 100.0 * counts["PASS"] / ran if ran else 0.0
        from .units import format_duration
        lines += ["", f"Running Time:\t{format_duration(elapsed)}", f"Percent passed:\t{pct:.1f}%"]
        if interrupted:
            lines.append("Interrupted:\tyes (resume with --resume " + str(rd.path) + ")")
        lines.append(f"Log directory:\t{rd.path}")
        text_table = self.ui.render_table(table)
        summary = "\n".join(export.status_line(r, HEADLINE.get(r.get("workload", ""))) for r in records)
        rd.write_text("summary.txt", summary + "\n\n" + text_table + "\n" + "\n".join(lines) + "\n")
        rd.write_text("junit.xml", export.junit_xml(records))
        rd.write_text("results.csv", export.results_csv(records))
        report = self._write_report(rd)
        if report:
            lines.insert(-1, f"Report:\t\t{report}")
        self.ui.print_table(table)
        for ln in lines:
            self.ui.summary_line(ln)
        if self._interrupt is not None and not interrupted:
            self.ui.summary_line(f"Interrupted:\t{signal.Signals(self._interrupt).name} came while the run "
                                 "was finishing; every case above had ended")
            return 3
        if interrupted:
            return 3
        if not ran:
            return 2
        return 1 if counts["FAIL"] or counts["KILLED"] else 0

    def _write_report(self, rd: ResultsDir) -> Path | None:
        """report.html with tables and pictures; a failure here never fails the run."""
        try:
            from .report import html, summary
            from .report.model import load_run
            run = load_run(rd.path)
            return html.write(rd.path / "report.html", [(run, summary.build(run))])
        except Exception as e:  # noqa: BLE001
            self.ui.say(f"warning: could not write report.html: {type(e).__name__}: {e}")
            return None

    # ------------------------------------------------------------------ signals
    def _check(self) -> None:
        """A safe point: raise Interrupted here if a signal was recorded."""
        if self._interrupt is not None:
            raise Interrupted(self._interrupt)

    def _install_signals(self) -> dict[int, Any]:
        def handler(signum, _frame):
            # Only record the signal and ask the running case's processes to end: no exception,
            # no lock, no output here. The main thread notices at its next safe point, and every
            # cleanup after that runs in plain code.
            if self._interrupt is None:
                self._interrupt = signum
            active = self._active
            if active is not None:
                active.cancel()
        old = {}
        for s in (signal.SIGINT, signal.SIGTERM):
            old[s] = signal.signal(s, handler)
        return old

    @staticmethod
    def _restore_signals(old: dict[int, Any]) -> None:
        for s, h in old.items():
            signal.signal(s, h)
