"""Exceptions that carry an exit status and, for bad input, where the input went wrong."""

from __future__ import annotations


class ZfsperfError(Exception):
    """An error zfsperf reports in one line, without a traceback."""

    exit_status = 1


class InputError(ZfsperfError, ValueError):
    """Bad input: names the file, the line and the field. Exit status 2."""

    exit_status = 2

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.file = file
        self.line = line
        self.field = field
        self.message = message
        where = ""
        if file:
            where = file + (f":{line}" if line else "") + ": "
        what = f"{field}: " if field else ""
        super().__init__(f"{where}{what}{message}")


class TargetError(ZfsperfError):
    """The ZFS target could not do what was asked (daemon gone, command failed)."""


class Unavailable(ZfsperfError):
    """The target lacks a source or a tunable. Reported as unavailable, never faked."""


class Refused(ZfsperfError):
    """zfsperf will not measure in this state of the machine (e.g. beside an orphaned daemon of an
    earlier run): nothing was started or touched. Exit status 2, like bad input."""

    exit_status = 2
