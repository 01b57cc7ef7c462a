"""Exact counts: what a case's workload made ZFS do, read from ZFS's own accounting rather than
timed, so that a change in behaviour shows in one iteration where a speed comparison needs many
(issue 73: cross-dataset block cloning that silently became a full copy was not slower at first).

Each count is a ratio to the work done, so that a side that ran more rounds (a `duration`) counts
the same as one that ran fewer: the pool space the received data took per byte of it (Δused of the
received datasets, `zfs get -Hp`, over the stream's WRITE payload: copies=2 doubles it, compression
shrinks it), the stream's payload per round and its WRITE records per round; and on kernel OpenZFS,
for a case alone on its pool (a receive or a fio job), the bytes the pool wrote to its vdevs per byte
the workload wrote (the txgs kstat, after a `zpool sync`), and the I/Os issued to the vdevs per
class (`zpool iostat -Hp -r`: async writes per MiB written, sync and async reads per MiB read).
Wherever arcstats are read (kernel OpenZFS and zfs-fuse), a fio job's ARC misses per MiB it read,
for a case alone on the machine's time (the ARC is the machine's). `logical_bytes` and
`read_bytes` in a record's counts are those denominators, kept and never compared.

Pool-wide, for a case alone on its pool (what a dataset's `used` never shows, since it counts a
deduplicated or cloned block in full): the pool's dedup ratio, and where the pool has block cloning
(OpenZFS 2.2+) the bytes cloning saved per byte the workload wrote (Target.pool_sharing). A receive
reads them after an iteration's first round (its data then all the pool holds); fio and the mix at
the case's end after a `zpool sync` (kernel OpenZFS: zfs-fuse has no `zpool sync`, and its dedup
statistics lag until a txg commits).

A and B are compared exactly: a count whose medians differ by more than the tolerance is a finding
of its own, whatever the speed verdict says. The tolerance is derived from the workload's
determinism: the spread of each side's own iterations (the same case repeated: an A/A) times
SPREAD_FACTOR, and never under FLOOR_PCT (measured: the space per byte of 2 streams of 16 MiB a
round was the same to six digits in all of 6 iterations on zfs-fuse, docs/benchmarks.md "Exact
counts")."""

from __future__ import annotations

from statistics import median
from typing import Any

from ..targets.kstat import Txg
from ..units import format_bytes

# name -> (what it is, in words for "B's <what> is …", unit)
COUNTS: dict[str, tuple[str, str]] = {
    "space_per_byte": ("pool space per byte of data received", "B/B"),
    "payload_per_round": ("data (WRITE payload) per round", "B"),
    "records_per_round": ("WRITE records per round", "records"),
    "vdev_written_per_byte": ("bytes written to the vdevs per byte the workload wrote", "B/B"),
    "dedup_ratio": ("pool's dedup ratio", "x"),
    "clone_saved_per_byte": ("bytes block cloning saved per byte written", "B/B"),
    "async_write_ios_per_mib": ("async write I/Os to the vdevs per MiB written", "I/Os/MiB"),
    "sync_read_ios_per_mib": ("sync read I/Os to the vdevs per MiB read", "I/Os/MiB"),
    "async_read_ios_per_mib": ("async read I/Os to the vdevs per MiB read", "I/Os/MiB"),
    "arc_misses_per_mib": ("ARC misses per MiB read", "misses/MiB"),
}
# per unit, the least difference of medians that is a finding: a count of I/Os or misses per MiB is
# an integer count over the work, and a side that did nearly none (0.002 misses a MiB against 0.004)
# differs by a large ratio and nothing a reader would act on
ABS_MIN = {"I/Os/MiB": 0.1, "misses/MiB": 0.1}
# per unit, the least tolerance where FLOOR_PCT is too tight: how many I/Os a MiB became depends on
# how the vdev queue aggregated them, which is timing (an A/A of 5 iterations in the OpenZFS guest:
# async write I/Os a MiB 22.4-25.1, a 12 % range; sync reads 2 %, prefetch reads 6 %, ARC misses 1 %)
FLOOR_BY_UNIT = {"I/Os/MiB": 15.0, "misses/MiB": 3.0}
MIB = 1 << 20
FLOOR_PCT = 1.0          # the least tolerance: metadata's share moves with the pool's layout
SPREAD_FACTOR = 3.0      # a side's own iterations' relative range, times this


