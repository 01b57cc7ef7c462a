"""Two identical guests taking turns (build turns, `guest ab --turns`): the guest whose turn it is
runs, the other is paused through QMP, so the running one has the machine to itself.

The pair is the lab's guest and its twin (guest/vm.py: the same cached build, memory, vCPUs, disk
size and shares). Each holds one build's module at a time; the runner gives the sides to the guests
crosswise in ABBA order over the iterations (iteration 1: A in the first guest, B in the twin;
iterations 2 and 3 the other way round; 4 and 5 as 1; ...), so that whatever differs between the
two machines falls on both builds alike over each aligned two iterations (1-2, 3-4, ...), while
the guests change builds (a module swap in each: about 10 s under TCG) every other iteration
rather than every one. Before each turn the other guest is paused first, then the
turn's guest resumed, and both states are read back (query-status): a turn never starts with both
running. After each turn both run again (`resume_all`, however the turn ended), so that between
turns either guest can be asked anything (its txgs, its pool's room) and a pool is made or
destroyed on a guest that runs.

A guest left paused by a zfsperf that died (kill -9 between two QMP commands) is resumed by the next
command that uses it (`Guest.resume_if_paused`).
"""

from __future__ import annotations

from typing import Callable

from ..errors import TargetError
from ..proc import CommandLog
from .qmp import Qmp
from .vm import Guest


class GuestPair:
    """The two guests' QMP connections, and which guest runs which turn."""

    def __init__(self, guests: list[Guest]) -> None:
        self.guests = guests
        self.qmps: list[Qmp] = []
        try:
            for g in guests:
                if not g.qmp_socket.exists():
                    raise TargetError(f"the guest in {g.root} has no QMP socket (booted by an older zfsperf?): "
                                      "stop it with `zfsperf guest down` and run again")
                self.qmps.append(g.qmp())
        except BaseException:
            self.close()
            raise

    def names(self) -> list[str]:
        return [g.root.name if i else "guest" for i, g in enumerate(self.guests)]

    def turn_to(self, index: int, log: CommandLog | None = None) -> Callable[[], dict[str, object]]:
        """What runs before each of one side's turns: the other guest paused, this one resumed,
        both read back (and said in the case log); returns what goes into the side's record
        (turn_guests)."""
        def turn() -> dict[str, object]:
            other = 1 - index
            self.qmps[other].pause()
            self.qmps[index].resume()
            states = [q.status() for q in self.qmps]
            if states[index] != "running" or states[other] != "paused":
                raise TargetError(f"guest turns: expected {self.names()[index]} running and "
                                  f"{self.names()[other]} paused, QMP says {states}")
            if log is not None:
                log.write("# turn: " + ", ".join(f"{n} {st}" for n, st in zip(self.names(), states))
                          + " (QMP query-status)")
            return {"running": self.names()[index], "states": dict(zip(self.names(), states))}
        return turn

    def resume_all(self) -> list[str]:
        """Both guests running (after turns, or whatever cut them short); the names of those that
        had to be resumed."""
        out = []
        for name, q in zip(self.names(), self.qmps):
            if q.status() != "running":
                q.resume()
                out.append(name)
        return out

    def close(self) -> None:
        for q in self.qmps:
            q.close()
