"""The time scale a steady verdict is taken at.

ZFS works in cycles: transaction groups sync every few seconds (or sooner, when dirty data
reaches its limit), a receive round starts N streams and waits for the last, fio reports once a
second. A sample shorter than those cycles sees their phases, not a level: 0.4 s slices of a 4 s
case of receive rounds differ from each other by 10-20 % while the iterations' totals agree to 1-2 %.
So a case's series is judged on bins that each span whole cycles of its workload:

- only the samples while the workload ran (its headline metric moving) are judged;
- span = the largest of the sampler's interval, the workload's own cycle (a receive case's mean
  round length; fio's status interval, 1 s) and the 1 s at which zpool iostat and fio update;
- each bin's value is the mean of the samples in it: for a rate sampled at a constant interval
  that is the rate over the bin, for a level (ARC size) its mean level.

The txg interval of the target is recorded as context but not used as the span: under load a pool
syncs when its dirty data fills (OpenZFS zfs_dirty_data_sync_percent), far more often than the
zfs_txg_timeout (5 s on OpenZFS, ~30 s on zfs-fuse) that only bounds it from above, so the
timeout would blur real transients of a several-second case into one or two bins.

A case too short to give a window of bins at its time scale gets no verdict within it ("too
short"); its steadiness is then judged across its iterations (steady/rounds.py), as SNIA PTS
judges across rounds.
"""

from __future__ import annotations

import math
from typing import Any


SOURCE_RESOLUTION = 1.0     # s: zpool iostat, fio's status and most kstat consumers update once a second


def span(interval: float, cycle: float | None) -> float:
    """The seconds each judged sample spans: whole workload cycles, and never finer than the sources
    update (a 0.4 s sample of a once-a-second `zpool iostat` is alternately a value and a gap)."""
    return max(interval, cycle or 0.0, SOURCE_RESOLUTION)


def running(samples: list[dict[str, Any]], headline: str | None) -> list[dict[str, Any]]:
    """The samples while the workload ran: from the first in which its headline metric moved to the
    last (the sampler starts before the workload and stops after it; the set-up before the first
    byte and the bookkeeping after the last -- creating datasets, reading the txg count -- are not
    the workload's steady state or its lack)."""
    if not headline:
        return samples

    def moving(s: dict[str, Any]) -> bool:
        v = (s.get("metrics") or {}).get(headline)
        return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0
    idx = [i for i, s in enumerate(samples) if moving(s)]
    return samples[idx[0]:idx[-1] + 1] if idx else samples


def bin_means(samples: list[dict[str, Any]], width: float) -> list[dict[str, Any]]:
    """Consecutive samples grouped into bins of `width` seconds (by their time), each bin one sample
    at the time of its last member with each metric's mean over the bin (None when none was read).
    A last bin shorter than half the width is dropped: it would span only part of a cycle."""
    if not samples or width <= 0:
        return list(samples)
    t0 = samples[0]["t"]
    step = samples[1]["t"] - samples[0]["t"] if len(samples) > 1 else width
    groups: dict[int, list[dict[str, Any]]] = {}
    for s in samples:
        # a sample covers the interval that ends at its time: its bin is the one that interval ends in
        groups.setdefault(int(math.floor((s["t"] - t0 + 1e-9) / width)), []).append(s)
    out = []
    keys = sorted(groups)
    for k in keys:
        g = groups[k]
        if k == keys[-1] and len(keys) > 1 and (g[-1]["t"] - g[0]["t"] + step) < width / 2:
            continue
        names = {n for s in g for n in (s.get("metrics") or {})}
        metrics: dict[str, float | None] = {}
        for n in sorted(names):
            vals = [v for s in g for v in [(s.get("metrics") or {}).get(n)]
                    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
            metrics[n] = sum(vals) / len(vals) if vals else None
        out.append({"t": g[-1]["t"], "metrics": metrics})
    return out


def judged(samples: list[dict[str, Any]], headline: str | None, interval: float,
           width: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the samples while the workload ran, what is judged): the running samples in bins of
    `width` seconds, or as they are when a bin would hold fewer than 1.5 samples of `interval`."""
    raw = running(samples, headline)
    return raw, (bin_means(raw, width) if width > 1.5 * interval else raw)
