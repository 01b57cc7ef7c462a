"""OpenZFS kernel modules built from a source tree (an OpenZFS git checkout or an unpacked release),
for the guest's kernel: `zfsperf guest build --zfs-src DIR`, and each side of `guest ab` and each
step of `guest bisect`.

- Only the modules (spl.ko, zfs.ko) come from the tree; the guest's kernel and ZFS userland are
  Debian's build of the same series (2.1 or 2.3, read from the tree's META), so a tree of another
  series is refused before anything is built.
- A build is cached by what it was built from and the kernel ABI:
  <cache>/src-<commit12>[-dirty-<hash8>]-<kernel>/ for a git tree, <cache>/src-tree-<hash12>-<kernel>/
  otherwise, holding modules/{spl,zfs}.ko (debug info stripped), build.json and logs/ (configure,
  make): the log of a failed build is kept there too.
- Builds are incremental: one build tree per repository (<cache>/trees/git-<root commit's tree>/,
  or per path for a tree that is not a git work tree) is kept between builds; files whose content changed are copied in, the rest keep their times,
  so `make` recompiles what a commit touched and configure runs again only when a build-system
  file changed. A bisect step that changes one .c file costs one compile and a link, not a build.
  The guest build (build.py) builds Debian's zfs-dkms source here too, in the tree a repository
  importing that source as its first commit gets: such a repository starts from the guest's build.
- One build at a time per build tree (a lock file beside it); bad input is refused before any
  file is written.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

from .. import guard, proc
from ..errors import InputError, TargetError
from .debian import VERSIONS, Debian, cache_root

SOURCE_FORMAT = 1
MODULES = ("spl.ko", "zfs.ko")
# a change to one of these makes configure run again
CONFIGURE_INPUTS = ("configure", "configure.ac", "META", "aclocal.m4", "zfs_config.h.in")


@dataclass
class Tree:
    """What a source tree is: where, which commit (if a git tree), dirty or not, its version."""
    path: str
    version: str                      # META's Version-Release, e.g. 2.3.2-2~bpo12+2
    series: str                       # 2.1 | 2.3: the Debian userland it runs with
    commit: str | None = None         # the git commit (None: not a git tree)
    dirty: bool = False               # uncommitted changes in a git tree
    content_hash: str | None = None   # sha256 of the files, when the commit alone does not say
    rebuilt: bool = False             # compiled a second time, in a build tree of its own (the A/A′ floor)

    @property
    def key(self) -> str:
        again = "-rebuilt" if self.rebuilt else ""
        if self.commit and not self.dirty:
            return self.commit[:12] + again
        if self.commit:
            return f"{self.commit[:12]}-dirty-{(self.content_hash or '')[:8]}{again}"
        return f"tree-{(self.content_hash or '')[:12]}{again}"

    @property
    def label(self) -> str:
        again = " (rebuilt in a second build tree)" if self.rebuilt else ""
        if self.commit:
            return f"OpenZFS {self.version} @ {self.commit[:12]}" + (" (dirty)" if self.dirty else "") + again
        return f"OpenZFS {self.version} (tree {(self.content_hash or '')[:12]})" + again


def read_meta(src: Path, any_series: bool = False) -> tuple[str, str]:
    """(version, series) from an OpenZFS tree's META file; bad input names the file and field."""
    meta = src / "META"
    try:
        text = meta.read_text()
    except OSError:
        raise InputError(f"{src} is not an OpenZFS source tree (no META file)", field="--zfs-src") from None
    return parse_meta(text, str(meta), any_series)


