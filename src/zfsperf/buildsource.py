"""A side of `run --build` given as OpenZFS source, not as built modules: a source tree (`DIR`,
what is checked out there) or one commit of a git repository (`DIR@REV`), compiled for the
running kernel of the machine zfsperf runs on (its headers where its headers package links them:
/lib/modules/<kernel>/build), with that machine's own ZFS userland for both sides.

Validated with the rest of the input (the tree's META, the commit, the kernel's headers: exit 2,
nothing written), compiled once the input is whole and before the target is touched, incrementally
and cached by commit and kernel as `guest build` does (guest/source.py: the same cache, so a build
made on the host for the guest's kernel is found by zfsperf running inside that guest). A remote
machine's kernel is not this one's: over ssh a side is a directory of modules built there."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from . import proc
from .buildref import SOURCE_KIND, BuildRef
from .errors import InputError
from .guest.source import MODULES, SourceBuilder, commit_meta, commit_of, kernel_headers, read_meta


def is_modules_dir(where: str) -> bool:
    return all(os.path.isfile(os.path.join(where, m)) for m in MODULES)


def running_kernel() -> str:
    return os.uname().release


def source_ref(name: str, spec: str, target: str) -> BuildRef:
    """The side `name` given as source (DIR or DIR@REV), checked without writing anything: an
    OpenZFS tree (its META) or commit, on a machine whose running kernel has its headers here."""
    path, _, rev = spec.partition("@")
    src = Path(path)
    if target == "guest":
        raise InputError(f"build {name}: {spec} is source: `zfsperf guest ab` builds source for the guest "
                         "(run --build takes directories of modules there)", field="--build")
    if not src.is_dir():
        raise InputError(f"build {name}: {path} is not a directory (of built modules, or of OpenZFS source)",
                         field="--build")
    if rev:
        full = commit_of(src, rev, field="--build")
        version, _series = commit_meta(src, full, "--build", any_series=True)
        label = f"OpenZFS {version} @ {full[:12]} of {src}"
    else:
        if not (src / "META").is_file():
            raise InputError(f"build {name}: {src} has neither spl.ko and zfs.ko (a directory of built modules) "
                             "nor a META file (an OpenZFS source tree)", field="--build")
        version, _series = read_meta(src, any_series=True)
        full = ""
        label = f"OpenZFS {version} (the tree in {src})"
    return BuildRef(name, f"{label}, compiled for this machine's kernel", None,
                    {"kind": SOURCE_KIND, "spec": spec, "src": str(src.resolve()), "rev": full, "version": version})


def check_headers(builds: dict[str, BuildRef]) -> None:
    """A side given as source needs the running kernel's headers here (once the target is known to
    be kernel OpenZFS: zfs-fuse's own refusal comes first)."""
    kv = running_kernel()
    b = next((b for b in builds.values() if b.unbuilt()), None)
    if b is not None and kernel_headers(kv) is None:
        raise InputError(f"build {b.name}: {b.info['spec']} is source, compiled for this machine's kernel {kv}, "
                         f"whose headers are not here (/lib/modules/{kv}/build): install them, or name a "
                         "directory of built modules", field="--build")


def compile_sources(builds: dict[str, BuildRef], say: Callable[[str], None],
                    log: proc.CommandLog = proc.NULL_LOG) -> None:
    """Each side given as source compiled (or found cached) for the running kernel: its modules'
    directory set, what it was built from kept in its info."""
    todo = [b for b in builds.values() if b.unbuilt()]
    if not todo:
        return
    kv = running_kernel()
    sb = SourceBuilder(say, log, kernel=kv, any_series=True, what="build")
    for b in todo:
        src, rev = Path(b.info["src"]), b.info["rev"]
        say(f"build {b.name}: {b.info['spec']} for kernel {kv} ...")
        mb = sb.build_commit(src, rev) if rev else sb.build(src)
        b.modules = str(mb.modules)
        b.info = {**b.info, **mb.info()}


class Sources:
    """buildref.BuildSources for the runner: check_headers and compile_sources."""

    def check(self, builds: dict[str, BuildRef]) -> None:
        check_headers(builds)

    def compile(self, builds: dict[str, BuildRef], say: Callable[[str], None]) -> None:
        compile_sources(builds, say)
