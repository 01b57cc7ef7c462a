"""The guardian: the guard process (`python -m zfsperf.guardian DIR FD`) that guard.py starts.

It waits for end-of-file on the pipe only its zfsperf process writes to, then tears down what that
process recorded in DIR and did not stop itself: the zfs-fuse labs (leftovers.tear_down_recorded, as -x tears down an orphan) and the
processes (SIGTERM to each process group, SIGKILL after a grace period). What it did goes to
DIR/../guard-PID.log, which the next run prints. guard.py explains why a pipe.

It is an application of its own (a process entry point), so it may use leftovers.py and the
zfs-fuse lab code that the guard client, used from every layer, must not import.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable

from . import proc
from .guard import start_time
from .leftovers import tear_down_recorded


def _lines(path: Path) -> list[str]:
    try:
        return [ln.strip() for ln in path.read_text().splitlines() if ln.strip()]
    except OSError:
        return []


# how long a stopped group has to end on SIGTERM before SIGKILL, and then to be gone
TERM_GRACE, KILL_WAIT = 5.0, 2.0


def stop_procs(entries: list[str], say: Callable[[str], None]) -> None:
    """Stop the recorded processes still alive (\"PID START\" lines; a reused pid is not signalled)."""
    live = []
    for ln in entries:
        pid_s, _, start = ln.partition(" ")
        pid = int(pid_s)
        now = start_time(pid)
        if now == start or (now is None and proc.group_members(pid)):     # the leader gone, its group not
            live.append(pid)
    for sig, wait in ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, KILL_WAIT)):
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

    tear_down_recorded(_lines(d / "labs"), owner, say)
    stop_procs(_lines(d / "procs"), say)
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
