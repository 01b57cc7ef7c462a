"""Change points across runs: per case and figure, the series of each run's median over its PASS
iterations, ordered by start time; change points by E-Divisive means (MongoDB's
signal-processing-algorithms, the method MongoDB and Apache Otava use on performance histories),
each with its size (% change of the mean from the segment before to the segment after), its
significance (an energy-statistics permutation test between those two segments, and Welch's t with
the runs of each segment as the units -- the run-to-run noise compare judges separate runs by: a
shift the runs' own spread explains is not reported) and what changed at that run (ZFS version, kernel, host, runfile, -D defines, tunables).

E-Divisive costs O(n²) in the length of the series: a history longer than `window` runs is first
analysed as medians of blocks of runs, and each change found there is then placed exactly among
the runs around it (see e_divisive)."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np
from signal_processing_algorithms.energy_statistics import energy_statistics as es

from ..report import abstats
from ..units import ChangeVerdict, better_or_worse
from ..workloads import figure_direction
from .store import RunRow, Store

PVALUE = 0.01             # E-Divisive's own permutation test, while splitting; and each change point's
PERMUTATIONS = 100
SIZE_PERMUTATIONS = 499   # the reported significance of each change point
WINDOW = 400              # longest series E-Divisive sees at once (block medians beyond)
MIN_SEGMENT = 2           # runs on each side of a change point, and between two (--min-segment)
RUNS_ALPHA = 0.05         # a change point must also stand out of its segments' run-to-run noise


@dataclass
class Point:
    run: RunRow
    value: float
    n: int


@dataclass
class ChangePoint:
    index: int                      # the first run of the new level (0-based in the series)
    run: str                        # that run's name
    before: float                   # mean of the segment before
    after: float                    # mean of the segment after
    change_pct: float
    p: float
    direction: int                  # +1 higher is better, -1 lower, 0 not judged
    what_changed: list[str] = field(default_factory=list)
    runs_p: float | None = None     # Welch's t of the segments' runs (run-to-run noise), as compare --vs
    accepted: str | None = None     # `zfsperf history accept`: why this change is expected

    @property
    def verdict(self) -> str:
        return better_or_worse(self.change_pct, self.direction) or "changed"

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "run": self.run, "before": self.before, "after": self.after,
                "change_pct": round(self.change_pct, 3), "p": round(self.p, 5), "verdict": self.verdict,
                "runs_p": None if self.runs_p is None else round(self.runs_p, 5),
                "what_changed": self.what_changed, "accepted": self.accepted}


@dataclass
class Series:
    case: str
    figure: str
    unit: str
    workload: str
    points: list[Point]
    change_points: list[ChangePoint] = field(default_factory=list)
    outliers: list[int] = field(default_factory=list)   # runs that left the level alone and came back
    annotations: list[tuple[int, str]] = field(default_factory=list)   # where the set-up changed (annotations())

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "figure": self.figure, "unit": self.unit,
                "runs": [{"run": p.run.name, "value": p.value, "n": p.n} for p in self.points],
                "change_points": [c.as_dict() for c in self.change_points],
                "outliers": [self.points[i].run.name for i in self.outliers],
                "annotations": [{"run": self.points[i].run.name, "what": w} for i, w in self.annotations],
                "emulated_runs": [p.run.name for p in self.points if p.run.accelerator == "tcg"]}


@contextlib.contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """The library's permutation tests draw from numpy's global generator: seed it (the same
    history gives the same answer) and put the caller's state back."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def e_divisive(values: np.ndarray, pvalue: float = PVALUE, window: int = WINDOW) -> list[int]:
    """Change point indices. Up to `window` runs: E-Divisive on the series itself. A longer history
    (E-Divisive is O(n²)) is cut into blocks of k runs so that at most `window` block medians remain;
    E-Divisive finds the changes between blocks, and each is then placed exactly by E-Divisive on
    the runs of the blocks on either side of it. A level held for fewer than k runs is not a
    change point of such a history."""
    n = len(values)
    if n < 2 or np.ptp(values) == 0:
        return []
    if n <= window:
        return sorted(int(i) for i in es.e_divisive(values, pvalue=pvalue, permutations=PERMUTATIONS))
    k = -(-n // window)
    blocks = np.array([np.median(values[i:i + k]) for i in range(0, n, k)])
    found: list[int] = []
    for j in sorted(int(i) for i in es.e_divisive(blocks, pvalue=pvalue, permutations=PERMUTATIONS)):
        lo, hi = max(0, (j - 1) * k), min(n, (j + 1) * k)
        local = es.e_divisive(values[lo:hi], pvalue=pvalue, permutations=PERMUTATIONS)
        g = lo + int(min(local, key=lambda i: abs(lo + i - j * k))) if local else j * k
        if all(abs(g - f) > MIN_SEGMENT for f in found):
            found.append(g)
    return sorted(found)


def what_changed(a: RunRow, b: RunRow) -> list[str]:
    out = []
    for label, x, y in (("ZFS", a.zfs_version, b.zfs_version), ("target", a.implementation, b.implementation),
                        ("kernel", a.kernel, b.kernel), ("host", a.host, b.host), ("runfile", a.runfile, b.runfile)):
        if x != y:
            out.append(f"{label} {x or '?'} -> {y or '?'}")
    if a.runfile_sha != b.runfile_sha and a.runfile == b.runfile:
        out.append("runfile text changed")
    for k in sorted(set(a.defines) | set(b.defines)):
        if a.defines.get(k) != b.defines.get(k):
            out.append(f"-D {k}: {a.defines.get(k, '-')} -> {b.defines.get(k, '-')}")
    for k in sorted(set(a.tunables) | set(b.tunables)):
        if a.tunables.get(k) != b.tunables.get(k):
            out.append(f"{k}: {a.tunables.get(k, '-')} -> {b.tunables.get(k, '-')}")
    return out


def short_segments(idx: list[int], vals: np.ndarray, min_segment: int) -> tuple[list[int], list[int]]:
    """(change points, outlier runs): a segment of fewer than min_segment runs between two change
    points is not a level. When the runs after it are back at the level before it (within half the
    excursion's height of it), its runs are outliers and both change points go; otherwise the
    series moved on through it: the two steps are one change, kept where the level moved most (the
    first of two equal steps). A drift up before a fall is not a return: 357 → 441 (4 runs) → 44
    is a fall at the 44."""
    idx, out = sorted(idx), []
    k = 0
    while k + 1 < len(idx):
        a, b = idx[k], idx[k + 1]
        if b - a >= min_segment:
            k += 1
            continue
        lo = idx[k - 1] if k > 0 else 0
        hi = idx[k + 2] if k + 2 < len(idx) else len(vals)
        before, short, after = vals[lo:a].mean(), vals[a:b].mean(), vals[b:hi].mean()
        if abs(after - before) < abs(short - before) / 2:
            out += list(range(a, b))
            del idx[k:k + 2]
        elif abs(after - short) > abs(short - before):
            del idx[k]
        else:
            del idx[k + 1]
    return idx, out


def large_steps(idx: list[int], vals: np.ndarray, min_change: float) -> list[int]:
    """The change points whose step (mean after / mean before, each up to its neighbours) is at
    least min_change %: a smaller step is no change point and does not split the history, so its
    neighbours are measured, and tested, against the merged level. Repeated until every step left
    is large enough. (A 12 % drift three runs before a 90 % fall kept the fall's level before it at
    three runs, too few for its permutation test at p 0.01, and neither was reported.)"""
    idx = sorted(idx)
    while min_change > 0:
        bounds = [0, *idx, len(vals)]
        keep = []
        for k, i in enumerate(idx):
            b, a = float(vals[bounds[k]:i].mean()), float(vals[i:bounds[k + 2]].mean())
            if b and abs((a / b - 1) * 100) >= min_change:
                keep.append(i)
        if keep == idx:
            break
        idx = keep
    return idx


def annotations(s: Series) -> list[tuple[int, str]]:
    """(index, what) where a run's ZFS, kernel, host, runfile or -D defines differ from the run
    before it: the markers of the trend page (whether or not the figure changed there)."""
    out = []
    for i in range(1, len(s.points)):
        a, b = s.points[i - 1].run, s.points[i].run
        what = [w for w in what_changed(a, b) if not w.startswith(("zfs_", "l2arc_", "metaslab_", "spa_", "vdev_"))]
        if what:
            out.append((i, "; ".join(what)))
    return out


def analyse(s: Series, pvalue: float = PVALUE, min_change: float = 0.0, window: int = WINDOW,
            seed: int = 1, min_segment: int = MIN_SEGMENT,
            accepted: list[tuple[str, str | None, str | None, str]] | None = None) -> Series:
    vals = np.array([p.value for p in s.points], dtype=float)
    way = figure_direction(s.workload, s.figure, s.unit)
    s.annotations = annotations(s)
    with _seeded(seed):
        found, s.outliers = short_segments(e_divisive(vals, pvalue, window), vals, min_segment)
        idx = large_steps([i for i in found if min_segment <= i <= len(vals) - min_segment], vals, min_change)
        bounds = [0, *idx, len(vals)]
        cps = []
        for k, i in enumerate(idx):
            before, after = vals[bounds[k]:i], vals[i:bounds[k + 2]]
            b, a = float(before.mean()), float(after.mean())
            half = window // 2              # the test needs the neighbourhood, not the whole history
            st = es.get_energy_statistics_and_probabilities(before[-half:], after[:half],
                                                            permutations=SIZE_PERMUTATIONS)
            change = (a / b - 1) * 100 if b else math.nan
            if st.e_pvalue > pvalue or not abs(change) >= min_change:
                continue
            # the same run-level noise compare uses: the runs of the two segments as the units
            # (Welch's t on log values); a shift their own run-to-run spread explains is drift
            runs = abstats.runs(list(before[-half:]), list(after[:half])) if np.all(vals > 0) else None
            if runs is not None and runs.p is not None and runs.p >= RUNS_ALPHA:
                continue
            p = max(float(st.e_pvalue), 1 / (SIZE_PERMUTATIONS + 1))     # a permutation test's floor
            why = next((r for run, case, fig, r in reversed(accepted or []) if run == s.points[i].run.name
                        and case in (None, s.case) and fig in (None, s.figure)), None)
            cps.append(ChangePoint(i, s.points[i].run.name, b, a, change, p, way,
                                   what_changed(s.points[i - 1].run, s.points[i].run),
                                   None if runs is None else runs.p, why))
    s.change_points = cps
    return s


def load_series(store: Store, case: str | None = None, figure: str | None = None) -> list[Series]:
    runs = store.runs()
    groups: dict[tuple[str, str], Series] = {}
    for run_id, case_id, fig, unit, n, median, workload in store.figure_rows(case, figure):
        run = runs.get(int(run_id))
        if run is None or median is None:
            continue
        key = (case_id, fig)
        if key not in groups:
            groups[key] = Series(case_id, fig, unit or "", workload or "", [])
        groups[key].points.append(Point(run, float(median), int(n or 0)))
    for s in groups.values():
        s.points.sort(key=lambda p: (p.run.started, p.run.name))
    return [groups[k] for k in sorted(groups)]


def fail_on_change(series: list[Series], pct: float, recent: int) -> list[tuple[Series, ChangePoint]]:
    """Change points that make a CI gate fail: worse by at least pct %, at one of the last
    `recent` runs of their series (a regression that was there before is old news; a change of a
    figure that is not judged never fails; an accepted one is expected)."""
    out = []
    for s in series:
        for c in s.change_points:
            if c.verdict == ChangeVerdict.WORSE and c.accepted is None and abs(c.change_pct) >= pct and c.index >= len(s.points) - recent:
                out.append((s, c))
    return out
