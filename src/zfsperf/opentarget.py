"""open_target(spec): which Target a run uses. The composition root of the targets: the one module
that knows every implementation (zfs-fuse, kernel OpenZFS on Linux and FreeBSD, ssh, the guest),
so it sits above them all, beside the runner, and targets/ holds the interface and the
implementations only.

Specs: "auto" (kernel OpenZFS when present, else the embedded zfs-fuse), "zfs-fuse",
"openzfs" (this host's kernel OpenZFS, Linux or FreeBSD).
"""

from __future__ import annotations

import os
import platform
import socket
from dataclasses import dataclass
from pathlib import Path

from . import proc
from .tunables import FileTunables
from .errors import InputError, TargetError, shown
from .zfsfuse.daemon import Lab, lab_dir_from_env, zfs_fuse_available
from .zfsfuse.target import ZfsFuseTarget
from .guest.vm import Guest, open_guest_target, twin_root
from .guest.pair import GuestPair
from .sshlink import parse_url
from .targets.base import Target, TurnPair
from .targets.ssh import open_ssh
from .targets.openzfs_freebsd import OpenZfsFreeBsdTarget
from .targets.openzfs_linux import OpenZfsLinuxTarget, present

__all__ = ["Target", "open_target", "SPECS"]

SPECS = ("auto", "zfs-fuse", "openzfs", "guest")


def _kernel_openzfs(log: proc.CommandLog) -> Target | None:
    if platform.system() == "FreeBSD":
        return OpenZfsFreeBsdTarget(log)
    if present("/"):
        return OpenZfsLinuxTarget("/", log)
    return None


def _zfs_fuse(log: proc.CommandLog, arc_max_mb: int | None) -> Target:
    root = lab_dir_from_env()
    lab = Lab.find(root, log)
    if lab is not None:
        if not lab.ready():
            lab.recover()
        return ZfsFuseTarget(lab, owns_lab=False, log=log)
    # No lab started by `zfsperf lab start`: this run starts its own and stops it at the end.
    own = Path(str(root) + f"-run{os.getpid()}")
    lab = Lab.start(own, owner="run", arc_max_mb=arc_max_mb, log=log)
    return ZfsFuseTarget(lab, owns_lab=True, log=log)


def check_spec(spec: str, tunables_dir: str | None = None) -> None:
    """An input error (exit 2) for a target spec or a tunables directory that cannot be used, said
    before anything is started or written."""
    if spec == "lab":              # an old spelling of guest; "lab" now names only the embedded daemon
        raise InputError("unknown target 'lab': the OpenZFS guest is --target guest; the embedded zfs-fuse "
                         "daemon (zfsperf lab) is --target zfs-fuse", field="target")
    if spec not in SPECS and not spec.startswith("ssh://"):
        raise InputError(f"unknown target {shown(spec)} (expected one of: {', '.join(SPECS)}, ssh://user@host[:port])",
                         field="target")
    if tunables_dir is not None and not os.path.isdir(tunables_dir):
        raise InputError("not a directory", file=tunables_dir, field="--tunables-dir")
    if spec.startswith("ssh://"):
        parse_url(spec)                      # an input error before anything is contacted


@dataclass(frozen=True)
class Expected:
    """The target a spec will open, told without starting or contacting anything: its
    implementation where that is known before it answers (else None) and, in words, what opening
    it will start."""
    impl: str | None
    how: str
    tunables: bool = True          # whether it has module tunables at run time (zfs-fuse has none)


