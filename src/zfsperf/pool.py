"""Vdevs, pools and datasets that zfsperf creates, and the rules that keep it off everything else.

Every pool zfsperf creates carries the user property `zfsperf:owner` on its root dataset. zfsperf
refuses a pool name that already exists, and destroys a pool only when it carries that mark, was
not present when the run started, and is not named in KEEP. Vdev files are created in a directory
with a `.zfsperf-vdevs` manifest, and only files named in a manifest are ever removed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import proc, props
from .disks import keep_list
from .errors import InputError, TargetError, ZfsperfError, shown
from .fileops import LOCAL
from .targets.base import Target
from .units import MIB, format_size, parse_size

OWNER_PROP = props.OWN_MARK           # "zfsperf:owner"
MANIFEST = ".zfsperf-vdevs"
CACHEFILE = "zpool.cache"          # the cache file of the pools a run creates (Target.pool_cachefile)
LAYOUTS = ("stripe", "mirror", "raidz1", "raidz2", "raidz3")
MIN_VDEVS = {"stripe": 1, "mirror": 2, "raidz1": 2, "raidz2": 3, "raidz3": 4}
# ZFS's own rules (zfs_namecheck.c): pool names start with a letter and hold alphanumerics,
# _ - . : ; dataset components add nothing else; no "c[0-9]" style or reserved names handled here.
POOL_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,254}$")
COMPONENT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,254}$")   # no leading "-": never an option
PROP_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$|^[a-z0-9_.+-]+:[a-z0-9_.:+-]+$")
RESERVED_POOL_NAMES = {"mirror", "raidz", "raidz1", "raidz2", "raidz3", "spare", "log", "cache",
                       "special", "dedup", "draid"}


def check_pool_name(name: str) -> str:
    if not POOL_NAME_RE.match(name) or name in RESERVED_POOL_NAMES or name.startswith(("mirror", "raidz")):
        raise InputError(f"{shown(name)} is not a valid pool name (a letter, then letters, digits, _ - . :)",
                         field="pool")
    return name


def check_dataset_component(name: str) -> str:
    if not COMPONENT_RE.match(name) or name in (".", ".."):
        raise InputError(f"{shown(name)} is not a valid dataset name component", field="dataset")
    return name


def check_property_name(name: str) -> str:
    if not PROP_NAME_RE.match(name) or len(name) > 255:          # ZAP names: at most 255 bytes
        raise InputError(f"{shown(name)} is not a valid ZFS property name", field="property")
    return name


def check_property(name: str, value: str, *, pool: bool = False) -> str:
    """`name=value` for `zfs create -o` / `zpool create -o` (pool=True): refused (InputError) when
    the property table (props.py) does not let a test pool or dataset have it. The runfile loader
    checks the same table with the line; this is the last check before the command."""
    check_property_name(name)
    why = props.problem(name, value, pool=pool)
    if why:
        raise InputError(why, field="pool.properties" if pool else "dataset")
    return f"{name}={value}"


def unknown_property_value(name: str, value: str) -> str | None:
    """Why a dataset property may not be set to value on a zfsperf test dataset, or None."""
    return props.problem(name, value)


@dataclass
class PoolSpec:
    layout: str = "stripe"
    vdevs: int = 2
    vdev_size: int = 2 * 1024 ** 3
    log_vdevs: int = 0
    cache_vdevs: int = 0                  # L2ARC devices (sparse files of cache_size)
    cache_size: int = 256 * MIB
    ashift: int | None = None
    prefill: bool = False
    properties: dict[str, str] = field(default_factory=dict)   # zpool -o

    def validate(self) -> None:
        if self.layout not in LAYOUTS:
            raise InputError(f"unknown layout {shown(self.layout)} (expected {' | '.join(LAYOUTS)})",
                             field="pool.layout")
        if self.vdevs < MIN_VDEVS[self.layout]:
            raise InputError(f"{self.layout} needs at least {MIN_VDEVS[self.layout]} vdevs, got {self.vdevs}",
                             field="pool.vdevs")
        if self.cache_vdevs < 0 or self.log_vdevs < 0:
            raise InputError("log_vdevs and cache_vdevs cannot be negative", field="pool.cache_vdevs")
        if self.cache_vdevs and self.cache_size < 64 * MIB:
            raise InputError(f"cache_size {format_size(self.cache_size)} is below ZFS's 64M minimum",
                             field="pool.cache_size")
        if self.vdev_size < 64 * MIB:
            raise InputError(f"vdev_size {format_size(self.vdev_size)} is below ZFS's 64M minimum",
                             field="pool.vdev_size")

    def capacity(self) -> int:
        """Bytes of data the pool holds, before ZFS's own overhead (data vdevs by layout)."""
        n, size = self.vdevs, self.vdev_size
        if self.layout == "mirror":
            return size
        if self.layout.startswith("raidz"):
            return (n - int(self.layout[-1])) * size
        return n * size

    def file_bytes(self) -> int:
        """Bytes of vdev files the pool is made of (data, log and cache), sparse until written."""
        return self.vdev_size * (self.vdevs + self.log_vdevs) + self.cache_size * self.cache_vdevs

    def describe(self) -> str:
        text = f"{self.layout} of {self.vdevs} × {format_size(self.vdev_size)}"
        if self.log_vdevs:
            text += f" + log {'mirror ' if self.log_vdevs > 1 else ''}of {self.log_vdevs}"
        if self.cache_vdevs:
            text += f" + cache of {self.cache_vdevs} × {format_size(self.cache_size)}"
        return text


