"""DISKS: real block devices (loop devices over sparse files, made and removed here; no test
touches a real disk).

A disk in use now (mounted, a partition mounted, a device built on it mounted, active swap, open
exclusively or by another process, named twice, a partition of a disk also named) is refused with
or without --force, exit 2, and stays byte-for-byte as it was with its mount/swap/holder in place.
A disk with stale data is refused without --force and taken with it. A clean disk is used and
only the pool label zfsperf wrote is wiped; a `zpool create` that fails leaves the disk as it was.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import why
from helpers import EXAMPLE, last_dir, records, small, write_runfile, zfsperf

MIB = 1 << 20


def sh(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


class Loops:
    """Loop devices over sparse files in tmp_path, and everything stacked on them, undone at the end."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.undo: list[list[str]] = []

    def make(self, size_mib: int, *, partscan: bool = False, backing: str | None = None) -> str:
        if backing is None:
            img = self.tmp / f"disk{len(self.undo)}.img"
            img.write_bytes(b"")
            os.truncate(img, size_mib * MIB)
            backing = str(img)
        dev = sh("losetup", "-f", "--show", *(["-P"] if partscan else []), backing)
        self.undo.append(["losetup", "-d", dev])
        return dev

    def partition(self, dev: str) -> list[str]:
        """A DOS table with two partitions; the kernel told of them (BLKPG) and their nodes made
        where nothing makes them (no udev here)."""
        subprocess.run(["sfdisk", "-q", dev], input="label: dos\n,32M\n,\n", text=True, check=True)
        subprocess.run(["partx", "-a", dev], capture_output=True)          # already known: fine
        self.undo.append(["partx", "-d", dev])
        name = os.path.basename(dev)
        parts = []
        for n in (1, 2):
            node = f"{dev}p{n}"
            if not os.path.exists(node):
                major, minor = Path(f"/sys/class/block/{name}p{n}/dev").read_text().split(":")
                os.mknod(node, 0o600 | 0o060000, os.makedev(int(major), int(minor)))
                self.undo.append(["rm", "-f", node])
            parts.append(node)
        return parts

    def mount_ext4(self, dev: str) -> Path:
        sh("mkfs.ext4", "-q", dev)
        mnt = self.tmp / f"mnt{len(self.undo)}"
        mnt.mkdir()
        sh("mount", dev, str(mnt))
        (mnt / "precious").write_text("user data\n")
        sh("umount", str(mnt))
        sh("mount", "-o", "ro", dev, str(mnt))     # read-only: ext4 writes nothing more, so the
        self.undo.append(["umount", str(mnt)])      # device's checksums stand still unless we write
        return mnt

    def swap(self, dev: str) -> None:
        sh("mkswap", "-q", dev)
        sh("swapon", dev)
        self.undo.append(["swapoff", dev])

    def close(self) -> None:
        for argv in reversed(self.undo):
            subprocess.run(argv, capture_output=True)


@pytest.fixture
def loops(tmp_path):
    lo = Loops(tmp_path)
    yield lo
    lo.close()


def checksums(dev: str) -> tuple[str, str]:
    """sha256 of the device's first and last MiB."""
    with open(dev, "rb") as f:
        first = hashlib.sha256(f.read(MIB)).hexdigest()
        f.seek(-MIB, os.SEEK_END)
        last = hashlib.sha256(f.read(MIB)).hexdigest()
    return first, last


def mounted(mnt: Path) -> bool:
    return any(ln.split()[1] == str(mnt) for ln in Path("/proc/mounts").read_text().splitlines())


def swapping(dev: str) -> bool:
    return any(ln.split()[0] == dev for ln in Path("/proc/swaps").read_text().splitlines()[1:])


@pytest.fixture
def one_disk_runfile(tmp_path):
    return write_runfile(tmp_path, small(EXAMPLE).replace('layout = "mirror"', 'layout = "stripe"')
                         .replace("vdevs = 2", "vdevs = 1"))


def forced_run(tmp_path: Path, runfile: Path, disks: str) -> subprocess.CompletedProcess:
    return zfsperf("run", "--force", "--no-history", "-r", str(runfile), "-t", "recv-threads",
                   "-o", str(tmp_path / "res"), env={"DISKS": disks})


