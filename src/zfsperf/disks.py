"""DISKS: which block devices zfsperf may take, decided before anything is touched.

Two kinds of reason not to take a disk, and `--force` overrides only the second:

* **live**: something is using the device now. It is mounted (the device itself, one of its
  partitions, or a loop or device-mapper device built on it), active swap, held by another block
  device (`/sys/class/block/*/holders`: LVM, md, dm-crypt, multipath), the backing device of a
  loop device, open exclusively by someone (an `O_EXCL` open fails with EBUSY, which is how the
  kernel reports a mount, swap or holder it claimed), open in another process (a zfs-fuse daemon
  with a pool imported on it, a VM), labelled for a pool in KEEP, named twice, or a partition of
  a disk that DISKS also names. Never taken.
* **stale**: a partition table, a filesystem signature or a pool label on a device that nothing
  uses. Refused unless `--force`; the message says what is there.

Everything here reads `/sys`, `/proc` and `blkid`; nothing writes to a device. Device identity is
the device number (`st_rdev`), so `/dev/loop3`, `loop3` and a symlink to it are one disk.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from . import proc
from .errors import InputError

SYS_BLOCK = Path("/sys/class/block")


def disks_from_env(value: str | None = None) -> list[str]:
    """DISKS as in the ZFS Test Suite: "sdb sdc" or "/dev/loop0 /dev/loop1"."""
    text = os.environ.get("DISKS", "") if value is None else value
    return [d if d.startswith("/") else f"/dev/{d}" for d in text.replace(",", " ").split()]


def keep_list() -> set[str]:
    return set(os.environ.get("KEEP", "").replace(",", " ").split())


@dataclass(frozen=True)
class Device:
    """A block device as the kernel knows it: its name in /sys/class/block and its number."""
    path: str            # as named in DISKS
    name: str            # kernel name: loop3, loop3p1, sdb, dm-0
    rdev: int

    @property
    def numbers(self) -> str:
        return f"{os.major(self.rdev)}:{os.minor(self.rdev)}"


def _sysfs_name(rdev: int, sys_block: Path) -> str | None:
    """The kernel's name of a block device number (/sys/class/block/NAME/dev holds MAJ:MIN)."""
    want = f"{os.major(rdev)}:{os.minor(rdev)}"
    for entry in sys_block.iterdir() if sys_block.is_dir() else ():
        try:
            if (entry / "dev").read_text().strip() == want:
                return entry.name
        except OSError:
            continue
    return None


def _rdev_of_name(name: str, sys_block: Path) -> int | None:
    try:
        major, minor = (sys_block / name / "dev").read_text().strip().split(":")
    except (OSError, ValueError):
        return None
    return os.makedev(int(major), int(minor))


def partitions(name: str, sys_block: Path = SYS_BLOCK) -> list[str]:
    """Kernel names of a disk's partitions (subdirectories with a `partition` file)."""
    base = sys_block / name
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if (p / "partition").is_file())


def parent_disk(name: str, sys_block: Path = SYS_BLOCK) -> str | None:
    """The whole disk a partition belongs to (loop3p1 -> loop3), or None for a whole disk."""
    if not (sys_block / name / "partition").is_file():
        return None
    return Path(os.path.realpath(sys_block / name)).parent.name


def holders(name: str, sys_block: Path = SYS_BLOCK) -> list[str]:
    """Block devices stacked on this one (device-mapper, md, bcache), by kernel name."""
    d = sys_block / name / "holders"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def loops_backed_by(rdevs: set[int], sys_block: Path = SYS_BLOCK) -> list[str]:
    """Loop devices whose backing file is one of these block devices."""
    found = []
    for entry in sorted(sys_block.glob("loop*")) if sys_block.is_dir() else ():
        try:
            backing = (entry / "loop" / "backing_file").read_text().strip()
        except OSError:
            continue
        try:
            st = os.stat(backing)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode) and st.st_rdev in rdevs:
            found.append(entry.name)
    return found


def stack(dev: Device, sys_block: Path = SYS_BLOCK) -> dict[int, str]:
    """Every device whose use is this disk's use: the disk, its partitions, and what is built on
    any of them (holders, loop devices over them), transitively. {rdev: description}."""
    out: dict[int, str] = {dev.rdev: dev.path}
    todo = [(dev.name, dev.path)]
    for p in partitions(dev.name, sys_block):
        rdev = _rdev_of_name(p, sys_block)
        if rdev is not None and rdev not in out:
            out[rdev] = f"its partition /dev/{p}"
            todo.append((p, f"its partition /dev/{p}"))
    while todo:
        name, how = todo.pop()
        rdev = _rdev_of_name(name, sys_block)
        above = holders(name, sys_block) + (loops_backed_by({rdev}, sys_block) if rdev is not None else [])
        for h in above:
            hr = _rdev_of_name(h, sys_block)
            if hr is not None and hr not in out:
                desc = f"/dev/{h} (built on {'it' if name == dev.name else '/dev/' + name})"
                out[hr] = desc
                todo.append((h, desc))
    return out


def _mounts() -> list[tuple[int, str]]:
    """(device number, mount point) of every mount this process can see (/proc/self/mountinfo)."""
    out = []
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return out
    for ln in text.splitlines():
        f = ln.split()
        if len(f) > 4 and ":" in f[2]:
            major, minor = f[2].split(":")
            out.append((os.makedev(int(major), int(minor)), f[4].replace("\\040", " ")))
    return out


def _swaps() -> list[tuple[int, str]]:
    out = []
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return out
    for ln in lines:
        name = ln.split()[0] if ln.split() else ""
        try:
            st = os.stat(name)
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            out.append((st.st_rdev, name))
    return out


