"""OpenZFS on Linux: /proc/spl/kstat/zfs/…, /sys/module/zfs/parameters/…, zpool iostat -Hp.

`sysroot` lets tests (and a remote copy of those trees) point the target at a directory laid out
like / — e.g. a writable directory shaped like /sys/module/zfs/parameters for tunable tests.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from ..errors import InputError
from .. import proc
from ..tunables import FileTunables
from .base import Target
from .kstat import Txg, parse_named, parse_named_strings, parse_taskq_summary, parse_txgs, zfs_threads

KSTAT = "proc/spl/kstat/zfs"
TASKQ_SUMMARY = "proc/spl/kstat/taskq/summary"
PARAMS = "sys/module/zfs/parameters"


def emulation(read: Callable[[str], str]) -> str | None:
    """"tcg" on a QEMU machine without KVM (timings are CPU emulation, not speeds), "kvm" on QEMU
    with KVM, None elsewhere. QEMU names itself in the DMI tables; only KVM gives the guest its
    paravirtual clock. read(path relative to the root) gives a file's text."""
    try:
        vendor = read("sys/devices/virtual/dmi/id/sys_vendor").strip()
    except OSError:
        return None
    if vendor != "QEMU":
        return None
    try:
        clocks = read("sys/devices/system/clocksource/clocksource0/available_clocksource")
    except OSError:
        clocks = ""
    return "kvm" if "kvm-clock" in clocks.split() else "tcg"


def present(sysroot: str = "/") -> bool:
    return os.path.isdir(os.path.join(sysroot, KSTAT)) and os.path.isdir(os.path.join(sysroot, PARAMS))


class OpenZfsLinuxTarget(Target):
    impl = "openzfs-linux"

    def __init__(self, sysroot: str = "/", log: proc.CommandLog = proc.NULL_LOG) -> None:
        super().__init__(log)
        self.sysroot = Path(sysroot)
        self.tunables = self._make_tunables()
        self.accelerator = emulation(lambda rel: self.files.read_text(str(self._p(rel))))

    def _make_tunables(self) -> FileTunables:
        return FileTunables(str(self.sysroot / PARAMS), files=self.files)

    def _p(self, rel: str) -> Path:
        return self.sysroot / rel

    def zfs_version(self) -> str:
        try:
            return "OpenZFS " + self.files.read_text(str(self._p("sys/module/zfs/version"))).strip()
        except OSError:
            res = self.run(["zfs", "version"], log=proc.NULL_LOG)
            return res.stdout.splitlines()[0].strip() if res.ok and res.stdout else "OpenZFS (unknown)"

    def kstat_sources(self) -> list[str]:
        try:
            base = self._p(KSTAT)
            return sorted(e for e in self.files.listdir(str(base)) if self.files.is_file(str(base / e)))
        except OSError:
            return []

    def kstat(self, name: str) -> dict[str, float] | None:
        path = self._p(f"{KSTAT}/{name}")
        try:
            return parse_named(self.files.read_text(str(path)), str(path))
        except (OSError, ValueError):
            return None

    def pool_kstat_text(self, pool: str, name: str) -> str | None:
        try:
            return self.files.read_text(str(self._p(f"{KSTAT}/{pool}/{name}")))
        except OSError:
            return None

    def has_txgs(self) -> bool:
        return True

    def zil_counters(self, pool: str) -> dict[str, dict[str, float]] | None:
        """Each dataset's zil_* fields by its name, from its objset kstat (OpenZFS 2.2+; None
        before)."""
        try:
            names = sorted(e for e in self.files.listdir(str(self._p(f"{KSTAT}/{pool}"))) if e.startswith("objset-"))
        except OSError:
            return None
        out: dict[str, dict[str, float]] = {}
        for name in names:
            text = self.pool_kstat_text(pool, name)
            try:
                fields = parse_named(text, f"{pool}/{name}") if text is not None else {}
            except ValueError:
                continue                    # read half-way through a dataset's removal
            zil = {k: v for k, v in fields.items() if k.startswith("zil_")}
            if zil:
                out[parse_named_strings(text or "").get("dataset_name", name)] = zil
        return out if names and out else None

    def zfs_cpu(self) -> dict[str, float] | None:
        """The kernel's ZFS threads' CPU seconds by name (metrics/cpucost.py), from every process's
        /proc/PID/stat read at once (a fixed command: no input of anyone's in it)."""
        res = self.run(["sh", "-c", "cat /proc/[0-9]*/stat 2>/dev/null; true"], log=proc.NULL_LOG)
        threads = zfs_threads(res.stdout) if res.ok else {}
        return threads or None

    def taskqs(self) -> dict[str, dict[str, int]] | None:
        path = self._p(TASKQ_SUMMARY)
        try:
            return parse_taskq_summary(self.files.read_text(str(path)), str(path))
        except (OSError, ValueError, InputError):
            return None                      # before 2.2 there is no taskq kstat

    def txgs(self, pool: str) -> list[Txg] | None:
        text = self.pool_kstat_text(pool, "txgs")
        if text is None:
            return None
        try:
            return parse_txgs(text, f"{pool}/txgs")
        except ValueError:
            return None
