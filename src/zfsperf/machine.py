"""The machine a run measures on: what will make its numbers noisy or unrepresentative, measured
over a short window rather than guessed (`zfsperf check`, and every run before and after its
cases), and the run lock that keeps two zfsperf runs from measuring each other.

Each finding says what was seen, why it matters and how to fix it, at one of two levels:
  busy  something else is using the machine now (CPU, steal, swap, disk I/O, another pool's
        I/O, another ZFS daemon or zfsperf run): numbers taken now are noisy. `run --check
        strict` refuses.
  note  a setting that makes numbers unrepresentative or hard to compare (frequency governor,
        turbo, transparent huge pages, ARC limits, ZFS tunables off their defaults).
Like pyperf's `system show`, but measured: "CPU busy" is what other processes used over the
window (this process's own tree is subtracted), from /proc/stat and /proc/PID/stat.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from .errors import InputError, ZfsperfError
from .targets.kstat import parse_named

BUSY, NOTE = "busy", "note"
CPU_BUSY_PCT = 10.0          # other processes' share of all CPUs above which numbers get noisy
STEAL_PCT = 5.0
LOAD_PER_CPU = 0.5           # 1-minute load average per CPU, with zfsperf itself idle
DISK_MIBS = 5.0              # MiB/s read+written by block devices while zfsperf is idle
RUN_WINDOW_S = 0.5           # a run's check before and after its cases (`zfsperf check`: 1 s)
BUSIER_POINTS = 10.0         # the end of a run: CPU busy from others rose by this many points
LOCK_PATH = Path("/run/zfsperf/run.lock")

# OpenZFS defaults of the tunables that shape write bursts and txg cadence (module parameters of
# 2.1-2.3, zfs(4)); one set to something else makes a run incomparable with one that did not
ZFS_DEFAULTS = {"zfs_txg_timeout": "5", "zfs_dirty_data_max_percent": "10", "zfs_dirty_data_sync_percent": "20",
                "zfs_vdev_async_write_max_active": "10", "zfs_vdev_async_write_min_active": "2",
                "zfs_delay_min_dirty_percent": "60"}


# The findings that describe the machine's load at the moment of the check, not its set-up: each
# by the start of its text (run.json keeps only the text). Their figures (a load average, a CPU
# share, a pid) differ between any two checks, so a set-up compares them by kind alone.
CONDITIONS = (("CPU busy from other processes", "CPU busy from other processes"),
              ("CPU steal time", "CPU steal time"), ("load average", "load average"),
              ("swapping", "swapping"), ("disks busy", "disks busy"),
              ("a zfsperf run is in progress", "a zfsperf run in progress"),
              ("another zfs-fuse daemon is working", "another zfs-fuse daemon working"),
              ("another zfs-fuse daemon is running, idle", "another zfs-fuse daemon, idle"))


def condition_kind(what: str) -> str | None:
    """The kind of a finding about the machine's load ("load average"), None for one about its
    set-up (a governor, turbo, THP, a tunable), whose text is the fact itself."""
    for prefix, kind in CONDITIONS:
        if what.startswith(prefix):
            return kind
    if what.startswith("pool ") and " has I/O in flight" in what:
        return "another pool with I/O in flight"
    return None


@dataclass
class Finding:
    level: str          # BUSY or NOTE
    what: str
    why: str
    fix: str

    def line(self) -> str:
        return f"[{self.level}] {self.what} -- {self.why}; {self.fix}"


@dataclass
class Check:
    window_s: float
    cpus: int
    cpu_busy_pct: float          # other processes, % of all CPUs
    steal_pct: float
    load1: float
    swap_pages_s: float
    disk_mibs: float
    findings: list[Finding] = field(default_factory=list)
    taken_at: float = 0.0

    @property
    def busy(self) -> list[Finding]:
        return [f for f in self.findings if f.level == BUSY]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------- readings
def _cpu_ticks() -> tuple[int, int, int]:
    """(busy, steal, total) jiffies of all CPUs from /proc/stat's first line."""
    f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    user, nice, system, idle, iowait, irq, softirq, steal = (f + [0] * 8)[:8]
    total = sum(f[:8])
    return user + nice + system + irq + softirq, steal, total


