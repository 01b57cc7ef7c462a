"""Parsers for the forms in which ZFS publishes kstats. Formats: docs/reference/anchors.md §4.

- SPL named kstat (OpenZFS on Linux, /proc/spl/kstat/zfs/arcstats): a raw header line, a
  `name type data` line, then `name type value` rows; type 7 is a string.
- SPL raw table (/proc/spl/kstat/zfs/<pool>/txgs): a raw header line, a column header, rows.
- sysctl (FreeBSD, `sysctl -q kstat.zfs.misc.arcstats`): `kstat.zfs.misc.arcstats.hits: 123`.
- zfs-fuse (/zfs-kstat/zfs/arcstats/<field>): one file per field holding a decimal value.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..errors import InputError

STRING_TYPE = "7"


def _number(text: str) -> float | int | None:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


def parse_named(text: str, source: str = "kstat") -> dict[str, float]:
    """A named SPL kstat as {name: number}; string fields (dataset_name) are left out."""
    lines = text.splitlines()
    if len(lines) < 2 or lines[1].split()[:3] != ["name", "type", "data"]:
        raise InputError("not an SPL named kstat (no 'name type data' header)", file=source, line=2)
    out: dict[str, float] = {}
    for i, line in enumerate(lines[2:], start=3):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 3:
            raise InputError(f"expected 'name type value', got {line!r}", file=source, line=i)
        name, typ, value = parts[0], parts[1], parts[2]
        if typ == STRING_TYPE:
            continue
        num = _number(value)
        if num is None:
            raise InputError(f"value of {name} is not a number: {value!r}", file=source, line=i)
        out[name] = num
    return out


def parse_named_strings(text: str) -> dict[str, str]:
    """String fields of a named kstat (type 7), e.g. an objset kstat's dataset_name."""
    out: dict[str, str] = {}
    for line in text.splitlines()[2:]:
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] == STRING_TYPE:
            out[parts[0]] = parts[2].strip()
    return out


@dataclass
class Txg:
    txg: int
    birth: int          # hrtime, ns
    state: str          # B O Q W S C
    ndirty: int
    nread: int
    nwritten: int
    reads: int
    writes: int
    otime: int          # ns open
    qtime: int          # ns quiescing
    wtime: int          # ns waiting for sync
    stime: int          # ns syncing


TXG_COLUMNS = ("txg", "birth", "state", "ndirty", "nread", "nwritten", "reads", "writes",
               "otime", "qtime", "wtime", "stime")


def parse_txgs(text: str, source: str = "txgs") -> list[Txg]:
    """/proc/spl/kstat/zfs/<pool>/txgs rows, by the column header (not by position)."""
    lines = text.splitlines()
    hdr_i = next((i for i, ln in enumerate(lines) if ln.split()[:1] == ["txg"]), None)
    if hdr_i is None:
        raise InputError("no 'txg birth state …' column header", file=source, line=1)
    cols = lines[hdr_i].split()
    missing = [c for c in TXG_COLUMNS if c not in cols]
    if missing:
        raise InputError(f"txgs header lacks {', '.join(missing)}", file=source, line=hdr_i + 1)
    idx = {c: cols.index(c) for c in TXG_COLUMNS}
    out: list[Txg] = []
    for n, line in enumerate(lines[hdr_i + 1:], start=hdr_i + 2):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < len(cols):
            raise InputError(f"short txgs row: {line!r}", file=source, line=n)
        vals = {}
        for c in TXG_COLUMNS:
            v = parts[idx[c]]
            if c == "state":
                vals[c] = v
            else:
                num = _number(v)
                if not isinstance(num, int):
                    raise InputError(f"{c} is not an integer: {v!r}", file=source, line=n)
                vals[c] = num
        out.append(Txg(**vals))
    return out


def parse_sysctl(text: str, prefix: str, source: str = "sysctl") -> dict[str, float]:
    """`sysctl` lines `prefix.name: value` as {name: number}; non-numeric values are skipped."""
    out: dict[str, float] = {}
    dotted = prefix.rstrip(".") + "."
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            key, sep, value = line.partition("=")
        if not sep:
            raise InputError(f"expected 'name: value', got {line!r}", file=source, line=i)
        key = key.strip()
        if not key.startswith(dotted):
            continue
        num = _number(value.strip())
        if num is not None:
            out[key[len(dotted):]] = num
    return out


ZDB_TXG_RE = re.compile(r"^\s*txg = (\d+)\s*$", re.MULTILINE)


def parse_zdb_txg(text: str) -> int | None:
    """The last synced txg from `zdb -u POOL` (the uberblock's `txg = N`), or None."""
    m = ZDB_TXG_RE.search(text)
    return int(m.group(1)) if m else None


def read_field_dir(path: str) -> dict[str, float]:
    """zfs-fuse's kstat form: a directory with one file per field, each a decimal number."""
    out: dict[str, float] = {}
    for name in sorted(os.listdir(path)):
        try:
            with open(os.path.join(path, name), encoding="ascii") as f:
                num = _number(f.read().strip())
        except (OSError, UnicodeDecodeError):
            continue
        if num is not None:
            out[name] = num
    return out


