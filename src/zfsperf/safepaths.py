"""Where zfsperf may put its files: never in the system's own directories, never in a stranger's.

zfsperf runs as root on real ZFS machines. Its results, vdev, corpus and state directories, and a
sendfile it reads, are refused when they are the root itself or lie under one of the system's
directories (`SYSTEM`), judged on the path as given and on where its symlinks lead. A directory
zfsperf writes into that already holds something must hold only what zfsperf itself puts there.
Every check here reads and never writes: they run while the input is validated, before anything
is touched.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable

from .errors import InputError

SYSTEM = ("/proc", "/sys", "/dev", "/boot", "/etc", "/usr")

# what zfsperf itself puts in a directory of each kind
RESULTS_ENTRY = re.compile(r"^\d{8}T\d{6}(\.\d+)?$|^current$|^\.current\.\d+$")
VDEV_ENTRY = re.compile(r"^run-\d+$|^corpus$")


def system_place(path: str | os.PathLike[str]) -> str | None:
    """The system directory path lies under ("/" for the root itself), or None. Both the path as
    written (made absolute) and the path its symlinks resolve to are judged."""
    p = os.path.abspath(os.fspath(path))
    for q in dict.fromkeys((os.path.normpath(p), os.path.realpath(p))):
        if q == "/":
            return "/"
        for root in SYSTEM:
            if q == root or q.startswith(root + "/"):
                return root
    return None


def check_place(path: str | os.PathLike[str], field: str, what: str) -> Path:
    """path, refused (InputError, exit 2) when it is the root or under a system directory."""
    if not os.fspath(path):
        raise InputError(f"{what}: an empty path", field=field)
    root = system_place(path)
    if root == "/":
        raise InputError(f"{what} {os.fspath(path)!s} is the root directory: zfsperf never writes there "
                         "(give a directory of its own)", field=field)
    if root is not None:
        raise InputError(f"{what} {os.fspath(path)!s} is under {root}, a system directory: zfsperf keeps "
                         f"its files out of {', '.join(SYSTEM)} and /", field=field)
    return Path(path)


def check_own_dir(path: str | os.PathLike[str], field: str, what: str,
                  own: Callable[[os.DirEntry[str]], bool]) -> Path:
    """A directory zfsperf writes into: a system place is refused, a file is refused, and an
    existing directory that holds anything own() does not call zfsperf's is refused (named)."""
    p = check_place(path, field, what)
    if p.is_symlink() and not p.exists():
        raise InputError(f"{what} {p} is a symlink to nothing", field=field)
    if p.exists() and not p.is_dir():
        raise InputError(f"{what} {p} exists and is not a directory", field=field)
    if p.is_dir():
        try:
            with os.scandir(p) as it:
                stranger = next((e.name for e in it if not own(e)), None)
        except OSError as e:
            raise InputError(f"{what} {p} cannot be read: {e.strerror}", field=field) from None
        if stranger is not None:
            raise InputError(f"{what} {p} already holds {stranger!r}, which zfsperf did not put there: "
                             "zfsperf writes only into an empty directory or one of its own", field=field)
    return p


def results_entry(e: os.DirEntry[str]) -> bool:
    """What an output directory holds of zfsperf's: results directories and the `current` link."""
    return bool(RESULTS_ENTRY.match(e.name))


def vdev_entry(e: os.DirEntry[str]) -> bool:
    """What a vdev directory holds of zfsperf's: each run's vdev directory and the corpus's scratch
    pool, both with their manifest (pool.MANIFEST)."""
    return bool(VDEV_ENTRY.match(e.name)) or (e.is_dir() and os.path.exists(os.path.join(e.path, ".zfsperf-vdevs")))

