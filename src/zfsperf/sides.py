"""The sides of an iteration and how they share the machine, chosen once per case (choose): the
strategies that case.CaseRunner.iterate, the one iteration body, asks for lifecycles, places,
contexts and the measuring.

- Alone: a single case on a fresh pool of its own, its dataset properties on the pool.
- Together: a duet, both sides at the same time on one pool, a dataset each, a thread each.
- Turns: a duet taking turns on one pool round by round, ABBA (a dataset property: a dataset
  each; a module tunable: written before every round, on one set of datasets where the workload's
  turns keep their files).
- GuestTurns: two builds (`guest ab --turns`), each side on a pool of its own in a guest of its
  own, crosswise in ABBA order over the iterations, the other guest paused during a side's turn
  (no series: a paused guest is not sampled).
A duet's sides swap places every iteration: on odd ones A's dataset is made and started first."""

from __future__ import annotations

import threading
import time
from typing import Any

from . import proc
from .case import CaseRunner, Lifecycle, Sides
from .control import Interrupted
from .pool import Pool
from .results.record import CaseRecord
from .runfile import Case
from .targets.base import TurnPair
from .workloads.base import CaseContext


class Alone(Sides):
    def __init__(self, case: Case) -> None:
        self.cases = (case,)

    def lives(self, runner: CaseRunner, it: int, log: proc.CommandLog) -> dict[str, Lifecycle]:
        (c,) = self.cases
        runner.target.log = log
        return {c.id: Lifecycle(runner, c.test, it, log, c.tunables, c.build, spec=c.pool)}

    def place(self, runner: CaseRunner, lives: dict[str, Lifecycle], records: dict[str, CaseRecord], wl: Any,
              it: int, log: proc.CommandLog, prepared: Any) -> dict[str, CaseContext]:
        (c,) = self.cases
        t, rec = c.test, records[c.id]
        pool, applied = lives[c.id].enter(c.dataset, case=c.id)
        if applied is not None:
            rec.tunables = applied
        rec.pool = {"name": pool.name, "layout": c.pool.describe(), "dataset": c.dataset}
        ui = runner.ui
        return {c.id: CaseContext(target=runner.target, pool=pool, fields=c.fields, log=log,
                                  deadline=time.monotonic() + t.timeout, prepared=prepared,
                                  live=ui.live if (runner.verbose or ui.is_tty) else None,
                                  workdir=runner.rd.path, case_id=c.slug, iteration=it, procs=lives[c.id].procs)}

    def measure(self, wl: Any, ctxs: dict[str, CaseContext], it: int) -> dict[str, Any]:
        (c,) = self.cases
        return {c.id: wl.run(ctxs[c.id])}      # what it raises is the case's outcome (absorb)

    def spans(self, ctx: CaseContext) -> None:
        return None


