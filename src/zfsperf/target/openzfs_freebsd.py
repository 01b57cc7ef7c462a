"""OpenZFS on FreeBSD: `sysctl kstat.zfs.misc.<name>` for kstats and `vfs.zfs.*` for tunables."""

from __future__ import annotations

from .. import proc
from ..errors import TargetError, Unavailable
from ..tunables import REGISTRY, canonical_from_freebsd, freebsd_name
from .base import Target
from .kstat import Txg, parse_sysctl, parse_txgs


class OpenZfsFreeBsdTarget(Target):
    impl = "openzfs-freebsd"

    def __init__(self, log: proc.CommandLog = proc.NULL_LOG) -> None:
        super().__init__(log)
        self.params = SysctlParams(log)

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


class SysctlParams:
    """FreeBSD tunables: `sysctl vfs.zfs.<scope>.<name>`, by canonical (Linux) name."""

    def __init__(self, log: proc.CommandLog = proc.NULL_LOG, runner=None, spec: str = "sysctl:local") -> None:
        self.log = log
        self.spec = spec
        self._run = runner or proc.run      # an ssh target passes its own

    def names(self) -> list[str]:
        res = self._run(["sysctl", "-N", "vfs.zfs"], log=proc.NULL_LOG)
        if not res.ok:
            return []
        names = {canonical_from_freebsd(ln.strip()) for ln in res.stdout.splitlines()}
        return sorted(n for n in names if n)

    def has(self, name: str) -> bool:
        sysctl = freebsd_name(name)
        return sysctl is not None and self._run(["sysctl", "-n", sysctl], log=proc.NULL_LOG).ok

    def get(self, name: str) -> str:
        sysctl = freebsd_name(name)
        if sysctl is None:
            raise Unavailable(f"no FreeBSD sysctl is known for {name} (known: {', '.join(sorted(REGISTRY))})")
        res = self._run(["sysctl", "-n", sysctl], log=proc.NULL_LOG)
        if not res.ok:
            raise Unavailable(f"openzfs-freebsd has no tunable {name}: {res.error_text()}")
        return res.stdout.strip()

    def set(self, name: str, value: str) -> None:
        sysctl = freebsd_name(name)
        if sysctl is None:
            raise Unavailable(f"no FreeBSD sysctl is known for {name}")
        res = self._run(["sysctl", f"{sysctl}={value}"], log=self.log)
        if not res.ok:
            raise TargetError(f"cannot set {name}={value}: {res.error_text()}")