class VdevDir:
    """A directory of sparse vdev files that zfsperf created (listed in its manifest)."""

    def __init__(self, target: Target, path: Path) -> None:
        self.target = target
        self.path = Path(path)
        self.fs = target.files

    def _manifest(self) -> dict:
        try:
            return json.loads(self.fs.read_text(str(self.path / MANIFEST)))
        except (OSError, ValueError):
            return {"files": {}}

    def listed(self) -> list[str]:
        """The file names the manifest lists."""
        return list(self._manifest()["files"])

    def _save(self, data: dict) -> None:
        self.fs.makedirs(str(self.path))
        self.fs.write_text(str(self.path / MANIFEST), json.dumps(data, indent=1))

    def note(self, name: str) -> None:
        """List a file that ZFS writes here (the pools' cache file), so that remove_all takes it."""
        data = self._manifest()
        if name not in data["files"]:
            data["files"][name] = {"size": 0, "prefilled": False}
            self._save(data)

    def files(self, names: list[str], size: int, prefill: bool) -> list[str]:
        """Vdev files of this size, created (and pre-filled) when missing or of another size."""
        self.fs.makedirs(str(self.path))
        data = self._manifest()
        out = []
        for name in names:
            p = self.path / name
            info = data["files"].get(name)
            exists = self.fs.exists(str(p))
            if exists and info is None:
                raise TargetError(f"{p} exists and was not created by zfsperf: refusing to use it")
            fresh = info is None or info.get("size") != size or not exists
            if fresh:
                data["files"][name] = {"size": size, "prefilled": False}
                self._save(data)               # listed before it exists: a crash leaves nothing unlisted
                if exists:
                    self.fs.remove(str(p))
                res = self.target.run(["truncate", "-s", str(size), str(p)])
                if not res.ok:
                    raise TargetError(f"cannot create vdev file {p}: {res.error_text()}")
            if prefill and not data["files"][name].get("prefilled"):
                res = self.target.run(["dd", "if=/dev/zero", f"of={p}", "bs=1M", f"count={size // MIB}",
                                       "conv=notrunc", "status=none"], timeout=3600)
                if not res.ok:
                    raise TargetError(f"cannot pre-fill {p}: {res.error_text()}")
                data["files"][name]["prefilled"] = True
                self._save(data)
            out.append(str(p))
        return out

    def loop_devices(self, files: list[str]) -> list[str]:
        """Loop devices over our files (ZFS takes only disks as cache devices); reused if attached."""
        out = []
        for f in files:
            have = loops_of(self.target, f)
            if have:
                out.append(have[0])
                continue
            res = self.target.run(["losetup", "-f", "--show", f])
            if not res.ok or not res.stdout.strip():
                raise TargetError(f"cannot attach {f} to a loop device: {res.error_text()}")
            out.append(res.stdout.strip())
        return out

    def remove_all(self, *, skip_open: bool = False) -> list[str]:
        """Remove the files this directory's manifest lists (and nothing else). With skip_open
        (leftovers of other runs), a file that a process on this machine still has open — the
        vdev of a live pool — is kept and stays listed."""
        data = self._manifest()
        removed = []
        in_use = proc.open_files() if skip_open and self.fs is LOCAL else {}
        for name in list(data["files"]):
            p = self.path / name
            if str(p) in in_use:
                continue
            for loop in loops_of(self.target, str(p)):      # cache vdevs sit on loop devices
                self.target.run(["losetup", "-d", loop])
            if self.fs.remove(str(p)):
                removed.append(str(p))
            del data["files"][name]
        if data["files"]:                      # some are in use: the manifest keeps naming them
            self._save(data)
            return removed
        self.fs.remove(str(self.path / MANIFEST))
        mnt = self.path / "mnt"
        try:
            for name in self.fs.listdir(str(mnt)):     # empty mountpoints of destroyed pools
                self.fs.rmdir(str(mnt / name))
        except OSError:
            pass
        self.fs.rmdir(str(mnt))
        self.fs.rmdir(str(self.path))
        return removed


