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
import threading
from typing import Any, Sequence

from .. import proc
from ..errors import TargetError
from ..machinefacts import facts, mount_of, rotational_kind
from ..sshlink import STAGE_SCRIPT, ZFS_FUSE_SOCKET, Ssh, retry_ssh_failure
from .base import Target
from .kstat import parse_zdb_txg
from ..tunables import FileTunables, SysctlTunables
from .openzfs_freebsd import OpenZfsFreeBsdTarget
from .openzfs_linux import KSTAT, PARAMS, OpenZfsLinuxTarget

# the real path of $2, which need not exist yet: its deepest existing directory's, symlinks
# resolved, with the rest after it (busybox's realpath, a small guest's, has no -m)
_REAL_PATH = ('p=$2; t=; while [ -n "$p" ] && [ ! -e "$p" ]; do t="/${p##*/}$t"; p=${p%/*}; done; '
              'r=$(cd -P "${p:-/}" && pwd -P) || exit 1; r="${r%/}$t"; echo "${r:-/}"')


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
            argv = ["sh", "-c", self._FROM_FILE, "sh", kw.pop("stdin_file"),
                    *Target.tool_argv(self, argv)]  # type: ignore[arg-type]
        return retry_ssh_failure(lambda: Target.run(self, argv, **kw))  # type: ignore[arg-type]

    # a file on the remote machine as a command's stdin, without a shell string built from input:
    # the script is fixed, the path and the argv are its positional parameters
    _FROM_FILE = 'f=$1; shift; exec "$@" < "$f"'
    STREAM_DIR = "/var/tmp/zfsperf-streams"

    def stage_stream(self, local_path: str) -> str:
        """Copy a sendfile to the remote host once (kept by name and size in STREAM_DIR), so that
        receives there read a local file and the figures never include ssh's transport."""
        size = os.path.getsize(local_path)
        remote = f"{self.STREAM_DIR}/{os.path.basename(local_path)}"
        have = self.ssh.run(["stat", "-c", "%s", "--", remote], log=proc.NULL_LOG)
        if have.ok and have.stdout.strip() == str(size):
            return remote
        res = Target.run(self, ["sh", "-c", STAGE_SCRIPT, "sh", remote], stdin_file=local_path,  # type: ignore[arg-type]
                         timeout=3600)
        if not res.ok:
            raise TargetError(f"copying {local_path} to {self.ssh.url}:{remote} failed: {res.error_text()}")
        return remote

    # a long-running remote command tied to its ssh session: the command runs in the background
    # with its stdin from the file (or /dev/null), and a watcher reads the session's stdin; at its
    # end of file (the local ssh stopped, or zfsperf gone however it ended) the watcher stops the
    # command. Without it a remote `zpool iostat POOL 1` outlived its session for good once its
    # pool was destroyed (it printed nothing more, so no SIGPIPE came), holding the zfs module.
    _TIED = ('f=$1; shift; exec 3<&0; "$@" < "$f" 3<&- & p=$!; '
             '(while read -r _; do :; done; kill -TERM "$p" 2>/dev/null) <&3 & w=$!; exec 3<&-; '
             'wait "$p"; rc=$?; kill "$w" 2>/dev/null; exit $rc')

    def popen(self, argv: Sequence[str], *, stdin_file: str | None = None, **kw: Any) -> Any:
        """Target.popen on the remote host, the command tied to its session (_TIED): it ends when
        the local ssh ends. stdin_file is a file on the remote host (see stage_stream): read
        there, not piped."""
        argv = ["sh", "-c", self._TIED, "sh", stdin_file or "/dev/null",
                *Target.tool_argv(self, argv)]  # type: ignore[arg-type]
        r, w = os.pipe()                 # the session's stdin: open for as long as the process runs
        try:
            p = Target.popen(self, argv, stdin_fd=r, **kw)  # type: ignore[arg-type]
        except BaseException:
            os.close(w)
            raise
        finally:
            os.close(r)

        def untie() -> None:
            p.wait()
            os.close(w)
        threading.Thread(target=untie, name="ssh-tie", daemon=True).start()
        return p

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
        out["machine"] = self.machine()
        return out

    def machine(self) -> dict[str, Any] | None:
        """The machine at the other end, which the run measured (run.json's hardware is the one
        zfsperf ran on): its CPU, memory, kernel and the kernel's command line, read from its own
        /proc in one command; None if unreadable (a FreeBSD host has no /proc/cpuinfo)."""
        try:
            cpu, mem, release, cmdline = self.ssh.read_texts(["/proc/cpuinfo", "/proc/meminfo",
                                                             "/proc/sys/kernel/osrelease", "/proc/cmdline"])
        except OSError:
            return None
        return facts(cpu, mem, release.strip() or None, cmdline)

    def storage(self, path: str) -> dict[str, Any]:
        """The filesystem under path on the remote machine (its own mount table; the path need not
        exist yet) and the kind of disk under it (its own /sys); each field None where unread."""
        out: dict[str, Any] = {"path": path, "mount": None, "fstype": None, "device": None, "disk": None,
                               "read_on": "target"}
        res = self.ssh.run(["sh", "-c", _REAL_PATH + ' && echo "$1" && cat /proc/self/mountinfo', "sh",
                            Ssh.SECTION, path], log=proc.NULL_LOG)
        real, sep, mountinfo = res.stdout.partition(f"\n{Ssh.SECTION}\n")
        mnt = mount_of(real.strip(), mountinfo) if res.ok and sep else None
        if mnt is None:
            return out
        out.update(mnt)
        if mnt["device"].startswith("/dev/"):
            # the disk of a partition is its parent in /sys; its kernel name says nvme
            disk = self.ssh.run(["sh", "-c", 'd=$(readlink -f "/sys/class/block/${1##*/}") || exit 1; '
                                 '[ -e "$d/partition" ] && d=${d%/*}; echo "${d##*/}"; cat "$d/queue/rotational"',
                                 "sh", mnt["device"]], log=proc.NULL_LOG)
            name, _, rot = disk.stdout.partition("\n")
            out["disk"] = rotational_kind(rot, name) if disk.ok else None
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

    def receive_guard(self) -> None:
        """A remote zfs-fuse mounts in the remote host's own namespace and its receive has no -u or
        -x: a stream that carries properties is refused there."""
        return None

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
        res = self.ssh.run([*self.zdb_argv(pool), "-u", pool], log=proc.NULL_LOG, timeout=30)
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


def open_ssh(url: str, log: proc.CommandLog = proc.NULL_LOG, options: Sequence[str] | None = None,
             machine_pid: int | None = None) -> Target:
    """Probe what ZFS the remote host has and return the target for it (machine_pid: the QEMU
    process that is the remote machine, when it runs here: see Ssh)."""
    ssh = Ssh(url, options, log, machine_pid=machine_pid)
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
