"""Cross-checks: a case's headline quantity measured a second, independent way over the same
interval, recorded beside it with the margin they are expected to agree within.

No benchmark tool checks itself: a receive's bytes per second come from zfsperf's own clock and
the stream's length; the pool's space accounting, `zpool iostat` and the ARC's raw counters are
kept by ZFS itself. When the two disagree by more than the margin, the case says so (a warning in
the run and in the report), so that a wrong figure is noticed rather than published.

A margin of None means the two are not expected to agree (the ARC or compression stands between
them): the pair is recorded for the reader, with the reason, and judged by nobody.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..results.record import CrossCheck
from ..results.stats import summarise
from . import arc

__all__ = ["CrossCheck", "arc_hit_ratio", "pool_bandwidth", "pool_ops", "stream_blocks", "summary", "zdb_blocks"]

ARC_MARGIN_POINTS = 2.0      # percentage points between the sampled and the counted hit ratio


def zdb_blocks(text: str) -> int | None:
    """Data blocks a dataset holds, from `zdb -dddd DATASET`: per object (id >= 1; the meta-dnode
    and the accounting objects -1, -2, -3 are not sent in a stream) its filled blocks, maxblkid + 1
    times zdb's %full (the share of block pointers that are not holes; an embedded block -- a small
    metadata block OpenZFS keeps inside its pointer, allocating nothing -- is filled). The column
    is found by the header (OpenZFS 2.x adds dnsize before it). None when nothing could be read."""
    total, full, seen = 0, None, False
    col: int | None = None
    for ln in text.splitlines():
        tok = ln.split()
        if not tok:
            continue
        if tok[0] == "Object" and "%full" in tok:
            col = tok.index("%full")
            continue
        if tok[0].isdigit() and col is not None and len(tok) > col:
            try:
                full = float(tok[col]) / 100 if int(tok[0]) >= 1 else None
            except ValueError:
                full = None
            continue
        if tok[0] == "dnode" and len(tok) == 3 and tok[1] == "maxblkid:" and tok[2].isdigit():
            seen = True
            if full is not None:
                n = int(tok[2]) + 1
                total += n if full >= 1 else round(full * n)
            full = None
    return total if seen else None


def stream_blocks(writes: int, on_disk: int | None, judged: bool) -> CrossCheck | None:
    """A received stream's WRITE records (zfsperf's walker, from the stream's headers) vs the data
    blocks its dataset holds afterwards (zdb, from the pool's own structures): each WRITE of a full
    stream of files without holes writes one block."""
    if on_disk is None:
        return None
    how = ("the stream's WRITE records (zfsperf's walker) vs the data blocks the received dataset holds "
           "(zdb -dddd: maxblkid + 1 per object)")
    if not judged:
        how += ("; not judged: a stream zfsperf did not make may hold holes, embedded or deduplicated "
                "blocks, which WRITE records do not count one to one")
    return CrossCheck("stream WRITE records vs blocks on disk", "blocks", float(writes), float(on_disk), "blocks",
                      0.0 if judged else None, how)


def arc_hit_ratio(samples: list[dict[str, Any]], start: Mapping[str, float] | None,
                  end: Mapping[str, float] | None) -> CrossCheck | None:
    """The sampler's ARC hit ratio over the case (its per-interval ratios, each weighted by the
    accesses of its interval, as the series records them) vs the raw arcstats counters read at the
    case's start and end. None when either side saw no access.

    The sampled intervals and the counted one do not share their edges: the first sample after the
    start measured an interval that began before it (so it is left out), and the accesses after the
    last sample (the workload's end, the reads of its results) are in the counters only. Where the
    counters saw a share u of accesses no kept interval covers, the two ratios can differ by up to
    u * max(s, 1 - s) (s the sampled ratio) whatever those accesses were: the margin is that, and
    never under ARC_MARGIN_POINTS. A short case on a pool with few accesses (zfs-fuse's ~200 a
    second) has a large u; a disagreement then means the sampler and the counters define or count
    the ratio differently, not that the edges fell unluckily."""
    if not start or not end:
        return None
    counted = arc.hit_ratio(start, end)
    ratios = [(s["metrics"]["arc_hit_ratio"], s.get("info", {}).get("arc_accesses"))
              for s in samples if (s.get("metrics") or {}).get("arc_hit_ratio") is not None][1:]
    weighted = [(r, w) for r, w in ratios if w]
    if counted is None or not ratios:
        return None
    margin = ARC_MARGIN_POINTS
    if weighted and len(weighted) == len(ratios):
        sampled = sum(r * w for r, w in weighted) / sum(w for _r, w in weighted)
        total = arc.accesses(start, end) or 0.0
        uncovered = max(0.0, 1 - sum(w for _r, w in weighted) / total) if total > 0 else 1.0
        margin = max(margin, round(100 * uncovered * max(sampled, 1 - sampled), 2))
        how = (f"access-weighted mean of the {len(ratios)} sampled intervals after the start vs arcstats "
               f"counters at start and end ({100 * uncovered:.0f} % of the counted accesses outside those "
               "intervals: the margin is what they can move the ratio, at least "
               f"{ARC_MARGIN_POINTS:g} points)")
    else:
        sampled = sum(r for r, _w in ratios) / len(ratios)
        how = "mean of the sampled intervals after the start vs arcstats counters at start and end"
    return CrossCheck("ARC hit ratio: sampler vs arcstats counters", "arc_hit_ratio", sampled * 100,
                      counted * 100, "%", margin, f"{how}; {arc.hit_ratio_definition(end)}")


POOL_BW_MARGIN_PCT = 5.0     # metadata writes (+2 % measured) and the 1 s reports' edges
POOL_MIN_REPORTS = 5         # fewer one-second pool reports than this: shown, not judged
WRITE_CHECK_MIN_S = 30       # fio writes: judged against zpool iostat only over at least this long


def bandwidth_obstacles(workload: str, fields: Mapping[str, Any], props: Mapping[str, str], seconds: float
                        ) -> str | None:
    """What stands between a workload's bandwidth and the pool's, in words, or None when nothing
    does. props: the dataset's compression and primarycache as ZFS reports them."""
    if set(props) != {"compression", "primarycache"}:
        return "the dataset's compression and primarycache could not be read"
    rw = str(fields.get("rw", ""))
    why = []
    if props["compression"] != "off":
        why.append(f"compression={props['compression']}")
    if props["primarycache"] == "all" and workload == "fio" and ("read" in rw or rw in ("rw", "randrw")):
        why.append("primarycache=all (reads may come from the ARC)")
    if workload == "receive":
        why.append("a receive's writes reach the pool in txg syncs that straddle its rounds")
    writes = "write" in rw or rw in ("rw", "randrw", "trim", "randtrim")
    if workload == "fio" and writes and seconds < WRITE_CHECK_MIN_S:
        why.append(f"buffered writes reach the pool at txg syncs: over {seconds:g} s (< {WRITE_CHECK_MIN_S} s) "
                   "the unsynced tail is a large share (measured: -5.5 % at 5 s)")
    return ", ".join(why) or None


def ops_obstacles(fields: Mapping[str, Any], props: Mapping[str, str]) -> str | None:
    """Why a fio case's I/Os are not one pool operation each, or None when they are: random reads
    with the data uncached and the metadata cached (`primarycache=metadata`)."""
    rw = str(fields.get("rw", ""))
    if rw != "randread":
        return f"rw={rw}: the pool gathers writes into txgs and aggregates and prefetches sequential I/O"
    cache = props.get("primarycache", "?")
    if cache != "metadata":
        return (f"primarycache={cache}: only with metadata cached and data not is one read one pool read "
                "(with none, every read also reads its indirect blocks)")
    return None


def _pool_rate(samples: list[dict[str, Any]], metric: str, scale: float, what: str, name: str, figure: str,
               ours: float, unit: str, why_not_judged: str | None, judged_because: str) -> CrossCheck | None:
    """The workload's rate vs the mean of a pool metric (times scale) over the samples from the
    first to the last in which the workload moved data; judged unless why_not_judged names what
    stands between them or the pool reported fewer than POOL_MIN_REPORTS times.

    The stretch, not only the samples that saw the workload move: fio reports once a second and
    `zpool iostat` once a second, so at a shorter sample interval a running fio shows 0 MiB/s in
    every other sample, and the pool's report may land in just those (a 5 s fio write gave one
    sample with both, and no check at all).

    The workload's figure covers its whole runtime, the pool's reports the whole seconds inside
    the stretch: a 4 s fio random read on zfs-fuse gave 2-3 reports 7 % apart second to second,
    their mean 3 % (quiet machine) to 6 % (two busy cores beside it) off fio's. So the margin is
    POOL_BW_MARGIN_PCT, or the half-width of the 95 % interval of the pool's mean over its reports
    where that is wider (two busy cores beside a 10 s read: 5-12 %)."""
    moved = [i for i, s in enumerate(samples) if (s.get("metrics") or {}).get("workload_mibs")]
    stretch = [s.get("metrics") or {} for s in samples[moved[0]:moved[-1] + 1]] if moved else []
    pool = [m[metric] * scale for m in stretch if m.get(metric) is not None]
    if len(pool) < 2 or not ours:
        return None
    spread = summarise(pool)
    how = (f"zpool iostat read+write {what} over the {len(pool)} reports from the first to the last sample "
           "the workload moved data in; ")
    if why_not_judged is None and len(pool) < POOL_MIN_REPORTS:
        why_not_judged = (f"{len(pool)} one-second reports (< {POOL_MIN_REPORTS}): the edges of a short case "
                          "are a large share")
    margin = None
    if why_not_judged:
        how += f"not judged: {why_not_judged}"
    else:
        half = 100 * (spread.ci_high - spread.mean) / spread.mean if spread.mean else 0.0
        margin = round(max(POOL_BW_MARGIN_PCT, half), 2)
        how += (f"{judged_because}; margin {POOL_BW_MARGIN_PCT:g} % or the pool mean's 95 % interval "
                f"(±{half:.1f} %), the wider")
    return CrossCheck(name, figure, ours, spread.mean, unit, margin, how)


def pool_bandwidth(samples: list[dict[str, Any]], figure: str, ours: float, why_not_judged: str | None
                   ) -> CrossCheck | None:
    """The workload's MiB/s (its own count over its own runtime) vs the pool's read+write MiB/s
    from `zpool iostat`. Judged only where nothing stands between them: why_not_judged names what
    does (the ARC, compression), and then the pair is shown, not judged."""
    return _pool_rate(samples, "pool_mibs", 1.0, "MiB/s", "workload vs pool bandwidth", figure, ours, "MiB/s",
                      why_not_judged, "the pool also writes metadata and its reports cover whole seconds")


def pool_ops(samples: list[dict[str, Any]], figure: str, ours: float, why_not_judged: str | None
             ) -> CrossCheck | None:
    """The workload's IOPS vs the pool's read+write operations per second from `zpool iostat`.
    One random read past the ARC is one pool read of its block; anything else (writes gathered
    into txgs, sequential reads aggregated and prefetched, the ARC) breaks the one-to-one, and
    why_not_judged says so."""
    return _pool_rate(samples, "pool_kops", 1000.0, "operations/s", "workload vs pool operations", figure, ours,
                      "ops/s", why_not_judged, "one random read past the ARC is one pool read; the reports "
                      "cover whole seconds")


def summary(checks: list[CrossCheck]) -> list[str]:
    """The disagreements among recorded checks, one line each."""
    return [c.describe() for c in checks if c.agrees is False]
