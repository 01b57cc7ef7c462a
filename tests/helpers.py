"""What the tests share, in one place (fixtures stay in conftest.py): the real CLI as a user runs
it, captured OpenZFS output, runfiles, a throwaway PostgreSQL server, and the fake target.

The fake target and the scripted workload (FakeTarget, ScriptedWorkload) test the runner's order,
statuses, precision, interleave, resume and signals in seconds, without ZFS (test_lifecycle.py):
a kernel-OpenZFS-shaped target with no kernel whose arcstats replay output captured from OpenZFS
2.3.2 (fixtures/openzfs-2.3.2), whose tunables are files in a directory laid out like
/sys/module/zfs/parameters (the real FileTunables backend and the real journal), and whose
zpool/zfs commands are recorded in order and answered as the real tools answer a success. No
pool exists anywhere: those tests check what zfsperf does around a measurement, never a figure of
ZFS; every real-ZFS path stays tested on the session's zfs-fuse daemon.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from zfsperf import proc
from zfsperf.pool import OWNER_PROP
from zfsperf.targets.base import Target
from zfsperf.targets.kstat import parse_named
from zfsperf.tunables import FileTunables
from zfsperf.workloads.base import CaseContext, Figures, figure

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"     # captured real OpenZFS output (README there)
VERSIONS = ("openzfs-2.1.11", "openzfs-2.3.2")


def fixture(version: str, name: str) -> str:
    return (FIXTURES / version / name).read_text()

DEFAULT_BATCH = "1048576"


IN_PROCESS = False     # conftest sets it for each `fast` test: its commands run in this process


def zfsperf(*args: str, env: dict | None = None, timeout: float = 600, cwd: str | None = None,
            real: bool = False) -> subprocess.CompletedProcess:
    """Run the real CLI as a user would: a process of its own, or, in a fast test (no ZFS: every
    command it runs reads only, or is refused or checked by --dry-run before it touches anything),
    the same `main(argv)` in this process, its stdout and stderr captured (a Python start-up, about
    0.4 s of CPU with numpy and scipy, saved each time: 83 of them were about a fifth of make test-fast's
    CPU). real=True: always a process of its own."""
    if IN_PROCESS and not real:
        return run_in_process(list(args), env, cwd)
    return subprocess.run([sys.executable, "-m", "zfsperf.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)


def run_in_process(args: list[str], env: dict | None = None, cwd: str | None = None
                   ) -> subprocess.CompletedProcess:
    """cli.main(args) as its process would run it: the environment and working directory given for
    the call only, an exit through SystemExit (argparse) its status, an exception a traceback on
    stderr and status 1, as Python's own; the signal handlers a run keeps to its end put back."""
    import io
    import signal
    import traceback
    from zfsperf import cli
    out, err = io.StringIO(), io.StringIO()
    saved, here = dict(os.environ), os.getcwd()
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)}
    try:
        os.environ.update(env or {})
        if cwd:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main(args)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if isinstance(e.code, str):
                    print(e.code, file=sys.stderr)
            except Exception:                                  # noqa: BLE001 (the interpreter's own way)
                traceback.print_exc()
                rc = 1
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(here)
        for s, h in handlers.items():
            if h is not None:                   # None: not set from Python, left as it is
                signal.signal(s, h)
    return subprocess.CompletedProcess(["zfsperf", *args], rc, out.getvalue(), err.getvalue())


