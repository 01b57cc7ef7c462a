"""The ssh link to a remote machine: one shared connection, commands as argv lists quoted once for
the remote shell (with LC_ALL=C), and the file operations (FileOps) zfsperf needs there. A leaf
module: targets (targets/ssh.py) and tunables backends (tunables/) both build on it."""

from __future__ import annotations

import os
import re
import shlex
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from . import proc
from .errors import InputError

URL_RE = re.compile(r"^ssh://(?:(?P<user>[A-Za-z0-9._][A-Za-z0-9._-]*)@)?(?P<host>[A-Za-z0-9.:_-]+?|\[[0-9a-fA-F:]+\])"
                    r"(?::(?P<port>\d{1,5}))?/?$")
ZFS_FUSE_SOCKET = "/var/run/zfs/zfs_socket"


RETRY_DELAYS = (0.2, 0.5, 1.0, 2.0)     # seconds before each retry of a command ssh failed to start

T = TypeVar("T")


def ssh_failed_to_start(returncode: int, elapsed: float, limit: float = 2.0) -> bool:
    """A quick exit 255 is ssh's own failure (e.g. a shared-connection session refused by a loaded
    guest while many are open), not the remote command's, which never ran."""
    return returncode == 255 and elapsed <= limit


def again_while_refused(first: T, attempt: Callable[[], T], refused: Callable[[T], bool], *,
                        before: Callable[[float], bool] | None = None) -> T:
    """The one retry policy of a remote command: first (what one attempt gave) and, while
    refused(that result) says ssh failed to start it (so the command never ran), attempt() again
    after each of RETRY_DELAYS. before(delay), when given, is asked before each wait (to log it)
    and ends the retries by returning False (a cancelled case, an abandoned interval)."""
    res = first
    for delay in RETRY_DELAYS:
        if not refused(res) or (before is not None and not before(delay)):
            break
        time.sleep(delay)
        res = attempt()
    return res


def retry_ssh_failure(run: Callable[[], proc.Completed]) -> proc.Completed:
    """Run (a zero-argument callable), again while ssh failed to start it."""
    return again_while_refused(run(), run, lambda r: ssh_failed_to_start(r.returncode, r.elapsed))


def parse_url(url: str) -> tuple[str | None, str, int]:
    m = URL_RE.match(url)
    if not m or m.group("host").startswith("-"):
        raise InputError(f"not an ssh target: {url!r} (expected ssh://user@host[:port])", field="--target")
    port = int(m.group("port") or 22)
    if not 0 < port < 65536:
        raise InputError(f"bad port in {url!r}", field="--target")
    return m.group("user"), m.group("host").strip("[]"), port


# a file of this host written whole on the remote one from the command's stdin, its path the one
# positional parameter (a copy cut short is never taken for the file): streams, a build's modules
STAGE_SCRIPT = 'mkdir -p -- "${1%/*}" && cat > "$1.part" && mv -f -- "$1.part" "$1"'