def _proc_stats() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, utime + stime jiffies) of every process."""
    out = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            text = (d / "stat").read_text()
        except OSError:
            continue
        rest = text[text.rindex(")") + 2:].split()
        out[int(d.name)] = (int(rest[1]), int(rest[11]) + int(rest[12]))
    return out


def _own_tree(stats: dict[int, tuple[int, int]], root: int) -> set[int]:
    tree, grew = {root}, True
    while grew:
        add = {pid for pid, (ppid, _t) in stats.items() if ppid in tree and pid not in tree}
        tree |= add
        grew = bool(add)
    return tree


def _vm(name: str) -> int:
    for ln in Path("/proc/vmstat").read_text().splitlines():
        k, _, v = ln.partition(" ")
        if k == name:
            return int(v)
    return 0


def _disk_sectors() -> int:
    """Sectors read + written by whole block devices (partitions and loop/ram devices left out)."""
    total = 0
    for ln in Path("/proc/diskstats").read_text().splitlines():
        f = ln.split()
        name = f[2]
        if name.startswith(("loop", "ram", "zram", "dm-")) or Path(f"/sys/block/{name}").exists() is False:
            continue
        total += int(f[5]) + int(f[9])
    return total


KSTAT_ROOT = Path("/proc/spl/kstat/zfs")


def pool_io_bytes(root: Path = KSTAT_ROOT) -> dict[str, int]:
    """Kernel OpenZFS: bytes read + written so far through each imported pool's datasets (the sum
    of its objset-* kstats' nread and nwritten). Empty where there is no kernel ZFS."""
    out: dict[str, int] = {}
    try:
        pools = [d for d in root.iterdir() if d.is_dir()]
    except OSError:
        return out
    for d in pools:
        total, seen = 0, False
        for f in d.glob("objset-*"):
            try:
                kv = parse_named(f.read_text(), str(f))
            except (OSError, ZfsperfError, ValueError):
                continue
            seen = True
            total += int(kv.get("nread", 0)) + int(kv.get("nwritten", 0))
        if seen:
            out[d.name] = total
    return out


def pool_findings(before: dict[str, int], after: dict[str, int], dt: float, window_s: float) -> list[Finding]:
    """Other pools with I/O in flight: a pool that moved more than DISK_MIBS over the window."""
    out = []
    for pool in sorted(after):
        rate = (after[pool] - before.get(pool, after[pool])) / max(dt, 1e-3) / 2 ** 20
        if rate > DISK_MIBS:
            out.append(Finding(BUSY, f"pool {pool} has I/O in flight: {rate:.1f} MiB/s read+written over "
                                     f"{window_s:g} s", "its I/O shares the ARC, the txg syncs and the disks with "
                                     "the measured pool", f"stop the load on {pool} (`zpool iostat {pool} 1`)"))
    return out


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _zfs_daemons(own: set[int]) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and int(d.name) not in own and _read(f"{d}/comm") == "zfs-fuse":
            out.append(int(d.name))
    return sorted(out)


def local_tunables(root: Path = Path("/sys/module/zfs/parameters")) -> dict[str, str]:
    """The kernel OpenZFS module parameters of this machine, if it has them (zfs-fuse has none)."""
    out = {}
    for name in ("zfs_arc_max", *ZFS_DEFAULTS):
        v = _read(str(root / name))
        if v is not None:
            out[name] = v
    return out


