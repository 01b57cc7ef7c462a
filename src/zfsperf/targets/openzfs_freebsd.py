"""OpenZFS on FreeBSD: `sysctl kstat.zfs.misc.<name>` for kstats and `vfs.zfs.*` for tunables."""

from __future__ import annotations

from .. import proc
from ..tunables import SysctlTunables
from .base import Target
from .kstat import Txg, parse_sysctl, parse_txgs


class OpenZfsFreeBsdTarget(Target):
    impl = "openzfs-freebsd"

    def __init__(self, log: proc.CommandLog = proc.NULL_LOG) -> None:
        super().__init__(log)
        self.tunables = SysctlTunables(log)

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
