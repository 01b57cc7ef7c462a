"""The embedded ZFS: a zfs-fuse daemon that zfsperf starts, owns and stops itself.

zfsperf never shares a daemon. Each lab is a private mount namespace (see _nsholder) with its
own zfs-fuse socket, lock and pool cache file, so a zfs-fuse daemon already running on the host,
and its pools, are neither seen nor touched. Facts this relies on are measured in
docs/reference/zfs-fuse.md: with -n the pidfile is never written (so none is used), the daemon
logs only to syslog (captured by _syslogd into DIR/daemon.log), readiness is `zpool list`
succeeding, stopping takes ~5 s, a killed daemon leaves stale FUSE mounts (unmounted lazily
here, and they vanish with the namespace anyway), and a restarted daemon re-imports the pools in
its cache file but does not mount them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .. import guard, proc
from ..errors import TargetError

ZFS_FUSE = "/sbin/zfs-fuse"
KSTAT_DIR = "/zfs-kstat"
DEFAULT_LAB = Path("/run/zfsperf/lab")


def lab_dir_from_env() -> Path:
    return Path(os.environ.get("ZFSPERF_LAB", str(DEFAULT_LAB)))


def holders() -> list[int]:
    """The live namespace holders of every zfsperf lab on this machine (its process table is one,
    whatever /run/zfsperf a process sees)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and "zfsperf.zfsfuse.nsholder" in proc.pid_cmdline(int(d))[1:3] and proc.pid_alive(int(d)):
            out.append(int(d))
    return out


def zfs_fuse_available() -> bool:
    return os.access(ZFS_FUSE, os.X_OK) and shutil.which("nsenter") is not None \
        and shutil.which("unshare") is not None


@dataclass
class LabState:
    root: str
    holder_pid: int
    syslog_pid: int
    daemon_pid: int
    owner: str                       # "lab" (zfsperf lab start) or "run" (started by a run)
    started: float
    daemon_argv: list[str] = field(default_factory=list)
    created_kstat_dir: bool = False
    owner_pid: int = 0               # the zfsperf process a "run" lab belongs to (0: none, a `lab start`)
    vdev_dirs: list[str] = field(default_factory=list)   # where the run keeps its vdev files