TASKQ_SUMMARY_RE = re.compile(r"^(\S+)\s*\|\s*(\d+)\s*\[\s*(\d+)\s+(\d+)\s*\]\s*(\d+)\s*\|"
                              r"\s*(\d+)\s*\[\s*(\d+)\s+(\d+)\s*\]\s*(\d+)\s*$")
TASKQ_FIELDS = ("threads", "active", "idle", "max", "pending", "normal", "high", "delayed")


def parse_taskq_summary(text: str, source: str = "taskq/summary") -> dict[str, dict[str, int]]:
    """/proc/spl/kstat/taskq/summary (OpenZFS 2.2+): per taskq instance (`z_wr_iss.0`) its threads
    (total, active, idle, max) and tasks on queue (pending, of them normal and high priority, and
    delayed), by the table's header line."""
    lines = text.splitlines()
    hdr = next((i for i, ln in enumerate(lines) if ln.split()[:2] == ["taskq", "name"]), None)
    if hdr is None or "pend" not in lines[hdr] or "dly" not in lines[hdr]:
        raise InputError("no 'taskq name | tot [act idl] max | pend [ norm high] dly' header", file=source, line=1)
    out: dict[str, dict[str, int]] = {}
    for n, line in enumerate(lines[hdr + 1:], start=hdr + 2):
        if not line.strip() or set(line.replace("|", "").strip()) <= {"-", " "}:
            continue
        m = TASKQ_SUMMARY_RE.match(line.strip())
        if m is None:
            raise InputError(f"not a taskq summary row: {line!r}", file=source, line=n)
        out[m.group(1)] = dict(zip(TASKQ_FIELDS, (int(x) for x in m.groups()[1:])))
    return out


# ---------------------------------------------------------------- CPU time (/proc, Linux)
USER_HZ = 100                 # /proc/stat's and /proc/PID/stat's tick on Linux, whatever the kernel's HZ

# kernel threads of the zfs and spl modules, by the start of their name (comm, at most 15 chars)
ZFS_THREADS = ("txg_", "z_", "zthr_", "receive_writer", "dp_sync_taskq", "dp_zil_clean", "spa_", "arc_", "dbu_",
               "dbuf_", "l2arc_", "mmp", "zil_", "zvol", "metaslab_", "vdev_", "zfs_", "dsl_", "spl_", "sysevent")


def busy_seconds(proc_stat: str) -> float:
    """Every CPU's busy time in seconds from /proc/stat's first line (cpu user nice system idle
    iowait irq softirq steal …): user + nice + system + irq + softirq."""
    lines = proc_stat.splitlines()
    first = lines[0].split() if lines else []
    if not first or first[0] != "cpu":
        raise ValueError("/proc/stat: its first line is not the all-CPU line")
    f = [int(x) for x in first[1:9]] + [0] * 8
    user, nice, system, _idle, _iowait, irq, softirq = f[:7]
    return (user + nice + system + irq + softirq) / USER_HZ


def cp_time_busy(cp_time: str, stathz: int) -> float:
    """Every CPU's busy time in seconds on FreeBSD, from `sysctl -n kern.cp_time`: CPUSTATES (5)
    counters of the statistics clock's ticks, summed over every CPU, in sysctl(8)'s array form,
    space-separated: user nice system interrupt idle. Busy: all but idle, at stathz ticks a second."""
    f = cp_time.split()
    if len(f) != 5 or not all(x.isdigit() for x in f) or stathz <= 0:
        raise ValueError(f"kern.cp_time: expected 5 tick counters, got {cp_time.strip()[:80]!r}")
    user, nice, system, intr, _idle = (int(x) for x in f)
    return (user + nice + system + intr) / stathz


def stathz(clockrate: str) -> int:
    """The statistics clock's rate from `sysctl -n kern.clockrate` (FreeBSD: "{ hz = 100, tick =
    10000, profhz = 8128, stathz = 127 }"): the rate kern.cp_time counts at."""
    m = re.search(r"\bstathz = (\d+)", clockrate)
    if m is None or int(m.group(1)) <= 0:
        raise ValueError(f"kern.clockrate: no stathz in {clockrate.strip()[:80]!r}")
    return int(m.group(1))


def thread_name(comm: str) -> str:
    """A thread's name without its instance number (z_wr_iss_3 -> z_wr_iss)."""
    return re.sub(r"(_\d+)+$", "", comm)


def zfs_threads(stats: str) -> dict[str, float]:
    """CPU seconds of the kernel's ZFS threads by name, from /proc/PID/stat lines (pid (comm) state
    ppid … utime stime …): kernel threads (parent kthreadd, pid 2) whose name is a ZFS one."""
    out: dict[str, float] = {}
    for ln in stats.splitlines():
        if "(" not in ln or ")" not in ln:
            continue
        comm = ln[ln.index("(") + 1:ln.rindex(")")]
        rest = ln[ln.rindex(")") + 2:].split()
        if len(rest) < 13 or rest[1] != "2" or not comm.startswith(ZFS_THREADS):
            continue
        name = thread_name(comm)
        out[name] = out.get(name, 0.0) + (int(rest[11]) + int(rest[12])) / USER_HZ
    return out
