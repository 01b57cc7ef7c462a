"""A side of `run --build` given as OpenZFS source, not as built modules: a source tree (`DIR`,
what is checked out there) or one commit of a git repository (`DIR@REV`), compiled for the
running kernel of the machine zfsperf runs on (its headers where its headers package links them:
/lib/modules/<kernel>/build), with that machine's own ZFS userland for both sides.

On an ssh host (`--target ssh://`, a Linux host) a side whose DIR is OpenZFS source *here* is
compiled here for the host's running kernel (`uname -r` there, read while the input is checked;
its headers here: Debian's linux-headers-<kernel>, as the guest's build fetches them for the
guest's kernel) and its two modules copied to the host under REMOTE_BUILDS, kept there by build
(as streams are kept in /var/tmp/zfsperf-streams): the host needs neither a compiler nor the
source. A DIR that is not OpenZFS source here is a directory of modules on the host.

Validated with the rest of the input (the tree's META, the commit, the kernel's headers: exit 2,
nothing written), compiled once the input is whole and before the target is touched, incrementally
and cached by commit and kernel as `guest build` does (guest/source.py: the same cache, so a build
made on the host for the guest's kernel is found by zfsperf running inside that guest). Over ssh,
source here is compiled for the host's kernel and copied there (above); any other DIR is a
directory of modules on the host.

`zfsperf bisect` is `guest bisect` on this machine (LocalBench): each step's commit compiled for the
running kernel, measured in interleaved blocks with the module swapped between cases
(tunables/modswitch.py: the machine's own build journaled before the first unload)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from . import proc
from .buildref import SOURCE_KIND, BuildRef, Userland
from .errors import InputError, TargetError, shown
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
    where = "the host's kernel" if target.startswith("ssh://") else "this machine's kernel"
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
    return BuildRef(name, f"{label}, compiled for {where}", None,
                    {"kind": SOURCE_KIND, "spec": spec, "src": str(src.resolve()), "rev": full, "version": version})


# where a `make install DESTDIR=` tree (/usr/local by default) or a `dpkg -x` of Debian's zfsutils-linux
# and its libraries puts the ZFS commands and their libraries
USERLAND_BIN = ("sbin", "usr/sbin", "usr/local/sbin", "bin", "usr/bin", "usr/local/bin")
USERLAND_LIB = ("lib", "lib64", "usr/lib", "usr/local/lib", "lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu")


def userland_dir(name: str, where: str) -> Userland:
    """Build `name`'s own ZFS userland in the directory `where` (`--userland NAME=DIR`): its zpool
    and zfs in the first of USERLAND_BIN holding both, its libraries in each of USERLAND_LIB that
    holds a libzfs, libzpool, libnvpair, libuutil or libzfs_core; checked without writing anything."""
    root = Path(where)
    if not root.is_absolute():
        raise InputError(f"build {name}: DIR must be an absolute path, got {shown(where)}", field="--userland")
    if not root.is_dir():
        raise InputError(f"build {name}: {where} is not a directory", field="--userland")
    bins = [d for d in USERLAND_BIN if all(os.access(root / d / t, os.X_OK) and (root / d / t).is_file()
                                           for t in ("zpool", "zfs"))]
    if not bins:
        raise InputError(f"build {name}: {where} holds no zpool and zfs (looked in {', '.join(USERLAND_BIN)})",
                         field="--userland")

    def has(d: str, lib: str) -> bool:
        return next((root / d).glob(f"{lib}.so*"), None) is not None

    libs = [d for d in USERLAND_LIB if (root / d).is_dir() and any(
        has(d, lib) for lib in ("libzfs", "libzpool", "libnvpair", "libuutil", "libzfs_core"))]
    if not any(has(d, "libzfs") for d in libs):
        raise InputError(f"build {name}: {where} holds no libzfs.so (looked in {', '.join(USERLAND_LIB)})",
                         field="--userland")
    top = str(root).rstrip("/")
    return Userland(top, f"{top}/{bins[0]}", tuple(f"{top}/{d}" for d in libs))


def mark_rebuild(builds: dict[str, BuildRef]) -> None:
    """run --rebuild: two sides given as one OpenZFS source (the same tree, or the same commit of
    one repository); the second is compiled again in a build tree of its own (guest/source.py
    `rebuilt`: its own cache entry), the A/A′ whose interval is the rebuild floor."""
    sides = list(builds.values())
    same = (len(sides) == 2 and all(b.info.get("kind") == SOURCE_KIND for b in sides)
            and (sides[0].info["src"], sides[0].info["rev"]) == (sides[1].info["src"], sides[1].info["rev"]))
    if not same:
        raise InputError("--rebuild compiles one source twice: give two builds of the same OpenZFS source "
                         "(--build a=DIR@REV --build b=DIR@REV), not " + " and ".join(
                             b.info.get("spec", b.modules or b.label) for b in sides), field="--rebuild")
    b = sides[1]
    b.info = {**b.info, "rebuilt": True}
    b.label += " (compiled a second time, in a build tree of its own)"


def is_source_here(where: str) -> bool:
    """DIR or DIR@REV names OpenZFS source on this machine: a tree with META, or a git repository
    (its commit checked by source_ref)."""
    path, at, _rev = where.partition("@")
    return os.path.isfile(os.path.join(path, "META")) or (bool(at) and os.path.isdir(os.path.join(path, ".git")))


def host_kernel(target: str) -> str:
    """The running kernel of the ssh host `target` (`uname -s -r` there: nothing is changed), for
    builds compiled here for it; a host that is not Linux, or cannot be reached, is bad input."""
    from .sshlink import Ssh
    ssh = Ssh(target)
    try:
        res = ssh.run(["uname", "-s", "-r"], timeout=60)
    finally:
        ssh.close()
    system, _, release = res.stdout.strip().partition(" ")
    if not res.ok or not release:
        raise InputError(f"{target}: its kernel could not be read (uname -s -r: {res.error_text()})", field="--target")
    if system != "Linux":
        raise InputError(f"{target} runs {system}: a build given as source is compiled here for a Linux host's "
                         "kernel; build on the host and name its directory of modules", field="--build")
    return release


def check_headers(builds: dict[str, BuildRef], kv: str | None = None, where: str = "this machine's") -> None:
    """A side given as source needs the headers of the kernel it is compiled for here (the running
    kernel, or kv: an ssh host's), once the target is known to be kernel OpenZFS (zfs-fuse's own
    refusal comes first)."""
    kv = kv or running_kernel()
    b = next((b for b in builds.values() if b.unbuilt()), None)
    if b is not None and kernel_headers(kv) is None:
        raise InputError(f"build {b.name}: {b.info['spec']} is source, compiled for {where} kernel {kv}, "
                         f"whose headers are not here (/usr/src/linux-headers-{kv}, or /lib/modules/{kv}/build): "
                         "install them, or name a directory of built modules", field="--build")


def compile_sources(builds: dict[str, BuildRef], say: Callable[[str], None],
                    log: proc.CommandLog = proc.NULL_LOG, kv: str | None = None) -> None:
    """Each side given as source compiled (or found cached) for the running kernel (or kv, an ssh
    host's): its modules' directory set, what it was built from kept in its info."""
    todo = [b for b in builds.values() if b.unbuilt()]
    if not todo:
        return
    kv = kv or running_kernel()
    sb = SourceBuilder(say, log, kernel=kv, any_series=True, what="build")
    for b in todo:
        src, rev = Path(b.info["src"]), b.info["rev"]
        say(f"build {b.name}: {b.info['spec']} for kernel {kv} ...")
        again = bool(b.info.get("rebuilt"))
        mb = sb.build_commit(src, rev, rebuild=again) if rev else sb.build(src, rebuild=again)
        b.modules = str(mb.modules)
        b.info = {**b.info, **mb.info()}


REMOTE_BUILDS = "/var/tmp/zfsperf-builds"


def stage_on_host(target: str, b: BuildRef, say: Callable[[str], None]) -> None:
    """A side compiled here for an ssh host: its modules copied there (REMOTE_BUILDS/<its cache
    directory's name>/), every one (a 2.1 build's seven between spl.ko and zfs.ko too), each file
    only when the host's copy differs (sha256); the side then names the host's directory, and where
    it was compiled stays in its info."""
    import hashlib
    from .sshlink import STAGE_SCRIPT, Ssh
    assert b.modules is not None
    here = Path(b.modules)
    there = f"{REMOTE_BUILDS}/{here.parent.name}"
    mods = sorted({*MODULES, *(p.name for p in here.glob("*.ko"))})
    ssh = Ssh(target)
    try:
        have = ssh.run(["sh", "-c", 'cd -- "$0" 2>/dev/null && sha256sum -- "$@"', there, *mods],
                       timeout=300, log=proc.NULL_LOG)
        theirs = {f: h for h, f in (line.split(None, 1) for line in have.stdout.splitlines() if " " in line)}
        for m in mods:
            if theirs.get(m) == hashlib.sha256((here / m).read_bytes()).hexdigest():
                continue
            say(f"build {b.name}: copying {m} to {target}:{there} ...")
            with open(here / m, "rb") as f:
                res = proc.run(ssh.wrap(["sh", "-c", STAGE_SCRIPT, "sh", f"{there}/{m}"]), stdin=f, timeout=1800)
            if not res.ok:
                raise TargetError(f"build {b.name}: copying {m} to {target}:{there} failed: {res.error_text()}")
    finally:
        ssh.close()
    b.info = {**b.info, "compiled_here": str(here), "copied_to": there}
    b.modules = there


class Sources:
    """buildref.BuildSources for the runner: check_headers and compile_sources, for this machine's
    kernel or (target an ssh host) the host's, the modules then copied there."""

    def __init__(self, target: str = "auto") -> None:
        self.target = target
        self.kernel: str | None = None           # an ssh host's, read while the input is checked

    def check(self, builds: dict[str, BuildRef]) -> None:
        if self.target.startswith("ssh://"):
            self.kernel = host_kernel(self.target)
            check_headers(builds, self.kernel, "the host's")
        else:
            check_headers(builds)

    def compile(self, builds: dict[str, BuildRef], say: Callable[[str], None]) -> None:
        todo = [b for b in builds.values() if b.unbuilt()]
        compile_sources(builds, say, kv=self.kernel)
        if self.target.startswith("ssh://"):
            for b in todo:
                stage_on_host(self.target, b, say)


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
