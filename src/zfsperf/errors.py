"""Exceptions that carry an exit status and, for bad input, where the input went wrong."""

from __future__ import annotations

import json
from typing import Any, Iterable


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


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str:
    """"; did you mean X or Y?" for the choices closest to a misspelled word, else "": one way for
    every name a user types (a field, a property, a tunable, a figure)."""
    import difflib
    near = difflib.get_close_matches(word, sorted(set(choices)), n=n, cutoff=0.75)
    return f"; did you mean {' or '.join(near)}?" if near else ""


def shown(value: Any) -> str:
    """A value from a runfile, -D or the command line as the user wrote it (TOML's spelling:
    true, "text", [1, 2], { a = 1 }), never Python's (True, 'text', {'a': 1})."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {shown(v)}" for k, v in value.items()) + " }" if value else "{}"
    return str(value)
