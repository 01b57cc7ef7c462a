"""OpenZFS on FreeBSD: `sysctl kstat.zfs.misc.<name>` for kstats, `vfs.zfs.*` for tunables, and
`kern.cp_time` (at `kern.clockrate`'s stathz) for the machine's busy CPU time."""

from __future__ import annotations

from .. import proc
from ..tunables import SysctlTunables
from .base import Target
from .kstat import Txg, cp_time_busy, parse_sysctl, parse_txgs, stathz


class OpenZfsFreeBsdTarget(Target):
    impl = "openzfs-freebsd"

    def __init__(self, log: proc.CommandLog = proc.NULL_LOG) -> None:
        super().__init__(log)
        self.tunables = SysctlTunables(log)
        self._stathz: int | None = None     # kern.clockrate's, read once

    def busy_cpu_seconds(self) -> float | None:
        """Every CPU's busy time so far (kern.cp_time's ticks but idle, over kern.clockrate's
        stathz), or None where the sysctls cannot be read. ZFS's own threads are not split out
        here (zfs_cpu: none)."""
        try:
            if self._stathz is None:
                res = self.run(["sysctl", "-n", "kern.clockrate"], log=proc.NULL_LOG)
                if not res.ok:
                    return None
                self._stathz = stathz(res.stdout)
            res = self.run(["sysctl", "-n", "kern.cp_time"], log=proc.NULL_LOG)
            return cp_time_busy(res.stdout, self._stathz) if res.ok else None
        except ValueError:
            return None

    def zfs_version(self) -> str:
        res = self.run(["sysctl", "-n", "vfs.zfs.version.module"], log=proc.NULL_LOG)
        return "OpenZFS " + res.stdout.strip() if res.ok else "OpenZFS (unknown)"

    def kstat_sources(self) -> list[str]:
        res = self.run(["sysctl", "-N", "kstat.zfs.misc"], log=proc.NULL_LOG)
        if not res.ok:
            return []
        return sorted({ln.split(".")[3] for ln in res.stdout.splitlines() if ln.count(".") >= 4})

    def kstat(self, name: str) -> dict[str, float] | None:
        res = self.run(["sysctl", "-q", f"kstat.zfs.misc.{name}"], log=proc.NULL_LOG)
        if not res.ok:
            return None
        try:
            return parse_sysctl(res.stdout, f"kstat.zfs.misc.{name}") or None
        except ValueError:
            return None

    def has_txgs(self) -> bool:
        return True

    def txgs(self, pool: str) -> list[Txg] | None:
        res = self.run(["sysctl", "-n", f"kstat.zfs.{pool}.txgs"], log=proc.NULL_LOG)
        if not res.ok:
            return None
        try:
            return parse_txgs(res.stdout, f"kstat.zfs.{pool}.txgs")
        except ValueError:
            return None
