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

import os
from typing import Any, Sequence

from .. import proc
from ..errors import TargetError
from ..sshlink import ZFS_FUSE_SOCKET, Ssh, retry_ssh_failure
from .base import Target
from .kstat import parse_zdb_txg
from ..tunables import FileTunables, SysctlTunables
from .openzfs_freebsd import OpenZfsFreeBsdTarget
from .openzfs_linux import KSTAT, PARAMS, OpenZfsLinuxTarget

class _SshMixin:
    """Runs a target's commands and file operations on the remote host."""

    ssh: Ssh
    remote = True

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

    def _make_tunables(self) -> FileTunables:
        return FileTunables(f"/{PARAMS}", files=self.ssh, ssh=self.ssh.spec())


class SshOpenZfsFreeBsd(_SshMixin, OpenZfsFreeBsdTarget):
    def __init__(self, ssh: Ssh, log: proc.CommandLog = proc.NULL_LOG) -> None:
        self.ssh = ssh
        self.files = ssh
        super().__init__(log)
        self.tunables = SysctlTunables(log, runner=ssh.run, ssh=ssh.spec())


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