def assert_refused(res: subprocess.CompletedProcess, tmp_path: Path, dev: str, reason: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"refusing {dev}: " in res.stderr and reason in res.stderr, res.stderr
    assert "--force" not in res.stderr                  # a live disk: nothing to override
    assert not (tmp_path / "res").exists()              # nothing was touched


# --------------------------------------------------------------- live: never taken


def test_mounted_disk_never_taken(tmp_path, loops, one_disk_runfile, lab):
    dev = loops.make(256)
    mnt = loops.mount_ext4(dev)
    before = checksums(dev)
    res = forced_run(tmp_path, one_disk_runfile, dev)
    assert_refused(res, tmp_path, dev, f"it is mounted on {mnt}")
    assert checksums(dev) == before and mounted(mnt) and (mnt / "precious").read_text() == "user data\n"


def test_disk_with_a_mounted_partition_never_taken(tmp_path, loops, one_disk_runfile, lab):
    dev = loops.make(128, partscan=True)
    p1, _ = loops.partition(dev)
    mnt = loops.mount_ext4(p1)
    before = checksums(dev)
    res = forced_run(tmp_path, one_disk_runfile, dev)
    assert_refused(res, tmp_path, dev, f"its partition {p1} is mounted on {mnt}")
    assert checksums(dev) == before and mounted(mnt)


def test_disk_under_a_mounted_loop_never_taken(tmp_path, loops, one_disk_runfile, lab):
    """A device built on the disk (a loop device over it: device-mapper needs a kernel module these
    machines lack; its holders/ case is test_holders_refused below) is mounted."""
    dev = loops.make(256)
    upper = loops.make(0, backing=dev)
    mnt = loops.mount_ext4(upper)
    before = checksums(dev)
    res = forced_run(tmp_path, one_disk_runfile, dev)
    assert_refused(res, tmp_path, dev, f"{upper} (built on it) is mounted on {mnt}")
    assert checksums(dev) == before and mounted(mnt)


def test_active_swap_never_taken(tmp_path, loops, one_disk_runfile, lab):
    dev = loops.make(128)
    loops.swap(dev)
    before = checksums(dev)
    res = forced_run(tmp_path, one_disk_runfile, dev)
    assert_refused(res, tmp_path, dev, "it is active swap")
    assert checksums(dev) == before and swapping(dev)


def test_disk_open_exclusively_never_taken(tmp_path, loops, one_disk_runfile, lab):
    dev = loops.make(256)
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time\n"
                               f"fd = os.open({dev!r}, os.O_RDONLY | os.O_EXCL)\n"
                               "print('held', flush=True)\ntime.sleep(120)\n"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = checksums(dev)
        res = forced_run(tmp_path, one_disk_runfile, dev)
        assert_refused(res, tmp_path, dev, "holds it open exclusively")
        assert f"process {holder.pid} (python" in res.stderr
        assert checksums(dev) == before and holder.poll() is None
    finally:
        holder.kill()
        holder.wait()


def test_disk_of_an_imported_pool_never_taken(tmp_path, loops, one_disk_runfile, lab):
    """A pool zfsperf did not create, imported on the disk: the zfs-fuse daemon has it open."""
    dev = loops.make(128)
    assert lab.run(["zpool", "create", "-f", "-m", "none", "notours", str(lab.root / "hostdev" / dev[5:])]).ok
    try:
        before = checksums(dev)
        res = forced_run(tmp_path, one_disk_runfile, dev)
        assert_refused(res, tmp_path, dev, "it is open in process")
        assert "(zfs-fuse)" in res.stderr
        assert checksums(dev) == before
        assert lab.run(["zpool", "list", "-H", "-o", "name", "notours"]).ok
    finally:
        lab.run(["zpool", "destroy", "notours"])


def test_same_disk_twice_and_partition_of_a_named_disk(tmp_path, loops, one_disk_runfile, lab):
    dev = loops.make(256)
    res = forced_run(tmp_path, one_disk_runfile, f"{dev} {os.path.basename(dev)}")
    assert_refused(res, tmp_path, dev, f"DISKS names it twice (also as {dev})")
    parted = loops.make(256, partscan=True)
    p1, _ = loops.partition(parted)
    before = checksums(parted)
    res = forced_run(tmp_path, one_disk_runfile, f"{parted} {p1}")
    assert_refused(res, tmp_path, p1, f"it is a partition of {parted}, which DISKS also names")
    assert checksums(parted) == before


# --------------------------------------------------------------- stale: --force takes it


def test_stale_filesystem_refused_then_taken_with_force(tmp_path, loops, one_disk_runfile, lab):
    dev = loops.make(320)
    sh("mkfs.ext4", "-q", dev)
    before = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True).stdout
    res = zfsperf("run", "--no-history", "-r", str(one_disk_runfile), "-t", "recv-threads",
                  "-o", str(tmp_path / "res"), env={"DISKS": dev})
    assert res.returncode == 2
    assert f"refusing {dev}: it holds a ext4 filesystem, and nothing uses it (use --force" in res.stderr
    assert not (tmp_path / "res").exists()
    assert subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True).stdout == before
    res = forced_run(tmp_path, one_disk_runfile, dev)
    assert res.returncode == 0, why(res)
    assert [r["status"] for r in records(last_dir(res.stdout))] == ["PASS"] * 3
    # the label zfsperf wrote is gone, and only it: ZFS leaves a disk's first 8 KiB alone, so the
    # stale ext4 superblock the user forced over is there as it was
    after = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True).stdout
    assert after == before and "TYPE=ext4" in after


