"""Running commands: argv lists only, every command and its output logged, processes stopped by pid."""

from __future__ import annotations

import os
import re
import selectors
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Sequence


@dataclass
class Completed:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    elapsed: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def error_text(self) -> str:
        text = (self.stderr.strip() or self.stdout.strip())
        return text or f"exit status {self.returncode}"


class CommandLog:
    """Appends every command run, with its exit status, time and output, to one file."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, text: str) -> None:
        if self.path is None:
            return
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(text if text.endswith("\n") else text + "\n")

    def record(self, res: Completed, note: str = "") -> None:
        head = f"$ {shlex.join(res.argv)}{note}\n# exit {res.returncode}, {res.elapsed:.3f} s\n"
        body = ""
        if res.stdout.strip():
            body += "".join(f"  | {ln}\n" for ln in res.stdout.rstrip("\n").splitlines())
        if res.stderr.strip():
            body += "".join(f"  ! {ln}\n" for ln in res.stderr.rstrip("\n").splitlines())
        self.write(head + body)


NULL_LOG = CommandLog(None)

STOP_GRACE = 5.0      # seconds a case's process group gets between SIGTERM and SIGKILL at teardown


def c_locale_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment every command runs with: LC_ALL=C, so that tools print numbers the way
    zfsperf parses them (zfs-fuse's `zpool iostat` prints 11,4T under a comma-decimal locale)."""
    return {**(os.environ if env is None else env), "LC_ALL": "C"}


def python_env() -> dict[str, str]:
    """Environment for zfsperf's own helper processes (`python -m zfsperf.…`): they must import
    this very package, wherever it was run from."""
    env = dict(os.environ)
    pkg_parent = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run(argv: Sequence[str], *, log: CommandLog = NULL_LOG, stdin: IO[bytes] | int | None = None,
        input: str | None = None, timeout: float | None = None, env: dict[str, str] | None = None,
        note: str = "", stdout: IO[bytes] | None = None, cwd: str | None = None) -> Completed:
    """Run argv (never through a shell), wait, log it and return what it printed.

    With stdout given, the command writes there (a file) and only stderr is captured."""
    argv = [str(a) for a in argv]
    t0 = time.monotonic()
    try:
        cp = subprocess.run(argv, stdin=stdin if input is None else None, input=input,
                            stdout=subprocess.PIPE if stdout is None else stdout,
                            stderr=subprocess.PIPE, text=True, timeout=timeout, env=c_locale_env(env),
                            errors="replace", cwd=cwd)
        res = Completed(argv, cp.returncode, cp.stdout or "", cp.stderr or "", time.monotonic() - t0)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        res = Completed(argv, -signal.SIGKILL, out, err + f"\ntimed out after {timeout} s",
                        time.monotonic() - t0)
    except FileNotFoundError as e:
        res = Completed(argv, 127, "", f"{argv[0]}: {e.strerror}", time.monotonic() - t0)
    log.record(res, note)
    return res


def read_until(p: subprocess.Popen, pattern: re.Pattern[str], timeout: float) -> re.Match[str] | None:
    """The first complete line of p's stdout (a pipe) that matches pattern, read as it is printed
    (p should print line-buffered: `stdbuf -oL`); None at end of output or after timeout seconds.
    The caller stops p."""
    assert p.stdout is not None
    fd = p.stdout.fileno()
    text, deadline = b"", time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not sel.select(left):
                continue
            chunk = os.read(fd, 65536)
            text += chunk
            whole = text[:text.rfind(b"\n") + 1].decode(errors="replace")     # complete lines only
            m = pattern.search(whole)
            if m or not chunk:
                return m
    return None