class Ssh:
    """The ssh transport and the remote file operations (FileOps) it gives."""

    remote = True

    def __init__(self, url: str, options: Sequence[str] | None = None, log: proc.CommandLog = proc.NULL_LOG,
                 machine_pid: int | None = None) -> None:
        self.url = url
        # machine_pid: the process on this host that is the remote machine (a QEMU guest): what is
        # changed over this link lives as long as that process (its start time tells a later one apart)
        self.machine = None if machine_pid is None else {"pid": machine_pid, "start": proc.start_ticks(machine_pid)}
        self.user, self.host, self.port = parse_url(url)
        opts = list(options) if options is not None else shlex.split(os.environ.get("ZFSPERF_SSH_OPTS", ""))
        self.options = opts
        dest = f"{self.user}@{self.host}" if self.user else self.host
        # one connection for the whole run: a new ssh handshake per command costs ~0.2 s (more on
        # an emulated guest); the master is stopped by close()
        cdir = Path(tempfile.gettempdir()) / f"zfsperf-ssh-{os.getuid()}"
        cdir.mkdir(mode=0o700, exist_ok=True)
        self.control = ["-o", "ControlMaster=auto", "-o", f"ControlPath={cdir}/%C", "-o", "ControlPersist=300"]
        self.base = ["ssh", "-p", str(self.port), "-o", "BatchMode=yes", "-o", "ConnectTimeout=15",
                     "-o", "ServerAliveInterval=15", *self.control, *opts, dest]
        self.prefix = [*self.base, "--"]
        self.log = log

    def wrap(self, argv: Sequence[str]) -> list[str]:
        # the remote shell gets one quoted command line; LC_ALL=C there too (ssh may forward LANG)
        return [*self.prefix, "LC_ALL=C " + shlex.join(str(a) for a in argv)]

    def run(self, argv: Sequence[str], *, input: str | None = None, timeout: float | None = 120,
            log: proc.CommandLog | None = None) -> proc.Completed:
        return retry_ssh_failure(lambda: proc.run(self.wrap(argv), input=input, timeout=timeout,
                                                  log=self.log if log is None else log))

    def close(self) -> None:
        """Stop the shared connection's master process."""
        proc.run([*self.base[:-1], "-O", "exit", self.base[-1]], timeout=15)

    def spec(self) -> dict[str, Any]:
        return {"url": self.url, "options": self.options} | ({"machine": self.machine} if self.machine else {})

    # ---------------------------------------------------------------- FileOps
    def read_text(self, path: str) -> str:
        res = self.run(["cat", "--", path], log=proc.NULL_LOG)
        if not res.ok:
            raise FileNotFoundError(2, res.error_text() or "cannot read", path)
        return res.stdout

    # each file read by read_texts follows a line of its own: the files are the script's arguments
    SECTION = "--- zfsperf section ---"
    _CAT_SECTIONS = 'm=$1; shift; for f; do echo "$m"; cat -- "$f" || exit 1; done'

    def read_texts(self, paths: Sequence[str]) -> list[str]:
        """Several remote files in one round trip, in order; FileNotFoundError if one is unreadable."""
        res = self.run(["sh", "-c", self._CAT_SECTIONS, "sh", self.SECTION, *paths], log=proc.NULL_LOG)
        texts = res.stdout.split(f"{self.SECTION}\n")[1:]
        if not res.ok or len(texts) != len(paths):
            raise FileNotFoundError(2, res.error_text() or "cannot read", " ".join(paths))
        return texts

    def write_text(self, path: str, text: str) -> None:
        # one remote command, idempotent as a whole: ssh may report failure (255) for a command
        # that ran, and a retry of a separate `mv` would then fail on the file it already moved
        script = 'cat > "$1.tmp$2" && mv -f -- "$1.tmp$2" "$1"'
        res = self.run(["sh", "-c", script, "sh", path, str(os.getpid())], input=text, log=proc.NULL_LOG)
        if not res.ok:
            why = res.stderr.strip() or f"exit status {res.returncode}"
            raise OSError(5, f"cannot write on {self.url}: {why}", path)

    def write_param(self, path: str, text: str) -> None:
        res = self.run(["tee", "--", path], input=text)
        if not res.ok:
            raise OSError(5, res.error_text() or "cannot write", path)

    def listdir(self, path: str) -> list[str]:
        res = self.run(["ls", "-1A", "--", path], log=proc.NULL_LOG)
        if not res.ok:
            raise FileNotFoundError(2, res.error_text(), path)
        return sorted(x for x in res.stdout.splitlines() if x)

    def read_dir(self, path: str) -> dict[str, str]:
        """One round trip: `grep -r "" DIR` prints path:line for every line of every file."""
        res = self.run(["grep", "-r", "", "--", path], log=proc.NULL_LOG)
        out: dict[str, str] = {}
        for line in res.stdout.splitlines():
            file, sep, value = line.partition(":")
            if sep and "/" in file:
                out[file.rsplit("/", 1)[1]] = value
        return out

    def is_file(self, path: str) -> bool:
        return self.run(["test", "-f", path], log=proc.NULL_LOG).ok

    def mode(self, path: str) -> int:
        res = self.run(["stat", "-c", "%a", "--", path], log=proc.NULL_LOG)
        if not res.ok or not res.stdout.strip().isdigit():
            raise FileNotFoundError(2, res.error_text() or "cannot stat", path)
        return int(res.stdout.strip(), 8)

    def exists(self, path: str) -> bool:
        return self.run(["test", "-e", path], log=proc.NULL_LOG).ok

    def remove(self, path: str) -> bool:
        if not self.exists(path):
            return False
        return self.run(["rm", "-f", "--", path]).ok

    def makedirs(self, path: str) -> None:
        res = self.run(["mkdir", "-p", "--", path])
        if not res.ok:
            raise OSError(5, res.error_text(), path)

    def rmdir(self, path: str) -> None:
        self.run(["rmdir", "--", path], log=proc.NULL_LOG)
