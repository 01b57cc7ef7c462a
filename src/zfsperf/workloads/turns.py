"""Two sides of a duet taking turns on one pool: the order, when to stop, and the tunable hook.

One scheduler for every workload that takes turns (receive rounds, fio slices): the sides go in
ABBA groups, so that a trend over the iteration (the pool filling, the machine warming) falls on
both alike to first order; at least one group, then more until the iteration's duration is over,
its time budget is spent, a signal came, or the workload says the pool has no room for another
group. Before each of a side's turns its before_turn hook runs (turns over a module tunable: the
side's value written and read back, recorded with the turn; build turns: the other guest paused,
this one resumed, read back) and after it its after_turn hook (build turns: the other guest resumed,
so that between turns both run and can be asked anything); each turn's start and end are kept in
the side's spans (a profile's samples go to the side whose turn they fell in), and the side's CPU
readings just inside its hooks in its cpu_turns (its CPU figures: the machine's busy time while it
had its turn, metrics/cpucost.py).

A workload may ask for settling turns (ctxs[0].settle_turns, build turns: 1): before the first
group each side runs that many turns, hooks and all, in the group's order (the first side's, then the other's), and they are left
out (not counted, not in the spans, their read-backs not kept), so that what the first turns after
the iteration's set-up pay (in build turns the first receive after both guests made their pools
was about 20 % slower and twice as variable) falls on no side's figures."""

from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

from .base import CaseContext

ORDER = (0, 1, 1, 0)

R = TypeVar("R")


def take_turns(ctxs: list[CaseContext], one: Callable[[CaseContext], R], *, duration: float,
               room: Callable[[list[list[R]]], str | None] | None = None, settled: bool = False,
               turns: int = 0) -> list[list[R]]:
    """Run one(ctx) for the two sides in ABBA groups for `duration` seconds (ctxs[0] first), or,
    with turns, until each side has taken that many (rounded up to whole groups); room,
    asked before each further group, returns why no other group fits (said as each side's
    duration_note) or None. settled: the workload's turns may be settling ones (above). Returns
    each side's counted turns' results, in order."""
    done: list[list[R]] = [[], []]
    settle = ctxs[0].settle_turns if settled else 0
    for side in [0, 1] * settle:
        if ctxs[0].remaining() <= 0 or ctxs[0].procs.cancelled:
            break
        ctx = ctxs[side]
        ctx.log.write(f"# a settling turn of {ctx.case_id} (first of its iteration): run, not counted")
        _turn(ctx, one)
    until = time.monotonic() + duration
    k = 0
    while True:
        if k % len(ORDER) == 0 and k:
            over = len(done[0]) >= turns if turns else time.monotonic() >= until
            if over or ctxs[0].remaining() <= 0 or ctxs[0].procs.cancelled:
                break
            why = room(done) if room is not None else None
            if why:
                for c in ctxs:
                    c.extra["duration_note"] = why
                break
        side = ORDER[k % len(ORDER)]
        ctx = ctxs[side]
        read_back, result, t0, cpu = _turn(ctx, one)
        if ctx.before_turn is not None:
            ctx.turn_reads.append(read_back)
        done[side].append(result)
        ctx.spans.append((t0, time.monotonic()))
        if cpu is not None:
            ctx.cpu_turns.append(cpu)
        k += 1
    for c in ctxs:
        c.turn_order, c.settled = "ABBA", settle
    return done


def _turn(ctx: CaseContext, one: Callable[[CaseContext], R]) -> tuple[Any, R, float, tuple[Any, Any] | None]:
    """One turn of a side: its before_turn hook (what it read back), one(ctx) (its result, and when
    it started), the CPU readings around it (None where there are none), its after_turn hook however
    the turn ended (build turns: the other guest runs again)."""
    try:
        read_back = ctx.before_turn() if ctx.before_turn is not None else None
        cpu0 = ctx.cpu_read() if ctx.cpu_read is not None else None
        t0 = time.monotonic()
        result = one(ctx)
        cpu1 = ctx.cpu_read() if cpu0 is not None and ctx.cpu_read is not None else None
        return read_back, result, t0, (cpu0, cpu1) if cpu1 is not None else None
    finally:
        if ctx.after_turn is not None:
            ctx.after_turn()