class _Duet(Sides):
    """Two sides, a and b, of one test: started in the order of the iteration."""

    def __init__(self, a: Case, b: Case) -> None:
        self.cases = (a, b)

    def first(self, it: int) -> list[Case]:
        a, b = self.cases
        return [a, b] if it % 2 else [b, a]

    def _datasets(self, entered: dict[str, tuple[Pool, Any]], records: dict[str, CaseRecord], it: int,
                  one_set: bool) -> dict[str, Pool]:
        """Each side's dataset (one set for both: one_set), its pool and tunables facts recorded."""
        a = self.cases[0]
        t = a.test
        sides, made = {}, {}
        for c in self.first(it):
            name = "duet" if one_set else f"duet{'A' if c is a else 'B'}"
            pool, applied = entered[c.id]
            if (pool.name, name) not in made:
                made[pool.name, name] = pool.dataset(name, c.dataset)
            sides[c.id] = pool.side(made[pool.name, name], f"{pool.mountpoint}/{name}")
            records[c.id].pool = {"name": pool.name, "layout": c.pool.describe(), "dataset": c.dataset}
            if one_set:
                records[c.id].pool["sides"] = "one set of datasets"
            if applied is not None:           # each side's own value (turns over a tunable)
                records[c.id].tunables = {n: {**v, "set": c.tunables.get(n, v["set"])} for n, v in applied.items()}
        return sides

    def _contexts(self, lives: dict[str, Lifecycle], sides: dict[str, Pool], runner: CaseRunner, it: int,
                  log: proc.CommandLog, prepared: Any, hooks: dict[str, Any] | None = None,
                  **turn: Any) -> dict[str, CaseContext]:
        """One context a side, one deadline and one process set for both (a signal stops both)."""
        deadline = time.monotonic() + self.cases[0].test.timeout
        procs = lives[self.cases[0].id].procs
        hooks = hooks or {}
        return {c.id: CaseContext(target=lives[c.id].target, pool=sides[c.id], fields=c.fields, log=log,
                                  deadline=deadline, prepared=prepared, workdir=runner.rd.path, case_id=c.slug,
                                  iteration=it, procs=procs, before_turn=hooks.get(c.id), **turn)
                for c in self.first(it)}

    def _in_turns(self, wl: Any, ctxs: dict[str, CaseContext], it: int) -> dict[str, Any]:
        """Round by round, the side that goes first alternating; what one raises is both sides'."""
        first = self.first(it)
        try:
            return dict(zip((c.id for c in first), wl.run_turns([ctxs[c.id] for c in first])))
        except Interrupted:
            raise
        except Exception as e:  # noqa: BLE001 - judged per side by the body, as a thread's would be
            return {c.id: e for c in first}

    def _together(self, wl: Any, ctxs: dict[str, CaseContext], it: int) -> dict[str, Any]:
        """Both at once, a thread each, the side that starts first alternating."""
        results: dict[str, Any] = {}

        def side(c: Case) -> None:
            try:
                results[c.id] = wl.run(ctxs[c.id])
            except BaseException as e:  # noqa: BLE001 - handed to this thread's caller
                results[c.id] = e
        threads = [threading.Thread(target=side, args=(c,), name=f"duet {c.id}") for c in self.first(it)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return results


class Together(_Duet):
    """A duet on one pool, both sides at the same time (a dataset property, two values)."""
    one_pool = at_once = True

    def lives(self, runner: CaseRunner, it: int, log: proc.CommandLog) -> dict[str, Lifecycle]:
        a, b = self.cases
        life = Lifecycle(runner, a.test, it, log, a.tunables)
        runner.target.log = log
        return {a.id: life, b.id: life}

    def place(self, runner: CaseRunner, lives: dict[str, Lifecycle], records: dict[str, CaseRecord], wl: Any,
              it: int, log: proc.CommandLog, prepared: Any) -> dict[str, CaseContext]:
        a, b = self.cases
        entered = lives[a.id].enter(between_rounds=False)
        sides = self._datasets({a.id: entered, b.id: entered}, records, it, one_set=False)
        return self._contexts(lives, sides, runner, it, log, prepared, sharers=2)

    def measure(self, wl: Any, ctxs: dict[str, CaseContext], it: int) -> dict[str, Any]:
        return self._together(wl, ctxs, it)


class Turns(Together):
    """A duet on one pool taking turns round by round, ABBA. Over a module tunable: its value
    written before every round of a side (also when the two values are one value spelled two ways:
    an A/A that pays what the A/B pays, "1M" and 1048576), and, on a workload whose turns keep their
    files (fio, the mix), one set of datasets for both sides, so that nothing but the tunable tells
    them apart (a dataset each: the starvation mix's A/A found one side's reader 1.5 % faster)."""
    at_once = False

    def __init__(self, a: Case, b: Case) -> None:
        super().__init__(a, b)
        self.over_tunable = any(isinstance(v, list) for v in a.test.tunables.values())

    def place(self, runner: CaseRunner, lives: dict[str, Lifecycle], records: dict[str, CaseRecord], wl: Any,
              it: int, log: proc.CommandLog, prepared: Any) -> dict[str, CaseContext]:
        a, b = self.cases
        life = lives[a.id]
        entered = life.enter(between_rounds=self.over_tunable)
        one_set = self.over_tunable and wl.turns_share_files
        if one_set:
            log.write("# turns over a tunable: both sides on one set of datasets (duet)")
        sides = self._datasets({a.id: entered, b.id: entered}, records, it, one_set=one_set)
        hooks = {c.id: life.turn(c.tunables) for c in self.cases} if self.over_tunable else {}
        return self._contexts(lives, sides, runner, it, log, prepared, sharers=2, hooks=hooks)

    def measure(self, wl: Any, ctxs: dict[str, CaseContext], it: int) -> dict[str, Any]:
        return self._in_turns(wl, ctxs, it)


class GuestTurns(_Duet):
    """Two builds (guest ab --turns): each side on a pool of its own in a guest of its own, the
    guests given to the builds crosswise in ABBA order over the iterations (CaseRunner.hosts), one
    process set for both, the other guest paused during a side's turn (guest/pair.py)."""
    sampled = False

    def __init__(self, a: Case, b: Case, pair: TurnPair) -> None:
        super().__init__(a, b)
        self.pair = pair
        self.at_once = not a.test.turns

    def lives(self, runner: CaseRunner, it: int, log: proc.CommandLog) -> dict[str, Lifecycle]:
        a, b = self.cases
        host_a, host_b = runner.hosts(it)
        life = Lifecycle(host_a, a.test, it, log, a.tunables, a.build)
        lives = {a.id: life, b.id: Lifecycle(host_b, b.test, it, log, b.tunables, b.build, procs=life.procs)}
        for x in lives.values():
            x.target.log = log
        return lives

    def place(self, runner: CaseRunner, lives: dict[str, Lifecycle], records: dict[str, CaseRecord], wl: Any,
              it: int, log: proc.CommandLog, prepared: Any) -> dict[str, CaseContext]:
        # one guest's module load and pool after the other's, not both at once: at once saved 6.5 s of
        # a 35 s pair under TCG but widened a pair's spread from 10-12 % to 16.5-16.8 % (A/As of 30-54
        # pairs, docs/benchmarks.md)
        entered = {c.id: lives[c.id].enter(between_rounds=False) for c in self.cases}
        sides = self._datasets(entered, records, it, one_set=False)
        pair = self.pair
        hooks = {c.id: pair.turn_to(0 if lives[c.id].runner is runner else 1, log) for c in self.cases}
        return self._contexts(lives, sides, runner, it, log, prepared, sharers=1, hooks=hooks,
                              turn_key="turn_guests", after_turn=pair.resume_all, settle_turns=1)

    def measure(self, wl: Any, ctxs: dict[str, CaseContext], it: int) -> dict[str, Any]:
        try:
            return self._in_turns(wl, ctxs, it) if self.cases[0].test.turns else self._together(wl, ctxs, it)
        finally:
            self.pair.resume_all()            # a pool is torn down on a guest that runs

    def label(self, ctxs: dict[str, CaseContext], lives: dict[str, Lifecycle]) -> None:
        for cid, ctx in ctxs.items():
            ctx.machine = lives[cid].runner.guest_name


def choose(case: Case, partner: Case | None, runner: CaseRunner | None) -> Sides:
    """The sides of a case, once: alone; with its duet partner together or in turns; two builds
    in two guests when the case runner has a guest pair and the sides' builds differ."""
    if partner is None:
        return Alone(case)
    pair = runner.pair if runner is not None else None
    if pair is not None and case.build != partner.build:
        return GuestTurns(case, partner, pair)
    return Turns(case, partner) if case.test.turns else Together(case, partner)
