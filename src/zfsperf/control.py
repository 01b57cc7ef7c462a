"""Signals during a run: the handler only records the first SIGINT/SIGTERM/SIGHUP/SIGQUIT and asks
the running case's processes to end; the runner and the case raise Interrupted at their own safe
points and tear down from plain code (an exception from a handler could land anywhere).

A hangup (a closed terminal, a lost ssh session) is an interrupt like Ctrl-C, and the terminal is
gone with it: the handler points stdout and stderr at /dev/null, so that the teardown and the
summary (which still goes to summary.txt) never fail on a write to a dead terminal."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from typing import Any, Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)

from . import proc


class Interrupted(Exception):
    """Raised by zfsperf itself, at a safe point, once a SIGINT/SIGTERM has been recorded."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class Control:
    def __init__(self) -> None:
        self.interrupt: int | None = None              # the first SIGINT/SIGTERM received
        self.active: proc.ProcessSet | None = None     # the running case's processes (the handler stops them)

    def check(self) -> None:
        """A safe point: raise Interrupted here if a signal was recorded."""
        if self.interrupt is not None:
            raise Interrupted(self.interrupt)

    def signal_name(self) -> str:
        return signal.Signals(self.interrupt).name if self.interrupt is not None else ""

    def install(self) -> dict[int, Any]:
        def handler(signum: int, _frame: Any) -> None:
            # no exception, no lock, no output here
            if self.interrupt is None:
                self.interrupt = signum
            if signum == signal.SIGHUP:
                detach_output()
            active = self.active
            if active is not None:
                active.cancel()
        return {s: signal.signal(s, handler) for s in SIGNALS}

    @staticmethod
    def restore(old: dict[int, Any]) -> None:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """A hangup or TERM ends a command that is not a run like Ctrl-C (KeyboardInterrupt, raised
    where the command is: its finally blocks stop what it started: a guest it booted, the hosts
    of a fleet). While a run is going the runner's own handlers take over and give these back.
    Ctrl-C too, as a run takes it: a command started in the background of a script inherits
    SIGINT ignored, and Python then leaves it so (a fleet went on to its end after `kill -INT`)."""
    def stop(signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)
    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def detach_output() -> None:
    """Point fds 1 and 2 at /dev/null where they are a terminal or a pipe (after a hangup both are
    gone); a regular file (a log the user redirected to) keeps its output. A dup2, no output: safe
    in a handler."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return
    for fd in (1, 2):
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.dup2(null, fd)
        except OSError:
            pass
    os.close(null)
