"""The CPU and memory of a machine, read from its own /proc/cpuinfo and /proc/meminfo, and the
filesystem under a path, from its /proc/self/mountinfo: the machine zfsperf runs on
(runinfo.hardware, runinfo.storage) and the one an ssh target measures (targets/ssh.py), whose
texts arrive over ssh."""

from __future__ import annotations

from typing import Any

MODEL_KEYS = ("model name", "hardware", "cpu model")     # x86, arm, mips and others


def cpu_model(cpuinfo: str) -> str | None:
    for ln in cpuinfo.splitlines():
        if ln.lower().startswith(MODEL_KEYS) and ":" in ln:
            return ln.split(":", 1)[1].strip() or None
    return None


def cpus(cpuinfo: str) -> int | None:
    """The logical CPUs /proc/cpuinfo lists (its `processor` entries)."""
    n = sum(1 for ln in cpuinfo.splitlines() if ln.split(":", 1)[0].strip() == "processor")
    return n or None


def memory_bytes(meminfo: str) -> int | None:
    for ln in meminfo.splitlines():
        if ln.startswith("MemTotal:"):
            try:
                return int(ln.split()[1]) * 1024
            except (IndexError, ValueError):
                return None
    return None


def facts(cpuinfo: str, meminfo: str, kernel: str | None, cmdline: str | None = None) -> dict[str, Any]:
    """The measured machine as run.json's target record keeps it: with its kernel's release and
    command line (/proc/cmdline: mitigations, isolated CPUs, a guest's norandmaps)."""
    return {"cpu_model": cpu_model(cpuinfo), "cpus": cpus(cpuinfo), "memory_bytes": memory_bytes(meminfo),
            "kernel": kernel, "kernel_cmdline": (cmdline or "").strip() or None}


def mount_of(real_path: str, mountinfo: str) -> dict[str, str] | None:
    """The deepest mount holding real_path (a path with its symlinks resolved) in a mountinfo
    text: its mount point, filesystem type and source device; None if no line holds it."""
    best: tuple[str, str, str] | None = None
    for ln in mountinfo.splitlines():
        pre, _, post = ln.partition(" - ")
        f, g = pre.split(), post.split()
        if len(f) < 5 or len(g) < 2:
            continue
        mnt = f[4].replace("\\040", " ")
        if (real_path == mnt or real_path.startswith(mnt.rstrip("/") + "/")) and (best is None or len(mnt) > len(best[0])):
            best = (mnt, g[0], g[1])
    return None if best is None else {"mount": best[0], "fstype": best[1], "device": best[2]}


def rotational_kind(rotational: str, disk_name: str) -> str | None:
    """A disk's kind from its queue/rotational flag and its kernel name: nvme, ssd or rotational."""
    rot = rotational.strip()
    if rot not in ("0", "1"):
        return None
    return "rotational" if rot == "1" else "nvme" if disk_name.startswith("nvme") else "ssd"
