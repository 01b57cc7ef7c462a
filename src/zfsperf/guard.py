"""The guard: nothing a zfsperf process started outlives it, however that process ends.

A benchmark tool that leaves load running behind it perturbs every later measurement on the
machine, so the lifetime of everything zfsperf starts is tied to its own by the kernel, not by
zfsperf's good behaviour:

- The first time a zfsperf process starts something long-lived (a run's own zfs-fuse lab, fio,
  `zfs receive`, `zpool iostat`), it also starts one guard process, `python -m zfsperf.guard DIR FD`,
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
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import proc

GUARD_ROOT = Path("/run/zfsperf")


def _start_time(pid: int) -> str | None:
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
        self.proc = subprocess.Popen([sys.executable, "-m", "zfsperf.guard", str(self.dir), str(r)],
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
        start = _start_time(pid)
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


# ---------------------------------------------------------------------------- the guard process
def _lines(path: Path) -> list[str]:
    try:
        return [ln.strip() for ln in path.read_text().splitlines() if ln.strip()]
    except OSError:
        return []


def _stop_procs(entries: list[str], say) -> None:
    live = []
    for ln in entries:
        pid_s, _, start = ln.partition(" ")
        pid = int(pid_s)
        now = _start_time(pid)
        if now == start or (now is None and proc.group_members(pid)):     # the leader gone, its group not
            live.append(pid)
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        # a group whose leader is gone may still have members: the group's id cannot be reused
        # while any of them lives, so they are still the ones zfsperf started (a process that made
        # a session of its own, as fio's job processes do, is not reached this way: fio starts with
        # SIGPIPE ignored, so that it is alive to pass this SIGTERM on to them)
        live = [p for p in live if proc.group_members(p)]
        if not live:
            return
        for pid in live:
            say(f"{signal.Signals(sig).name} to process group {pid} ({_cmd(pid)})")
            try:
                os.killpg(pid, sig)      # every process zfsperf starts leads its own group
            except OSError:
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(proc.group_members(p) for p in live):
            time.sleep(0.05)


def _cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


def main() -> int:
    d, fd = Path(sys.argv[1]), int(sys.argv[2])
    for s in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(s, signal.SIG_IGN)
    while os.read(fd, 4096):          # nothing is ever written: this returns b"" when zfsperf ends
        pass
    owner = d.name.rsplit("-", 1)[-1]
    notes: list[str] = []

    def say(text: str) -> None:
        notes.append(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {text}")

    labs = _lines(d / "labs")
    if labs:
        from .zfsfuse.daemon import Lab
        from .zfsfuse.orphans import teardown
        for root in labs:
            lab = Lab.find(Path(root))
            if lab is not None:
                say(f"zfsperf (pid {owner}) ended without stopping its zfs-fuse lab at {root}: tearing it down")
                try:
                    teardown(lab, say)
                except Exception as e:  # noqa: BLE001 - go on with the rest
                    say(f"teardown of {root} failed: {type(e).__name__}: {e}")
    _stop_procs(_lines(d / "procs"), say)
    if notes:
        with open(d.parent / f"guard-{owner}.log", "a", encoding="utf-8") as f:
            f.write("\n".join(notes) + "\n")
    for name in ("procs", "labs"):
        (d / name).unlink(missing_ok=True)
    try:
        d.rmdir()
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