def loops_of(target: Target, path: str) -> list[str]:
    """Loop devices whose backing file is path (`losetup -j`), e.g. /dev/loop3."""
    res = target.run(["losetup", "-j", path], log=proc.NULL_LOG)
    return [ln.split(":", 1)[0] for ln in res.stdout.splitlines() if ln.startswith("/dev/loop")] if res.ok else []


def room_problem(spec: PoolSpec, vdev_dir: str) -> str | None:
    """Why the filesystem under vdev_dir can never hold these vdev files: larger than it is
    (`vdev_size = "1P"`), or, pre-filled, larger than its free space. None when they fit."""
    p = Path(vdev_dir)
    while not p.exists() and p != p.parent:
        p = p.parent
    st = os.statvfs(p)
    total, free = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    need = spec.file_bytes()
    if need > total:
        return (f"its vdev files ({spec.describe()}: {format_size(need)}) are larger than the filesystem under "
                f"{vdev_dir} ({format_size(total)})")
    if spec.prefill and need > free:
        return f"pre-filled vdev files ({format_size(need)}) need more than the {format_size(free)} free under {vdev_dir}"
    return None


FAR_LARGER = 2.0       # data this many times the pool's raw capacity can never fit it


def fit_problem(spec: PoolSpec, data: int | None, compression: str | None = None) -> str | None:
    """Why a case's data set can never fit its pool (a corpus far larger than the pool), or None.
    Only far larger (FAR_LARGER times its raw capacity) and only without compression: data a little
    larger than the pool may still fit once compressed, and a run that fills its pool is a FAIL with
    ZFS's ENOSPC, never a PASS (tests/faults/test_workload_errors.py)."""
    if compression not in (None, "off"):
        return None
    if data is not None and data > FAR_LARGER * spec.capacity():
        return (f"its data ({format_size(data)}) can never fit its pool ({spec.describe()}: "
                f"{format_size(spec.capacity())} of data before ZFS's overhead)")
    return None


HOLD_MARGIN = 1.15     # what a pool holds of its raw capacity, less ZFS's slop, metadata and the last round's check


