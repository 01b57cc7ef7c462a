"""On a fleet's host: end the fleet's zfsperf run there by its pid (`zfsperf fleet stop DIR`, run by
stop.yml after Ctrl-C, a hangup or a run past --timeout). The run wrote its pid and its start time
to DIR/run.pid (`run --pidfile`); a pid whose start time differs is another process now and is
left alone. The run gets SIGINT, as Ctrl-C (it restores what it changed and removes its pool), and
SIGKILL only if it has not ended after GRACE_S."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from .. import proc
from ..guard import start_time

PIDFILE = "run.pid"
GRACE_S = 120.0


def write_pidfile(path: Path) -> None:
    """This process's pid and start time, for stop_run."""
    path.write_text(json.dumps({"pid": os.getpid(), "start": start_time(os.getpid())}) + "\n")


def stop_run(d: Path, grace: float = GRACE_S) -> str:
    """What was done, in words: the run in d stopped by its pid, or why nothing was."""
    try:
        rec = json.loads((d / PIDFILE).read_text())
        pid, started = int(rec["pid"]), rec["start"]
    except FileNotFoundError:
        return f"{d}: no run there"
    except (OSError, ValueError, KeyError, TypeError) as e:
        return f"{d}: {PIDFILE} unreadable ({e}): nothing signalled"
    if started is None or start_time(pid) != started:
        return f"{d}: its run (pid {pid}) has ended"
    killed = proc.stop_pid(pid, grace=grace, sig=signal.SIGINT)
    return f"{d}: its run (pid {pid}) " + (f"killed after {grace:g} s" if killed else "interrupted and ended")
