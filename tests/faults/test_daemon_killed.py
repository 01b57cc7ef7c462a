"""kill -9 of the zfs-fuse daemon in the middle of a receive and of a fio case: that case is FAIL
with the cause, zfsperf recovers its embedded ZFS (stale FUSE mounts lazily unmounted, daemon
restarted, pools re-imported or cleaned), the remaining cases run, and nothing is left at the end."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import children
from zfsperf import proc

RUNFILE = """
[defaults]
iterations = 1
timeout = "3m"
[defaults.pool]
vdevs = 1
vdev_size = "512M"
[[test]]
name = "victim"
workload = "{workload}"
{victim}
[[test]]
name = "after-recv"
workload = "receive"
corpus = {{ kind = "random", size = "8M", seed = 31 }}
threads = 1
[[test]]
name = "after-fio"
workload = "fio"
rw = "randread"
bs = "4k"
size = "8M"
runtime = 1
"""
VICTIMS = {
    "fio": 'rw = "randrw"\nbs = "4k"\nsize = "32M"\nruntime = 20',
    "receive": 'corpus = { kind = "random", size = "128M", seed = 32 }\nthreads = 4',
}


@pytest.mark.parametrize("workload", ["fio", "receive"])
def test_daemon_killed_mid_case(workload, session_env, tmp_path):
    rf = tmp_path / "rf.toml"
    rf.write_text(RUNFILE.format(workload=workload, victim=VICTIMS[workload]))
    lab_root = f"/run/zfsperf/fault-{os.getpid()}-{workload}"
    env = {**os.environ, "ZFSPERF_LAB": lab_root}
    vdevs = tmp_path / "vd"
    p = subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-o", str(tmp_path / "o"),
                          "-d", str(vdevs)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    state = Path(f"{lab_root}-run{p.pid}") / "state.json"
    killed = None
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and killed is None and p.poll() is None:
            kids = children(p.pid)
            busy = [c for c in kids if ("fio" in c[1] and "--status-interval" in c[1]) or "zfs receive" in c[1]]
            if busy and state.exists():
                time.sleep(1.0 if workload == "fio" else 0.1)
                killed = json.loads(state.read_text())["daemon_pid"]
                os.kill(killed, signal.SIGKILL)
            time.sleep(0.05)
        out, err = p.communicate(timeout=600)
    finally:
        if p.poll() is None:
            p.kill()
    assert killed is not None, "the victim case never started"
    assert p.returncode == 1, out + err
    d = Path(out.rstrip().splitlines()[-1].split("\t")[-1])
    recs = {r["test"]: r for r in map(json.loads, (d / "results.jsonl").read_text().splitlines())}
    assert recs["victim"]["status"] == "FAIL" and recs["victim"]["error"], recs["victim"]
    assert "the zfs-fuse daemon died during the case; zfsperf restarted it" in recs["victim"]["error"]
    assert "# zfs-fuse daemon restarted after it died" in (d / "logs" / "victim.iter1.log").read_text()
    assert recs["after-recv"]["status"] == "PASS", recs["after-recv"]
    assert recs["after-fio"]["status"] == "PASS", recs["after-fio"]
    # nothing left: no daemon, no stale FUSE mount, no lab directory, no vdev files
    assert not proc.pid_alive(killed)
    assert not any(x.startswith(lab_root) for x in os.listdir("/run/zfsperf")) or \
        not any(Path("/run/zfsperf", x, "state.json").exists() for x in os.listdir("/run/zfsperf")
                if ("/run/zfsperf/" + x).startswith(lab_root))
    mounts = Path("/proc/mounts").read_text()
    assert str(vdevs) not in mounts and lab_root not in mounts
    assert not any(vdevs.rglob("vdev*"))
    daemons = subprocess.run(["pgrep", "-f", "zfs-fuse -n"], capture_output=True, text=True).stdout.split()
    for pid in daemons:     # only the session's own daemon may still run
        assert Path(f"/proc/{pid}").exists()
        root = os.readlink(f"/proc/{pid}/root")
        assert root == "/"
    assert not Path(f"{lab_root}-run{p.pid}").exists()
