"""Debian packages for the guest, without touching the host's apt configuration or installing
anything that conflicts with zfs-fuse: a private apt (own sources list with contrib and
bookworm-backports, own lists and archive cache) used only for `apt-get download`; the .debs are
unpacked with `dpkg -x`. Host build tools are installed with the host's apt as usual."""

from __future__ import annotations

import glob
import os
from pathlib import Path

from .. import proc
from ..errors import TargetError

MIRROR = os.environ.get("ZFSPERF_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECURITY = os.environ.get("ZFSPERF_DEBIAN_SECURITY", "http://deb.debian.org/debian-security")
SOURCES = """Types: deb
URIs: {mirror}
Suites: bookworm bookworm-updates bookworm-backports
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: {security}
Suites: bookworm-security
Components: main contrib
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""
# what the build needs on the host (never zfsutils-linux or zfs-dkms: they remove zfs-fuse)
HOST_TOOLS = {"qemu-system-x86_64": "qemu-system-x86", "busybox": "busybox-static", "cpio": "cpio",
              "zstd": "zstd", "depmod": "kmod", "make": "make", "gcc": "gcc", "file": "file", "perl": "perl",
              "mkfs.ext4": "e2fsprogs", "ssh-keygen": "openssh-client", "ssh": "openssh-client"}


class PrivateApt:
    def __init__(self, root: Path, log: proc.CommandLog = proc.NULL_LOG) -> None:
        self.root = Path(root)
        self.log = log

    def _opts(self) -> list[str]:
        r = self.root
        return ["-o", f"Dir::Etc::SourceList={r}/sources.list", "-o", f"Dir::Etc::SourceParts={r}/sources.list.d",
                "-o", f"Dir::State::Lists={r}/lists", "-o", f"Dir::Cache={r}/cache",
                "-o", "Dir::State::status=/var/lib/dpkg/status", "-o", "APT::Sandbox::User=root", "-q"]

    def update(self) -> None:
        (self.root / "sources.list.d").mkdir(parents=True, exist_ok=True)
        (self.root / "lists" / "partial").mkdir(parents=True, exist_ok=True)
        (self.root / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        (self.root / "sources.list").write_text("")
        (self.root / "sources.list.d" / "debian.sources").write_text(SOURCES.format(mirror=MIRROR, security=SECURITY))
        res = proc.run(["apt-get", *self._opts(), "update"], log=self.log, timeout=900)
        if not res.ok:
            raise TargetError(f"apt-get update (private lists in {self.root}) failed: {res.error_text()}")

    def depends_on(self, package: str, prefix: str) -> str:
        """The first dependency of package starting with prefix (linux-image-amd64 -> linux-image-<ABI>)."""
        res = proc.run(["apt-cache", *self._opts(), "depends", package], log=self.log)
        for line in res.stdout.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "Depends:" and parts[1].startswith(prefix):
                return parts[1]
        raise TargetError(f"cannot resolve {prefix}* from {package}: {res.error_text() or res.stdout[-300:]}")

    def candidate(self, package: str, version_prefix: str) -> str:
        """The newest version of package starting with version_prefix ("2.3" -> "2.3.2-2~bpo12+2")."""
        res = proc.run(["apt-cache", *self._opts(), "madison", package], log=self.log)
        versions = [ln.split("|")[1].strip() for ln in res.stdout.splitlines() if ln.count("|") >= 2]
        for v in versions:
            if v.startswith(version_prefix):
                return v
        raise TargetError(f"no {package} {version_prefix}.x in Debian bookworm/backports (have: {', '.join(versions)})")

    def download(self, specs: list[str], dest: Path) -> list[Path]:
        dest.mkdir(parents=True, exist_ok=True)
        res = proc.run(["apt-get", *self._opts(), "download", *specs], log=self.log, timeout=1800, cwd=str(dest))
        if not res.ok:
            raise TargetError(f"apt-get download failed: {res.error_text()}")
        return sorted(Path(p) for p in glob.glob(str(dest / "*.deb")))


def extract(deb: Path, into: Path, log: proc.CommandLog = proc.NULL_LOG) -> None:
    into.mkdir(parents=True, exist_ok=True)
    res = proc.run(["dpkg", "-x", str(deb), str(into)], log=log, timeout=600)
    if not res.ok:
        raise TargetError(f"dpkg -x {deb.name} failed: {res.error_text()}")


def missing_host_packages() -> list[str]:
    import shutil
    return sorted({pkg for tool, pkg in HOST_TOOLS.items() if shutil.which(tool) is None
                   and not os.path.exists(f"/usr/sbin/{tool}") and not os.path.exists(f"/sbin/{tool}")})


def install_host(packages: list[str], log: proc.CommandLog = proc.NULL_LOG) -> None:
    if not packages:
        return
    if os.geteuid() != 0:
        raise TargetError(f"the OpenZFS guest build needs these packages: {' '.join(packages)} (install as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    res = proc.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages], log=log,
                   timeout=1800, env=env)
    if not res.ok:
        res = proc.run(["apt-get", "update", "-q"], log=log, timeout=900, env=env)
        res = proc.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages], log=log,
                       timeout=1800, env=env)
    if not res.ok:
        raise TargetError(f"apt-get install {' '.join(packages)} failed: {res.error_text()}")
