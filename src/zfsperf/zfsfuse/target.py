"""zfs-fuse, the embedded default: ZFS pool v23 in a FUSE daemon that zfsperf owns (see lab.py).

kstats: /zfs-kstat/zfs/<name>/<field>, one value per file (reached through the lab's namespace).
No tunables at run time, no txgs kstat; the last synced txg comes from `zdb -u POOL`.
`zpool iostat` is human-scaled only (no -H/-p/-l/-w/-q/-r).
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Sequence

from .. import proc
from .daemon import KSTAT_DIR, Lab, stop_signal_safe
from ..targets.base import ProfileScope, Target
from ..targets.kstat import ZDB_TXG_RE, read_field_dir



# zfs-fuse logs "Failed to flush write cache on device" for every vdev at import (docs/reference/
# zfs-fuse.md): it cannot flush a disk's cache or fsync its vdev files, and a run's report says so
ZFS_FUSE_DURABILITY = ("durability: zfs-fuse does not flush write caches (its daemon.log says \"Failed to flush "
                       "write cache\" for each vdev): vdev writes land in the host's page cache, sync writes "
                       "and the ZIL are not durable, and no figure includes a cache flush")

class ZfsFuseTarget(Target):
    impl = "zfs-fuse"

    def __init__(self, lab: Lab, *, owns_lab: bool = False, log: proc.CommandLog = proc.NULL_LOG) -> None:
        super().__init__(log)
        self.lab = lab
        self.owns_daemon = owns_lab
        self._version: str | None = None
        self._missing: dict[str, set[str]] = {}      # kstat fields this zfs-fuse does not have

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return self.lab.prefix() + [str(a) for a in argv]

    def pool_cachefile(self, run_dir: str) -> None:
        """The lab's default: /var/lib/zfs/zpool.cache inside its private namespace (a directory of
        the lab's own, never the host's), from which a restarted daemon imports its pools again."""
        return None

    def receive_guard(self) -> list[str]:
        """zfs-fuse's receive has no -u or -x, and needs none here: the lab mounts in its own
        private mount namespace, never over the host's files."""
        return []

    def zfs_version(self) -> str:
        if self._version is None:
            res = proc.run(["dpkg-query", "-W", "-f", "${Version}", "zfs-fuse"])
            self._version = "zfs-fuse " + (res.stdout.strip() if res.ok and res.stdout.strip() else "unknown")
        return self._version

    def pool_version(self) -> str:
        return "23"

    def kstat_sources(self) -> list[str]:
        base = self.lab.host_path(KSTAT_DIR + "/zfs")
        try:
            return sorted(e for e in os.listdir(base) if os.path.isdir(os.path.join(base, e)))
        except OSError:
            return []

    def kstat(self, name: str) -> dict[str, float] | None:
        path = self.lab.host_path(f"{KSTAT_DIR}/zfs/{name}")
        try:
            data = read_field_dir(path)
        except OSError:
            return None
        return data or None

    def kstat_fields(self, name: str, fields: Sequence[str]) -> dict[str, float] | None:
        """One small file per field through the daemon's FUSE mount: read only the ones asked for,
        relative to an open directory (the sampler's hot path: ~0.06 ms per field here), and
        remember which fields this zfs-fuse does not publish."""
        base = self.lab.host_path(f"{KSTAT_DIR}/zfs/{name}")
        try:
            dfd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        missing = self._missing.setdefault(name, set())
        out: dict[str, float] = {}
        try:
            for fld in fields:
                if fld in missing:
                    continue
                try:
                    fd = os.open(fld, os.O_RDONLY, dir_fd=dfd)
                except FileNotFoundError:
                    missing.add(fld)
                    continue
                except OSError:
                    continue
                try:
                    out[fld] = float(os.read(fd, 64))
                except (OSError, ValueError):
                    pass
                finally:
                    os.close(fd)
        finally:
            os.close(dfd)
        return out or None

    def txg(self, pool: str) -> int | None:
        """The last synced txg from `zdb -u POOL`. zfs-fuse's zdb prints the uberblock within about
        0.1 s, then spends a second tearing down (a timed wait at exit: 1.13 s in all, measured
        here), and into a pipe its output only comes out at exit. Line-buffered (stdbuf -oL), the
        txg line is read as it is printed and zdb -- a read-only reader of the pool -- is stopped:
        a receive iteration reads the txg twice, so this took 2 s of every iteration."""
        p = self.popen(["stdbuf", "-oL", *self.zdb_argv(pool), "-u", pool], stderr=subprocess.DEVNULL)
        try:
            m = proc.read_until(p, ZDB_TXG_RE, timeout=30)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)      # its own process group (Target.popen)
            p.wait(timeout=10)
            if p.stdout is not None:
                p.stdout.close()
        return int(m.group(1)) if m else None

    def iostat_forms(self) -> list[str]:
        return ["human"]

    def host_path(self, path: str) -> str | None:
        return self.lab.host_path(path)

    def device_path(self, dev: str) -> str:
        # the lab's /dev was laid out when it started; its hostdev/ is the live host /dev
        if dev.startswith("/dev/"):
            return str(self.lab.root / "hostdev" / dev[len("/dev/"):])
        return dev

    def info(self) -> dict:
        out = super().info()
        out["txgs"] = "zdb -u (last synced txg only)"
        if not out["kstat_sources"]:
            out["kstat_note"] = "zfs-fuse mounts /zfs-kstat when its first pool is created or imported"
        out["daemon"] = self.lab.status()
        out["caveats"] = [ZFS_FUSE_DURABILITY]
        return out

    def daemon(self) -> Lab:
        return self.lab

    def profile_scope(self) -> ProfileScope | None:
        """zfs-fuse's ZFS code runs in its daemon: the samples of every thread of it (Debian strips
        the binary, so its own frames are named "[zfs-fuse]", libz's "[libz.so...]" but for its
        exported names)."""
        pid = self.lab.state.daemon_pid if self.lab.state is not None else 0
        if pid <= 0:
            return None
        return ProfileScope(["--pid", str(pid)], f"the zfs-fuse daemon (pid {pid}, all its threads)")

    def zfs_cpu(self) -> dict[str, float] | None:
        """zfs-fuse's ZFS is its daemon: all its threads' CPU seconds."""
        pid = self.lab.state.daemon_pid if self.lab.state is not None else 0
        sec = proc.cpu_seconds(pid) if pid > 0 else None
        return {"zfs-fuse daemon": sec} if sec is not None else None

    def close(self) -> None:
        if self.owns_daemon:
            stop_signal_safe(self.lab)
