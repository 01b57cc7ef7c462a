"""What a case's work cost in CPU (issue 73, 1): on a machine with cores to spare a change that
removes lock contention barely moves throughput but moves the CPU spent per byte.

Over a case's counted workload three readings are taken at its start and end (alone), or at each
of its turns' (taking turns: a side's figures over the time it had its turns, summed by over_turns;
a duet at once has none, its sides share the time):
- the machine's: every CPU's busy time from the target's /proc/stat (user, nice, system, irq,
  softirq; not idle, iowait or steal);
- zfsperf's own on that machine: this process (its sampler, its workload driver's threads) and the
  sampler's `zpool iostat`, subtracted (a target zfsperf drives from another machine, an ssh host
  or the guest, has none there but its sampler's reads over ssh, which stay in);
- ZFS's own threads where the target shows them: the kernel's ZFS threads by name (txg_sync,
  z_wr_iss, receive_writer, …) on kernel OpenZFS, the zfs-fuse daemon on zfs-fuse.
The figures are the machine's less zfsperf's, per GiB the workload moved and per thousand of its
operations (a receive's WRITE records, fio's I/Os), and the ZFS threads' per GiB: lower is
better, judged A against B like any figure. The load generator's own CPU (fio's user time, `zfs
receive`'s) is in them: the same for A and B at the same work."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


GIB = float(2 ** 30)
FIGURES = {"cpu_s_per_gib": "s/GiB", "cpu_ms_per_kop": "ms/kop", "zfs_cpu_s_per_gib": "s/GiB"}
CPU_FIGURE_UNITS = tuple(FIGURES.items())      # the workloads' figure_units entries


@dataclass
class Reading:
    busy_s: float                                  # the machine's busy CPU time
    own_s: float                                   # zfsperf's own on that machine
    zfs: dict[str, float] = field(default_factory=dict)     # ZFS thread name -> CPU seconds (empty: none shown)


def cost(before: Reading, after: Reading, nbytes: float, ops: float) -> tuple[dict[str, tuple[float, str]],
                                                                               dict[str, Any]]:
    """The case's CPU figures (name -> (value, unit)) and what the record keeps of how: the
    machine's seconds, zfsperf's, ZFS's threads' (the busiest first), zfsperf's share."""
    machine = max(0.0, after.busy_s - before.busy_s)
    own = max(0.0, after.own_s - before.own_s)
    work = max(0.0, machine - own)
    zfs = {n: round(after.zfs[n] - before.zfs.get(n, 0.0), 2) for n in after.zfs}
    zfs = {n: s for n, s in sorted(zfs.items(), key=lambda kv: -kv[1]) if s > 0}
    figs: dict[str, tuple[float, str]] = {}
    if nbytes > 0:
        figs["cpu_s_per_gib"] = (work / (nbytes / GIB), FIGURES["cpu_s_per_gib"])
        if after.zfs:
            figs["zfs_cpu_s_per_gib"] = (sum(zfs.values()) / (nbytes / GIB), FIGURES["zfs_cpu_s_per_gib"])
    if ops > 0:
        figs["cpu_ms_per_kop"] = (1000 * work / (ops / 1000), FIGURES["cpu_ms_per_kop"])
    how = {"machine_s": round(machine, 2), "zfsperf_s": round(own, 2), "work_s": round(work, 2),
           "zfsperf_share_pct": round(100 * own / machine, 1) if machine else None,
           "bytes": nbytes, "ops": ops}
    if after.zfs:
        how["zfs_s"] = round(sum(zfs.values()), 2)
        how["zfs_threads"] = dict(list(zfs.items())[:8])
    return figs, how


def over_turns(turns: list[tuple[Reading, Reading]]) -> tuple[Reading, Reading]:
    """A side's turns as one reading pair: each turn's seconds (the machine's, zfsperf's, each ZFS
    thread's) summed, from zero, so that cost() gives the side's figures over its own turns."""
    zfs: dict[str, float] = {}
    for a, b in turns:
        for n, sec in b.zfs.items():
            zfs[n] = zfs.get(n, 0.0) + sec - a.zfs.get(n, 0.0)
    return (Reading(0.0, 0.0, {n: 0.0 for n in zfs}),
            Reading(sum(b.busy_s - a.busy_s for a, b in turns), sum(b.own_s - a.own_s for a, b in turns), zfs))


def merged(hows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A case's CPU over its iterations: the mean of each iteration's seconds (and of zfsperf's
    share), ZFS's threads by name the same way. None when no iteration recorded any."""
    if not hows:
        return None
    n = len(hows)
    out: dict[str, Any] = {"iterations": n}
    for k in ("machine_s", "zfsperf_s", "work_s", "zfs_s"):
        vals = [h[k] for h in hows if h.get(k) is not None]
        if vals:
            out[k] = round(sum(vals) / len(vals), 2)
    out["zfsperf_share_pct"] = round(100 * out["zfsperf_s"] / out["machine_s"], 1) if out.get("machine_s") else None
    threads: dict[str, float] = {}
    for h in hows:
        for name, sec in (h.get("zfs_threads") or {}).items():
            threads[name] = threads.get(name, 0.0) + sec / n
    if threads:
        out["zfs_threads"] = {k: round(v, 2) for k, v in sorted(threads.items(), key=lambda kv: -kv[1])}
    return out


def line(cpu: dict[str, Any] | None) -> str | None:
    """The report's line for a case's CPU (merged over its iterations)."""
    if not cpu:
        return None
    text = (f"CPU (mean of {cpu['iterations']} iteration{'s' if cpu['iterations'] != 1 else ''}) over the counted "
            f"workload: the machine {cpu.get('machine_s', 0):g} s, of it zfsperf's own "
            f"{cpu.get('zfsperf_s', 0):g} s ({cpu.get('zfsperf_share_pct') or 0:g} %, left out of the figures)")
    if "zfs_s" in cpu:
        top = ", ".join(f"{n} {s:g} s" for n, s in list((cpu.get("zfs_threads") or {}).items())[:4])
        text += f"; ZFS's threads {cpu['zfs_s']:g} s" + (f" ({top})" if top else "")
    return text