def expected(spec: str, tunables_dir: str | None = None) -> Expected:
    """What open_target(spec) will reach, or an input error (exit 2) for one it cannot: kernel
    OpenZFS asked for where there is none, the embedded zfs-fuse not installed, an ssh host whose
    name does not resolve. Reads only this host's files and its resolver."""
    check_spec(spec, tunables_dir)
    if spec.startswith("ssh://"):
        _user, host, port = parse_url(spec)
        try:
            socket.getaddrinfo(host, port)
        except (socket.gaierror, UnicodeError) as e:
            raise InputError(f"ssh host {shown(host)} does not resolve ({e})", field="--target") from None
        return Expected(None, f"the host {host} over ssh (its ZFS is read once connected)")
    if spec == "guest":
        return Expected("openzfs-linux", "the OpenZFS guest under QEMU (booted if it is not running)"
                        + guest_image_note())
    kernel = platform.system() == "FreeBSD" or present("/")
    if spec == "openzfs" and not kernel:
        raise InputError("no kernel OpenZFS on this machine (/proc/spl/kstat/zfs is absent): --target auto or "
                         "zfs-fuse runs on the embedded zfs-fuse", field="--target")
    if kernel and spec != "zfs-fuse":
        impl = "openzfs-freebsd" if platform.system() == "FreeBSD" else "openzfs-linux"
        return Expected(impl, "this host's kernel OpenZFS (nothing is started)")
    if not zfs_fuse_available():
        raise InputError("the embedded zfs-fuse is not installed (`make run` installs it: apt-get install zfs-fuse)",
                         field="--target")
    lab = lab_dir_from_env()
    if (lab / "state.json").is_file():
        return Expected("zfs-fuse", f"the embedded zfs-fuse of `zfsperf lab` at {lab} (if it still runs; "
                                    "else a daemon of the run's own)", tunables=tunables_dir is not None)
    return Expected("zfs-fuse", "the embedded zfs-fuse: a daemon of the run's own, started for it and stopped after",
                    tunables=tunables_dir is not None)


GUEST_BUILD_MIN = 12      # a first `guest build` on a 2-core machine: 688 s (docs/benchmarks.md, 2026-12-02)


def guest_image_note() -> str:
    """What a first run on the guest costs before it measures anything: its image, when none is
    cached (nothing is built or started to tell)."""
    from .guest.build import DEFAULT_VERSION, find_build
    from .guest.vm import Guest
    if Guest().state() is not None or find_build(DEFAULT_VERSION) is not None:
        return ""
    return (f"; its image is not built yet: the run builds it first (`zfsperf guest build`, about "
            f"{GUEST_BUILD_MIN} min on a 2-core machine, once: cached under ~/.cache/zfsperf/openzfs)")


def elsewhere(spec: str) -> bool:
    """Whether the target spec runs ZFS on another machine (an ssh host, the OpenZFS guest): its paths
    are that machine's, and this one's tools (perf) do not see it."""
    return spec.startswith("ssh://") or spec == "guest"


def reloads_modules(spec: str) -> bool:
    """Whether the target spec names a machine whose zfs module zfsperf may unload and load again
    (to set a load-scope tunable): only its own OpenZFS guest, where no pool but its own exists."""
    return spec == "guest"


def open_target(spec: str = "auto", *, log: proc.CommandLog = proc.NULL_LOG,
                arc_max_mb: int | None = None, tunables_dir: str | None = None) -> Target:
    """The target for spec. tunables_dir replaces its tunables with a directory laid out like
    /sys/module/zfs/parameters (how the journal and restore are tested without a kernel)."""
    check_spec(spec, tunables_dir)
    if spec.startswith("ssh://"):
        t = open_ssh(spec, log)
    elif spec == "guest":
        t = open_guest_target(log)
    elif spec == "auto":
        t = _kernel_openzfs(log) or _zfs_fuse(log, arc_max_mb)
    elif spec == "zfs-fuse":
        t = _zfs_fuse(log, arc_max_mb)
    else:
        k = _kernel_openzfs(log)
        if k is None:
            raise TargetError("no kernel OpenZFS on this machine (/proc/spl/kstat/zfs is absent)")
        t = k
    if tunables_dir is not None:
        t.tunables = FileTunables(tunables_dir)
    return t


def _has_a_twin(spec: str) -> None:
    """Build turns need two identical machines: only the guest has a twin."""
    if spec != "guest":
        raise InputError(f"two builds taking turns need two identical machines: only the guest has a twin "
                         f"(--target guest), not {shown(spec)}", field="target")


def open_twin(spec: str, *, log: proc.CommandLog = proc.NULL_LOG, say=print) -> Target:
    """Build turns: the second machine of the target `spec` names, opened as a target of its own
    (the guest's twin: the same cached build, memory, vCPUs and disk; guest/vm.py)."""
    _has_a_twin(spec)
    return open_guest_target(log, twin_root(), say=say)


def turn_pair(spec: str) -> TurnPair:
    """Build turns: what pauses the target `spec` names or its twin while the other has its turn
    (guest/pair.py: QMP)."""
    _has_a_twin(spec)
    return GuestPair([Guest(), Guest(twin_root())])