def why(res: subprocess.CompletedProcess) -> str:
    """An assertion message for a command that did not do what a test expected. Its first line is
    the one a CI log's short summary shows, so it says the exit status, each case that did not
    PASS and the last line on stderr; the whole stdout and stderr follow."""
    out, err = res.stdout or "", res.stderr or ""
    bad = [ln.strip()[:240] for ln in out.splitlines() if ln.startswith("Test: ") and "[PASS]" not in ln]
    last = next((ln.strip()[:240] for ln in reversed(err.splitlines()) if ln.strip()), "")
    head = f"exit {res.returncode}" + "".join(f" | {b}" for b in bad[:4]) + (f" | stderr: {last}" if last else "")
    return head + "\n--- stdout\n" + out + "\n--- stderr\n" + err


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of each live child of pid, from /proc (the fault tests' way of finding
    the processes a zfsperf run started)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append((int(d.name), (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()))
        except (OSError, ValueError, IndexError):
            continue
    return out


def descendants(pid: int, seen: set[int] | None = None) -> set[int]:
    """pids of every live descendant of pid (children, theirs, ...), added to `seen` and returned."""
    seen = set() if seen is None else seen
    todo = [pid]
    while todo:
        for c, _cmd in children(todo.pop()):
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return seen


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    assert found, f"no PostgreSQL {name}: make test installs the postgresql package"
    return found[-1]


@dataclass
class PgCluster:
    """A throwaway PostgreSQL server on a private socket (no TCP listener)."""
    base: Path
    sock: Path
    port: int
    as_pg: list[str]

    def url(self, user: str, db: str, password: str | None = None) -> str:
        cred = user + (f":{password}" if password is not None else "")
        return f"postgresql://{cred}@/{db}?host={self.sock}&port={self.port}"

    def sql(self, statement: str, db: str = "postgres") -> None:
        subprocess.run([*self.as_pg, _pg_bin("psql"), "-h", str(self.sock), "-p", str(self.port), "-U", "postgres",
                        "-d", db, "-v", "ON_ERROR_STOP=1", "-c", statement], check=True, capture_output=True,
                       env={**os.environ, "PGPASSWORD": self.superpass})

    superpass: str = "superpass-not-under-test"

    def stop(self) -> None:
        subprocess.run([*self.as_pg, _pg_bin("pg_ctl"), "-D", str(self.base / "data"), "-m", "fast", "-w", "stop"],
                       capture_output=True)


@contextlib.contextmanager
def pg_cluster(auth: str = "trust") -> Iterator[PgCluster]:
    """initdb + pg_ctl, as the postgres user when root (the server refuses to run as root),
    outside pytest's root-only temporary folders; auth "scram-sha-256" makes every role need its
    password. A database "zfsperf" exists."""
    base = Path(tempfile.mkdtemp(prefix="zfsperf-pg-"))
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    as_pg: list[str] = []
    if os.geteuid() == 0:
        as_pg = ["runuser", "-u", "postgres", "--"]
        for d in (base, sock):
            shutil.chown(d, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = PgCluster(base, sock, port, as_pg)
    pwfile = base / "pw"
    pwfile.write_text(c.superpass + "\n")
    if as_pg:
        shutil.chown(pwfile, "postgres", "postgres")
    subprocess.run([*as_pg, _pg_bin("initdb"), "-D", str(data), "-A", auth, "-U", "postgres",
                    f"--pwfile={pwfile}"], check=True, capture_output=True)
    subprocess.run([*as_pg, _pg_bin("pg_ctl"), "-D", str(data), "-l", str(base / "log"), "-w", "-o",
                    f"-k {sock} -p {port} -c listen_addresses=''", "start"], check=True, capture_output=True)
    try:
        subprocess.run([*as_pg, _pg_bin("createdb"), "-h", str(sock), "-p", str(port), "-U", "postgres", "zfsperf"],
                       check=True, capture_output=True, env={**os.environ, "PGPASSWORD": c.superpass})
        yield c
    finally:
        c.stop()
        shutil.rmtree(base, ignore_errors=True)


def chromium(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Headless Chromium (make test installs it): the HTML report is checked in a real browser."""
    import pytest
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is missing: `make test` installs it (scripts/install-deps.sh --test)")
    return subprocess.run([exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                           "--v=0", *args], capture_output=True, text=True, timeout=timeout)


def console_errors(stderr: str) -> list[str]:
    """What a page said on Chromium's console (a script error, a resource that did not load)."""
    return [ln for ln in stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]


# ---------------------------------------------------------------- runfiles
EXAMPLE = textwrap.dedent('''\
    [defaults]
    iterations = 3
    timeout = "20m"
    [defaults.pool]
    layout = "mirror"          # stripe | mirror | raidz1 | raidz2 | raidz3
    vdevs = 2
    vdev_size = "2G"
    [defaults.dataset]
    primarycache = "none"

    [[test]]
    name = "recv-threads"
    tags = ["receive", "quick"]
    workload = "receive"
    corpus = { kind = "small-records", size = "256M" }
    threads = [1, 2, 4]         # a list is a sweep: one case per value

    [[test]]
    name = "recv-batch"
    tags = ["receive", "tunables"]
    workload = "receive"
    corpus = { kind = "small-records", size = "256M" }
    threads = 1
    tunables = { zfs_recv_write_batch_size = ["128K", "1M"] }
    ''')


def lab_pools(lab) -> set[str]:
    """The pools on a lab daemon now: a test holds its own leftovers against those it began with, so
    that another test's pool zfs-fuse still calls busy fails that test alone."""
    return set(lab.run(["zpool", "list", "-H", "-o", "name"]).stdout.split())


def write_runfile(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "rf.toml"
    p.write_text(body)
    return p


def small(example: str) -> str:
    return (example.replace('size = "256M"', 'size = "16M"').replace('vdev_size = "2G"', 'vdev_size = "256M"')
            .replace("iterations = 3", "iterations = 1"))


def last_dir(stdout: str) -> Path:
    return Path(stdout.rstrip().splitlines()[-1].split("\t")[-1])


def records(d: Path) -> list[dict]:
    return [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines() if x.strip()]


# one iteration a case on a small pool of one vdev file: a runfile's defaults for a test of mechanics
ONE_SMALL_POOL = '''
[defaults]
iterations = 1
timeout = "5m"
[defaults.pool]
layout = "stripe"
vdevs = 1
vdev_size = "256M"
'''


def receive_runfile(tmp_path: Path, corpus: str, threads: str = "[1, 2]", extra: str = "") -> Path:
    p = tmp_path / "rf.toml"
    p.write_text(ONE_SMALL_POOL + f'''[defaults.dataset]
primarycache = "none"
[[test]]
name = "recv"
tags = ["receive"]
workload = "receive"
corpus = {corpus}
threads = {threads}
{extra}
''')
    return p


# a receive test that sets a tunable (fill in iters, size, threads with .format)
TUNED = '''
[defaults]
iterations = {iters}
timeout = "5m"
[defaults.pool]
layout = "stripe"
vdevs = 1
vdev_size = "512M"
[[test]]
name = "tuned"
workload = "receive"
corpus = {{ kind = "random", size = "{size}", seed = 5 }}
threads = {threads}
tunables = {{ zfs_recv_write_batch_size = "128K" }}
'''


# ---------------------------------------------------------------- the fake target
ARCSTATS = FIXTURES / "openzfs-2.3.2" / "kstat_arcstats_final.txt"

TUNABLES = {"zfs_txg_timeout": "5", "zfs_dirty_data_max": "4294967296", "zfs_recv_write_batch_size": "1048576"}


class LoggedTunables(FileTunables):
    """The real file backend, with each set written to the event list (the lifecycle order)."""

    def __init__(self, directory: str, events: list[tuple[Any, ...]]) -> None:
        super().__init__(directory)
        self.events = events

    def set(self, name: str, value: str) -> None:
        self.events.append(("set", name, str(value)))
        super().set(name, value)


class FakeTarget(Target):
    impl = "openzfs-linux"
    host_root = "/hostroot"         # shaped like zfsperf's guest, where build A/Bs run: it reads the host's builds there

    def __init__(self, root: Path, log: proc.CommandLog = proc.NULL_LOG) -> None:
        super().__init__(log)
        self.events: list[tuple[Any, ...]] = []        # every command, set and workload call, in order
        pdir = root / "parameters"
        pdir.mkdir(parents=True, exist_ok=True)
        for k, v in TUNABLES.items():
            (pdir / k).write_text(v + "\n")
        self.tunables = LoggedTunables(str(pdir), self.events)
        self.pools: dict[str, str] = {}               # name -> owner mark
        self.arcstats = parse_named(ARCSTATS.read_text(), "arcstats")
        self.closed = False
        self.module: str | None = "own"                 # the loaded zfs module: "own" (booted), a path, None

    def zfs_version(self) -> str:
        return "2.3.2 (fake: replayed kstats)"

    def kstat_sources(self) -> list[str]:
        return ["arcstats"]

    def kstat(self, name: str) -> dict[str, float] | None:
        return dict(self.arcstats) if name == "arcstats" else None

    def iostat_forms(self) -> list[str]:
        return []

    def close(self) -> None:
        self.closed = True

    def commands(self, *names: str) -> list[list[str]]:
        return [e[1] for e in self.events if e[0] == "run" and (not names or e[1][0] in names)]

    def run(self, argv: Sequence[str], *, stdin_file: str | None = None, timeout: float | None = None,
            log: proc.CommandLog | None = None, input: str | None = None,
            stdout_file: str | None = None) -> proc.Completed:
        argv = self.tool_argv(argv)                    # a build's own userland, as the real targets take it
        self.events.append(("run", argv))
        # answered as the command it runs: `env LD_LIBRARY_PATH=… DIR/zpool ARGS` as zpool ARGS
        own = argv[0] == "env"
        out, rc = self._answer([Path(argv[2]).name, *argv[3:]] if own else argv, own)
        return proc.Completed(argv, rc, out, "" if rc == 0 else f"{argv[0]}: cannot do that", 0.001)

    def _answer(self, argv: list[str], own: bool = False) -> tuple[str, int]:
        cmd = argv[:2]
        if cmd == ["zfs", "version"]:                   # the userland's version: a build's own, or the machine's
            return f"zfs-{'2.1.11-1+fake' if own else '2.3.2-1+fake'}\nzfs-kmod-2.3.2-1+fake\n", 0
        if argv[0] == "truncate":                      # a sparse vdev file, as the real truncate makes it
            Path(argv[-1]).parent.mkdir(parents=True, exist_ok=True)
            with open(argv[-1], "ab") as f:
                f.truncate(int(argv[2]))
            return "", 0
        if argv[0] == "rmmod":                          # as the kernel: not while a pool is imported
            if self.pools:
                return "", 1
            self.module = None
            return "", 0
        if argv[0] in ("insmod", "modprobe"):
            if argv[-1].endswith("zfs.ko") or argv[-1] == "zfs":
                self.module = "own" if argv[0] == "modprobe" else argv[-1]
            return "", 0
        if argv == ["cat", "/proc/modules"]:
            return ("zfs 6500000 0 - Live 0x0\nspl 118784 1 zfs, Live 0x0\n" if self.module else ""), 0
        if argv == ["cat", "/sys/module/zfs/srcversion"]:
            return (f"SRC-{self.module}\n", 0) if self.module else ("", 1)
        if cmd == ["zpool", "create"]:
            if self.module is None:
                return "", 1                            # no zfs module, no pool
            name = next(a for a in argv[2:] if not a.startswith("-") and "=" not in a and "/" not in a)
            owner = next((a.split("=", 1)[1] for a in argv if a.startswith(f"{OWNER_PROP}=")), "-")
            if name in self.pools:
                return "", 1                            # "cannot create 'NAME': pool already exists"
            self.pools[name] = owner
            return "", 0
        if cmd == ["zpool", "destroy"]:
            return ("", 0) if self.pools.pop(argv[-1], None) is not None else ("", 1)
        if cmd == ["zpool", "list"]:
            return "".join(f"{n}\n" for n in self.pools), 0
        if cmd == ["zfs", "get"] and OWNER_PROP in argv:
            return f"{self.pools.get(argv[-1], '-')}\n", 0 if argv[-1].split("/")[0] in self.pools else 1
        return "", 0                                   # zfs create/set, rm of vdev files: done


class ScriptedWorkload:
    """A workload whose figures and failures the test writes: `script(ctx)` returns the figures
    (or raises what a real workload raises). Each call is an event ("workload", case, iteration)."""
    name = "scripted"
    headline = "throughput"
    series_headline = "workload_mibs"
    bandwidth_figure = None
    summary_figures = ["throughput"]
    directions: dict[str, int] = {}
    figure_units = (("throughput", "MiB/s"),)
    fields = {"level": ((int, float), True), "mode": (str, True)}
    duet_modes: tuple[str, ...] = ()
    turns_share_files = False
    pool_counts_at_end = False

    def __init__(self, target: FakeTarget, script: Callable[[CaseContext], Figures] | None = None) -> None:
        self.target = target
        self.script = script or (lambda ctx: {"throughput": figure(float(ctx.fields.get("level", 100)), "MiB/s")})

    def validate(self, test: dict[str, Any], where: Callable[[str], dict]) -> None:
        pass

    def prepare(self, test: dict[str, Any], target: Target, vdev_dir: Path, progress: Any) -> Any:
        return None

    def run(self, ctx: CaseContext) -> Figures:
        self.target.events.append(("workload", ctx.case_id, ctx.iteration))
        return self.script(ctx)

    def active_bytes(self, fields: dict[str, Any], prepared: Any) -> int | None:
        return None

    def kept_bytes(self, fields: dict[str, Any]) -> int | None:
        return None

    def asked_seconds(self, fields: dict[str, Any]) -> float | None:
        return None

    def cycle(self, ctx: CaseContext, figures: Figures) -> tuple[float | None, str]:
        return None, "one call"


def runfile(path: Path, body: str, *, iterations: int = 3) -> Path:
    path.write_text(f"[defaults]\niterations = {iterations}\nwarmup = 0\ntimeout = \"1m\"\n"
                    "[defaults.pool]\nvdevs = 1\nvdev_size = \"64M\"\n"
                    "[defaults.steady]\nmode = \"off\"\n\n" + body)
    return path


def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def interrupt_self(signum: int) -> None:
    """What a user's Ctrl-C (or a hangup) does to the run: the signal, to this process."""
    os.kill(os.getpid(), signum)


# a real, deliberate cost in the receive path: a pause of 100 ms (at least one tick) per WRITE
# record, after the record is checked and before it is written
RECEIVE_COST = ("\treturn (SET_ERROR(EINVAL));\n\n\tif (rwa->heal) {",
                "\treturn (SET_ERROR(EINVAL));\n\n\tdelay(MAX(1, MSEC_TO_TICK(100)));\n\n\tif (rwa->heal) {")


def meta_repo(path: Path) -> str:
    """A git repository of one commit holding only an OpenZFS META file (2.4.99): source as
    zfsperf validates it, never compiled. Returns the commit."""
    path.mkdir()
    (path / "META").write_text("Meta: 1\nName: zfs\nVersion: 2.4.99\nRelease: 1\n")
    for args in (["init", "-q"], ["add", "META"], ["commit", "-qm", "import"]):
        subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
                       check=True)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def openzfs_21(kernel: str) -> tuple[Path, Path]:
    """OpenZFS 2.1 as a user who built it elsewhere hands it to `run --build`: Debian bookworm's
    2.1.11 modules (zfs-dkms's source compiled for `kernel`: nine modules, spl to zfs) and its
    userland (zfsutils-linux and its libraries, unpacked with dpkg -x, never installed). Returns
    (the directory of modules, the userland's root), both cached with the guest's builds."""
    from zfsperf.guest import apt
    from zfsperf.guest.build import cache_root
    from zfsperf.guest.debian import VERSIONS
    from zfsperf.guest.source import SourceBuilder
    root = cache_root() / "test-2.1"
    zsrc, uroot = root / "zsrc", root / "userland"
    if not (uroot / "sbin" / "zpool").exists() or not list((zsrc / "usr" / "src").glob("zfs-2.1*")):
        a = apt.PrivateApt(cache_root() / "apt")
        a.update()
        version = a.candidate("zfs-dkms", "2.1")
        shutil.rmtree(root, ignore_errors=True)
        debs = a.download([f"zfs-dkms={version}", f"zfsutils-linux={version}",
                           *(f"{p}={version}" for p in VERSIONS["2.1"].split())], root / "debs")
        for d in debs:
            apt.extract(d, zsrc if d.name.startswith("zfs-dkms_") else uroot)
        shutil.rmtree(root / "debs")
    (src,) = sorted((zsrc / "usr" / "src").glob("zfs-2.1*"))
    mb = SourceBuilder(kernel=kernel, any_series=True, what="build").build(src)
    return mb.modules, uroot


def openzfs_repo(dest: Path) -> dict[str, str]:
    """A git repository of Debian's zfs-dkms 2.3 source with four commits: the import ("base"), a
    comment in dmu_recv.c ("comment": recompiled, no cost), the receive cost above ("cost") and a
    README note ("note"). Returns those names -> full commit hashes. Debian's source is fetched
    with zfsperf's own private apt (cached with the guest build)."""
    from zfsperf.guest import apt
    from zfsperf.guest.build import cache_root
    debs = cache_root() / "test-debs"
    a = apt.PrivateApt(cache_root() / "apt")
    a.update()
    version = a.candidate("zfs-dkms", "2.3")
    found = sorted(debs.glob("zfs-dkms_*.deb"))
    if not found:
        found = a.download([f"zfs-dkms={version}"], debs)
    x = dest.parent / (dest.name + "-deb")
    apt.extract(found[0], x)
    (src,) = sorted((x / "usr" / "src").glob("zfs-*"))
    shutil.move(str(src), str(dest))
    shutil.rmtree(x)

    # fixed dates: the same source makes the same commits in every session, so their modules,
    # cached by commit, are built once per machine
    when = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(dest), "-c", "user.name=zfsperf test", "-c",
                               "user.email=test@zfsperf.invalid", *args], check=True, capture_output=True,
                              text=True, env={**os.environ, **when}).stdout.strip()
    git("init", "-q", "-b", "main")
    commits = {}

    def commit(name: str, message: str) -> None:
        git("add", "-A")
        git("commit", "-q", "-m", message)
        commits[name] = git("rev-parse", "HEAD")
    commit("base", f"import OpenZFS {version} (Debian zfs-dkms source)")
    recv = dest / "module" / "zfs" / "dmu_recv.c"
    text = recv.read_text()
    recv.write_text(text.replace("noinline static int\nreceive_process_write_record(",
                                 "/* a write record of the stream */\nnoinline static int\n"
                                 "receive_process_write_record(", 1))
    commit("comment", "dmu_recv: a comment (no cost)")
    text = recv.read_text()
    assert RECEIVE_COST[0] in text
    recv.write_text(text.replace(*RECEIVE_COST, 1))
    commit("cost", "dmu_recv: a deliberate 100 ms pause per WRITE record")
    with open(dest / "README.md", "a") as f:
        f.write("\nA note that changes nothing built.\n")
    commit("note", "README: a note")
    return commits


# ---------------------------------------------------------------- stored results for compare's statistics
def stored_results(d: Path, values: list[float], *, host: str = "h1", case: str = "c",
             interleave: bool = False, start: float = 0) -> Path:
    """A results directory as a run writes it, with one receive case's throughput per iteration."""
    d.mkdir(parents=True)
    info = {"target": {"implementation": "zfs-fuse", "zfs_version": "0.7"}, "host": host, "start": start,
            "runfile": {"source": "t", "text": "same runfile"}, "selection": {"interleave": interleave}}
    (d / "run.json").write_text(json.dumps(info))
    (d / "results.jsonl").write_text("".join(json.dumps({
        "test": "t", "case": case, "params": {}, "iteration": i + 1, "workload": "receive", "status": "PASS",
        "figures": {"throughput": {"value": v, "unit": "MiB/s"}}}) + "\n" for i, v in enumerate(values)))
    return d


def level_run(level: float, rng: random.Random, cv: float = 0.01, n: int = 5) -> list[float]:
    return [level * (1 + rng.gauss(0, cv)) for _ in range(n)]


def throughput_change(res) -> dict:
    return next(c for c in json.loads(res.stdout)["changes"] if c["figure"] == "throughput")


# one small receive test, one iteration: the runfile of the build A/B tests (guest and fast)
RECV = """
[defaults]
iterations = 1
timeout = "10m"
[defaults.pool]
vdevs = 1
vdev_size = "128M"
[[test]]
name = "recv"
workload = "receive"
corpus = { kind = "random", size = "4M", seed = 7 }
threads = 1
steady = { mode = "off" }
"""


def command_lines(text: str) -> list[str]:
    """Every `zfsperf …` line of a document's code blocks, its trailing comment taken off; lines
    that show a syntax ([optional] parts, `...`, a|b) rather than a command are left out."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):          # shell blocks only: others show output
            fenced = not fenced and line.strip()[3:] in ("sh", "bash", "shell", "console")
            continue
        cmd = line.split(" # ", 1)[0].strip()
        if fenced and cmd.startswith("zfsperf ") and not any(m in cmd for m in ("[", "...", "…", "|")):
            out.append(cmd)
    return out


def tmux(sock: Path, *args: str) -> subprocess.CompletedProcess:
    """tmux on a server of a test's own, its socket at sock (in the test's directory: -L NAME left
    /tmp/tmux-UID and its sockets behind)."""
    return subprocess.run(["tmux", "-S", str(sock), *args], capture_output=True, text=True, timeout=30)


def after_compare_title(stdout: str) -> str:
    """What follows compare's table title, `… (old, new: medians; change: new / old)`, however the
    title wraps: its table and notes (after a run's own summary)."""
    import re
    m = re.search(r"change:\s+new\s+/\s+old\)", stdout)
    assert m, stdout
    return stdout[m.end():]


def flat(text: str) -> str:
    """Output as one line of single spaces: what it says, however it wrapped to fit the width
    (prose, a title, a table's last column)."""
    return " ".join(text.split())


def table_row(table: str, figure: str) -> str:
    """A table's row that begins with figure, with the lines its last cells wrapped onto (they
    begin blank where the row's first cells stand), as one line of single spaces."""
    lines = table.splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.strip().startswith(f"{figure} "))
    row = [lines[i]]
    for ln in lines[i + 1:]:
        if not ln.strip() or not ln.startswith("   "):
            break
        row.append(ln)
    return flat(" ".join(row))


def readme_command(start: str) -> list[str]:
    """The README's command line that starts with `start`, as argv without the leading `zfsperf`."""
    import shlex
    found = [c for c in command_lines((Path(__file__).resolve().parents[1] / "README.md").read_text())
             if c.startswith(start)]
    assert len(found) == 1, (start, found)
    return shlex.split(found[0])[1:]
