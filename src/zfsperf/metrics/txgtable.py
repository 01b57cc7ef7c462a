"""The per-txg table of a case (Delphix's txg.py, read from the pool's `txgs` kstat on kernel
OpenZFS): every transaction group the pool committed while the workload ran, and the distribution of
how long each synced, how long it stayed open (the time between syncs), how long it waited to sync,
and how much it dirtied and wrote. Context for a verdict, never judged: it tells *why* a write
workload changed (syncs that take longer, txgs that close sooner under a dirty-data limit).

The kstat keeps the last `zfs_txg_history` txgs (100 by default): a case that committed more says
how many it saw. zfs-fuse has no such kstat, and the table is said to be unavailable there. The
write throttle's delay is not in this kstat (it is `dmu_tx_assign`'s histogram).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..targets.kstat import Txg

MS, MIB = 1e-6, 1.0 / 2 ** 20
# name -> (what it is, the Txg fields it adds, scale, unit)
QUANTITIES: dict[str, tuple[str, tuple[str, ...], float, str]] = {
    "sync_ms": ("syncing", ("stime",), MS, "ms"),
    "open_ms": ("open (between syncs)", ("otime",), MS, "ms"),
    "wait_ms": ("quiescing and waiting to sync", ("qtime", "wtime"), MS, "ms"),
    "dirty_mib": ("dirty data", ("ndirty",), MIB, "MiB"),
    "written_mib": ("written", ("nwritten",), MIB, "MiB"),
}
COLUMNS = ("txg", *QUANTITIES)
UNAVAILABLE = "no txgs kstat on this target (zfs-fuse: pool v23 keeps no per-txg history)"


def rows_after(txgs: list[Txg], after: int | None) -> list[list[float]]:
    """The committed txgs newer than `after` as table rows (COLUMNS), oldest first."""
    out = []
    for row in txgs:
        if row.state != "C" or (after is not None and row.txg <= after):
            continue
        out.append([row.txg, *(round(sum(getattr(row, f) for f in fields) * scale, 3)
                               for _what, fields, scale, _unit in QUANTITIES.values())])
    return out


def table(txgs: list[Txg] | None, after: int | None) -> dict[str, Any]:
    """A case's per-txg table: its rows and each quantity's median, p90 and max. `after` is the
    newest txg when the workload started; when the kstat no longer holds the txg after it, the
    table says how many it missed."""
    if txgs is None:
        return {"unavailable": UNAVAILABLE}
    rows = rows_after(txgs, after)
    out: dict[str, Any] = {"columns": list(COLUMNS), "rows": rows}
    oldest = min((t.txg for t in txgs), default=None)
    if after is not None and oldest is not None and oldest > after + 1:
        out["missed"] = oldest - after - 1        # committed, but gone from the kstat's history
    return out | {"summary": summarise(rows)}


def summarise(rows: list[list[float]]) -> dict[str, Any]:
    """count, and per quantity its median, p90 and max with the unit."""
    out: dict[str, Any] = {"count": len(rows)}
    for j, (name, (what, _fields, _scale, unit)) in enumerate(QUANTITIES.items(), start=1):
        vals = np.array([r[j] for r in rows], dtype=float)
        if len(vals):
            out[name] = {"what": what, "unit": unit, "median": round(float(np.median(vals)), 3),
                         "p90": round(float(np.percentile(vals, 90)), 3), "max": round(float(vals.max()), 3)}
    return out


def merged(tables: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The tables of a case's iterations as one distribution (None: no iteration had one)."""
    have = [t for t in tables if "rows" in t]
    if not have:
        why = next((t["unavailable"] for t in tables if "unavailable" in t), None)
        return {"unavailable": why} if why else None
    out = summarise([r for t in have for r in t["rows"]]) | {"iterations": len(have)}
    missed = sum(t.get("missed", 0) for t in have)
    if missed:
        out["missed"] = missed
    if any(t.get("shared") for t in have):
        out["shared"] = True
    return out


def number(x: float) -> str:
    """A per-txg figure to its useful digits: 2249 ms, 72.1 ms, 0.281 ms."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.3g}"


def line(summary: dict[str, Any] | None) -> str | None:
    """One line for a report: the count and each quantity's median / p90 / max."""
    if not summary:
        return None
    if "unavailable" in summary:
        return f"txgs: {summary['unavailable']}"
    its = summary.get("iterations")
    parts = [f"{summary['count']} committed" + (f" in {its} iteration{'s' if its != 1 else ''}" if its else "")]
    if summary.get("missed"):
        parts[0] += f" (and {summary['missed']} the kstat no longer held)"
    if summary.get("shared"):
        parts[0] += ", both sides' (one pool)"
    for name in QUANTITIES:
        q = summary.get(name)
        if q:
            parts.append(f"{q['what']} {number(q['median'])} / {number(q['p90'])} / {number(q['max'])} {q['unit']}")
    return "txgs (median / p90 / max per txg): " + "; ".join(parts)