def parse_meta(text: str, where: str, any_series: bool = False) -> tuple[str, str]:
    """(version, series) from the text of a META file (`where` names it in errors). any_series: a
    series the guest has no userland for is taken (a build for a machine's own kernel and userland)."""
    meta = where
    fields = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        fields[k.strip()] = v.strip()
    version = fields.get("Version", "")
    parts = version.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        raise InputError(f"no Version like 2.3.2 (got {version!r})", file=str(meta), field="Version")
    series = ".".join(parts[:2])
    if series not in VERSIONS and not any_series:
        raise InputError(f"OpenZFS {version}: the guest has Debian's userland for {', '.join(sorted(VERSIONS))} "
                         "only, and a module of another series would not match it", file=str(meta), field="Version")
    release = fields.get("Release", "")
    return (f"{version}-{release}" if release else version), series


def commit_meta(repo: Path, rev: str, field: str, any_series: bool = False) -> tuple[str, str]:
    """(version, series) from the META file of commit `rev` of the git repository at `repo`, read
    with `git show` (nothing checked out or written); bad input is an InputError of `field`."""
    res = proc.run(["git", "-C", str(repo), "show", f"{rev}:META"], timeout=60)
    if not res.ok:
        raise InputError(f"{rev!r} is not a commit of {repo} with a META file: {res.error_text()}", field=field)
    return parse_meta(res.stdout, f"{repo}@{rev}:META", any_series)


def source_spec(spec: str, field: str, what: str = "not a directory") -> tuple[Path, str]:
    """DIR or DIR@REV: the source directory and the revision ("" for the tree as checked out)."""
    path, _, rev = spec.partition("@")
    src = Path(path).expanduser()
    if not src.is_dir():
        raise InputError(f"{spec!r} is {what}", field=field)
    return src, rev


def _git(src: Path, *args: str) -> proc.Completed:
    return proc.run(["git", "-C", str(src), *args], timeout=300)


def tree_files(src: Path) -> list[str]:
    """The files that make the tree: in a git work tree the tracked and the untracked-not-ignored
    ones (a build the user ran in place is not part of it); otherwise every file."""
    res = _git(src, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if res.ok and (src / ".git").exists():
        names = sorted({n for n in res.stdout.split("\0") if n})
        return [n for n in names if (src / n).is_file() or (src / n).is_symlink()]
    out = []
    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d != ".git"]
        out += [os.path.relpath(os.path.join(root, f), src) for f in files]
    return sorted(out)


def build_tree_for(src: Path) -> Path:
    """The persistent build tree of a source: one per git history (named by its root commit's
    tree, so a clone elsewhere shares it), else one per path."""
    res = _git(src, "rev-list", "--max-parents=0", "--format=%T", "HEAD") if (src / ".git").exists() else None
    lines = res.stdout.split() if res is not None and res.ok else []
    key = f"git-{lines[-1][:12]}" if lines else hashlib.sha256(str(src.resolve()).encode()).hexdigest()[:12]
    return cache_root() / "trees" / key


def _second(bt: Path, rebuild: bool) -> Path:
    """The build tree of a rebuild: beside the source's own, never the same directory (its objects,
    paths and link order are made afresh)."""
    return bt.with_name(bt.name + "-rebuild") if rebuild else bt


def build_tree_of_import(src: Path) -> Path:
    """The build tree (build_tree_for) of a git repository whose first commit imports the tree at
    `src` as it is: named by that commit's git tree, computed here with a throwaway repository
    (`src` is not touched). The guest build builds Debian's source there, so a repository made
    from Debian's source starts from the guest's own build: its first build recompiles only what
    its commits changed."""
    with tempfile.TemporaryDirectory(prefix="zfsperf-tree-") as tmp:
        gd = str(Path(tmp) / "git")
        for args in (["init", "-q", "--bare", gd], ["--git-dir", gd, "--work-tree", str(src), "add", "-A"]):
            res = proc.run(["git", "-c", "core.bare=false", *args], timeout=600)
            if not res.ok:
                raise TargetError(f"git {args[0]} of {src} failed: {res.error_text()}")
        res = proc.run(["git", "--git-dir", gd, "write-tree"], timeout=300)
        if not res.ok:
            raise TargetError(f"git write-tree of {src} failed: {res.error_text()}")
    return cache_root() / "trees" / f"git-{res.stdout.strip()[:12]}"


