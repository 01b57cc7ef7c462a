"""The CPU and memory of a machine, read from its own /proc/cpuinfo and /proc/meminfo: the machine
zfsperf runs on (runinfo.hardware) and the one an ssh target measures (targets/ssh.py), whose
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


def facts(cpuinfo: str, meminfo: str, kernel: str | None) -> dict[str, Any]:
    """The measured machine as run.json's target record keeps it."""
    return {"cpu_model": cpu_model(cpuinfo), "cpus": cpus(cpuinfo), "memory_bytes": memory_bytes(meminfo),
            "kernel": kernel}
