"""A ZFS host reached by ssh: `--target ssh://user@host[:port]`.

Pool commands, kstat reads, tunables and file operations run on the remote host through one
`ssh … -- <command>`; the remote shell sees every argv item quoted with shlex.join, so names from
runfiles are never interpreted there either. Streams go over ssh's stdin/stdout (the receive
workload's sendfile, `zfs send` for a corpus). What the remote host is — kernel OpenZFS on Linux or
FreeBSD, or a zfs-fuse daemon — is probed once, and the same target code as for a local host of
that kind then does the work. Extra ssh options (an identity, a known-hosts file) come from
ZFSPERF_SSH_OPTS, split like a shell would but never run by one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from .. import proc
from ..errors import InputError, TargetError
from .base import Target
from .kstat import parse_zdb_txg
from .openzfs_freebsd import OpenZfsFreeBsdTarget, SysctlParams
from .openzfs_linux import KSTAT, PARAMS, OpenZfsLinuxTarget

URL_RE = re.compile(r"^ssh://(?:(?P<user>[A-Za-z0-9._][A-Za-z0-9._-]*)@)?(?P<host>[A-Za-z0-9.:_-]+?|\[[0-9a-fA-F:]+\])"
                    r"(?::(?P<port>\d{1,5}))?/?$")
ZFS_FUSE_SOCKET = "/var/run/zfs/zfs_socket"


def retry_ssh_failure(run) -> proc.Completed:
    """Run (a zero-argument callable); a quick exit 255 is ssh's own failure (e.g. a shared-connection
    session refused while many are open), not the command's: retried a few times."""
    res = run()
    for delay in (0.2, 0.5, 1.0):
        if res.returncode != 255 or res.elapsed > 2:
            break
        time.sleep(delay)
        res = run()
    return res


def parse_url(url: str) -> tuple[str | None, str, int]:
    m = URL_RE.match(url)
    if not m or m.group("host").startswith("-"):
        raise InputError(f"not an ssh target: {url!r} (expected ssh://user@host[:port])", field="--target")
    port = int(m.group("port") or 22)
    if not 0 < port < 65536:
        raise InputError(f"bad port in {url!r}", field="--target")
    return m.group("user"), m.group("host").strip("[]"), port


class Ssh:
    """The ssh transport and the remote file operations (FileOps) it gives."""

    remote = True

    def __init__(self, url: str, options: Sequence[str] | None = None, log: proc.CommandLog = proc.NULL_LOG) -> None:
        self.url = url
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
        return {"url": self.url, "options": self.options}

    # ---------------------------------------------------------------- FileOps
    def read_text(self, path: str) -> str:
        res = self.run(["cat", "--", path], log=proc.NULL_LOG)
        if not res.ok:
            raise FileNotFoundError(2, res.error_text() or "cannot read", path)
        return res.stdout

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


class _SshMixin:
    """Runs a target's commands and file operations on the remote host."""

    ssh: Ssh

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return self.ssh.wrap(argv)

    def host_path(self, path: str) -> str | None:
        return None

    def run(self, argv: Sequence[str], **kw: Any) -> proc.Completed:
        """Target.run over ssh, with ssh's own quick failures retried; stdin_file is a file on
        the remote host (see stage_stream)."""
        if kw.get("stdin_file"):
            argv = ["sh", "-c", self._FROM_FILE, "sh", kw.pop("stdin_file"), *argv]
        return retry_ssh_failure(lambda: Target.run(self, argv, **kw))  # type: ignore[arg-type]

    # a file on the remote machine as a command's stdin, without a shell string built from input:
    # the script is fixed, the path and the argv are its positional parameters
    _FROM_FILE = 'f=$1; shift; exec "$@" < "$f"'
    _STAGE = 'mkdir -p -- "${1%/*}" && cat > "$1.part" && mv -f -- "$1.part" "$1"'
    STREAM_DIR = "/var/tmp/zfsperf-streams"

    def stage_stream(self, local_path: str) -> str:
        """Copy a sendfile to the remote host once (kept by name and size in STREAM_DIR), so that
        receives there read a local file and the figures never include ssh's transport."""
        size = os.path.getsize(local_path)
        remote = f"{self.STREAM_DIR}/{os.path.basename(local_path)}"
        have = self.ssh.run(["stat", "-c", "%s", "--", remote], log=proc.NULL_LOG)
        if have.ok and have.stdout.strip() == str(size):
            return remote
        res = Target.run(self, ["sh", "-c", self._STAGE, "sh", remote], stdin_file=local_path,  # type: ignore[arg-type]
                         timeout=3600)
        if not res.ok:
            raise TargetError(f"copying {local_path} to {self.ssh.url}:{remote} failed: {res.error_text()}")
        return remote

    def popen(self, argv: Sequence[str], *, stdin_file: str | None = None, **kw: Any) -> Any:
        """stdin_file is a file on the remote host (see stage_stream): read there, not piped."""
        if stdin_file:
            argv = ["sh", "-c", self._FROM_FILE, "sh", stdin_file, *argv]
        return Target.popen(self, argv, **kw)  # type: ignore[arg-type]

    def stage_file(self, local_path: str) -> str:
        remote_dir = f"/tmp/zfsperf-stage-{os.getpid()}"
        self.ssh.makedirs(remote_dir)
        with open(local_path, encoding="utf-8") as f:
            text = f.read()
        path = f"{remote_dir}/{os.path.basename(local_path)}"
        self.ssh.write_text(path, text)
        return path

    def info(self) -> dict[str, Any]:
        out = super().info()  # type: ignore[misc]
        out["transport"] = self.ssh.url
        return out

    def close(self) -> None:
        self.ssh.run(["rm", "-rf", "--", f"/tmp/zfsperf-stage-{os.getpid()}"], log=proc.NULL_LOG)
        self.ssh.close()


