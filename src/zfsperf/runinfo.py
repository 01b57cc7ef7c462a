"""run.json: how a run's results were obtained (versions, host, target, runfile, selection, pool
layouts, every tunable before and after; the zfsperf commit and library versions, the CPU and
memory, the filesystem under the vdev files), in results format FORMAT_VERSION."""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__, proc
from .errors import ZfsperfError
from .machinefacts import cpu_model, memory_bytes, mount_of, rotational_kind
from .redact import redact_argv

if TYPE_CHECKING:                   # `zfsperf --version` asks checkout() alone: not the runfile's model
    from .results.record import RunRecord
    from .runfile import Case, Runfile
    from .targets.base import Target


def read_tunables(target: Target, names: list[str]) -> dict[str, str | None]:
    values = target.read_tunables()                    # one read for hundreds (ssh targets)
    out: dict[str, str | None] = {}
    for n in names:
        if n in values:
            out[n] = values[n]
            continue
        try:
            out[n] = target.get_tunable(n)
        except ZfsperfError:
            out[n] = None
    return out


LIBRARIES = ("numpy", "scipy", "matplotlib", "rich", "psycopg")
CODE = ("src", "pyproject.toml")          # what of a checkout decides how zfsperf measures and judges


def checkout(src: Path = Path(__file__).resolve().parents[2]) -> dict[str, Any]:
    """zfsperf's version and, from a git checkout, its commit and whether its code had local changes
    (two runs of "0.1.0" days apart can judge by different rules): the files of CODE only, whose
    rules and built-in runfiles a run uses, not the tests' and documents' (each file's stat is a
    round trip where the checkout is read over 9p: 1.3 s of every start of zfsperf in the OpenZFS
    guest for the whole checkout's 511 files, 2026-12-07). src: the checkout of a src/ layout install."""
    out: dict[str, Any] = {"zfsperf": __version__, "commit": None, "dirty": None}
    if (src / ".git").exists():
        head = proc.run(["git", "-C", str(src), "rev-parse", "HEAD"])
        if head.returncode == 0:
            out["commit"] = head.stdout.strip()
            st = proc.run(["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no", "--", *CODE])
            out["dirty"] = bool(st.stdout.strip()) if st.returncode == 0 else None
    return out


def software() -> dict[str, Any]:
    """checkout(), and the libraries that compute zfsperf's statistics and draw its charts."""
    from importlib import metadata
    out = checkout()
    libs = {}
    for name in LIBRARIES:
        version = getattr(sys.modules.get(name), "__version__", None)     # imported already: no METADATA read
        if isinstance(version, str):
            libs[name] = version
            continue
        try:
            libs[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            libs[name] = None
    out["libraries"] = libs
    return out


def hardware() -> dict[str, Any]:
    """The CPU (model, logical CPUs), memory and kernel command line of the machine zfsperf ran on."""
    def text(path: str) -> str:
        try:
            return Path(path).read_text()
        except OSError:
            return ""
    model, mem = cpu_model(text("/proc/cpuinfo")), memory_bytes(text("/proc/meminfo"))
    hw = {"cpu_model": model or platform.processor() or None, "cpus": os.cpu_count(), "memory_bytes": mem,
          "kernel_cmdline": text("/proc/cmdline").strip() or None}
    limit = cpu_limit()
    if limit is not None and limit < (os.cpu_count() or 0):
        hw["cpu_limit"] = limit
    return hw


CGROUP_ROOTS = {"v1": Path("/sys/fs/cgroup/cpu"), "v2": Path("/sys/fs/cgroup")}


def cpu_limit(cgroup_file: Path = Path("/proc/self/cgroup")) -> float | None:
    """The CPUs this process's cgroup lets it use (a container's, a slice's or a test host's limit:
    cgroup v2 cpu.max, v1 cpu.cfs_quota_us over cpu.cfs_period_us; the least along its path), or
    None where nothing limits it."""
    try:
        lines = cgroup_file.read_text().splitlines()
    except OSError:
        return None
    limits: list[float] = []
    for ln in lines:
        _id, ctrls, path = (ln.split(":", 2) + ["", ""])[:3]
        v2 = ctrls == ""
        if not v2 and "cpu" not in ctrls.split(","):
            continue
        root = CGROUP_ROOTS["v2" if v2 else "v1"]
        d = root / path.lstrip("/")
        while True:
            try:
                if v2:
                    quota, period = (d / "cpu.max").read_text().split()[:2]
                else:
                    quota, period = ((d / f).read_text().strip() for f in ("cpu.cfs_quota_us", "cpu.cfs_period_us"))
                if quota not in ("max", "-1") and float(period) > 0:
                    limits.append(float(quota) / float(period))
            except (OSError, ValueError):
                pass
            if d == root or root not in d.parents:
                break
            d = d.parent
    return round(min(limits), 2) if limits else None


def storage(path: str) -> dict[str, Any]:
    """The filesystem and device the vdev files live on (the deepest mount holding path), on this
    machine: zfs-fuse's vdev I/O lands in that filesystem's page cache, so its figures depend on it.
    A target on another machine reads its own (Target.storage)."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    except OSError:
        mountinfo = ""
    mnt = mount_of(os.path.realpath(p), mountinfo)
    if mnt is None:
        return {"path": path, "mount": None, "fstype": None, "device": None, "disk": None}
    return {"path": path, **mnt, "disk": disk_kind(mnt["device"])}


def disk_kind(device: str | None) -> str | None:
    """What kind of disk a block device is, as its kernel says (/sys/class/block/<dev>/queue/
    rotational; a partition's is its disk's): nvme, ssd or rotational; None for no block device."""
    if not device or not device.startswith("/dev/"):
        return None
    node = Path("/sys/class/block") / Path(device).name
    try:
        disk = node.resolve()
        if (disk / "partition").exists():
            disk = disk.parent
        return rotational_kind((disk / "queue" / "rotational").read_text(), disk.name)
    except OSError:
        return None


def run_info(rf: Runfile, target: Target, cases: list[Case], t_start: float, tun_names: list[str], *,
             argv: list[str], selection: dict[str, Any], vdev_dir: str, klass: str | None = None,
             fleet: dict[str, str] | None = None) -> RunRecord:
    """run.json as a run starts. klass: the machine's class as the user names it (run --class),
    else derived (results.record.machine_label); fleet: the fleet's id and this host's name in its
    inventory (a run of `zfsperf fleet run`)."""
    from .results.record import RunRecord, machine_label
    fio = proc.run(["fio", "--version"])
    hw, st, tgt = hardware(), target.storage(vdev_dir) or storage(vdev_dir), target.info()
    return RunRecord(
        zfsperf_version=__version__, command_line=redact_argv(argv), host=platform.node(),
        os=platform.platform(), kernel=platform.release(), python=sys.version.split()[0],
        target=tgt, fio_version=fio.stdout.strip() if fio.ok else None, start=t_start,
        runfile={"source": rf.source, "text": rf.text}, selection=selection, params=rf.params,
        vdev_dir=vdev_dir, pools={t.name: t.pool.describe() for t in {c.test.name: c.test for c in cases}.values()},
        cases=[c.id for c in cases], tunables={"before": read_tunables(target, tun_names), "after": None},
        software=software(), hardware=hw, storage=st,
        machine_class={"label": klass or machine_label(hw, st, tgt), "given": klass is not None},
        fleet=fleet or {})
