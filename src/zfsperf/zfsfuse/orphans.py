"""zfs-fuse labs whose zfsperf is gone, found and taken down in the right order.

An orphan is a lab a run started (owner "run") whose zfsperf process no longer exists: an older
zfsperf killed with -9, or one whose guard (guard.py) was killed too. Its daemon keeps ~140 MB
resident and burns CPU while its pool is busy, so a run refuses to measure beside one unless told
(`-x`), and `zfsperf lab status` lists them.

Taking one down (also what the guard does for a run that ended without stopping its lab):
1. stop every process in the lab's mount namespace except its daemon and holder (fio, zfs receive,
   zpool iostat, nsenter'd commands): they are exactly what ran against this lab;
2. destroy the pools zfsperf marked (never one in KEEP); unmarked ones are exported by the stop;
3. remove the vdev files of the run's vdev directories, but never a file some process still has
   open (a live pool's vdev);
4. stop the daemon, its syslog listener and namespace holder, and remove the lab's directory.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Callable

from .. import proc
from ..errors import ZfsperfError
from ..disks import keep_list
from ..pool import VdevDir, destroy_busy, leftover_pools
from .daemon import Lab, lab_roots
from .target import ZfsFuseTarget


def find_orphans() -> list[Lab]:
    """Every orphaned lab on this machine. Looking also removes the directories of labs whose
    processes are all gone (Lab.find)."""
    out = []
    for root in lab_roots():
        lab = Lab.find(root)
        if lab is not None and lab.orphaned():
            out.append(lab)
    return out


def usage(lab: Lab, window: float = 0.3) -> tuple[float, float]:
    """(CPU %, resident MiB) of the lab's processes (daemon, holder, syslog listener), the CPU
    share measured over window seconds."""
    assert lab.state is not None
    pids = [p for p in (lab.state.daemon_pid, lab.state.holder_pid, lab.state.syslog_pid) if p]
    before = sum(proc.cpu_seconds(p) or 0.0 for p in pids)
    time.sleep(window)
    after = sum(proc.cpu_seconds(p) or 0.0 for p in pids)
    return 100.0 * (after - before) / window, sum(proc.rss_bytes(p) or 0 for p in pids) / 2 ** 20


def describe(lab: Lab) -> str:
    assert lab.state is not None
    cpu, rss = usage(lab)
    pools = lab.run(["zpool", "list", "-H", "-o", "name"], log=proc.NULL_LOG, timeout=10)
    names = pools.stdout.split() if pools.ok else []
    owner = lab.owner_pid() or "?"
    return (f"orphaned zfs-fuse daemon pid {lab.state.daemon_pid} of zfsperf pid {owner} (gone) at "
            f"{lab.root}: {cpu:.0f} % CPU, {rss:.0f} MiB resident, pools: {', '.join(names) or 'none'}")


def namespace_pids(lab: Lab) -> list[int]:
    """Processes in the lab's private mount namespace other than its holder and daemon."""
    assert lab.state is not None
    try:
        ns = os.readlink(f"/proc/{lab.state.holder_pid}/ns/mnt")
    except OSError:
        return []
    skip = {lab.state.holder_pid, lab.state.daemon_pid, os.getpid()}
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in skip:
            continue
        try:
            if os.readlink(f"/proc/{d}/ns/mnt") == ns:
                out.append(int(d))
        except OSError:
            continue
    return out


def _stop_clients(lab: Lab, say: Callable[[str], None]) -> None:
    pids = namespace_pids(lab)
    if pids:
        say(f"stopping {len(pids)} process(es) still running against the lab: "
            + ", ".join(f"{p} ({' '.join(proc.pid_cmdline(p))[:60]})" for p in pids))
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 2.0)):
        pids = [p for p in namespace_pids(lab) if proc.pid_alive(p)]
        for p in pids:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if proc.pid_alive(p)]
            time.sleep(0.05)


def teardown(lab: Lab, say: Callable[[str], None]) -> None:
    """Take a lab down in the order that never removes a file under a live pool."""
    assert lab.state is not None
    _stop_clients(lab, say)
    if lab.daemon_alive():
        target = ZfsFuseTarget(lab)
        keep = keep_list()
        for name, owner in leftover_pools(target):
            if name in keep:
                say(f"keeping pool {name} (in KEEP); it is exported, its vdev files stay")
                continue
            try:
                destroy_busy(target, name, attempts=20)
                say(f"destroyed zfsperf pool {name} (run {owner})")
            except ZfsperfError as e:
                say(f"could not destroy pool {name}: {e}")
        for d in lab.state.vdev_dirs:
            removed = VdevDir(target, Path(d)).remove_all(skip_open=True)
            if removed:
                say(f"removed {len(removed)} vdev file(s) in {d}")
    lab.stop()
    say(f"stopped zfs-fuse daemon pid {lab.state.daemon_pid} and its helpers; removed {lab.root}")
