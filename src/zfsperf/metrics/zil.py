"""The ZFS intent log's own counters over a case's counted workload: how many log commits (each an
fsync, an O_SYNC write or a sync=always write waiting on the log), how many log records (itxs) and
how their data went to the log: copied into the record, left to be copied when the log is written,
or written in place and pointed at (indirect); and where the log blocks were allocated (the pool's
normal class or a separate log device, `slog`). Kernel OpenZFS keeps them per dataset since 2.2,
in /proc/spl/kstat/zfs/POOL/objset-0xID beside the dataset's name (targets/openzfs_linux.py); a
target that publishes none (zfs-fuse, OpenZFS before 2.2) records none. Each side of a duet
counts its own datasets' (delta's root), though both share one pool.

Context, never a verdict: a sync-write A/B (sync=always against standard, a log device or none)
shows here whether B committed as often as A, and where its log blocks went."""

from __future__ import annotations

from typing import Any

# the counters kept, in the order they are shown; every one a count or a byte count since the
# dataset was created (so a case's are the difference between two readings)
FIELDS = ("zil_commit_count", "zil_commit_writer_count", "zil_itx_count",
          "zil_itx_indirect_count", "zil_itx_indirect_bytes", "zil_itx_copied_count", "zil_itx_copied_bytes",
          "zil_itx_needcopy_count", "zil_itx_needcopy_bytes",
          "zil_itx_metaslab_normal_count", "zil_itx_metaslab_normal_bytes",
          "zil_itx_metaslab_slog_count", "zil_itx_metaslab_slog_bytes")


def delta(before: dict[str, dict[str, float]] | None, after: dict[str, dict[str, float]] | None,
          root: str | None = None) -> dict[str, Any]:
    """The counters' growth between two readings of a pool's datasets ({dataset: {field: value}}),
    summed over the datasets at and under root (all without): a dataset created in between counts
    from zero, one destroyed in between is left out (its last counts were not read).
    {"unavailable": why} when either reading is missing."""
    if before is None:
        return {"unavailable": "the target publishes no ZIL counters (per-dataset objset kstats, OpenZFS 2.2+)"}
    if after is None:
        return {"unavailable": "the ZIL counters could not be read when the workload ended"}
    out = {f: 0 for f in FIELDS}
    after = {k: v for k, v in after.items() if root is None or k == root or k.startswith(root + "/")}
    for objset, now in after.items():
        then = before.get(objset, {})
        for f in FIELDS:
            if f in now:
                out[f] += max(0, int(now[f] - then.get(f, 0)))
    out["datasets"] = len(after)
    return out


def merged(summaries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A case's iterations as one: each counter's mean per iteration."""
    have = [s for s in summaries if s and "unavailable" not in s and "zil_commit_count" in s]
    if not have:
        return None
    return {"iterations": len(have), **{f: sum(s.get(f, 0) for s in have) / len(have) for f in FIELDS}}


def line(z: dict[str, Any] | None) -> str | None:
    """One line for a report."""
    if not z:
        return None
    n = z["iterations"]
    return f"ZIL (mean of {n} iteration{'s' if n != 1 else ''}): {words(z)}"


def words(z: dict[str, Any]) -> str:
    """A side's counters in a line: '612 log records (612 indirect, 0 copied, 0 need-copy) in 9
    commits; log blocks: 5 in the pool, 0 on a log device'."""
    def n(x: float) -> str:
        return f"{x:,.0f}" if float(x).is_integer() or x >= 100 else f"{x:.1f}"
    return (f"{n(z['zil_itx_count'])} log records ({n(z['zil_itx_indirect_count'])} indirect, "
            f"{n(z['zil_itx_copied_count'])} copied, {n(z['zil_itx_needcopy_count'])} need-copy) "
            f"in {n(z['zil_commit_count'])} commits; log blocks: {n(z['zil_itx_metaslab_normal_count'])} in the pool, "
            f"{n(z['zil_itx_metaslab_slog_count'])} on a log device")
