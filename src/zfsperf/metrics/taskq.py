"""The SPL taskqs that carry ZFS's I/O (OpenZFS 2.2+ on Linux, /proc/spl/kstat/taskq/summary),
sampled beside the other sources: tasks waiting in `z_wr_iss` (where compression and checksums
of written blocks run) while reads wait in `z_rd_int` is the direct signal of writes starving
reads (the compression-starvation study). Context, never a vote on steady state: they are kept in
each sample's `info`, and per case as the mean and peak of each queue while the workload ran.

A taskq has one instance per pool (`z_wr_iss.0`, `.1`, …) and the summary does not say which pool
an instance serves, so each name is the sum over its instances: on a machine with other pools
imported their tasks count too, and the summary says so.
"""

from __future__ import annotations

from typing import Any

WATCHED = ("z_wr_iss", "z_wr_int", "z_rd_iss", "z_rd_int")
KEPT = ("pending", "delayed", "active")


def sample(taskqs: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """One sample: per watched taskq name, its instances' pending and delayed tasks and active
    threads added up."""
    out: dict[str, dict[str, int]] = {}
    for inst, row in taskqs.items():
        name = inst.rsplit(".", 1)[0]
        if name in WATCHED:
            acc = out.setdefault(name, dict.fromkeys(KEPT, 0))
            for k in KEPT:
                acc[k] += row[k]
    return out


def summary(samples: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A case's queues over its samples: per taskq the mean and peak of pending tasks, the peak of
    delayed ones and the mean of active threads (None: no sample held taskqs)."""
    rows = [s["info"]["taskq"] for s in samples if (s.get("info") or {}).get("taskq")]
    if not rows:
        return None
    out: dict[str, Any] = {"samples": len(rows), "queues": {}}
    for name in WATCHED:
        vals = [r[name] for r in rows if name in r]
        if vals:
            pend = [v["pending"] for v in vals]
            out["queues"][name] = {"pending_mean": round(sum(pend) / len(pend), 2), "pending_max": max(pend),
                                   "delayed_max": max(v["delayed"] for v in vals),
                                   "active_mean": round(sum(v["active"] for v in vals) / len(vals), 2)}
    return out


def merged(summaries: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A case's iterations as one: means weighted by samples, peaks the largest."""
    have = [s for s in summaries if s and s.get("queues") is not None]
    if not have:
        return None
    n = sum(s["samples"] for s in have)
    out: dict[str, Any] = {"samples": n, "iterations": len(have), "queues": {}}
    if any(s.get("shared") for s in have):
        out["shared"] = True
    for name in WATCHED:
        parts = [(s["samples"], s["queues"][name]) for s in have if name in s["queues"]]
        if not parts:
            continue
        w = sum(k for k, _ in parts)
        out["queues"][name] = {
            "pending_mean": round(sum(k * q["pending_mean"] for k, q in parts) / w, 2),
            "pending_max": max(q["pending_max"] for _, q in parts),
            "delayed_max": max(q["delayed_max"] for _, q in parts),
            "active_mean": round(sum(k * q["active_mean"] for k, q in parts) / w, 2)}
    return out


def line(summary: dict[str, Any] | None) -> str | None:
    """One line for a report: each watched queue's pending tasks, mean and peak."""
    if not summary or not summary.get("queues"):
        return None
    parts = [f"{name} {q['pending_mean']:g} / {q['pending_max']}" + (f" ({q['delayed_max']} delayed)"
                                                                    if q["delayed_max"] else "")
             for name, q in summary["queues"].items()]
    whose = "every pool's instances" + (", both sides (one pool)" if summary.get("shared") else "")
    return f"taskqs (tasks pending, mean / peak over {summary['samples']} samples; {whose}): " + "; ".join(parts)