# ---------------------------------------------------------------------------- the check
def measure(window_s: float = 1.0, *, tunables: dict[str, str] | None = None,
            sleep: Callable[[float], None] = time.sleep) -> Check:
    """Measure the machine over window_s seconds (this process idle) and return the findings."""
    cpus = os.cpu_count() or 1
    me = os.getpid()
    b0, s0, t0 = _cpu_ticks()
    p0 = _proc_stats()
    sw0 = _vm("pswpin") + _vm("pswpout")
    d0 = _disk_sectors()
    io0 = pool_io_bytes()
    w0 = time.monotonic()
    sleep(window_s)
    b1, s1, t1 = _cpu_ticks()
    p1 = _proc_stats()
    sw1 = _vm("pswpin") + _vm("pswpout")
    d1 = _disk_sectors()
    io1 = pool_io_bytes()
    dt = max(time.monotonic() - w0, 1e-3)
    own = _own_tree(p1, me)
    own_ticks = sum(p1[p][1] - p0.get(p, (0, p1[p][1]))[1] for p in own if p in p1)
    total = max(t1 - t0, 1)
    busy = 100.0 * max(0, (b1 - b0) - own_ticks) / total
    steal = 100.0 * (s1 - s0) / total
    load1 = float((_read("/proc/loadavg") or "0").split()[0])
    c = Check(window_s=window_s, cpus=cpus, cpu_busy_pct=busy, steal_pct=steal, load1=load1,
              swap_pages_s=(sw1 - sw0) / dt, disk_mibs=(d1 - d0) * 512 / dt / 2 ** 20, taken_at=time.time())
    ticks = os.sysconf("SC_CLK_TCK")
    c.findings = _findings(c, own, local_tunables() if tunables is None else tunables)
    c.findings += pool_findings(io0, io1, dt, window_s)
    for pid in _zfs_daemons(own):             # another ZFS daemon: busy if it worked during the window
        used = 100.0 * (p1.get(pid, (0, 0))[1] - p0.get(pid, (0, 0))[1]) / ticks / dt
        c.findings.append(Finding(BUSY, f"another zfs-fuse daemon is working (pid {pid}, {used:.0f} % of a CPU)",
                                  "its pools' I/O shares the CPUs and disks with the measured pool",
                                  "stop its workload, or `zfsperf run -x` if it is a leftover of zfsperf")
                          if used > 2 else
                          Finding(NOTE, f"another zfs-fuse daemon is running, idle (pid {pid})", "idle now, but any "
                                  "I/O on its pools during the run would share the machine",
                                  "stop it if it is not needed"))
    return c


def _findings(c: Check, own: set[int], tunables: dict[str, str]) -> list[Finding]:
    out: list[Finding] = []
    if c.cpu_busy_pct > CPU_BUSY_PCT:
        out.append(Finding(BUSY, f"CPU busy from other processes: {c.cpu_busy_pct:.0f} % of {c.cpus} CPUs over "
                                 f"{c.window_s:g} s", "ZFS's own threads, fio and zfs receive compete with them "
                                 "for the CPUs, so figures vary with whatever they do",
                           "stop them, or wait until the machine is idle (`top` shows them)"))
    if c.steal_pct > STEAL_PCT:
        out.append(Finding(BUSY, f"CPU steal time: {c.steal_pct:.0f} %", "the hypervisor gives this VM's CPUs to "
                                 "others; throughput then follows the neighbours", "run on a dedicated host or "
                                 "pinned vCPUs"))
    if c.load1 > LOAD_PER_CPU * c.cpus:      # a 1-minute average lags: context, the window above measures
        out.append(Finding(NOTE, f"load average {c.load1:.2f} on {c.cpus} CPUs", "runnable or I/O-waiting tasks "
                                 "queued ahead of the benchmark in the last minute (a job that just ended "
                                 "still counts)", "wait for the load to fall (`uptime`)"))
    if c.swap_pages_s > 0:
        out.append(Finding(BUSY, f"swapping: {c.swap_pages_s:.0f} pages/s", "the ARC and the workload are paged "
                                 "in and out; latencies follow the swap device", "free memory, or lower the ARC's "
                                 "limit"))
    if c.disk_mibs > DISK_MIBS:
        out.append(Finding(BUSY, f"disks busy: {c.disk_mibs:.1f} MiB/s read+written by others over "
                                 f"{c.window_s:g} s", "another pool or program is doing I/O on the disks the "
                                 "vdevs live on", "stop it (`iotop`, `zpool iostat`)"))
    holder = lock_holder()
    if holder and holder.get("pid") != os.getpid():
        out.append(Finding(BUSY, f"a zfsperf run is in progress (pid {holder.get('pid')}: "
                                 f"{' '.join(holder.get('argv') or [])})", "two runs measure each other",
                           "wait for it to end"))
    gov = sorted({g for g in (_read(str(p)) for p in Path("/sys/devices/system/cpu").glob(
        "cpu[0-9]*/cpufreq/scaling_governor")) if g})
    if gov and gov != ["performance"]:
        out.append(Finding(NOTE, f"CPU frequency governor {', '.join(gov)}", "the clock follows the load, so a "
                                 "short case runs at another speed than a long one",
                           "`cpupower frequency-set -g performance` for the run"))
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if no_turbo == "0" or boost == "1":
        out.append(Finding(NOTE, "turbo boost is on", "the clock depends on temperature and on how many cores "
                                 "are busy: thread sweeps and long runs drift", "turn it off for the run "
                                 "(intel_pstate/no_turbo=1 or cpufreq/boost=0)"))
    thp = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp and "[always]" in thp:
        out.append(Finding(NOTE, "transparent huge pages: always", "khugepaged compacts memory in the background "
                                 "and the ARC's allocations stall now and then",
                           "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"))
    mem = _meminfo_bytes("MemTotal")
    arc_max = tunables.get("zfs_arc_max")
    if mem and arc_max and arc_max.isdigit() and int(arc_max) > 0 and int(arc_max) > 0.75 * mem:
        out.append(Finding(NOTE, f"zfs_arc_max {int(arc_max) / 2**30:.1f} GiB of {mem / 2**30:.1f} GiB memory",
                           "the ARC can crowd out the workload's own memory", "lower zfs_arc_max"))
    for name, dflt in ZFS_DEFAULTS.items():
        v = tunables.get(name)
        if v is not None and v.strip() != dflt:
            out.append(Finding(NOTE, f"{name} = {v.strip()} (default {dflt})", "it changes txg cadence or write "
                                     "throttling: figures are not comparable with a default machine's",
                               f"record it with the results (zfsperf does), or set it back to {dflt}"))
    return out