def content_hash(src: Path, files: list[str]) -> str:
    h = hashlib.sha256()
    for n in files:
        p = src / n
        h.update(n.encode() + b"\0")
        h.update(os.readlink(p).encode() if p.is_symlink() else p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def identify(src: Path, commit: str | None = None, any_series: bool = False) -> Tree:
    """The tree at `src`; `commit` names it when it was exported from a repository (a bisect step)."""
    src = src.resolve()
    if not src.is_dir():
        raise InputError(f"{src} is not a directory", field="--zfs-src")
    version, series = read_meta(src, any_series)
    files = tree_files(src)
    if commit is not None:
        return Tree(str(src), version, series, commit=commit)
    if (src / ".git").exists():
        head = _git(src, "rev-parse", "HEAD")
        if head.ok:
            dirty = bool(_git(src, "status", "--porcelain", "--untracked-files=normal").stdout.strip())
            return Tree(str(src), version, series, commit=head.stdout.strip(), dirty=dirty,
                        content_hash=content_hash(src, files) if dirty else None)
    return Tree(str(src), version, series, content_hash=content_hash(src, files))


@dataclass
class ModuleBuild:
    """A built pair of modules for one kernel (the guest's, or a machine's running kernel)."""
    dir: Path
    tree: Tree
    kernel: str

    @property
    def modules(self) -> Path:
        return self.dir / "modules"

    def complete(self) -> bool:
        try:
            info = json.loads((self.dir / "build.json").read_text())
        except (OSError, ValueError):
            return False
        return info.get("format") == SOURCE_FORMAT and all((self.modules / m).exists() for m in MODULES)

    def info(self) -> dict:
        return {"kind": "source", "label": self.tree.label, "kernel": self.kernel, "dir": str(self.dir),
                **asdict(self.tree)}


def sync_tree(src: Path, files: list[str], dest: Path) -> list[str]:
    """Make dest's copy of the source equal to src's files; only files whose content differs are
    written (so make sees only them as new). Returns the changed names (added, changed, removed)."""
    listing = dest / ".zfsperf-files"
    old = set(listing.read_text().split("\0")) - {""} if listing.exists() else set()
    changed = []
    for n in files:
        s, d = src / n, dest / n
        if s.is_symlink():
            target = os.readlink(s)
            if d.is_symlink() and os.readlink(d) == target:
                continue
            d.parent.mkdir(parents=True, exist_ok=True)
            if d.exists() or d.is_symlink():
                d.unlink()
            os.symlink(target, d)
        else:
            data = s.read_bytes()
            if d.is_file() and not d.is_symlink() and d.stat().st_size == len(data) and d.read_bytes() == data:
                continue
            d.parent.mkdir(parents=True, exist_ok=True)
            if d.is_symlink():
                d.unlink()
            d.write_bytes(data)
            os.chmod(d, s.stat().st_mode & 0o777)
        changed.append(n)
    for n in sorted(old - set(files)):
        (dest / n).unlink(missing_ok=True)
        changed.append(n)
    listing.write_text("\0".join(files))
    return changed


class SourceBuilder:
    """Build (or find cached) the modules of one source tree for the guest kernel, or (kernel and
    any_series given) for a machine's own running kernel, whose headers are where its distribution
    puts them (/lib/modules/<kernel>/build) and whose userland is its own."""

    def __init__(self, say: Callable[[str], None] = print, log: proc.CommandLog = proc.NULL_LOG,
                 jobs: int | None = None, kernel: str | None = None, any_series: bool = False,
                 what: str = "guest build") -> None:
        self.say, self.log = say, log
        self.jobs = jobs or os.cpu_count() or 2
        self._kernel = kernel             # the guest kernel's ABI, when the caller knows it already
        self.any_series, self.what = any_series, what

    def _step(self, name: str, fn: Callable[[], object]) -> object:
        self.say(f"{self.what}: {name} ...")
        return fn()

    def kernel(self, series: str) -> str:
        if self._kernel is None:
            debian = Debian(self.log, self._step)
            _pkg, self._kernel = debian.kernel()
            debian.host_tools(self._kernel)
        return self._kernel

    def build(self, src: Path, rebuild: bool = False) -> ModuleBuild:
        """Modules of the tree at `src` as it is (a git work tree: its commit, dirty or not).
        rebuild: compiled again in a second build tree of the source's own (the A/A′ floor: the
        same source, another build), cached apart from the first."""
        tree = replace(identify(src, any_series=self.any_series), rebuilt=rebuild)   # bad input refused before anything is written
        bt = _second(build_tree_for(src), rebuild)
        with build_tree_lock(bt, self.say):
            return self._build(tree, bt)

    def build_commit(self, repo: Path, rev: str, rebuild: bool = False) -> ModuleBuild:
        """Modules of commit `rev` of the git repository `repo`, exported with `git archive` to a
        stage directory (the repository and its work tree are not touched); rebuild as build()."""
        full = commit_of(repo, rev)
        cached = self.cached_commit(full, rebuild)
        if cached is not None:              # nothing exported or compiled (a resumed bisect, a machine's run)
            cached.tree.path = str(repo.resolve())
            return cached
        bt = _second(build_tree_for(repo), rebuild)
        with build_tree_lock(bt, self.say):
            stage = cache_root() / "stage" / hashlib.sha256(str(repo.resolve()).encode()).hexdigest()[:12]
            export_commit(repo, full, stage)
            mb = self._build(replace(identify(stage, full, self.any_series), rebuilt=rebuild), bt)
        mb.tree.path = str(repo.resolve())
        return mb

    def cached_commit(self, full: str, rebuild: bool = False) -> ModuleBuild | None:
        """The complete cached build of commit `full` for this builder's kernel, or None (the
        kernel's ABI known without fetching anything: given, as for a machine's own kernel)."""
        if self._kernel is None:
            return None
        key = Tree("", "", "", commit=full, rebuilt=rebuild).key
        out = cache_root() / f"src-{key}-{self._kernel}"
        try:
            info = json.loads((out / "build.json").read_text())
            tree = Tree(**{f: info[f] for f in Tree.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError):
            return None
        mb = ModuleBuild(out, tree, self._kernel)
        if not mb.complete() or tree.commit != full:
            return None
        self.say(f"{self.what}: {tree.label} for {self._kernel} is cached in {out}")
        return mb

    def build_in(self, src: Path, bt: Path) -> ModuleBuild:
        """Modules of the tree at `src` built in the build tree `bt` (the guest build's, for
        Debian's source: see build.Builder), which holds every module built when this returns."""
        tree = identify(src, any_series=self.any_series)
        with build_tree_lock(bt, self.say):
            return self._build(tree, bt, reuse=False)

    def _build(self, tree: Tree, bt: Path, reuse: bool = True) -> ModuleBuild:
        kv = self.kernel(tree.series)
        out = cache_root() / f"src-{tree.key}-{kv}"
        mb = ModuleBuild(out, tree, kv)
        if reuse and mb.complete():
            self.say(f"{self.what}: {tree.label} for {kv} is cached in {out}")
            return mb
        files = tree_files(Path(tree.path))
        bt.mkdir(parents=True, exist_ok=True)
        logs = out / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        times: dict[str, float] = {}

        def step(name: str, fn: Callable[[], object]) -> object:
            self.say(f"{self.what}: {tree.label}: {name} ...")
            t0 = time.monotonic()
            try:
                return fn()
            except TargetError as e:
                raise TargetError(f"building {tree.label} failed at step {name!r}: {e}") from None
            finally:
                times[name] = round(time.monotonic() - t0, 1)

        changed = step("copy the changed files", lambda: sync_tree(Path(tree.path), files, bt))
        assert isinstance(changed, list)
        configured = (bt / "config.status").exists() and (bt / ".zfsperf-kernel").exists() \
            and (bt / ".zfsperf-kernel").read_text() == kv
        if not (bt / "configure").exists():
            step("autogen.sh", lambda: _autogen(bt, logs / "autogen.log"))
            configured = False
        if not configured or any(Path(n).name in CONFIGURE_INPUTS or n.endswith((".am", ".in", ".m4"))
                                 for n in changed):
            (bt / ".zfsperf-kernel").unlink(missing_ok=True)
            step("configure", lambda: configure_modules(bt, kv, logs / "configure.log"))
            (bt / ".zfsperf-kernel").write_text(kv)
        self.say(f"{self.what}: {tree.label}: {len(changed)} file(s) changed since the last build in {bt}")
        step(f"make -j{self.jobs}", lambda: make_modules(bt, self.jobs, logs / "make.log"))
        mods = out / "modules"
        mods.mkdir(exist_ok=True)
        # spl.ko and zfs.ko, and every other module the series builds (2.1: znvpair, zcommon, zunicode,
        # zavl, icp, zlua, zzstd), loaded between them (tunables/reload.py)
        extra = sorted({k.name for k in (bt / "module").rglob("*.ko")} - set(MODULES))
        for m in [*MODULES, *extra]:
            found = sorted((bt / "module").rglob(m))
            if not found:
                raise TargetError(f"building {tree.label}: make left no {m} (see {logs / 'make.log'})")
            res = proc.run(["strip", "--strip-debug", "-o", str(mods / m), str(found[0])], timeout=600)
            if not res.ok:
                raise TargetError(f"strip {m} failed: {res.error_text()}")
        (out / "build.json").write_text(json.dumps({"format": SOURCE_FORMAT, **mb.info(), "seconds": times,
                                                    "changed_files": len(changed), "built": time.time()},
                                                   indent=1))
        self.say(f"{self.what}: {tree.label} for {kv}: {out} "
                 f"({', '.join(f'{k} {v:.0f} s' for k, v in times.items())})")
        return mb


@contextlib.contextmanager
def build_tree_lock(bt: Path, say: Callable[[str], None]) -> Iterator[None]:
    """One build at a time in a build tree (and its repository's stage): a second `guest build`,
    `ab` or `bisect` of the same repository waits, then finds the first one's product cached."""
    bt.parent.mkdir(parents=True, exist_ok=True)
    with open(bt.parent / f"{bt.name}.lock", "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"guest build: waiting for another build in {bt} ...")
            fcntl.flock(f, fcntl.LOCK_EX)
        yield


def build_step(argv: list[str], tree: Path, timeout: float, log: Path) -> proc.Completed:
    """One step of a build (autogen.sh, configure, make) in a session of its own that the guard
    knows, so that its compilers stop with zfsperf however it ends: run as a plain child, a
    SIGTERM to zfsperf during a rebuild's configure stopped zfsperf and the configure shell while
    configure's own children compiled on (2026-11-29), and a kill -9 left all of them."""
    t0 = time.monotonic()
    guard.ready()        # started before the step: a Ctrl-C while the guard started left make's children running
    try:
        p = subprocess.Popen(argv, cwd=str(tree), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             errors="replace", env=proc.c_locale_env(), start_new_session=True)
    except FileNotFoundError as e:
        res = proc.Completed(argv, 127, "", f"{argv[0]}: {e.strerror}", time.monotonic() - t0)
        proc.CommandLog(log).record(res, "")
        return res
    try:
        guard.watch(p)
        out, err = p.communicate(timeout=timeout)
        res = proc.Completed(argv, p.returncode, out, err, time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        proc.stop_pid(p.pid, proc=p, group=True)
        out, err = p.communicate()
        res = proc.Completed(argv, -signal.SIGKILL, out, err + f"\ntimed out after {timeout} s", time.monotonic() - t0)
    except BaseException:                    # a signal (KeyboardInterrupt), or anything else: the step goes too
        proc.stop_pid(p.pid, grace=5.0, proc=p, group=True)
        raise
    proc.CommandLog(log).record(res, "")
    return res


def _autogen(tree: Path, log: Path) -> None:
    """A git checkout has no generated configure: autogen.sh makes it (autoconf, automake, libtool)."""
    from . import apt
    need = [p for tool, p in (("autoconf", "autoconf"), ("automake", "automake"), ("libtoolize", "libtool"))
            if shutil.which(tool) is None]
    apt.install_host(need)
    res = build_step(["./autogen.sh"], tree, 1800, log)
    if not res.ok:
        raise TargetError(f"./autogen.sh failed (see {log}): {res.error_text()[-500:]}")


def commit_of(repo: Path, rev: str, field: str = "--good/--bad") -> str:
    """The full hash of commit `rev` of the git repository at `repo` (bad input: InputError)."""
    res = _git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
    if not res.ok:
        raise InputError(f"{rev!r} is not a commit of {repo}", field=field)
    return res.stdout.strip()


def export_commit(repo: Path, rev: str, dest: Path) -> str:
    """The tree of commit `rev` of the git repository at `repo`, written to `dest` (emptied first)
    with `git archive`: the repository and its work tree are not touched. Returns the full hash."""
    full = commit_of(repo, rev)
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    archive = subprocess.Popen(["git", "-C", str(repo), "archive", "--format=tar", full], stdout=subprocess.PIPE)
    untar = subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, capture_output=True)
    assert archive.stdout is not None
    archive.stdout.close()
    if archive.wait() != 0 or untar.returncode != 0:
        raise TargetError(f"git archive {full[:12]} of {repo} failed: {untar.stderr.decode(errors='replace')}")
    return full


def kernel_headers(kv: str) -> tuple[Path, Path] | None:
    """(source, objects) of kernel `kv`'s headers, as OpenZFS's configure takes them (--with-linux,
    --with-linux-obj): Debian's packages' directories (the guest kernel's, fetched by the guest
    build), else where a machine's headers package links them (/lib/modules/<kv>/source, build);
    None when there are none."""
    common = kv[: -len("-amd64")] + "-common" if kv.endswith("-amd64") else kv
    debian = (Path(f"/usr/src/linux-headers-{common}"), Path(f"/usr/src/linux-headers-{kv}"))
    if all(p.is_dir() for p in debian):
        return debian
    obj = Path("/lib/modules") / kv / "build"
    if not obj.is_dir():
        return None
    src = obj.parent / "source"
    return (src if src.is_dir() else obj), obj


def configure_modules(tree: Path, kv: str, log: Path) -> None:
    """`./configure` of an OpenZFS tree for kernel modules only, against kernel `kv`'s headers."""
    headers = kernel_headers(kv)
    if headers is None:
        raise TargetError(f"no headers of kernel {kv} here (/lib/modules/{kv}/build): install its headers package")
    res = build_step(["./configure", "--prefix=/usr", "--with-config=kernel",
                      f"--with-linux={headers[0]}", f"--with-linux-obj={headers[1]}"],
                     tree, 3600, log)
    if not res.ok:
        raise TargetError(f"OpenZFS configure failed (see {log}): {res.error_text()[-500:]}")


def make_modules(tree: Path, jobs: int, log: Path) -> None:
    res = build_step(["make", f"-j{jobs}"], tree, 7200, log)
    if not res.ok or not list((tree / "module").rglob("zfs.ko")):
        raise TargetError(f"OpenZFS make failed (see {log}): {res.error_text()[-500:]}")