def test_clean_disk_used_and_label_wiped(tmp_path, loops, one_disk_runfile, lab):
    dev = loops.make(320)
    res = zfsperf("run", "--no-history", "-r", str(one_disk_runfile), "-t", "recv-threads",
                  "-o", str(tmp_path / "res"), env={"DISKS": dev})
    assert res.returncode == 0, why(res)
    assert [r["status"] for r in records(last_dir(res.stdout))] == ["PASS"] * 3
    assert subprocess.run(["blkid", "-p", dev]).returncode == 2      # no signature left


def test_failed_create_leaves_the_disk_as_it_was(tmp_path, loops, one_disk_runfile, lab):
    """zpool create fails on a disk below ZFS's 64 MiB minimum: no wipe follows (the stale ext4
    signature --force allowed is still there), not a byte changes."""
    dev = loops.make(32)
    sh("mkfs.ext4", "-q", dev)
    with open(dev, "r+b") as f:                          # and something of the user's at the end
        f.seek(-MIB, os.SEEK_END)
        f.write(b"user data at the end" * 100)
    before = checksums(dev)
    res = forced_run(tmp_path, one_disk_runfile, dev)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "zpool create" in res.stdout + res.stderr
    time.sleep(0.5)
    assert checksums(dev) == before


# --------------------------------------------------------------- holders: a kernel-only interface


def test_holders_refused(tmp_path):
    """A disk held by device-mapper (LVM, dm-crypt, multipath) or md. These machines' kernel has no
    device-mapper or md (dmsetup: "/dev/mapper/control: open failed: No such device"), so this
    replays the layout the kernel gives /sys/class/block: NAME/dev, NAME/holders/dm-0 -> the holder,
    and a partition as a subdirectory with a `partition` file."""
    from zfsperf import disks
    sysb = tmp_path / "sys-class-block"
    for name, dev in (("sdz", "1000:240"), ("sdz1", "1000:241"), ("dm-0", "1001:0"), ("dm-1", "1001:1")):
        d = sysb / "devices" / name if name != "sdz1" else sysb / "devices" / "sdz" / "sdz1"
        (d / "holders").mkdir(parents=True)
        (d / "dev").write_text(dev + "\n")
        (sysb / name).symlink_to(d)
    (sysb / "devices" / "sdz" / "sdz1" / "partition").write_text("1\n")
    dev = disks.Device("/dev/sdz", "sdz", os.makedev(1000, 240))      # numbers no real device has
    assert disks.partitions("sdz", sysb) == ["sdz1"] and disks.parent_disk("sdz1", sysb) == "sdz"
    assert disks.live_use(dev, sysb) is None
    (sysb / "devices" / "sdz" / "sdz1" / "holders" / "dm-1").symlink_to(sysb / "devices" / "dm-1")
    assert disks.live_use(dev, sysb) == ("its partition /dev/sdz1 is held by /dev/dm-1 "
                                         "(device-mapper, LVM, md or another stacked device)")
    (sysb / "devices" / "sdz" / "holders" / "dm-0").symlink_to(sysb / "devices" / "dm-0")
    assert disks.live_use(dev, sysb).startswith("it is held by /dev/dm-0 ")
    assert set(disks.stack(dev, sysb)) == {os.makedev(1000, 240), os.makedev(1000, 241),
                                           os.makedev(1001, 0), os.makedev(1001, 1)}
