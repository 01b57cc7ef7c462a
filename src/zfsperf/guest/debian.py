"""The Debian facts both guest builds stand on: which OpenZFS series the guest can have (Debian's
userland for each), where builds are cached, the kernel Debian's linux-image-amd64 depends on, and
what building modules for that kernel needs on the host.

build.py (the guest from Debian's archive) and source.py (modules from a source tree) both use
this module and neither imports the other for it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from .. import proc
from ..errors import InputError, shown
from . import apt

VERSIONS = {"2.3": "libzfs6linux libzpool6linux libnvpair3linux libuutil3linux",
            "2.1": "libzfs4linux libzpool5linux libnvpair3linux libuutil3linux"}
DEFAULT_VERSION = "2.3"

Step = Callable[[str, Callable[[], object]], object]


def cache_root() -> Path:
    env = os.environ.get("ZFSPERF_GUEST_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "zfsperf" / "openzfs"


def check_version(v: str) -> str:
    if v not in VERSIONS:
        raise InputError(f"--zfs must be one of {', '.join(sorted(VERSIONS))}, got {shown(v)}", field="--zfs")
    return v


class Debian:
    """Debian's archive through a private apt (apt.PrivateApt: nothing of the host's apt changes);
    `step` runs each named step (the builders time and report them)."""

    def __init__(self, log: proc.CommandLog = proc.NULL_LOG, step: Step | None = None) -> None:
        self.log = log
        self.apt = apt.PrivateApt(cache_root() / "apt", log)
        self._step: Step = step or (lambda _name, fn: fn())

    def kernel(self) -> tuple[str, str]:
        """The kernel package Debian's linux-image-amd64 depends on, and its ABI (6.1.0-56-amd64)."""
        self._step("apt lists (private, with contrib and bookworm-backports)", self.apt.update)
        kernel_pkg = self.apt.depends_on("linux-image-amd64", "linux-image-")
        return kernel_pkg, kernel_pkg[len("linux-image-"):]

    def host_tools(self, kv: str, extra: list[str] | None = None) -> None:
        """What building modules for kernel `kv` needs on the host (its headers among them)."""
        self._step("host tools", lambda: apt.install_host(
            apt.missing_host_packages() + ([] if Path(f"/usr/src/linux-headers-{kv}").is_dir()
                                           else [f"linux-headers-{kv}"]) + (extra or []), self.log))