def of_receive(allocated: list[float | None], payload: list[int], records: list[int],
               first_sharing: dict[str, float] | None = None) -> dict[str, float] | None:
    """A receive's counts over its rounds: each round's Δused of the received datasets, WRITE
    payload bytes and WRITE records, and the pool-wide counts read after the first round
    (Target.pool_sharing, over that round's payload). None when a round's space could not be read."""
    if not payload or any(a is None for a in allocated) or not sum(payload):
        return None
    n = len(payload)
    out = {"space_per_byte": round(sum(a for a in allocated if a is not None) / sum(payload), 6),
           "payload_per_round": sum(payload) / n, "records_per_round": sum(records) / n,
           "logical_bytes": float(sum(payload))}
    if first_sharing is not None:
        out.update(of_sharing(first_sharing, payload[0]))
    return out


def of_sharing(reading: dict[str, float], logical: float) -> dict[str, float]:
    """The pool-wide counts from one Target.pool_sharing reading of a pool that holds only the
    workload's data, `logical` bytes of it: its dedup ratio, and the bytes block cloning saved per
    byte (where the pool shows cloning)."""
    out = {"dedup_ratio": reading["dedupratio"]}
    if "bclonesaved" in reading and logical:
        out["clone_saved_per_byte"] = round(reading["bclonesaved"] / logical, 6)
    return out


POOL_WIDE = ("dedup_ratio", "clone_saved_per_byte")


def drop_pool_wide(counts_: dict[str, float] | None) -> None:
    """A side that shares its pool with the other (a duet on one pool): the pool-wide counts are
    both sides' together, so they are not the side's."""
    for name in POOL_WIDE:
        (counts_ or {}).pop(name, None)


def of_txgs(txgs: list[Txg], after: int, logical: float) -> dict[str, float] | None:
    """What the pool wrote to its vdevs per byte a workload wrote (`logical`): each txg committed
    after txg `after` (the newest when the workload started), its nwritten (data, metadata, every
    copy and parity), read after a `zpool sync` so that nothing the workload dirtied is left out.
    None when the kstat no longer holds the txg after `after` (more txgs than zfs_txg_history: the
    sum would be short) or nothing was written. (How many txgs is not counted: the txg timeout
    makes it a matter of time, not of work.)"""
    if not logical or not txgs or min(t.txg for t in txgs) > after + 1:
        return None
    done = [t for t in txgs if t.state == "C" and t.txg > after]
    return {"vdev_written_per_byte": round(sum(t.nwritten for t in done) / logical, 6)}


def of_ios(before: dict[str, int], after: dict[str, int], wrote: float, read: float) -> dict[str, float]:
    """I/Os issued to the vdevs per request class (metrics/iostat.py's parse_hp_request_counts,
    read when the counted workload started and after it ended and its data was synced) per MiB
    the workload wrote (async writes: the txgs' data) or read (sync reads: demand misses; async
    reads: prefetch); a class with no work of its kind is left out. Not sync writes: for buffered
    writes they are each txg's labels and uberblocks, a matter of time like the txgs themselves
    (copies=2, slower, wrote 1.27 a MiB against 1.01), and for sync ones the ZIL's writes, which
    its own counters count (metrics/zil.py)."""
    out: dict[str, float] = {}
    for cls, work in (("async_write", wrote), ("sync_read", read), ("async_read", read)):
        if work and cls in before and cls in after:
            out[f"{cls}_ios_per_mib"] = round((after[cls] - before[cls]) / (work / MIB), 4)
    return out