def _term_group(p: subprocess.Popen) -> None:
    if p.returncode is None:                 # not reaped yet, so the pid is still ours
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except OSError:
            pass


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def start_ticks(pid: int) -> int | None:
    """When a live process started (clock ticks after boot, /proc/<pid>/stat), or None: with its pid
    it names one process, never a later one given the same pid."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time a live process has used (from /proc/<pid>/stat), or None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def rss_bytes(pid: int) -> int | None:
    """Resident memory of a live process (/proc/<pid>/statm), or None."""
    try:
        with open(f"/proc/{pid}/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def open_files() -> dict[str, list[int]]:
    """Every regular file some process on this machine has open: path -> pids (/proc/*/fd)."""
    out: dict[str, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{d}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                path = os.readlink(f"/proc/{d}/fd/{fd}")
            except OSError:
                continue
            if path.startswith("/"):
                out.setdefault(path, []).append(int(d))
    return out


def pid_cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [p.decode(errors="replace") for p in f.read().split(b"\0") if p]
    except OSError:
        return []


def group_members(pgid: int) -> list[int]:
    """pids of the live (not zombie) processes in process group pgid. A group can outlive its
    leader: a child that ignores SIGTERM, or is still in an I/O, when the leader has exited."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            out.append(int(d))
    return out


def wait_group_gone(pgid: int, timeout: float) -> bool:
    """Wait until no live process is left in group pgid. True if none is."""
    deadline = time.monotonic() + timeout
    while group_members(pgid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def wait_gone(pid: int, timeout: float, proc: subprocess.Popen | None = None) -> bool:
    """Wait until pid has exited (reaping it when it is our child). True if it is gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return True
        if proc is None:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


def stop_pid(pid: int, *, grace: float = 10.0, proc: subprocess.Popen | None = None,
             sig: int = signal.SIGTERM, group: bool = False) -> bool:
    """Stop one process we started, by pid: sig, wait up to grace seconds, then SIGKILL.

    With group=True the signal goes to the process group the pid leads (a process we
    started with start_new_session=True), so its children stop with it, and the whole group
    must be gone, not only its leader (else SIGKILL to the group).
    Returns True when it had to be killed.
    """
    if not pid_alive(pid):
        if proc is not None:
            proc.poll()
        return False
    kill = os.killpg if group else os.kill
    try:
        kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    t0 = time.monotonic()
    if wait_gone(pid, grace, proc) and (not group or wait_group_gone(pid, grace - (time.monotonic() - t0))):
        return False
    try:
        kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    wait_gone(pid, 5.0, proc)
    if group:
        wait_group_gone(pid, 5.0)
    return True


class ProcessSet:
    """The processes a case started. On a timeout or a signal they are stopped by pid, never by name."""

    def __init__(self) -> None:
        self._procs: list[subprocess.Popen] = []
        self._lock = threading.Lock()
        self.cancelled = False
        self.cancelled_at: float | None = None   # time.monotonic() of the first cancel()

    def add(self, p: subprocess.Popen) -> subprocess.Popen:
        with self._lock:
            self._procs.append(p)
        if self.cancelled:                   # started after cancel() looked: stop it too
            _term_group(p)
        return p

    def cancel(self) -> None:
        """Ask every process group we started to end (SIGTERM), now and for any added later.

        Safe inside a signal handler: no lock, no wait, no output (the handler may have
        interrupted this very object's add() or stop_all()); stop_all() later waits and kills."""
        if self.cancelled_at is None:
            self.cancelled_at = time.monotonic()
        self.cancelled = True
        for p in list(self._procs):          # a list copy is atomic under the GIL
            _term_group(p)

    def stop_all(self, grace: float | None = None) -> list[int]:
        """SIGTERM each live process group we started, then SIGKILL after grace (STOP_GRACE).
        Returns the pids stopped."""
        grace = STOP_GRACE if grace is None else grace
        stopped = []
        with self._lock:
            procs = list(self._procs)
        for p in procs:
            if p.poll() is None:
                stop_pid(p.pid, grace=grace, proc=p, group=True)
                stopped.append(p.pid)
        return stopped
