"""Signals during a run: the handler only records the first SIGINT/SIGTERM and asks the running
case's processes to end; the runner and the case raise Interrupted at their own safe points and
tear down from plain code (an exception from a handler could land anywhere)."""

from __future__ import annotations

import signal
from typing import Any

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
            active = self.active
            if active is not None:
                active.cancel()
        return {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

    @staticmethod
    def restore(old: dict[int, Any]) -> None:
        for s, h in old.items():
            signal.signal(s, h)