def of_arc(misses0: float, misses1: float, read: float) -> dict[str, float]:
    """The ARC's misses (arcstats `misses`: demand and prefetch, data and metadata) while the
    workload ran, per MiB it read; nothing when it read nothing."""
    return {"arc_misses_per_mib": round((misses1 - misses0) / (read / MIB), 4)} if read else {}


def merged(per_iteration: list[dict[str, float] | None]) -> dict[str, dict[str, float]] | None:
    """A case's counts over its iterations: per count its median, least and largest, and how many
    iterations had it. None when no iteration had counts."""
    have = [c for c in per_iteration if c]
    if not have:
        return None
    out: dict[str, dict[str, float]] = {}
    for name in COUNTS:
        vals = [c[name] for c in have if name in c]
        if vals:
            out[name] = {"median": median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}
    return out or None


def spread_pct(m: dict[str, float]) -> float:
    """One side's relative range over its iterations, in %."""
    return 100 * (m["max"] - m["min"]) / abs(m["median"]) if m["median"] else 0.0


def findings(a: dict[str, dict[str, float]] | None, b: dict[str, dict[str, float]] | None) -> list[dict[str, Any]]:
    """The counts A and B have both whose medians differ by more than their tolerance, each with
    its ratio B/A, both medians and the tolerance it was held to (in %)."""
    out: list[dict[str, Any]] = []
    if not a or not b:
        return out
    for name, (what, unit) in COUNTS.items():
        if name not in a or name not in b:
            continue
        ma, mb = a[name], b[name]
        if not ma["median"]:           # none on A (no block cloned): a finding when B has any
            if mb["median"] and abs(mb["median"]) >= ABS_MIN.get(unit, 0.0):
                out.append({"count": name, "what": what, "unit": unit, "old": ma["median"], "new": mb["median"],
                            "ratio": None, "tolerance_pct": 0.0, "iterations": [int(ma["n"]), int(mb["n"])]})
            continue
        ratio = mb["median"] / ma["median"]
        tol = max(FLOOR_BY_UNIT.get(unit, FLOOR_PCT), SPREAD_FACTOR * max(spread_pct(ma), spread_pct(mb)))
        if abs(ratio - 1) * 100 > tol and abs(mb["median"] - ma["median"]) >= ABS_MIN.get(unit, 0.0):
            out.append({"count": name, "what": what, "unit": unit, "old": ma["median"], "new": mb["median"],
                        "ratio": round(ratio, 4), "tolerance_pct": round(tol, 2),
                        "iterations": [int(ma["n"]), int(mb["n"])]})
    return out


def number(v: float, unit: str) -> str:
    """A count with its unit, as a reader wants it (bytes in binary units)."""
    if unit == "x":                   # a ratio as zpool prints it: 2.00x
        return f"{v:.2f}x"
    return format_bytes(v) if unit == "B" else f"{v:.4g} {unit}"


def sentence(f: dict[str, Any]) -> str:
    """A finding in words: "B took 2.00× the pool space per byte of data received of A (…)"."""
    if f["ratio"] is None:
        return (f"B's {f['what']} is {number(f['new'], f['unit'])} where A's is none (exact counts, "
                f"{f['iterations'][0]} and {f['iterations'][1]} iterations)")
    if f["ratio"] == 0:              # B has none (a clone become a full copy)
        return (f"B's {f['what']} is none where A's is {number(f['old'], f['unit'])} (exact counts, "
                f"{f['iterations'][0]} and {f['iterations'][1]} iterations)")
    return (f"B's {f['what']} is {f['ratio']:.2f}× A's ({number(f['old'], f['unit'])} → "
            f"{number(f['new'], f['unit'])}; exact counts, beyond ±{f['tolerance_pct']:g} %, "
            f"{f['iterations'][0]} and {f['iterations'][1]} iterations)")


def line(m: dict[str, dict[str, float]] | None) -> str | None:
    """The report's line for a case's counts."""
    if not m:
        return None
    parts = [f"{COUNTS[n][0]} {number(v['median'], COUNTS[n][1])}" for n, v in m.items()]
    return "exact counts (median per iteration): " + "; ".join(parts)
