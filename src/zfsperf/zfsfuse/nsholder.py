"""Holds zfsperf's private mount namespace for its own zfs-fuse daemon.

Started as `unshare --mount --propagation private -- python -m zfsperf.zfsfuse.nsholder DIR`.
Inside the new namespace it hides the host's zfs-fuse socket, lock and cache file behind
directories of DIR (so a host daemon and its pools are never seen or touched), and gives
the namespace its own /dev with /dev/log pointing at DIR/log.sock, where zfsperf's syslog
listener records the daemon's messages. Then it waits: the namespace lives as long as it does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

KSTAT_DIR = "/zfs-kstat"
BINDS = (("run", "/run/zfs"), ("lock", "/run/lock/zfs"), ("lib", "/var/lib/zfs"))


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def setup(root: Path) -> None:
    for sub, target in BINDS:
        (root / sub).mkdir(parents=True, exist_ok=True)
        Path(target).mkdir(parents=True, exist_ok=True)
        _mount("--bind", str(root / sub), target)
    hostdev = root / "hostdev"
    hostdev.mkdir(exist_ok=True)
    _mount("--rbind", "/dev", str(hostdev))
    _mount("-t", "tmpfs", "-o", "mode=755", "zfsperf-dev", "/dev")
    for entry in os.listdir(hostdev):
        if entry != "log":
            os.symlink(hostdev / entry, Path("/dev") / entry)
    os.symlink(root / "log.sock", "/dev/log")
    # zfs-fuse mounts its kstats on /zfs-kstat and removes that directory when it exits. The
    # directory is on the root filesystem every namespace shares: a tmpfs under the daemon's
    # mount makes the removal fail (busy) here instead of pulling it from under other labs.
    Path(KSTAT_DIR).mkdir(exist_ok=True)
    _mount("-t", "tmpfs", "-o", "mode=755,size=64k", "zfsperf-kstat", KSTAT_DIR)


def main() -> int:
    root = Path(sys.argv[1])
    try:
        setup(root)
    except (subprocess.CalledProcessError, OSError) as e:
        (root / "holder.failed").write_text(f"{e}\n")
        return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    (root / "holder.ready").write_text(f"{os.getpid()}\n")
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