class Lab:
    """One private zfs-fuse instance rooted at a directory."""

    def __init__(self, root: Path, state: LabState | None = None,
                 log: proc.CommandLog = proc.NULL_LOG) -> None:
        self.root = Path(root)
        self.state = state
        self.log = log
        self._daemon: subprocess.Popen | None = None

    # ---------------------------------------------------------------- discovery
    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def daemon_log(self) -> Path:
        return self.root / "daemon.log"

    @classmethod
    def find(cls, root: Path, log: proc.CommandLog = proc.NULL_LOG) -> "Lab | None":
        """The lab running at root, or None. A lab whose holder is gone is cleaned away."""
        try:
            state = LabState(**json.loads((Path(root) / "state.json").read_text()))
        except (OSError, ValueError, TypeError):
            return None
        lab = cls(Path(root), state, log)
        if not proc.pid_alive(state.holder_pid) or \
                "zfsperf.zfsfuse.nsholder" not in " ".join(proc.pid_cmdline(state.holder_pid)):
            lab._cleanup_dead()
            return None
        return lab

    # ---------------------------------------------------------------- paths and argv
    def prefix(self) -> list[str]:
        """argv prefix that runs a command inside the lab's mount namespace."""
        assert self.state is not None
        return ["nsenter", "-t", str(self.state.holder_pid), "-m", "--"]

    def host_path(self, path: str) -> str:
        """The host-side path of a path inside the lab's namespace (FUSE mounts, /zfs-kstat)."""
        assert self.state is not None
        return f"/proc/{self.state.holder_pid}/root{path}"

    def run(self, argv: list[str], **kw) -> proc.Completed:
        kw.setdefault("log", self.log)
        return proc.run(self.prefix() + list(argv), **kw)

    def daemon_alive(self) -> bool:
        return self.state is not None and proc.pid_alive(self.state.daemon_pid) and \
            "zfs-fuse" in " ".join(proc.pid_cmdline(self.state.daemon_pid))

    def ready(self) -> bool:
        return self.daemon_alive() and self.run(["zpool", "list"], log=proc.NULL_LOG).ok

    # ---------------------------------------------------------------- start
    def orphaned(self) -> bool:
        """A run's lab whose zfsperf is gone (killed with -9 by an older zfsperf, or its holder
        could not tear it down): it perturbs every later measurement on this machine."""
        if self.state is None or self.state.owner != "run":
            return False
        pid = self.owner_pid()
        return pid <= 0 or not proc.pid_alive(pid) or "zfsperf" not in " ".join(proc.pid_cmdline(pid))

    def owner_pid(self) -> int:
        """The zfsperf process a run's lab belongs to (0: unknown, or a `zfsperf lab start` lab)."""
        return (self.state.owner_pid if self.state else 0) or _pid_from_root(self.root)

    def note_vdev_dir(self, path: Path | str) -> None:
        """Record where this lab's run keeps its vdev files, for a teardown after zfsperf is gone."""
        assert self.state is not None
        if str(path) not in self.state.vdev_dirs:
            self.state.vdev_dirs.append(str(path))
            self._save()

    @classmethod
    def start(cls, root: Path, *, owner: str = "lab", arc_max_mb: int | None = None,
              log: proc.CommandLog = proc.NULL_LOG, timeout: float = 30.0) -> "Lab":
        """Start a private zfs-fuse at root. A "run" lab is tied to this process's lifetime by
        the guard (guard.py: torn down however this process ends, kill -9 included); a "lab"
        lab (`zfsperf lab start`) is meant to outlive it."""
        if not zfs_fuse_available():
            raise TargetError("zfs-fuse is not installed (Debian package zfs-fuse) or nsenter/unshare "
                              "are missing; run `make run` or `apt-get install zfs-fuse` as root")
        if os.geteuid() != 0:
            raise TargetError("the embedded zfs-fuse needs root (FUSE mounts, mount namespaces)")
        existing = cls.find(root, log)
        if existing is not None:
            raise TargetError(f"a zfsperf lab is already running at {root} "
                              f"(daemon pid {existing.state.daemon_pid}); stop it with `zfsperf lab stop`")
        root = Path(root)
        if root.exists():
            shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        created_kstat = False
        if not os.path.isdir(KSTAT_DIR):
            os.mkdir(KSTAT_DIR)          # zfs-fuse mounts its kstats here; it does not create it
            created_kstat = True
        py = sys.executable
        # long-lived helpers never hold the caller's terminal or pipes (`zfsperf lab start | tee`)
        helper_log = open(root / "helpers.log", "ab")
        if owner == "run":
            guard.ready()
        syslogd = subprocess.Popen([py, "-m", "zfsperf.zfsfuse.syslogd", str(root / "log.sock"),
                                    str(root / "daemon.log")], start_new_session=True,
                                   stdin=subprocess.DEVNULL, stdout=helper_log, stderr=helper_log,
                                   env=proc.python_env())
        holder = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "--",
                                   py, "-m", "zfsperf.zfsfuse.nsholder", str(root)],
                                  start_new_session=True, stdin=subprocess.DEVNULL,
                                  stdout=helper_log, stderr=helper_log, env=proc.python_env())
        helper_log.close()
        lab = cls(root, LabState(str(root), holder.pid, syslogd.pid, 0, owner, time.time(),
                                 created_kstat_dir=created_kstat,
                                 owner_pid=os.getpid() if owner == "run" else 0), log)
        if owner == "run":
            guard.watch(syslogd)
            guard.watch(holder)
            lab._save()
            guard.watch_lab(root)
        deadline = time.monotonic() + timeout
        while not (root / "holder.ready").exists() or not (root / "log.sock").exists():
            if holder.poll() is not None or syslogd.poll() is not None or time.monotonic() > deadline:
                why = (root / "holder.failed").read_text().strip() if (root / "holder.failed").exists() else ""
                lab._stop_helpers()
                shutil.rmtree(root, ignore_errors=True)
                raise TargetError(f"could not set up the lab's mount namespace {why}".strip())
            time.sleep(0.02)
        argv = [ZFS_FUSE, "-n"]
        if arc_max_mb:
            argv += ["-m", str(arc_max_mb)]
        lab.state.daemon_argv = argv
        lab._start_daemon(timeout=deadline - time.monotonic())
        return lab

    def _start_daemon(self, timeout: float = 30.0) -> None:
        assert self.state is not None
        # A stale socket survives kill -9; the daemon replaces it, zpool then connects.
        out = open(self.root / "daemon.out", "ab")
        self._daemon = subprocess.Popen(self.prefix() + self.state.daemon_argv, start_new_session=True,
                                        stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        out.close()
        self.state.daemon_pid = self._daemon.pid
        self._save()
        if self.state.owner == "run":
            guard.watch(self._daemon)
        self.log.write(f"# zfs-fuse started, pid {self._daemon.pid}: {' '.join(self.state.daemon_argv)}")
        deadline = time.monotonic() + max(timeout, 5.0)
        while time.monotonic() < deadline:
            if self._daemon.poll() is not None:
                raise TargetError(f"zfs-fuse exited with status {self._daemon.returncode} at start: "
                                  f"{self.syslog_tail() or 'no message in its log'}")
            if self.run(["zpool", "list"], log=proc.NULL_LOG).ok:
                # NB: zfs-fuse mounts /zfs-kstat only when the first pool is created or imported
                return
            time.sleep(0.025)
        raise TargetError(f"zfs-fuse did not become ready in {timeout:.0f} s: {self.syslog_tail()}")

    def _save(self) -> None:
        assert self.state is not None
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self.state), indent=1))
        os.replace(tmp, self.state_file)

    # ---------------------------------------------------------------- recovery
    def fuse_mounts(self) -> list[str]:
        """Mountpoints of zfs FUSE filesystems inside the lab's namespace, deepest first."""
        assert self.state is not None
        try:
            text = Path(f"/proc/{self.state.holder_pid}/mounts").read_text()
        except OSError:
            return []
        points = [ln.split()[1] for ln in text.splitlines()
                  if len(ln.split()) > 2 and ln.split()[2] == "fuse.zfs"]
        return sorted(points, key=lambda p: p.count("/"), reverse=True)

    def _lazy_unmount_all(self) -> None:
        for mp in self.fuse_mounts():
            self.run(["umount", "-l", mp.replace("\\040", " ")])

    def recover(self) -> bool:
        """Bring a crashed daemon back: lazy-unmount stale mounts, restart, mount the pools.

        Returns True when a restart was needed."""
        if self.ready():
            return False
        if self.state is not None and proc.pid_alive(self.state.daemon_pid):
            proc.stop_pid(self.state.daemon_pid, grace=5.0, proc=self._daemon)
        if self._daemon is not None:
            try:
                self._daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self._lazy_unmount_all()
        self.log.write("# zfs-fuse is gone: stale mounts unmounted lazily, restarting the daemon")
        # a killed daemon's flock on zfs_lock can outlive it by a moment: retry the start
        for attempt in range(10):
            try:
                self._start_daemon()
                break
            except TargetError:
                if attempt == 9:
                    raise
                time.sleep(0.5)
        self.run(["zfs", "mount", "-a"])
        return True

    # ---------------------------------------------------------------- stop
    def stop(self) -> None:
        """Unmount, export, SIGTERM, wait, SIGKILL + lazy unmount; then end the namespace."""
        if self.state is None:
            return
        if self.daemon_alive():
            self.run(["zfs", "umount", "-a"], timeout=60)
            pools = self.run(["zpool", "list", "-H", "-o", "name"], timeout=30)
            for name in pools.stdout.split() if pools.ok else []:
                self.run(["zpool", "export", name], timeout=60)
            killed = proc.stop_pid(self.state.daemon_pid, grace=15.0, proc=self._daemon)
            if killed:
                self.log.write("# zfs-fuse did not exit within 15 s of SIGTERM: killed")
        self._lazy_unmount_all()
        self._stop_helpers()
        self._cleanup_dead()
        guard.forget_lab(self.root)

    def _stop_helpers(self) -> None:
        assert self.state is not None
        for pid in (self.state.holder_pid, self.state.syslog_pid):
            if pid and proc.pid_alive(pid):
                proc.stop_pid(pid, grace=5.0)

    def _cleanup_dead(self) -> None:
        """Remove what a lab leaves behind once its processes are gone."""
        if self.state is not None:
            if self.state.daemon_pid and proc.pid_alive(self.state.daemon_pid) and \
                    "zfs-fuse" in " ".join(proc.pid_cmdline(self.state.daemon_pid)):
                proc.stop_pid(self.state.daemon_pid, grace=15.0)
            self._stop_helpers()
            if self.state.created_kstat_dir and not self._other_labs_alive():
                try:
                    os.rmdir(KSTAT_DIR)
                except OSError:
                    pass
        # the namespace is gone with its holder, so nothing below is mounted any more
        if not any(os.path.ismount(self.root / sub) for sub in ("run", "lock", "lib", "hostdev")):
            shutil.rmtree(self.root, ignore_errors=True)

    def _other_labs_alive(self) -> bool:
        """Another zfsperf lab still needs /zfs-kstat (it is one directory on the shared root fs;
        removing it under a running lab leaves that daemon without kstats). A lab whose state this
        one cannot see (another /run/zfsperf: make test's host2 lane has its own) is found by its
        namespace holder, a process like any other: CI's run of 2026-12-05 lost the host lane's
        kstats when a host2 lab that had made the directory stopped."""
        assert self.state is not None
        if any(pid != self.state.holder_pid for pid in holders()):
            return True
        roots = {p.parent for p in Path("/run/zfsperf").glob("*/state.json")}
        roots |= {p.parent for p in self.root.parent.glob("*/state.json")}
        for r in roots:
            if r.resolve() == self.root.resolve():
                continue
            try:
                holder = json.loads((r / "state.json").read_text()).get("holder_pid")
            except (OSError, ValueError):
                continue
            if isinstance(holder, int) and proc.pid_alive(holder):
                return True
        return False

    # ---------------------------------------------------------------- reporting
    def syslog_tail(self, lines: int = 5) -> str:
        try:
            text = self.daemon_log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])

    def syslog_since(self, offset: int) -> tuple[str, int]:
        """Daemon log text written after byte offset, and the new offset."""
        try:
            with open(self.daemon_log, "rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return "", offset
        return data.decode(errors="replace"), offset + len(data)

    def status(self) -> dict:
        assert self.state is not None
        pools = self.run(["zpool", "list", "-H", "-o", "name"], log=proc.NULL_LOG)
        return {
            "root": str(self.root),
            "owner": self.state.owner,
            "daemon_pid": self.state.daemon_pid,
            "daemon_alive": self.daemon_alive(),
            "holder_pid": self.state.holder_pid,
            "daemon_argv": self.state.daemon_argv,
            "pools": pools.stdout.split() if pools.ok else [],
            "uptime_s": round(time.time() - self.state.started, 1),
        }


def _pid_from_root(root: Path) -> int:
    """The zfsperf pid in a run lab's directory name (`<lab>-run<PID>`), for state files that
    predate owner_pid."""
    name = Path(root).name
    tail = name.rsplit("-run", 1)[-1] if "-run" in name else ""
    return int(tail) if tail.isdigit() else 0


def lab_roots() -> list[Path]:
    """Every zfsperf lab directory on this machine: under /run/zfsperf and beside ZFSPERF_LAB."""
    parents = {DEFAULT_LAB.parent, lab_dir_from_env().parent}
    roots: set[Path] = set()
    for parent in parents:
        try:
            roots |= {p.parent for p in parent.glob("*/state.json")}
        except OSError:
            continue
    return sorted(roots)


def stop_signal_safe(lab: Lab) -> None:
    """Stop a lab while ignoring further Ctrl-C, so the stop sequence is not cut short."""
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        lab.stop()
    finally:
        signal.signal(signal.SIGINT, old)
