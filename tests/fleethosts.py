"""A fleet's hosts on this one machine (`zfsperf fleet run`'s tests and bench/fleet.py): each host
an sshd of its own in a mount namespace of its own (an empty /run/zfsperf and its own vdev
directory, so that its zfsperf runs its own zfs-fuse lab) and in a cpu cgroup of its own (a CPU
limit is its machine class: cgroup v1 cpu.cfs_quota_us, v2 cpu.max). A host "without ZFS" has
/dev/null over the zfs-fuse binary in its namespace. Killing a host kills every process in its
cgroup, as a machine that dies takes its processes with it."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from sshd import sshd_running
from zfsperf.zfsfuse.daemon import ZFS_FUSE

CGROUP_V1 = Path("/sys/fs/cgroup/cpu")
CGROUP_V2 = Path("/sys/fs/cgroup")
PERIOD_US = 100_000
SFTP = "Subsystem sftp /usr/lib/openssh/sftp-server"       # Ansible copies files by sftp
ZFSPERF = str(Path(sys.executable).parent / "zfsperf")     # this checkout's, as each host finds it


@dataclass
class FleetHost:
    name: str
    port: int
    key: Path
    cgroup: Path
    vdevs: Path

    def inventory_line(self, **extra: str) -> str:
        more = "".join(f" {k}={v}" for k, v in extra.items())
        return (f"{self.name} ansible_host=127.0.0.1 ansible_port={self.port} ansible_user=root "
                f"ansible_ssh_private_key_file={self.key} ansible_python_interpreter=/usr/bin/python3 "
                f"zfsperf_bin={ZFSPERF}{more}")

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.cgroup / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def kill(self) -> None:
        """The host dies: every process in its cgroup killed, until none is left."""
        deadline = time.monotonic() + 20
        while (pids := self.pids()) and time.monotonic() < deadline:
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)


INVENTORY_VARS = ("[all:vars]\nansible_ssh_common_args='-o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no "
                  "-o LogLevel=ERROR'\n")


def inventory(path: Path, lines: list[str]) -> Path:
    path.write_text("[fleet]\n" + "\n".join(lines) + "\n\n" + INVENTORY_VARS)
    return path


def _cgroup(name: str, cpus: float | None) -> Path:
    if (CGROUP_V1 / "cpu.cfs_quota_us").exists():
        g = CGROUP_V1 / name
        g.mkdir(exist_ok=True)
        (g / "cpu.cfs_period_us").write_text(str(PERIOD_US))
        (g / "cpu.cfs_quota_us").write_text(str(int(cpus * PERIOD_US)) if cpus else "-1")
        return g
    g = CGROUP_V2 / name
    g.mkdir(exist_ok=True)
    (g / "cpu.max").write_text(f"{int(cpus * PERIOD_US)} {PERIOD_US}" if cpus else f"max {PERIOD_US}")
    return g


@contextlib.contextmanager
def fleet_host(name: str, d: Path, cpus: float | None = None, zfs: bool = True) -> Iterator[FleetHost]:
    """Host `name` while it runs (its files under d), then every process of it killed and its
    cgroup removed."""
    d.mkdir(parents=True, exist_ok=True)
    vdevs = d / "vdevs"
    vdevs.mkdir(exist_ok=True)
    for p in ("/run/zfsperf", "/var/tmp/zfsperf"):
        Path(p).mkdir(parents=True, exist_ok=True)
    cg = _cgroup(f"zfsperf-fleet-test-{name}-{os.getpid()}", cpus)
    inner = 'mount -t tmpfs -o mode=755 zfsperf-host /run/zfsperf && mount --bind "$0" /var/tmp/zfsperf'
    if not zfs:
        inner += f" && mount --bind /dev/null {ZFS_FUSE}"
    prefix = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(cg),
              "unshare", "--mount", "--propagation", "private", "--", "sh", "-c", inner + ' && exec "$@"', str(vdevs)]
    host = FleetHost(name, 0, d / "id", cg, vdevs)
    try:
        # each host's own state (its default history store, its guard logs), as on separate machines
        with sshd_running(prefix, d, f"{SFTP}\nSetEnv ZFSPERF_STATE={d / 'state'}") as (url, _listener):
            host.port = int(url.rsplit(":", 1)[1])
            yield host
    finally:
        host.kill()
        with contextlib.suppress(OSError):
            cg.rmdir()


def ab_runfile(iterations: int, dataset: str) -> str:
    """The fleet's A/B: a receive of a small compressible corpus for 2 s a side, taking turns, with
    the dataset table `dataset` (e.g. 'compression = ["off", "gzip-9"]')."""
    return f"""
[defaults]
iterations = {iterations}
timeout = "20m"
[defaults.pool]
vdevs = 1
vdev_size = "384M"
[[test]]
name = "recv"
workload = "receive"
corpus = {{ kind = "compressible", size = "16M", seed = 6 }}
threads = 1
duration = "2s"
duet = "turns"
dataset = {{ {dataset} }}
"""
