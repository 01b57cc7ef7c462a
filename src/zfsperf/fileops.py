"""File operations on the machine where ZFS lives: local (this host) or over a transport (ssh).

Everything zfsperf reads or writes on the target side — kstat files, module parameters, vdev
files and their manifest, job files for fio — goes through one of these, so the same code serves
a local OpenZFS host and a remote one.
"""

from __future__ import annotations

import os
import shutil
from typing import Protocol


class FileOps(Protocol):
    remote: bool                                          # on another machine (one round trip costs)

    def read_text(self, path: str) -> str: ...           # OSError when unreadable
    def write_text(self, path: str, text: str) -> None: ...
    def write_param(self, path: str, text: str) -> None: ...
    def listdir(self, path: str) -> list[str]: ...
    def read_dir(self, path: str) -> dict[str, str]: ...   # every small file in a directory, at once
    def is_file(self, path: str) -> bool: ...
    def mode(self, path: str) -> int: ...               # permission bits; OSError when absent
    def exists(self, path: str) -> bool: ...
    def remove(self, path: str) -> bool: ...            # True when something was removed
    def makedirs(self, path: str) -> None: ...
    def rmdir(self, path: str) -> None: ...              # quietly leaves a non-empty directory


class LocalFiles:
    """This host's files."""
    remote = False

    def read_text(self, path: str) -> str:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def write_text(self, path: str, text: str) -> None:
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)

    def write_param(self, path: str, text: str) -> None:
        """Write in place (sysfs files cannot be replaced by rename)."""
        with open(path, "w", encoding="ascii") as f:
            f.write(text)

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def read_dir(self, path: str) -> dict[str, str]:
        out = {}
        for name in self.listdir(path):
            full = os.path.join(path, name)
            if os.path.isfile(full):
                try:
                    out[name] = self.read_text(full)
                except OSError:
                    continue
        return out

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def mode(self, path: str) -> int:
        return os.stat(path).st_mode & 0o7777

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def remove(self, path: str) -> bool:
        try:
            os.unlink(path)
            return True
        except FileNotFoundError:
            return False

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def rmdir(self, path: str) -> None:
        try:
            os.rmdir(path)
        except OSError:
            pass

    def copy_in(self, local_path: str, path: str) -> None:
        if os.path.abspath(local_path) != os.path.abspath(path):
            shutil.copyfile(local_path, path)


LOCAL = LocalFiles()