def _openers(rdevs: set[int]) -> list[tuple[int, str]]:
    """Other processes holding one of these devices open: (pid, command name)."""
    me = os.getpid()
    out = []
    for pid_dir in Path("/proc").iterdir():
        if not pid_dir.name.isdigit() or int(pid_dir.name) == me:
            continue
        try:
            fds = list((pid_dir / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(fd)            # follows the magic link: right across mount namespaces
            except OSError:
                continue
            if stat.S_ISBLK(st.st_mode) and st.st_rdev in rdevs:
                try:
                    comm = (pid_dir / "comm").read_text().strip()
                except OSError:
                    comm = "?"
                out.append((int(pid_dir.name), comm))
                break
    return out


def _exclusive_busy(path: str) -> bool:
    """True when the kernel has the device claimed (mount, swap, holder, another O_EXCL opener)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as e:
        return e.errno == errno.EBUSY
    os.close(fd)
    return False


def signature(path: str) -> dict[str, str]:
    """What blkid finds on the device itself (low-level probe, no cache): {} when nothing."""
    res = proc.run(["blkid", "-p", "-o", "export", path])
    if res.returncode != 0:
        return {}
    return dict(ln.split("=", 1) for ln in res.stdout.splitlines() if "=" in ln)


def describe_signature(info: dict[str, str]) -> str | None:
    """What stale data a device holds, in words, or None."""
    info = {k: v for k, v in info.items() if not k.startswith("PART_ENTRY_")}   # where it sits, not what it holds
    if not info:
        return None
    if "PTTYPE" in info:
        return f"it holds a {info['PTTYPE']} partition table"
    if info.get("TYPE") == "zfs_member":
        return f"it holds a ZFS pool label (pool {info['LABEL']})" if info.get("LABEL") else "it holds a ZFS pool label"
    if "TYPE" in info:
        return f"it holds a {info['TYPE']} {info.get('USAGE', 'signature')}"
    return "blkid finds a signature on it"


def live_use(dev: Device, sys_block: Path = SYS_BLOCK) -> str | None:
    """Why a device is in use now (never taken, --force or not), or None."""
    devices = stack(dev, sys_block)
    for rdev, where in _mounts():
        if rdev in devices:
            who = devices[rdev]
            return f"it is mounted on {where}" if rdev == dev.rdev else f"{who} is mounted on {where}"
    for rdev, name in _swaps():
        if rdev in devices:
            who = devices[rdev]
            return "it is active swap" if rdev == dev.rdev else f"{who} is active swap ({name})"
    for name in [dev.name, *partitions(dev.name, sys_block)]:
        held = holders(name, sys_block)
        if held:
            whose = "it" if name == dev.name else f"its partition /dev/{name}"
            return (f"{whose} is held by {', '.join('/dev/' + h for h in held)} "
                    "(device-mapper, LVM, md or another stacked device)")
    loops = loops_backed_by(set(devices), sys_block)
    if loops:
        return f"loop device {', '.join('/dev/' + n for n in loops)} is built on it"
    openers = ", ".join(f"process {pid} ({comm})" for pid, comm in _openers(set(devices)))
    for name in [dev.name, *partitions(dev.name, sys_block)]:
        path = dev.path if name == dev.name else f"/dev/{name}"
        if os.path.exists(path) and _exclusive_busy(path):
            whose = "it" if name == dev.name else f"its partition {path}"
            return (f"another program holds {whose} open exclusively (an O_EXCL open fails with EBUSY)"
                    + (f": {openers}" if openers else ""))
    if openers:
        return f"it is open in {openers}"
    return None


def _device(path: str, sys_block: Path) -> Device:
    if not os.path.exists(path):
        raise InputError(f"refusing {path}: it does not exist", field="DISKS")
    st = os.stat(path)
    if not stat.S_ISBLK(st.st_mode):
        raise InputError(f"refusing {path}: it is not a block device", field="DISKS")
    name = _sysfs_name(st.st_rdev, sys_block) or os.path.basename(os.path.realpath(path))
    return Device(path, name, st.st_rdev)


def check_disks(disks: list[str], force: bool, *, sys_block: Path = SYS_BLOCK) -> None:
    """Refuse (InputError: exit 2, before anything is touched) every disk zfsperf must not take:
    live ones always, stale ones unless force. Reads only."""
    devices = [_device(d, sys_block) for d in disks]
    seen: dict[int, str] = {}
    for dev in devices:
        if dev.rdev in seen:
            raise InputError(f"refusing {dev.path}: DISKS names it twice (also as {seen[dev.rdev]})", field="DISKS")
        seen[dev.rdev] = dev.path
    names = {dev.name: dev.path for dev in devices}
    for dev in devices:
        parent = parent_disk(dev.name, sys_block)
        if parent is not None and parent in names:
            raise InputError(f"refusing {dev.path}: it is a partition of {names[parent]}, which DISKS also names",
                             field="DISKS")
    keep = keep_list()
    for dev in devices:
        info = signature(dev.path)
        if info.get("TYPE") == "zfs_member" and info.get("LABEL") in keep:
            raise InputError(f"refusing {dev.path}: it holds pool {info['LABEL']}, which is in KEEP "
                             "(--force does not override KEEP)", field="DISKS")
        why = live_use(dev, sys_block)
        if why:
            raise InputError(f"refusing {dev.path}: {why}; a disk in use is never taken", field="DISKS")
        stale = describe_signature(info)
        if stale and not force:
            raise InputError(f"refusing {dev.path}: {stale}, and nothing uses it (use --force to take it "
                             "anyway: --force overrides stale data only)", field="DISKS")
