"""A side of `run --build` given as OpenZFS source, not as built modules: a source tree (`DIR`,
what is checked out there) or one commit of a git repository (`DIR@REV`), compiled for the
running kernel of the machine zfsperf runs on (its headers where its headers package links them:
/lib/modules/<kernel>/build), with that machine's own ZFS userland for both sides.

Validated with the rest of the input (the tree's META, the commit, the kernel's headers: exit 2,
nothing written), compiled once the input is whole and before the target is touched, incrementally
and cached by commit and kernel as `guest build` does (guest/source.py: the same cache, so a build
made on the host for the guest's kernel is found by zfsperf running inside that guest). A remote
machine's kernel is not this one's: over ssh a side is a directory of modules built there.

`zfsperf bisect` is `guest bisect` on this machine (LocalBench): each step's commit compiled for the
running kernel, measured in interleaved blocks with the module swapped between cases
(tunables/modswitch.py: the machine's own build journaled before the first unload)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from . import proc
from .buildref import SOURCE_KIND, BuildRef
from .errors import InputError
from .guest.source import MODULES, SourceBuilder, commit_meta, commit_of, kernel_headers, read_meta

if TYPE_CHECKING:                       # buildab imports this module's neighbours, not this one
    from .buildab import AbResult, Side


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


class LocalBench:
    """Where `zfsperf bisect` measures (buildab.bisect): this machine's kernel OpenZFS, each commit
    compiled for its running kernel and cached, both sides with this machine's userland (each side's
    module version beside it in run.json). Refused here, before anything is built, on a machine
    without kernel OpenZFS or without the running kernel's headers."""

    turns = False

    def __init__(self, say: Callable[[str], None] = print, cleanup: bool = False, html: bool = True) -> None:
        from .targets.openzfs_linux import present
        if not present("/"):
            raise InputError("this machine has no kernel OpenZFS module to swap (/proc/spl/kstat/zfs is absent; "
                             "zfs-fuse has none): `zfsperf guest bisect` bisects in the OpenZFS guest", field="bisect")
        self.kernel = running_kernel()
        if kernel_headers(self.kernel) is None:
            raise InputError(f"each commit is compiled for this machine's kernel {self.kernel}, whose headers are "
                             f"not here (/lib/modules/{self.kernel}/build): install them", field="bisect")
        self.say, self.cleanup, self.html = say, cleanup, html
        self.sb = SourceBuilder(say, kernel=self.kernel, any_series=True, what="build")

    def check_runfile(self, runfile: str, case: str) -> Any:
        from .buildab import check_runfile
        return check_runfile(runfile, case, "--case")

    def settings(self, detect: float | None) -> dict[str, Any]:
        return {"target": "this machine", "kernel": self.kernel} | ({"detect": detect} if detect is not None else {})

    def good_series(self, src: Path, good: str) -> str:
        return commit_meta(src, commit_of(src, good, field="--good"), "--good", any_series=True)[1]

    def side(self, src: Path, commit: str, name: str, field: str) -> "Side":
        from .buildab import Side
        mb = self.sb.build_commit(src, commit)
        return Side(f"{src}@{commit}", mb.tree.series,
                    BuildRef(name, f"{mb.tree.label}, compiled for this machine's kernel", str(mb.modules), mb.info()))

    def check_step(self, good: "Side", side: "Side", short: str, good_rev: str) -> None:
        """Any series: each side's module version and the one userland are stated in run.json."""

    def how(self, blocks: int) -> str:
        return f"{blocks} blocks on this machine"

    def ab(self, sides: dict[str, BuildRef], good: "Side", **kw: Any) -> "AbResult":
        from .buildab import run_ab
        return run_ab(sides, say=self.say, cleanup=self.cleanup, html=self.html, target="openzfs", **kw)

    def close(self) -> None:
        """Nothing booted: the module switch gives the machine its own build back after each run."""