def _meminfo_bytes(key: str) -> int | None:
    for ln in (_read("/proc/meminfo") or "").splitlines():
        k, _, v = ln.partition(":")
        if k == key:
            return int(v.split()[0]) * 1024
    return None


def busier(before: dict[str, Any] | None, after: Check) -> str | None:
    """What rose between the check before a run and the one after it, in a few words (None: nothing)."""
    if not before:
        return None
    parts = []
    if after.cpu_busy_pct - before["cpu_busy_pct"] >= BUSIER_POINTS:
        parts.append(f"CPU busy from others {before['cpu_busy_pct']:.0f} % -> {after.cpu_busy_pct:.0f} %")
    if after.steal_pct - before["steal_pct"] >= STEAL_PCT:
        parts.append(f"steal {before['steal_pct']:.0f} % -> {after.steal_pct:.0f} %")
    if after.swap_pages_s > 0 and before["swap_pages_s"] == 0:
        parts.append(f"swapping {after.swap_pages_s:.0f} pages/s")
    if after.disk_mibs - before["disk_mibs"] > DISK_MIBS:
        parts.append(f"disks {before['disk_mibs']:.1f} -> {after.disk_mibs:.1f} MiB/s")
    return "the machine got busier while the run ran: " + ", ".join(parts) if parts else None


# ---------------------------------------------------------------------------- the run lock
class RunLock:
    """One zfsperf run at a time on a machine: an exclusive flock on LOCK_PATH, held until the
    process ends (released by the kernel however it ends). The file names the holder."""

    def __init__(self, path: Path = LOCK_PATH) -> None:
        self.path = path
        self.fd: int | None = None

    def acquire(self, argv: list[str]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except PermissionError:              # not root (an ssh target's user): a lock of this user's
            self.path = Path(tempfile.gettempdir()) / f"zfsperf-{os.getuid()}" / "run.lock"
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            h = lock_holder(self.path) or {}
            raise InputError(f"another zfsperf run is in progress on this machine (pid {h.get('pid', '?')}: "
                             f"{' '.join(h.get('argv') or [])}): two runs would measure each other; wait for "
                             f"it to end", field="run") from None
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "argv": argv, "start": time.time()}).encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            os.close(self.fd)
            self.fd = None


def lock_holder(path: Path = LOCK_PATH) -> dict[str, Any] | None:
    """Who holds the run lock now (None: nobody)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None                                  # nobody holds it
        except BlockingIOError:
            pass
        try:
            return json.loads(Path(path).read_text() or "{}") or {"pid": "?"}
        except (OSError, ValueError):
            return {"pid": "?"}
    finally:
        os.close(fd)
