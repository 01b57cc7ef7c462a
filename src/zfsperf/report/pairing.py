"""Which cases of one run compare with which, and how they were paired: the named cases against
the first, a build A/B's builds, or each test's sweep points against its first; a duet's or
interleaved blocks' pairs, and two sides' slices taking turns as slice pairs."""

from __future__ import annotations

import json
from typing import Any

from ..errors import InputError, shown
from .model import CaseData, RunData


def pairing(run: RunData, a: CaseData, b: CaseData) -> tuple[bool, bool]:
    """How a run paired two of its cases: (they ran as a duet, in turns or at once; they ran in
    interleaved blocks). Neither: independent samples."""
    duet = a.test == b.test and a.test in set(run.run.duets)
    ab = set(run.run.ab)
    return duet, bool(run.run.selection.get("interleave")) or (a.test in ab and b.test in ab)


def by_iteration(c: CaseData, name: str) -> dict[int, float]:
    return {r.iteration: r.figures[name].value for r in c.passed if name in r.figures}


def slice_pairs(a: CaseData, b: CaseData, name: str, its: list[int]) -> tuple[list[float], list[float]] | None:
    """A figure of two sides taking turns in slices (fio's, or the starvation mix's turns of its two
    phases), as slice pairs: in each iteration, A's k-th slice against B's k-th, which ran beside it
    (A1 B1 B2 A2, or B1 A1 A2 B2). The unit turns' throughput is judged on: twice the pairs of the
    iterations for one ABBA group, and two slice pairs of one iteration are about as independent as
    two iterations (bench/power.py's A/As of 240 iterations: fio's log ratios correlated 0.04, the
    mix's -0.12 to 0.08), so windows of 6 iterations saw a planted 8 % (fio) and 10-15 % (the mix)
    where their iteration pairs saw 15 % and 15-25 %, at 0-1 of 40 false alarms. None unless every
    iteration's records hold the figure slice by slice, as many a side (older records: per iteration)."""
    recs = [{r.iteration: r for r in c.passed} for c in (a, b)]
    old: list[float] = []
    new: list[float] = []
    for it in its:
        sa, sb = recs[0][it].slice_values(name), recs[1][it].slice_values(name)
        if not sa or not sb or len(sa) != len(sb) or min(sa + sb) <= 0:
            return None
        old += sa
        new += sb
    return (old, new) if old else None


def ab_pairs(run: RunData, names: list[str] | None = None) -> list[tuple[CaseData, CaseData]]:
    """The comparisons inside one run: the two (or more) named cases against the first, else each
    test's sweep points against its first point."""
    cases = list(run.cases.values())
    if names:
        found = []
        for n in names:
            c = next((c for c in cases if c.case == n), None)
            if c is None:
                raise InputError(f"no case {shown(n)} in this run (it has: {', '.join(c.case for c in cases)})",
                                 file=str(run.path), field="--cases")
            found.append(c)
        return [(found[0], c) for c in found[1:]]
    builds = list(run.run.builds)
    if builds:          # a build A/B: each case on the first build against the same case on the others
        by_point: dict[str, dict[Any, CaseData]] = {}
        for c in cases:
            rest = {k: v for k, v in c.sweep.items() if k != "build"}
            by_point.setdefault(json.dumps([c.test, rest], sort_keys=True, default=str), {})[c.sweep.get("build")] = c
        return [(m[builds[0]], m[b]) for m in by_point.values() if builds[0] in m for b in builds[1:] if b in m]
    by_test: dict[str, list[CaseData]] = {}
    for c in cases:
        by_test.setdefault(c.test, []).append(c)
    return [(group[0], c) for group in by_test.values() for c in group[1:]]
