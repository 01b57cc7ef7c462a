"""Build a bootable OpenZFS guest from Debian's archive: the kernel Debian's linux-image-amd64
depends on, the OpenZFS modules compiled from Debian's zfs-dkms source for that kernel, the ZFS
userland, fio and a small ssh server (dropbear), packed into one initramfs with a busybox /init.

Products are cached by ZFS version and kernel ABI under the user's cache directory
(~/.cache/zfsperf/openzfs/<zfs>-<kernel>/: vmlinuz, initramfs.img, build.json), so the second
build is seconds. The modules are built by guest/source.py in the build tree a git repository
importing Debian's source as its first commit would get (trees/git-<its tree>/), and that tree is
kept: such a repository's builds recompile only what its commits change. Facts and pitfalls:
docs/reference/openzfs-guest.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import proc
from ..errors import TargetError
from . import apt
from .debian import DEFAULT_VERSION, VERSIONS, Debian, cache_root, check_version
from .init_script import IN_GUEST, INIT
from .source import SourceBuilder, build_tree_lock, build_tree_of_import

__all__ = ["DEFAULT_VERSION", "VERSIONS", "Build", "Builder", "cache_root", "check_version", "find_build"]
FIO_PKGS = ("fio libgfapi0 libnbd0 librados2 librbd1 libpmemblk1 libglusterfs0 libgfrpc0 libgfxdr0 libfmt9 "
            "libboost-thread1.74.0 libboost-iostreams1.74.0").split()
SSH_PKGS = ["dropbear-bin", "libtomcrypt1", "libtommath1"]
# ext4 asks the crypto API for "crc32c" (a soft dependency that modprobe --show-depends does not
# follow): without crc32c_generic the guest's vdev disk does not mount ("Cannot load crc32c driver")
# 9p, 9pnet_virtio and overlay: the host's root shared read-only, with a tmpfs over it, for
# zfsperf run inside the guest (`zfsperf guest run`)
GUEST_MODULES = ["virtio_pci", "virtio_blk", "virtio_net", "crc32c_generic", "ext4", "loop", "9pnet_virtio", "9p",
                 "overlay", "zfs"]
# what a cached build must have been made with; a cache of an older format is built again
BUILD_FORMAT = 3         # 3: 9p and overlay modules, /sbin/zfsperf-in-guest
ZFS_TOOLS = ["zpool", "zfs", "zdb", "zstream"]


@dataclass
class Build:
    dir: Path
    zfs_version: str
    kernel: str

    @property
    def kernel_image(self) -> Path:
        return self.dir / "vmlinuz"

    @property
    def initramfs(self) -> Path:
        return self.dir / "initramfs.img"

    def info(self) -> dict:
        try:
            return json.loads((self.dir / "build.json").read_text())
        except (OSError, ValueError):
            return {}

    def complete(self) -> bool:
        return (self.kernel_image.exists() and self.initramfs.exists()
                and self.info().get("format") == BUILD_FORMAT)


def find_build(series: str) -> Build | None:
    """The newest complete cached build of this ZFS series (2.1 / 2.3), or None."""
    root = cache_root()
    best = None
    for d in sorted(root.glob(f"{series}.*")) if root.is_dir() else []:
        info_file = d / "build.json"
        if info_file.exists():
            info = json.loads(info_file.read_text())
            b = Build(d, info["zfs_version"], info["kernel"])
            if b.complete():
                best = b
    return best


class Builder:
    def __init__(self, series: str, say: Callable[[str], None] = print, log: proc.CommandLog = proc.NULL_LOG,
                 jobs: int | None = None) -> None:
        self.series = check_version(series)
        self.say = say
        self.log = log
        self.jobs = jobs or os.cpu_count() or 2
        self.debian = Debian(log, self._step)
        self.apt = self.debian.apt
        self.times: dict[str, float] = {}

    def _step(self, name: str, fn: Callable[[], object]) -> object:
        self.say(f"guest build: {name} ...")
        t0 = time.monotonic()
        out = fn()
        self.times[name] = round(time.monotonic() - t0, 1)
        self.say(f"guest build: {name} done in {self.times[name]:.0f} s")
        return out

    def kernel(self) -> tuple[str, str]:
        return self.debian.kernel()

    def host_tools(self, kv: str, extra: list[str] | None = None) -> None:
        self.debian.host_tools(kv, extra)

    def run(self) -> Build:
        """The guest's build of Debian's OpenZFS for Debian's kernel, cached: one at a time on the
        machine (two zfsperf processes on a cold machine, each booting a guest of its own, would
        otherwise download into and build one tree at once); a second waits, then finds the first's
        cached."""
        with build_tree_lock(cache_root() / "debian-build", self.say):
            return self._run()

    def _run(self) -> Build:
        kernel_pkg, kv = self.kernel()
        zver = self.apt.candidate("zfs-dkms", self.series)
        out = cache_root() / f"{zver}-{kv}".replace("~", "_").replace("+", "_")
        build = Build(out, zver, kv)
        if build.complete():
            self.say(f"guest build: OpenZFS {zver} for {kv} is cached in {out}")
            return build
        self.host_tools(kv)
        work = out / "work"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        pkgs = VERSIONS[self.series].split()
        debs = self._step("download (apt-get download)", lambda: self.apt.download(
            [kernel_pkg, f"zfs-dkms={zver}", f"zfsutils-linux={zver}", *(f"{p}={zver}" for p in pkgs),
             *FIO_PKGS, *SSH_PKGS], work / "debs"))
        self._step("unpack (dpkg -x)", lambda: self._unpack(debs, work))
        kos = self._step("OpenZFS modules for the guest kernel (configure, make)", lambda: self._modules(work, kv))
        assert isinstance(kos, list)
        out.mkdir(parents=True, exist_ok=True)
        self._step("initramfs", lambda: self._initramfs(work, kv, out, kos))
        shutil.copyfile(work / "kroot" / "boot" / f"vmlinuz-{kv}", out / "vmlinuz")
        (out / "build.json").write_text(json.dumps({
            "format": BUILD_FORMAT, "zfs_version": zver, "kernel": kv, "series": self.series, "built": time.time(), "seconds": self.times,
            "modules": sorted(p.name for p in kos)}, indent=1))
        shutil.rmtree(work, ignore_errors=True)           # the packages and their unpacked trees
        return build

    # ---------------------------------------------------------------- steps
    def _unpack(self, debs: list[Path], work: Path) -> None:
        for deb in debs:
            name = deb.name.split("_")[0]
            dest = {"zfs-dkms": "zsrc"}.get(name, "kroot" if name.startswith("linux-image-") else
                                                 "fioroot" if name in FIO_PKGS else
                                                 "sshroot" if name in SSH_PKGS else "uroot")
            apt.extract(deb, work / dest, self.log)

    def _modules(self, work: Path, kv: str) -> list[Path]:
        """The kernel modules of Debian's zfs-dkms source, built (source.SourceBuilder: configure,
        make, logs kept) in the build tree a git repository importing that source would have, so
        that such a repository's builds (`guest ab`, `guest bisect`) start from this one."""
        srcs = sorted((work / "zsrc" / "usr" / "src").glob("zfs-*"))
        if not srcs:
            raise TargetError("zfs-dkms carries no /usr/src/zfs-* source")
        bt = build_tree_of_import(srcs[0])
        mb = SourceBuilder(self.say, self.log, self.jobs, kernel=kv).build_in(srcs[0], bt)
        # every module of the series (2.1 has more than spl and zfs), else the two the build kept
        return sorted((bt / "module").rglob("*.ko")) or sorted(mb.modules.glob("*.ko"))

    def _initramfs(self, work: Path, kv: str, out: Path, kos: list[Path]) -> None:
        st, mt = work / "initrd", work / "modtree"
        moddir = mt / "lib" / "modules" / kv
        shutil.copytree(work / "kroot" / "lib" / "modules" / kv, moddir, symlinks=True)
        (moddir / "extra").mkdir(exist_ok=True)
        for ko in kos:
            shutil.copyfile(ko, moddir / "extra" / ko.name)
        _check(["depmod", "-b", str(mt), kv])
        deps = _check(["modprobe", "-d", str(mt), "-S", kv, "--show-depends", "-a", *GUEST_MODULES]).stdout
        for line in deps.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "insmod":
                rel = Path(parts[1]).relative_to(mt)
                (st / rel).parent.mkdir(parents=True, exist_ok=True)
                _check(["strip", "--strip-debug", "-o", str(st / rel), parts[1]])   # zfs.ko: 64 MB -> a few
        for f in moddir.glob("modules.builtin*"):
            shutil.copyfile(f, st / "lib" / "modules" / kv / f.name)
        shutil.copyfile(moddir / "modules.order", st / "lib" / "modules" / kv / "modules.order")
        _check(["depmod", "-b", str(st), kv])
        for d in ("bin", "sbin", "usr/bin", "usr/sbin", "etc/zfs", "etc/dropbear", "proc", "sys", "dev", "tmp",
                  "run", "root", "var/tmp", "lib/x86_64-linux-gnu", "lib64"):
            (st / d).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shutil.which("busybox") or "/bin/busybox", st / "bin" / "busybox")
        os.chmod(st / "bin" / "busybox", 0o755)
        applets = subprocess.run([str(st / "bin" / "busybox"), "--list"], capture_output=True, text=True).stdout.split()
        for a in applets:
            if not (st / "bin" / a).exists():
                os.symlink("busybox", st / "bin" / a)
        bins = []
        for t in ZFS_TOOLS:
            src = work / "uroot" / "sbin" / t
            if src.exists():
                shutil.copyfile(src, st / "sbin" / t)
                os.chmod(st / "sbin" / t, 0o755)
                os.symlink(f"/sbin/{t}", st / "usr" / "bin" / t)
                bins.append(st / "sbin" / t)
        for src, name in ((work / "fioroot" / "usr" / "bin" / "fio", "fio"),
                          (work / "sshroot" / "usr" / "sbin" / "dropbear", "dropbear")):
            shutil.copyfile(src, st / "usr" / "bin" / name)
            os.chmod(st / "usr" / "bin" / name, 0o755)
            bins.append(st / "usr" / "bin" / name)
        libpath = ":".join(str(p) for root in ("uroot", "fioroot", "sshroot")
                           for p in [work / root / "lib" / "x86_64-linux-gnu", work / root / "usr" / "lib" / "x86_64-linux-gnu",
                                     work / root / "usr" / "lib" / "x86_64-linux-gnu" / "ceph"])
        ldd = subprocess.run(["ldd", *map(str, bins)], capture_output=True, text=True,
                             env={**os.environ, "LD_LIBRARY_PATH": libpath})
        if "not found" in ldd.stdout:
            missing = sorted({ln.split()[0] for ln in ldd.stdout.splitlines() if "not found" in ln})
            raise TargetError(f"guest binaries miss libraries: {', '.join(missing)}")
        for line in ldd.stdout.splitlines():
            parts = line.split("=>")
            if len(parts) == 2 and parts[1].strip().startswith("/"):
                lib = parts[1].split()[0]
                shutil.copyfile(os.path.realpath(lib), st / "lib" / "x86_64-linux-gnu" / os.path.basename(lib))
        shutil.copyfile(os.path.realpath("/lib64/ld-linux-x86-64.so.2"), st / "lib64" / "ld-linux-x86-64.so.2")
        os.chmod(st / "lib64" / "ld-linux-x86-64.so.2", 0o755)
        gcc_s = Path("/lib/x86_64-linux-gnu/libgcc_s.so.1")
        if gcc_s.exists():
            shutil.copyfile(gcc_s, st / "lib" / "x86_64-linux-gnu" / gcc_s.name)
        (st / "etc" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n")
        (st / "etc" / "shadow").write_text("root:*:19000:0:99999:7:::\n")
        (st / "etc" / "group").write_text("root:x:0:\n")
        (st / "etc" / "shells").write_text("/bin/sh\n")
        os.symlink("/proc/mounts", st / "etc" / "mtab")
        (st / "init").write_text(INIT)
        (st / "sbin" / "zfsperf-in-guest").write_text(IN_GUEST)
        os.chmod(st / "sbin" / "zfsperf-in-guest", 0o755)
        os.chmod(st / "init", 0o755)
        with open(out / "initramfs.img", "wb") as f:
            find = subprocess.Popen(["find", ".", "-print0"], cwd=st, stdout=subprocess.PIPE)
            cpio = subprocess.Popen(["cpio", "--null", "-o", "-H", "newc", "--quiet"], cwd=st, stdin=find.stdout,
                                    stdout=subprocess.PIPE)
            assert find.stdout is not None
            find.stdout.close()
            zst = subprocess.run(["zstd", "-q", "-3", "-T0", "-c"], stdin=cpio.stdout, stdout=f)
            cpio.wait()
            find.wait()
        if zst.returncode or cpio.returncode:
            raise TargetError("packing the initramfs failed")


def _check(argv: list[str]) -> proc.Completed:
    res = proc.run(argv, timeout=600)
    if not res.ok:
        raise TargetError(f"{' '.join(argv[:3])} … failed: {res.error_text()[-400:]}")
    return res