class SshOpenZfsLinux(_SshMixin, OpenZfsLinuxTarget):
    def __init__(self, ssh: Ssh, log: proc.CommandLog = proc.NULL_LOG) -> None:
        self.ssh = ssh
        self.files = ssh
        super().__init__("/", log)

    def _make_params(self):
        from ..tunables import FileParams
        return FileParams(f"/{PARAMS}", files=self.ssh,
                          spec_prefix="ssh:" + json.dumps(self.ssh.spec()) + "|")


class SshOpenZfsFreeBsd(_SshMixin, OpenZfsFreeBsdTarget):
    def __init__(self, ssh: Ssh, log: proc.CommandLog = proc.NULL_LOG) -> None:
        self.ssh = ssh
        self.files = ssh
        super().__init__(log)
        self.params = SysctlParams(log, runner=ssh.run, spec="ssh:" + json.dumps(ssh.spec()) + "|sysctl")


class SshZfsFuse(_SshMixin, Target):
    """A zfs-fuse daemon on the remote host (kstats under /zfs-kstat, one file per field)."""

    impl = "zfs-fuse"

    def __init__(self, ssh: Ssh, log: proc.CommandLog = proc.NULL_LOG) -> None:
        self.ssh = ssh
        self.files = ssh
        super().__init__(log)

    def zfs_version(self) -> str:
        res = self.ssh.run(["dpkg-query", "-W", "-f", "${Version}", "zfs-fuse"], log=proc.NULL_LOG)
        return "zfs-fuse " + (res.stdout.strip() if res.ok and res.stdout.strip() else "unknown")

    def pool_version(self) -> str:
        return "23"

    def kstat_sources(self) -> list[str]:
        try:
            return self.ssh.listdir("/zfs-kstat/zfs")
        except OSError:
            return []

    def kstat(self, name: str) -> dict[str, float] | None:
        res = self.ssh.run(["grep", "-r", "", f"/zfs-kstat/zfs/{name}"], log=proc.NULL_LOG)
        return _field_lines(res.stdout)

    def kstat_fields(self, name: str, fields: Sequence[str]) -> dict[str, float] | None:
        res = self.ssh.run(["grep", "-H", "", *(f"/zfs-kstat/zfs/{name}/{f}" for f in fields)], log=proc.NULL_LOG)
        return _field_lines(res.stdout)        # missing fields: grep complains, the rest are read

    def txg(self, pool: str) -> int | None:
        res = self.ssh.run(["zdb", "-u", pool], log=proc.NULL_LOG, timeout=30)
        return parse_zdb_txg(res.stdout) if res.ok else None

    def iostat_forms(self) -> list[str]:
        return ["human"]


def _field_lines(text: str) -> dict[str, float] | None:
    out: dict[str, float] = {}
    for line in text.splitlines():
        path, sep, value = line.rpartition(":")
        if not sep:
            continue
        try:
            out[path.rsplit("/", 1)[-1]] = float(value)
        except ValueError:
            continue
    return out or None


def open_ssh(url: str, log: proc.CommandLog = proc.NULL_LOG, options: Sequence[str] | None = None) -> Target:
    """Probe what ZFS the remote host has and return the target for it."""
    ssh = Ssh(url, options, log)
    res = ssh.run(["uname", "-s"], log=proc.NULL_LOG, timeout=30)
    if not res.ok:
        raise TargetError(f"cannot reach {url}: {res.error_text()}")
    system = res.stdout.strip()
    if system == "FreeBSD":
        return SshOpenZfsFreeBsd(ssh, log)
    if ssh.exists(f"/{KSTAT}"):
        return SshOpenZfsLinux(ssh, log)
    if ssh.run(["test", "-S", ZFS_FUSE_SOCKET], log=proc.NULL_LOG).ok:
        return SshZfsFuse(ssh, log)
    raise TargetError(f"{url} has no ZFS that zfsperf knows (no /{KSTAT}, not FreeBSD, no zfs-fuse socket)")


def params_from_spec(arg: str):
    """Re-open a journaled remote tunables backend: '<json ssh spec>|<dir or sysctl>'."""
    head, _, rest = arg.rpartition("|")
    spec = json.loads(head)
    ssh = Ssh(spec["url"], spec.get("options") or [])
    if rest == "sysctl":
        return SysctlParams(runner=ssh.run)
    from ..tunables import FileParams
    return FileParams(rest, files=ssh, spec_prefix="ssh:" + head + "|")


