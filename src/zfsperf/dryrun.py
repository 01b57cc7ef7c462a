"""What a run would do, said before it does anything: the checks that need the target's own ZFS
(its properties and values, its tunables), the time each iteration is asked for against its
timeout, and the plan in words (target, tests, design, A and B sides, iterations, pools, time,
what it creates). `zfsperf run --dry-run` prints the plan; a real run makes the same checks once
its target is known, before its first pool."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from . import props
from .errors import InputError
from .report.abstats import ALPHA, MIN_BLOCKS
from .opentarget import Expected
from .plan import Plan
from .runfile import Case, Runfile, TestSpec
from .units import format_size, format_span
from .workloads import WORKLOADS

LONGEST_CASE = 30 * 86400.0      # a case asked to run longer than this is a typo (duration = "1000d")


def target_check(cases: list[Case], impl: str | None, rf: Runfile, *, tunables: bool = True) -> None:
    """An input error (exit 2, with the runfile's line and field) for the first property or value the
    target's own ZFS cannot take. impl None (an ssh host not yet contacted): nothing to check yet. A
    tunable the target lacks is not an error when other cases run: its case is a SKIP, and the plan
    says so; a run every case of which sets a tunable on a target without tunables (zfs-fuse) is refused."""
    if impl is None:
        return
    if not tunables and cases and all(c.test.tunables for c in cases):
        t = cases[0].test
        raise InputError(f"every case sets a module tunable ({', '.join(sorted(t.tunables))}) and {impl} has "
                         "no tunables at run time: nothing would run (--target guest or a kernel-OpenZFS "
                         "machine runs them)", **rf.where(t, f"tunables.{sorted(t.tunables)[0]}"))
    for c in cases:
        for name, value in c.dataset.items():
            why = props.target_problem(impl, name, str(value))
            if why:
                raise InputError(f"{c.id}: {why}", **rf.where(c.test, f"dataset.{name}"))
        for name, value in c.test.pool.properties.items():
            why = props.target_problem(impl, name, str(value), pool=True)
            if why:
                raise InputError(f"{c.id}: {why}", **rf.where(c.test, f"pool.properties.{name}"))



def time_check(cases: list[Case], iterations: int | None, rf: Runfile) -> None:
    """An input error for an iteration asked to run longer than its timeout (it could only time out)
    or a case asked to run longer than LONGEST_CASE."""
    for c in cases:
        t, asked = c.test, WORKLOADS[c.test.workload].asked_seconds(c.fields)
        key = "duration" if "duration" in c.fields else "runtime"
        if asked is not None and asked > t.timeout:
            raise InputError(f"{c.id}: an iteration is asked to run {format_span(asked)}, beyond its timeout "
                             f"({format_span(t.timeout)}): it could only time out (raise timeout or shorten "
                             f"{key})", **rf.where(t, key))
        n = (iterations or t.iterations) + t.warmup
        least = n * max(1.0, asked or 0.0)
        if least > LONGEST_CASE:
            raise InputError(f"{c.id}: {n} iterations of at least {format_span(max(1.0, asked or 0.0))} each "
                             f"would run {format_span(least)} or more (a case runs at most "
                             f"{format_span(LONGEST_CASE)}: split a longer study into runs)",
                             **rf.where(t, "iterations"))


def design(t: TestSpec, plan: Plan, n_cases: int) -> str:
    """How a test's cases are measured against each other, in words."""
    if plan.builds:
        return ("builds taking turns in two guests" if plan.build_turns else
                f"builds ({', '.join(plan.builds)}), the module swapped between cases")
    if t.turns:
        return "turns: the two sides take turns on one pool in ABBA order, every iteration"
    if t.duet:
        return "duet: the two sides run at once on one pool, every iteration"
    if t.ab or plan.interleave:
        return "interleaved blocks: one iteration of every case a block, in an order drawn from the seed"
    if n_cases > 1:
        return "iterations, case after case (a sweep: its points are not an A/B; `ab = true` or --interleave pairs them)"
    return "iterations"


def _sides(cases: list[Case]) -> list[str]:
    if len(cases) == 2 and cases[0].test.duet or len(cases) == 2 and (cases[0].test.ab or cases[0].build):
        return [f"A {_point(cases[0])}", f"B {_point(cases[1])}"]
    return [", ".join(_point(c) for c in cases)]


def _point(c: Case) -> str:
    bits = [f"{k}={v}" for k, v in c.sweep.items()] + ([f"build {c.build}"] if c.build else [])
    return " ".join(bits) or c.id


def _each(t: TestSpec, c: Case, iterations: int | None, disks: list[str] | None, until_steady: bool = False) -> str:
    wl = WORKLOADS[t.workload]
    n = iterations or t.iterations
    pool = ("the disks " + ", ".join(disks) if disks else
            c.pool.describe() + (" (prefilled)" if c.pool.prefill else " (sparse files)"))
    work = []
    kept = wl.kept_bytes(c.fields)
    asked = wl.asked_seconds(c.fields)
    if kept is not None:
        work.append(f"{format_size(kept)} received an iteration")
    elif asked is not None:
        work.append(f"{format_span(asked)} of load an iteration")
    warm = f"{t.warmup} warm-up + " if t.warmup else ""
    count = (f"{n} to {t.steady_cap} iterations, until the case's steady verdict is steady or not steady "
             f"(at most {format_span(t.steady_budget)} a case)" if until_steady else f"{n} iteration(s)")
    return f"{warm}{count}, a fresh pool each: {pool}" + (f"; {work[0]}" if work else "")


def too_few_pairs(pairs: int) -> str:
    """What an A/B of fewer than MIN_BLOCKS pairs can say: never a significant change."""
    return (f"{pairs} pair(s) can never reach p < {ALPHA:g}: the sign-flip test's smallest p is 2 / 2^{pairs} = "
            f"{min(1.0, 2 / 2 ** pairs):.3g}, so every verdict is \"too few iterations\" (-I {MIN_BLOCKS} or more)")


# what a dry run assumes of a receive iteration before this host has any history: zfs-fuse on a
# 2-core machine received 500-650 MiB/s on one stream and took 3-6 s an iteration beside it (a
# fresh pool, prefill, sync, teardown): docs/benchmarks.md. History replaces both with its own.
ASSUMED_RECEIVE_MIBS = 400.0
ASSUMED_SETUP_S = 5.0


def _time(t: TestSpec, cases: list[Case], iterations: int | None, past: dict[str, float] | None = None,
          until_steady: bool = False) -> str:
    """The test's time: from its cases' seconds an iteration in earlier runs on this host (the
    history store), else the load it asks for, else the bytes it receives at an assumed rate."""
    wl = WORKLOADS[t.workload]
    asked = [wl.asked_seconds(c.fields) for c in cases]
    n = (iterations or t.iterations) + t.warmup
    if until_steady:                                   # the time of the cap: what the run may take
        return "up to " + _time(t, cases, t.steady_cap, past).removeprefix("about ").removeprefix("at least ") \
            + f", at most {format_span(t.steady_budget)} a case"
    sides = 2 if t.duet else 1
    limit = f"each iteration within its {format_span(t.timeout)} timeout"
    past = past or {}
    if cases and all(c.id in past for c in cases):
        total = sum(n * past[c.id] for c in cases)
        return (f"about {format_span(total)} (from its cases' {', '.join(format_span(past[c.id]) for c in cases)} "
                f"an iteration in earlier runs on this host; {limit})")
    if all(a is not None for a in asked):
        total = sum(n * sides * a for a in asked if a is not None)
        return f"at least {format_span(total)} of load (set-up besides: pools, corpus; {limit})"
    kept = [wl.kept_bytes(c.fields) for c in cases]
    if all(k is not None for k in kept):
        total = sum(n * (k / 2**20 / ASSUMED_RECEIVE_MIBS + ASSUMED_SETUP_S / sides)    # sides share a round's set-up
                    for k in kept if k is not None)
        return (f"about {format_span(total)} at an assumed {ASSUMED_RECEIVE_MIBS:.0f} MiB/s received and "
                f"{ASSUMED_SETUP_S:.0f} s of set-up an iteration (a run on this host puts its own times in "
                f"history for the next estimate; {limit})")
    return f"as long as its work takes ({limit}; a first run's summary gives the time)"


def plan_lines(plan: Plan, cases: list[Case], target: Expected, *, outdir: str, vdev_dir: str,
               disks: list[str] | None, store_url: str | None, past: dict[str, float] | None = None) -> list[str]:
    """The plan as the dry run prints it: one block per test, then what the run would create."""
    by_test: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        by_test[c.test.name].append(c)
    checked = ["the runfile", "property and tunable names and values"
               + (f" for {target.impl}" + (" (pool v23)" if target.impl == "zfs-fuse" else "") if target.impl else ""),
               "expect figures and units", "each iteration's time against its timeout", "the corpus",
               "vdev room and data against pool size", "the output directory"]
    if disks:
        checked.append("DISKS")
    if store_url:
        checked.append("the store")
    out = [f"dry run: {plan.runfile.source}: {len(cases)} case(s) of {len(by_test)} test(s) checked; "
           "nothing was started or written",
           f"  target    {target.how}",
           f"  checked   {', '.join(checked)}"]
    if target.impl is None:
        out.append("            (what the target's own ZFS takes is checked once it is connected, before any pool)")
    for b in plan.builds.values():
        out.append(f"  build     {b.name}: {b.label}" + (" (compiled before the run, or found cached)"
                                                         if b.modules is None else ""))
    biggest = 0
    for name, cs in by_test.items():
        t = cs[0].test
        out.append(f"  test {name} ({t.workload}): {len(cs)} case(s); {design(t, plan, len(cs))}")
        for line in _sides(cs):
            out.append(f"    cases   {line}")
        out.append(f"    each    {_each(t, cs[0], plan.iterations, disks, plan.until_steady(t))}")
        if t.tunables and target.impl == "zfs-fuse":
            out.append(f"    skipped zfs-fuse has no tunables at run time ({', '.join(t.tunables)}): "
                       "its cases will be SKIP (kernel OpenZFS or --target guest runs them)")
        out.append(f"    time    {_time(t, cs, plan.iterations, past, plan.until_steady(t))}")
        pairs = plan.iterations or t.iterations
        if t.duet and pairs < MIN_BLOCKS:
            out.append(f"    warning {too_few_pairs(pairs)}")
        biggest = max([biggest] + [c.pool.file_bytes() for c in cs])
    makes = [f"a results directory under {outdir}"]
    if not disks:
        makes.append(f"vdev files of up to {format_size(biggest)} at a time under {vdev_dir} (removed after)")
    if store_url:
        makes.append(f"a row in the history store {store_url}")
    out.append(f"  creates   {'; '.join(makes)}")
    return out


def as_dict(lines: list[str]) -> dict[str, Any]:
    return {"plan": lines}
