"""Where ZFS lives: one small protocol that every target answers.

A target runs argv lists (never shell strings), reads kstats as flat {name: number} dicts,
lists, reads and writes tunables, and runs zpool/zfs. What a target lacks it reports as
unavailable (None, or an empty list), never as a made-up value.
"""

from __future__ import annotations

import contextlib
import subprocess
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

from .. import guard, proc
from ..buildref import Userland
from ..errors import TargetError, Unavailable
from ..fileops import LOCAL, FileOps
from ..tunables import Journal, TunableBackend, TunableSession
from .kstat import Txg, busy_seconds


class TurnPair(Protocol):
    """Two identical machines taking turns (build turns: the guest and its twin), as the core uses
    them: one runs while the other is paused. guest/pair.py's GuestPair is the one there is."""

    def turn_to(self, index: int, log: proc.CommandLog | None = None) -> Any:
        """What runs before each of a side's turns on machine `index` (0: the run's target, 1: its
        twin): the other paused, this one running, both read back; returns a callable whose result
        goes into the side's record."""

    def resume_all(self) -> list[str]:
        """Both machines running again; the names of those that had to be resumed."""

    def close(self) -> None:
        """Its connections closed."""


class Daemon(Protocol):
    """The embedded ZFS daemon a target runs on (zfs-fuse's lab), as the core uses it: all of it."""

    def daemon_alive(self) -> bool:
        """Its process is running and answers."""

    def recover(self) -> bool:
        """Restart it after it died (its pools are imported again); True when it came back."""

    def note_vdev_dir(self, path: Path | str) -> None:
        """A vdev directory of this run: a teardown without zfsperf removes it too."""

    def syslog_since(self, offset: int) -> tuple[str, int]:
        """Its log text written after byte offset, and the new offset."""


@dataclass(frozen=True)
class ProfileScope:
    """Which of the machine's samples a profile keeps: `perf script` options that select them (none:
    all), and the words for the record. perf always records the whole machine (-a): one event per
    CPU. Attached to a process instead (-p), it opens one per thread, and zfs-fuse's hundred-odd
    threads made perf itself use 60-130 % of a CPU."""
    select: list[str]
    what: str


@dataclass(frozen=True)
class Capabilities:
    """What a target has, as its class declares it (the way fio's engines declare their flags); the
    core checks these, never a target's attribute names. Recorded in run.json with the target."""
    tunables: bool                   # module parameters read and set at run time (a tunable backend)
    txgs: bool                       # the per-pool txgs kstat (txg numbers and sync times)
    iostat_forms: tuple[str, ...]    # `zpool iostat` forms that work: "human", "-Hp", "-l", "-w", "-q", "-r"
    daemon_recovery: bool            # an embedded daemon that can die during a case and be restarted
    remote: bool                     # commands run on another machine, through a transport (ssh)
    accelerator: str | None          # "tcg" / "kvm" in a QEMU guest: under TCG timings are not speeds
    owns_daemon: bool = False        # the target started its embedded daemon and stops it at close()

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"iostat_forms": list(self.iostat_forms)}


