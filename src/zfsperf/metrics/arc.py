"""ARC and L2ARC kstats normalised as in "Array Level Steady State Detection for ZFS Storage Servers" (SNIA SDC 2020).

Level metrics come from one reading, ratio-over-interval metrics from two consecutive readings.
A metric whose inputs the target does not publish is left out (absent), never reported as zero:
zfs-fuse has no mru_size/mfu_size/metadata_size, and a pool without cache devices has no L2ARC.
"""

from __future__ import annotations

from typing import Mapping

# the arcstats fields the sampler reads (zfs-fuse reads one file per field: read only these)
FIELDS = ("size", "c_max", "hits", "iohits", "misses", "mru_size", "mfu_size", "data_size", "metadata_size",
          "l2_size", "l2_asize", "l2_hits", "l2_misses", "l2_read_bytes", "l2_write_bytes")
MIB = 1048576.0
ACCESSES = ("hits", "iohits", "misses")     # what an ARC access is counted as (iohits: OpenZFS 2.2+)


# The hit ratio as OpenZFS's own arcstat defines it for the version at hand: 2.2 added `iohits`
# (a read that found its block's I/O already in flight) and arcstat counts it as a read that is
# neither a hit nor a miss: hit% = hits / (hits + iohits + misses). Before 2.2 (and on zfs-fuse)
# there are only hits and misses.
HIT_RATIO_WITH_IOHITS = "hits / (hits + iohits + misses), as arcstat in OpenZFS 2.2+"
HIT_RATIO_CLASSIC = "hits / (hits + misses), as arcstat before OpenZFS 2.2 (no iohits published)"


def hit_ratio_definition(cur: Mapping[str, float]) -> str:
    return HIT_RATIO_WITH_IOHITS if "iohits" in cur else HIT_RATIO_CLASSIC


def hit_ratio(prev: Mapping[str, float], cur: Mapping[str, float]) -> float | None:
    """The ARC hit ratio between two readings of arcstats (see HIT_RATIO_*); None when nothing
    was read in between, or a counter went backwards (a module reload)."""
    if "hits" not in cur or "hits" not in prev:
        return None
    d = {k: cur.get(k, 0) - prev.get(k, 0) for k in ACCESSES}
    if min(d.values()) < 0:
        return None
    return _ratio(d["hits"], sum(d.values()))


def accesses(prev: Mapping[str, float], cur: Mapping[str, float]) -> float | None:
    """The ARC accesses between two readings of arcstats (the hit ratio's denominator: hits,
    iohits where published, misses); None when either reading lacks them."""
    if "hits" not in cur or "hits" not in prev:
        return None
    return sum(cur.get(k, 0) - prev.get(k, 0) for k in ACCESSES)


def _ratio(num: float, den: float) -> float | None:
    return num / den if den > 0 else None


def level_metrics(cur: Mapping[str, float]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    if "size" in cur and "c_max" in cur:
        out["arc_size_frac"] = _ratio(cur["size"], cur["c_max"])
    if "mru_size" in cur and "mfu_size" in cur:
        out["arc_mru_frac"] = _ratio(cur["mru_size"], cur["mru_size"] + cur["mfu_size"])
    if "data_size" in cur and "metadata_size" in cur:
        out["arc_data_frac"] = _ratio(cur["data_size"], cur["data_size"] + cur["metadata_size"])
    return out


def interval_metrics(prev: Mapping[str, float] | None, cur: Mapping[str, float], dt: float, *,
                     l2_capacity: int | None, l2_write_max: float | None) -> dict[str, float | None]:
    """Hit ratios and the L2ARC write rate over the interval; None when nothing happened (no
    access in the interval leaves a hit ratio undefined, which the detector treats as unreadable)."""
    out: dict[str, float | None] = {}
    if prev is not None and "hits" in cur and "hits" in prev:
        out["arc_hit_ratio"] = hit_ratio(prev, cur)
    elif "hits" in cur:
        out["arc_hit_ratio"] = None
    if l2_capacity:                          # L2 metrics only where the pool has cache devices
        # the device fills with allocated bytes: l2_asize (OpenZFS; compressed), not the logical
        # l2_size; zfs-fuse (pool v23, no compressed ARC) publishes only l2_size, which is both
        used = cur.get("l2_asize", cur.get("l2_size"))
        out["l2_size_frac"] = _ratio(used, l2_capacity) if used is not None else None
        out["l2_write_frac"] = None
        out["l2_hit_ratio"] = None
        # reads served by the cache devices: `zpool iostat`'s pool row leaves cache devices out,
        # so an L2ARC-fed read load is invisible to pool_kops/pool_mibs without this
        out["l2_read_mibs"] = None
        if prev is not None and dt > 0:
            if "l2_read_bytes" in cur and "l2_read_bytes" in prev:
                out["l2_read_mibs"] = (cur["l2_read_bytes"] - prev["l2_read_bytes"]) / dt / MIB
            if l2_write_max and "l2_write_bytes" in cur and "l2_write_bytes" in prev:
                out["l2_write_frac"] = (cur["l2_write_bytes"] - prev["l2_write_bytes"]) / dt / l2_write_max
            if "l2_hits" in cur and "l2_hits" in prev:
                dh = cur["l2_hits"] - prev["l2_hits"]
                dm = cur.get("l2_misses", 0) - prev.get("l2_misses", 0)
                out["l2_hit_ratio"] = _ratio(dh, dh + dm)
    return out
