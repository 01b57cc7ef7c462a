"""One case iteration, from a fresh pool to its record: the case lifecycle.

Order: fresh pool (+ dataset properties) -> tunables (journaled) -> sampler -> [gate: workload in
rounds until steady] -> workload -> stop its processes -> tunables restored -> pool destroyed.
Its status is decided once, by results.record.CaseOutcome.decide_status()."""

from __future__ import annotations

import threading
import time
import traceback
from typing import Any

from . import proc, steady
from .control import Control, Interrupted
from .errors import InputError, TargetError, Unavailable, ZfsperfError
from .metrics.sampler import Sampler, series_path
from .params import Journal, TunableSession
from .pool import PoolManager
from .results.record import CaseOutcome, Status
from .results.store import ResultsDir
from .runfile import Case
from .targets.base import Target
from .ui import Console
from .workloads import WORKLOADS
from .workloads.base import CaseContext, CaseTimeout, WorkloadFailed


def daemon_gone(target: Target) -> bool:
    """zfs-fuse's daemon died (a kernel OpenZFS has none to die)."""
    lab = getattr(target, "lab", None)
    return lab is not None and not lab.daemon_alive()


class CaseRunner:
    """Runs case iterations on one target and pool manager into one results directory."""

    def __init__(self, target: Target, pools: PoolManager, journal: Journal, rd: ResultsDir, ui: Console,
                 control: Control, *, keep_failed: bool = False, verbose: bool = False) -> None:
        self.target, self.pools, self.journal, self.rd = target, pools, journal, rd
        self.ui, self.control = ui, control
        self.keep_failed, self.verbose = keep_failed, verbose

    def run(self, case: Case, it: int, prepared: Any, prep_error: str | None) -> dict[str, Any]:
        """One iteration (it < 0: a warm-up) of a case, from a fresh pool to its record."""
        rd, target, pools, journal = self.rd, self.target, self.pools, self.journal
        t = case.test
        log = rd.case_log(case.slug, it)
        target.log = log
        record: dict[str, Any] = {"test": t.name, "case": case.id, "params": case.sweep, "iteration": it,
                                  "workload": t.workload, "status": Status.FAIL, "figures": {}, "error": None,
                                  "start": time.time()}
        if target.accelerator:
            record["accelerator"] = target.accelerator      # "tcg": every figure is emulation
        t0 = time.monotonic()
        self.ui.case_start(case.id, it)

        def finish(outcome: CaseOutcome) -> dict[str, Any]:
            status, error = outcome.decide_status()
            record["status"], record["error"] = status.value, error
            record["duration"] = round(time.monotonic() - t0, 3)
            return record

        if prep_error:
            return finish(CaseOutcome(failure=prep_error))
        missing = [n for n in case.tunables if not target.has_tunable(n)]
        if missing:
            return finish(CaseOutcome(skipped=f"{target.impl} has no tunable {', '.join(missing)}"))

        pool = None
        session = target.tunable_session(journal, log) if case.tunables else None
        ctx = None
        sampler: Sampler | None = None
        outcome = CaseOutcome()
        try:
            pool = pools.create(t.pool, fs_properties=case.dataset)
            record["pool"] = {"name": pool.name, "layout": t.pool.describe(), "dataset": case.dataset}
            if session is not None:
                record["tunables"] = session.apply(case.tunables)
            ctx = CaseContext(target=target, pool=pool, params=case.params, log=log,
                              deadline=time.monotonic() + t.timeout, prepared=prepared,
                              live=self.ui.live if (self.verbose or self.ui.is_tty) else None,
                              workdir=rd.path, case_id=case.slug, iteration=it)
            self.control.active = ctx.procs
            self.control.check()
            wl = WORKLOADS[t.workload]
            if t.steady.mode != "off":
                sampler = Sampler(target, pool.name, series_path(rd.path, case.slug, it),
                                  interval=t.steady.interval, progress=ctx.current_progress,
                                  l2_capacity=pool.l2_capacity)
                sampler.start()
                record["series"] = str(sampler.path.relative_to(rd.path))
                self.control.check()
            if t.steady.mode == "gate":
                record["steady"] = self._precondition(ctx, wl, sampler, t.steady,
                                                      wl.active_bytes(case.params, prepared))
            figures = wl.run(ctx)
            self.control.check()                   # a workload whose processes a signal stopped is no result
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
            outcome.figures = figures
            outcome.unmet = [m for m in (e.check(figures) for e in t.expect) if m]
        except CaseTimeout as e:
            outcome.killed = f"timeout of {t.timeout:g} s: {e}"
        except Unavailable as e:
            outcome.skipped = str(e)
        except (WorkloadFailed, TargetError, InputError, OSError) as e:
            outcome.failure = str(e)
        except Interrupted:
            pass                            # handled below, like any status a signal overtook
        except Exception as e:  # noqa: BLE001 - a bug in zfsperf: FAIL with the traceback in the log
            log.write(traceback.format_exc())
            outcome.failure = f"internal error: {type(e).__name__}: {e}"
        if sampler is not None:
            sampler.stop()                  # idempotent; a failed case still keeps its series
        if self.control.interrupt is not None:     # whatever the case got to, it is not a result
            log.write(f"# interrupted by {self.control.signal_name()}: case abandoned")
            self._teardown(ctx, session, pools, pool, failed=True, log=log)
            self.control.active = None
            self.control.check()
        outcome.daemon_died = daemon_gone(target)         # before teardown restarts it
        failed = outcome.decide_status()[0] is not Status.PASS
        outcome.teardown_error = self._teardown(ctx, session, pools, pool, failed=failed, log=log)
        self.control.active = None
        return finish(outcome)

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
        if daemon_gone(target):
            try:
                target.lab.recover()            # type: ignore[attr-defined]
                log.write("# zfs-fuse daemon restarted after it died")
            except ZfsperfError as e:
                errors.append(f"could not restart zfs-fuse: {e}")
        if pool is not None:
            if failed and self.keep_failed:
                log.write(f"# -k: keeping pool {pool.name} and its vdev files")
            else:
                try:
                    pools.destroy(pool)
                except ZfsperfError as e:
                    errors.append(str(e))
        return "; ".join(errors) or None