class Target(ABC):
    impl: str = "?"                 # "zfs-fuse", "openzfs-linux", "openzfs-freebsd"

    # declared capabilities: the core reads these, it never probes a target for attributes
    files: FileOps = LOCAL          # files on the target's machine (ssh targets replace this)
    accelerator: str | None = None  # "tcg" / "kvm" for a QEMU guest: under TCG timings are not speeds
    remote: bool = False            # commands run on another machine, through a transport (ssh)
    owns_daemon: bool = False       # this target started its embedded daemon and stops it at close()
    host_root: str = ""             # where the target reads this host's files ("/hostroot" in the guest)
    _bclone: bool | None = None     # its pools show block cloning's counters (pool_sharing): None untried

    def __init__(self, log: proc.CommandLog = proc.NULL_LOG) -> None:
        self.log = log
        self.tunables: TunableBackend | None = None     # FileTunables, SysctlTunables, or None (zfs-fuse)
        self.pool_caches: dict[str, str] = {}           # pool -> the cachefile zfsperf created it with
        # the ZFS commands of the build whose module is loaded, where it has its own (a build A/B's
        # module switch sets it and takes it back); None: the machine's own zpool, zfs, zdb
        self.userland: Userland | None = None

    # ------------------------------------------------------------------ commands
    def tool_argv(self, argv: Sequence[str]) -> list[str]:
        """argv with a ZFS command (zpool, zfs, zdb, zstream) taken from the loaded build's own
        userland when it has one; every other argv as it is."""
        return self.userland.argv(argv) if self.userland is not None else [str(a) for a in argv]

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The argv that runs argv on the target (a namespace or ssh prefix, or nothing)."""
        return [str(a) for a in argv]

    def run(self, argv: Sequence[str], *, stdin_file: str | None = None, timeout: float | None = None,
            log: proc.CommandLog | None = None, input: str | None = None,
            stdout_file: str | None = None) -> proc.Completed:
        """Run argv on the target; stdin_file/stdout_file redirect from/to files on the target."""
        log = self.log if log is None else log
        with contextlib.ExitStack() as stack:
            fin = stack.enter_context(open(stdin_file, "rb")) if stdin_file else None
            fout = stack.enter_context(open(stdout_file, "wb")) if stdout_file else None
            note = (f" < {stdin_file}" if stdin_file else "") + (f" > {stdout_file}" if stdout_file else "")
            return proc.run(self.wrap(self.tool_argv(argv)), log=log, timeout=timeout, input=input, stdin=fin,
                            stdout=fout, note=note)

    def stage_stream(self, local_path: str) -> str:
        """The path on the target's machine of a sendfile that is on this one (a remote target
        copies it there once, so that receive figures never include the transport)."""
        return local_path

    def popen(self, argv: Sequence[str], *, stdin_file: str | None = None,
              stdout: Any = subprocess.PIPE, stderr: Any = subprocess.PIPE,
              ignore_sigpipe: bool = False, stdin_fd: int | None = None) -> subprocess.Popen:
        """Start argv on the target in its own process group (stopped later by pid); stdin_file
        is a file on the target's machine (this one, for a local target).

        ignore_sigpipe: the process starts with SIGPIPE ignored (Python's own setting, kept), so
        that zfsperf's death, which closes the pipe it writes to, does not kill it before the
        guard's SIGTERM reaches it: fio, whose job processes run in sessions of their own, stops
        them on SIGTERM, but leaves them running to the end of their runtime when SIGPIPE kills it.
        stdin_fd: a descriptor for the process's stdin instead of /dev/null (an ssh target's tie)."""
        stdin: Any = subprocess.DEVNULL if stdin_fd is None else stdin_fd
        f = open(stdin_file, "rb") if stdin_file else None
        try:
            guard.ready()
            p = subprocess.Popen(self.wrap(self.tool_argv(argv)), stdin=f or stdin, stdout=stdout, stderr=stderr,
                                 start_new_session=True, env=proc.c_locale_env(),
                                 restore_signals=not ignore_sigpipe)
            guard.watch(p)                   # stopped even if zfsperf is killed with -9
            return p
        finally:
            if f:
                f.close()

    # ------------------------------------------------------------------ identity
    @abstractmethod
    def zfs_version(self) -> str: ...

    def pool_version(self) -> str:
        return "5000 (feature flags)"

    def capabilities(self) -> Capabilities:
        """The declarations below, in one value (subclasses declare; nothing here probes)."""
        return Capabilities(tunables=self.tunables is not None, txgs=self.has_txgs(),
                            iostat_forms=tuple(self.iostat_forms()), daemon_recovery=self.daemon() is not None,
                            remote=self.remote, accelerator=self.accelerator, owns_daemon=self.owns_daemon)

    def info(self) -> dict[str, Any]:
        names = self.tunable_names()
        return {
            "implementation": self.impl,
            "zfs_version": self.zfs_version(),
            "pool_version": self.pool_version(),
            "kstat_sources": self.kstat_sources(),
            "txgs": self.has_txgs(),
            "zpool_iostat_forms": self.iostat_forms(),
            "tunables": len(names),
            **({"accelerator": self.accelerator} if self.accelerator else {}),
            "capabilities": self.capabilities().as_dict(),
        }

    # ------------------------------------------------------------------ kstats
    @abstractmethod
    def kstat_sources(self) -> list[str]: ...

    @abstractmethod
    def kstat(self, name: str) -> dict[str, float] | None:
        """A global kstat ("arcstats", "zfetchstats", …) as {field: number}, or None."""

    def kstat_fields(self, name: str, fields: Sequence[str]) -> dict[str, float] | None:
        """Only these fields of a global kstat (what is published of them), or None."""
        data = self.kstat(name)
        return None if data is None else {k: data[k] for k in fields if k in data}

    def daemon(self) -> Daemon | None:
        """The embedded ZFS daemon this target runs on (zfs-fuse's lab: it can die and be
        restarted, it logs to its own syslog, it is torn down with its run), or None (kernel ZFS)."""
        return None

    def storage(self, path: str) -> dict[str, Any] | None:
        """The filesystem and disk under path on the machine this target measures, when that is
        another machine (over ssh): run.json's storage. None: the machine zfsperf runs on, which
        runinfo.storage reads itself."""
        return None

    def profile_scope(self) -> ProfileScope | None:
        """What a profile of this target keeps: the whole machine, where a kernel OpenZFS runs in
        kernel threads and its callers' system calls; None for a target reached through a
        transport (perf runs on this machine)."""
        return None if self.remote else ProfileScope([], "the whole machine")

    def has_txgs(self) -> bool:
        return False

    def taskqs(self) -> dict[str, dict[str, int]] | None:
        """Every SPL taskq's threads and queued tasks (OpenZFS 2.2+ on Linux: taskq/summary), or
        None where the target publishes none."""
        return None

    def txgs(self, pool: str) -> list[Txg] | None:
        return None

    def busy_cpu_seconds(self) -> float | None:
        """Every CPU's busy time on the target's machine so far (its /proc/stat; FreeBSD's target:
        kern.cp_time), or None where it cannot be read."""
        try:
            return busy_seconds(self.files.read_text("/proc/stat"))
        except (OSError, ValueError):
            return None

    def zfs_cpu(self) -> dict[str, float] | None:
        """CPU seconds of ZFS's own threads so far, by name, or None where the target shows none."""
        return None

    def zil_counters(self, pool: str) -> dict[str, dict[str, float]] | None:
        """The ZIL's counters of each of the pool's datasets ({dataset name: {field: value}},
        metrics/zil.py), or None where the target publishes none."""
        return None

    def pool_sharing(self, pool: str) -> dict[str, float] | None:
        """What the pool shares between blocks, pool-wide (a dataset's `used` shows neither): its
        dedup ratio (`zpool list -H -o dedupratio`, which zfs-fuse and every OpenZFS print as
        "2.00x") and, where the pool has block cloning (OpenZFS 2.2+), the bytes cloned blocks use
        and the bytes cloning saved (`zpool get -Hp -o value bcloneused,bclonesaved`; zfs-fuse's
        `zpool get` has no -H and OpenZFS 2.1 no such property: tried once a target). None where
        even the dedup ratio cannot be read."""
        res = self.run(["zpool", "list", "-H", "-o", "dedupratio", pool], log=proc.NULL_LOG, timeout=60)
        try:
            out = {"dedupratio": float(res.stdout.strip().rstrip("x"))} if res.ok else None
        except ValueError:
            out = None
        if out is None or self._bclone is False:
            return out
        res = self.run(["zpool", "get", "-Hp", "-o", "value", "bcloneused,bclonesaved", pool],
                       log=proc.NULL_LOG, timeout=60)
        vals = res.stdout.split() if res.ok else []
        self._bclone = len(vals) == 2 and all(v.isdigit() for v in vals)
        if self._bclone:
            out.update(bcloneused=float(vals[0]), bclonesaved=float(vals[1]))
        return out

    def request_sizes(self, pool: str, log: proc.CommandLog = proc.NULL_LOG) -> str:
        """`zpool iostat -Hp -r POOL` as the target prints it: the I/Os issued to the pool's vdevs
        since its import, per request class and size (metrics/iostat.py parses it); only where
        iostat_forms() has "-r"."""
        res = self.run(["zpool", "iostat", "-Hp", "-r", pool], log=log, timeout=60)
        if not res.ok:
            raise TargetError(f"zpool iostat -Hp -r {pool} failed: {res.stderr.strip()[-200:]}")
        return res.stdout

    def txg(self, pool: str) -> int | None:
        """The pool's current (last synced) txg number, or None where it cannot be read."""
        rows = self.txgs(pool)
        if not rows:
            return None
        committed = [t.txg for t in rows if t.state == "C"]
        return max(committed) if committed else max(t.txg for t in rows)

    def pool_cachefile(self, run_dir: str) -> str | None:
        """The cachefile a test pool is created with: never the host's import cache (a pool in it is
        imported at the next boot), but a file in the run's own vdev directory, which zdb is told
        (zdb_argv: zdb finds a pool only through a cache file). None: the target's default, where
        that is no host's (zfs-fuse's lab)."""
        return f"{run_dir}/zpool.cache"

    def zdb_argv(self, pool: str) -> list[str]:
        """zdb, told the cache file zfsperf created pool with (-U), so that it finds the pool."""
        cache = self.pool_caches.get(pool.split("/", 1)[0])
        return ["zdb", "-U", cache] if cache else ["zdb"]

    def receive_guard(self) -> list[str] | None:
        """`zfs receive` options that keep a stream's own properties (a `zfs send -p` or `-R` stream
        carries its source's mountpoint and shares) off the host: nothing mounted (-u), the
        mountpoint and shares not taken from the stream (-x). [] where no guard is needed; None
        where the target has no such options and its mounts are the host's (a stream that carries
        properties is then refused)."""
        return ["-u", "-x", "mountpoint", "-x", "sharenfs", "-x", "sharesmb"]

    def iostat_forms(self) -> list[str]:
        """Which `zpool iostat` forms work: "human", "-Hp", "-l", "-w", "-q", "-r"."""
        return ["human", "-Hp", "-l", "-w", "-q", "-r"]

    # ------------------------------------------------------------------ tunables
    def tunable_names(self) -> list[str]:
        return self.tunables.names() if self.tunables is not None else []

    def has_tunable(self, name: str) -> bool:
        return self.tunables is not None and self.tunables.has(name)

    def get_tunable(self, name: str) -> str:
        if self.tunables is None:
            raise Unavailable(f"{self.impl} has no tunables at run time")
        return self.tunables.get(name)

    def read_tunables(self) -> dict[str, str]:
        """Every tunable's value in one go (one round trip over ssh); {} without tunables."""
        return self.tunables.read_all() if self.tunables is not None else {}

    def tunable_session(self, journal: Journal, log: proc.CommandLog | None = None) -> TunableSession:
        """Set tunables for one case through the journal; restore() puts every one back."""
        if self.tunables is None:
            raise Unavailable(f"{self.impl} has no tunables at run time")
        return TunableSession(self.tunables, journal, log)

    # ------------------------------------------------------------------ files
    def device_path(self, dev: str) -> str:
        """How the target's ZFS names a block device (the same path, except in a private /dev)."""
        return dev

    def host_path(self, path: str) -> str | None:
        """A path on the target as zfsperf on this host can open it, or None (remote)."""
        return path

    def stage_file(self, local_path: str) -> str:
        """A file of this host (a fio job file) at a path the target's commands can read."""
        return local_path

    def close(self) -> None:
        """Release what the target holds (an embedded daemon that a run started)."""