def hold_problem(spec: PoolSpec, kept: int | None, compression: str | None = None) -> str | None:
    """Why an iteration that keeps `kept` bytes on its pool (a fixed number of receive rounds)
    would be cut short by it, or None: with compression the data may well fit, so only without."""
    if kept is None or compression not in (None, "off"):
        return None
    need = int(kept * HOLD_MARGIN)
    if need <= spec.capacity():
        return None
    per = -(-need // max(1, spec.capacity() // spec.vdev_size))     # vdev_size that would hold it
    return (f"an iteration keeps {format_size(kept)} on its pool and the pool ({spec.describe()}) holds "
            f"{format_size(spec.capacity())} before ZFS's overhead: make vdev_size at least "
            f"{format_size(-(-per // MIB) * MIB)}, or io_size or threads smaller")


def new_pool_name(prefix: str = "zfsperf") -> str:
    return f"{prefix}_{secrets.token_hex(3)}"


def list_pools(target: Target) -> list[str]:
    res = target.run(["zpool", "list", "-H", "-o", "name"], log=proc.NULL_LOG)
    return res.stdout.split() if res.ok else []


def pool_owner(target: Target, pool: str) -> str | None:
    """The zfsperf ownership mark on a pool's root dataset, or None."""
    res = target.run(["zfs", "get", "-H", "-o", "value", OWNER_PROP, pool], log=proc.NULL_LOG)
    if not res.ok:
        return None
    value = res.stdout.strip()
    return None if value in ("", "-") else value


@dataclass
class Pool:
    target: Target
    name: str
    spec: PoolSpec
    vdevs: list[str]
    mountpoint: str
    owner: str
    fs: str = ""                  # the dataset a workload works under (a duet side's), else the pool's root

    @property
    def root(self) -> str:
        """The dataset workloads create theirs under: the pool's root dataset, or a duet side's."""
        return self.fs or self.name

    def side(self, fs: str, mountpoint: str) -> "Pool":
        """The same pool seen from one of its datasets (a duet side): pool-level reads (txgs, free
        space, iostat) still name the pool, datasets are made under fs."""
        return dataclasses.replace(self, fs=fs, mountpoint=mountpoint)

    @property
    def l2_capacity(self) -> int | None:
        """Bytes of L2ARC devices, or None without any (L2 metrics are then absent)."""
        return self.spec.cache_vdevs * self.spec.cache_size if self.spec.cache_vdevs else None

    def dataset(self, name: str, properties: dict[str, str] | None = None) -> str:
        full = f"{self.root}/{check_dataset_component(name)}"
        argv = ["zfs", "create"]
        for k, v in (properties or {}).items():
            argv += ["-o", check_property(k, str(v))]
        res = self.target.run(argv + [full])
        if not res.ok:
            raise TargetError(f"zfs create {full} failed: {res.error_text()}")
        return full

    def layout_argv(self) -> list[str]:
        n_data, n_log = self.spec.vdevs, self.spec.log_vdevs
        data, logs = self.vdevs[:n_data], self.vdevs[n_data:n_data + n_log]
        caches = self.vdevs[n_data + n_log:]
        argv = list(data) if self.spec.layout == "stripe" else [self.spec.layout, *data]
        if logs:
            argv += ["log"] + (["mirror"] if len(logs) > 1 else []) + logs
        if caches:
            argv += ["cache", *caches]
        return argv


class PoolManager:
    """Creates and destroys zfsperf's pools on one target, remembering what existed before."""

    def __init__(self, target: Target, vdev_dir: Path, run_id: str, disks: list[str] | None = None) -> None:
        self.target = target
        self.vdev_dir = VdevDir(target, vdev_dir)
        self.run_id = run_id
        self.disks = list(disks or [])          # DISKS: checked by check_disks before the run
        self.labelled: set[str] = set()         # disks this run put a pool label on
        self.preexisting = set(list_pools(target))

    def create(self, spec: PoolSpec, *, name: str | None = None,
               fs_properties: dict[str, str] | None = None) -> Pool:
        spec.validate()
        name = check_pool_name(name or new_pool_name())
        existing = set(list_pools(self.target))
        if name in existing or name in self.preexisting:
            raise TargetError(f"pool {name} already exists: zfsperf never reuses a pool it did not create")
        names = [f"vdev{i}" for i in range(spec.vdevs)] + [f"log{i}" for i in range(spec.log_vdevs)]
        cache_names = [f"cache{i}" for i in range(spec.cache_vdevs)]
        if self.disks:
            need = len(names) + len(cache_names)
            if len(self.disks) < need:
                raise TargetError(f"{spec.describe()} needs {need} disks, DISKS has {len(self.disks)}")
            taken = self.disks[:need]
            files = [self.target.device_path(d) for d in taken]
        else:
            files = self.vdev_dir.files(names, spec.vdev_size, spec.prefill)
            if cache_names:
                loops = self.vdev_dir.loop_devices(self.vdev_dir.files(cache_names, spec.cache_size, False))
                files += [self.target.device_path(d) for d in loops]
        mountpoint = str(self.vdev_dir.path / "mnt" / name)
        owner = f"{self.run_id}"
        # never in the host's import cache (imported at its next boot): a cache file of the run's
        # own (Target.pool_cachefile); -m: mounted under this run's own directory, whatever the
        # datasets inherit
        cache = self.target.pool_cachefile(str(self.vdev_dir.path))
        argv = ["zpool", "create", "-f", *(["-o", f"cachefile={cache}"] if cache else []), "-m", mountpoint,
                "-O", f"{OWNER_PROP}={owner}"]
        if cache:
            self.vdev_dir.note(CACHEFILE)         # listed, so that it goes with the vdev files
            self.target.pool_caches[name] = cache
        if spec.ashift:
            argv += ["-o", f"ashift={spec.ashift}"]
        for k, v in spec.properties.items():
            if k != "cachefile":            # "none", the only value the table lets through: zfsperf's own
                argv += ["-o", check_property(k, str(v), pool=True)]
        for k, v in (fs_properties or {}).items():
            argv += ["-O", check_property(k, str(v))]
        pool = Pool(self.target, name, spec, files, mountpoint, owner)
        # -f: the files are ours (manifest); they may carry the label of a pool we destroyed.
        res = self.target.run(argv + [name] + pool.layout_argv())
        if not res.ok and not self._made_by_us(name, owner):
            raise TargetError(f"zpool create {name} failed: {res.error_text()}")
        if self.disks:
            self.labelled.update(taken)         # only now: a failed create is never followed by a wipe
        return pool

    def _made_by_us(self, name: str, owner: str) -> bool:
        """After a failed create: the name was free a moment ago, so a pool of that name carrying this
        run's mark is the one this create made (an ssh transport reruns a command whose session ended
        with a quick 255, and the rerun says "pool already exists")."""
        return name in list_pools(self.target) and pool_owner(self.target, name) == owner

    def may_destroy(self, name: str) -> tuple[bool, str]:
        if name in keep_list():
            return False, f"{name} is in KEEP"
        if name in self.preexisting:
            return False, f"{name} existed before this run started"
        if pool_owner(self.target, name) is None:
            return False, f"{name} does not carry the {OWNER_PROP} mark"
        return True, ""

    def destroy(self, pool: Pool | str, *, attempts: int = 40, delay: float = 0.25) -> None:
        name = pool.name if isinstance(pool, Pool) else pool
        ok, why = self.may_destroy(name)
        if not ok:
            raise TargetError(f"refusing to destroy pool {name}: {why}")
        destroy_busy(self.target, name, attempts=attempts, delay=delay)
        self.target.files.rmdir(str(self.vdev_dir.path / "mnt" / name))

    def cleanup_files(self) -> list[str]:
        """Remove our vdev files, and wipe the pool labels we wrote on DISKS (after destroy): only
        ZFS labels (`wipefs -t zfs_member`), only on disks where our `zpool create` succeeded."""
        if self.labelled and not leftover_pools(self.target):
            for d in sorted(self.labelled):     # only once none of our pools is still on them
                self.target.run(["wipefs", "-a", "-q", "-t", "zfs_member", d])
        self.labelled.clear()
        return self.vdev_dir.remove_all()


def destroy_busy(target: Target, name: str, *, attempts: int = 40, delay: float = 0.25) -> None:
    """`zpool destroy -f`, retried while the pool is busy (zfs-fuse right after a receive, or after
    a killed writer): callers have already decided the pool is zfsperf's to destroy."""
    last = ""
    for _ in range(attempts):
        res = target.run(["zpool", "destroy", "-f", name], timeout=120)
        if res.ok or name not in list_pools(target):
            return
        last = res.error_text()
        time.sleep(delay)
    raise TargetError(f"zpool destroy {name} failed after {attempts} attempts: {last}")


def leftover_vdev_dirs(target: Target, base: Path) -> list[Path]:
    """Directories under base that hold a zfsperf manifest (vdev files of earlier runs)."""
    try:
        subdirs = target.files.listdir(str(base))
    except OSError:
        return []
    return [base / d for d in subdirs if target.files.exists(str(base / d / MANIFEST))]


def leftover_pools(target: Target) -> list[tuple[str, str]]:
    """Pools on the target that carry zfsperf's mark: (name, owner)."""
    out = []
    for name in list_pools(target):
        owner = pool_owner(target, name)
        if owner is not None:
            out.append((name, owner))
    return out


def finish_pools(pools: PoolManager, *, keep_failed: bool, say: Callable[[str], None]) -> None:
    """At the end of a run: every pool this run made and still has is destroyed and its vdev files
    removed — unless -k, which keeps (and names) them."""
    leftovers = [n for n, _o in leftover_pools(pools.target) if n not in pools.preexisting]
    if not keep_failed:
        for name in leftovers:
            try:
                pools.destroy(name)
            except ZfsperfError as e:
                say(f"warning: {e}")
        pools.cleanup_files()
    elif leftovers:
        say(f"-k: kept pools {', '.join(leftovers)} and vdev files in {pools.vdev_dir.path}")
