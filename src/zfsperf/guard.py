"""The guard: nothing a zfsperf process started outlives it, however that process ends.

This module is the client side (what a zfsperf process calls: watch, watch_lab, forget_lab); the
guard process itself, which tears things down, is guardian.py. The client imports nothing but
proc, so that every layer that starts a process may use it.

A benchmark tool that leaves load running behind it perturbs every later measurement on the
machine, so the lifetime of everything zfsperf starts is tied to its own by the kernel, not by
zfsperf's good behaviour:

- The first time a zfsperf process starts something long-lived (a run's own zfs-fuse lab, fio,
  `zfs receive`, `zpool iostat`), it also starts one guard process, `python -m zfsperf.guardian DIR FD`,
  in a session of its own (no terminal: a hangup does not reach it). The guard holds the read
  end of a pipe whose only writer is zfsperf (both ends are non-inheritable, so no other child
  holds it). However zfsperf ends — a clean exit, an exception, SIGHUP, or kill -9 — the kernel
  closes the write end and the guard reads end-of-file.
- zfsperf records in DIR what it starts: `procs` (pid and start time, so a reused pid is never
  signalled) and `labs` (the directories of the zfs-fuse labs it owns), and forgets a lab it
  stopped itself.
- On end-of-file the guard tears down each lab still recorded (orphans.teardown: stop the
  processes in its namespace, destroy the pools zfsperf marked, remove the vdev files, stop the
  daemon and its helpers), then stops every recorded process still alive (SIGTERM to its process
  group, SIGKILL after a grace period), writes what it did to DIR/../guard-PID.log only when it had
  something to do, and removes DIR. After a clean exit there is nothing left to do.

Why a pipe and not PR_SET_PDEATHSIG: the death signal follows the *thread* that forked the child
(zfsperf starts receives and samplers from worker threads that end before their children should),
it must be set between fork and exec in each child, and a shell or nsenter in between resets it
for setuid programs; a pipe's end-of-file is exact, race-free (a guard that starts after zfsperf
died reads EOF at once) and covers processes that are not zfsperf's children.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
from pathlib import Path

from . import proc

GUARD_ROOT = Path("/run/zfsperf")


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22): with the pid,
    an identity that a later process reusing the pid does not share."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


class _Guard:
    def __init__(self) -> None:
        base = GUARD_ROOT if os.access(GUARD_ROOT.parent, os.W_OK) else Path("/tmp")
        self.dir = base / f"guard-{os.getpid()}"
        self.dir.mkdir(parents=True, exist_ok=True)
        r, w = os.pipe()
        log = open(os.devnull, "wb")
        self.proc = subprocess.Popen([sys.executable, "-m", "zfsperf.guardian", str(self.dir), str(r)],
                                     pass_fds=(r,), start_new_session=True, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log, env=proc.python_env())
        log.close()
        os.close(r)
        self._w = w                   # held until this process ends; never written
        self._lock = threading.Lock()
        atexit.register(self.release)

    def release(self) -> None:
        """At a normal exit: close the pipe and wait for the guard to finish (it has nothing left to
        do after a clean teardown), so that nothing of ours is running once zfsperf has exited."""
        try:
            os.close(self._w)
        except OSError:
            return
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass

    def _append(self, name: str, line: str) -> None:
        with self._lock, open(self.dir / name, "a", encoding="utf-8") as f:
            f.write(line + "\n")

    def add_pid(self, pid: int) -> None:
        start = start_time(pid)
        if start is not None:
            self._append("procs", f"{pid} {start}")

    def add_lab(self, root: Path) -> None:
        self._append("labs", str(root))

    def forget_lab(self, root: Path) -> None:
        with self._lock:
            path = self.dir / "labs"
            try:
                keep = [ln for ln in path.read_text().splitlines() if ln and ln != str(root)]
            except OSError:
                return
            path.write_text("".join(ln + "\n" for ln in keep))


_guard: _Guard | None = None
_guard_pid = 0                        # the process that started _guard (a fork must start its own)
_guard_lock = threading.Lock()


def _get() -> _Guard | None:
    global _guard, _guard_pid
    with _guard_lock:
        if _guard is None or _guard_pid != os.getpid():
            try:
                _guard, _guard_pid = _Guard(), os.getpid()
            except OSError:
                return None               # no guard is no reason to refuse a run
        return _guard


def ready() -> None:
    """Start this process's guard now if none runs yet: called before each child that must be
    watched is started, so that watch() after it only records a pid (starting the guard is a
    process start of its own, which a signal could cut short while the child already ran)."""
    _get()


def watch(p: subprocess.Popen | int) -> None:
    """Stop this process (and its process group) when zfsperf ends, if it is still running then."""
    g = _get()
    if g is not None:
        g.add_pid(p if isinstance(p, int) else p.pid)


def watch_lab(root: Path) -> None:
    """Tear this zfs-fuse lab down when zfsperf ends, unless it was stopped first (forget_lab)."""
    g = _get()
    if g is not None:
        g.add_lab(root)


def forget_lab(root: Path) -> None:
    if _guard is not None and _guard_pid == os.getpid():
        _guard.forget_lab(root)


def guard_pid() -> int | None:
    """The pid of this process's guard, if one was started."""
    return _guard.proc.pid if _guard is not None and _guard_pid == os.getpid() else None
