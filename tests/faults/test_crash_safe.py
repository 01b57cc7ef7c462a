"""Crash-safe results: results.jsonl is appended and fsynced per case, so a run
killed with SIGKILL at any point leaves a directory that `zfsperf report` reads, with every finished
case whole."""

import json
import random
import signal
import subprocess
import sys
import time

import pytest

from helpers import children, zfsperf
from helpers import write_runfile
from zfsperf import proc
from zfsperf.pool import destroy_busy, leftover_pools

MANY = """
[defaults]
iterations = 40
timeout = "5m"
[defaults.pool]
vdevs = 1
vdev_size = "256M"
[[test]]
name = "many"
workload = "receive"
corpus = { kind = "random", size = "8M", seed = 51 }
threads = 2
"""


def _cleanup(target, kids: list[int]) -> None:
    """What the killed run left: its children, by the pids seen before the kill (they were
    reparented when it died), and its marked pools."""
    for pid in kids:
        if proc.pid_alive(pid):
            proc.stop_pid(pid, grace=5)
    for name, _owner in leftover_pools(target):
        destroy_busy(target, name)


@pytest.mark.parametrize("delay", [0.0, 2.5, 5.3])
def test_killed_run_leaves_a_readable_directory(delay, tmp_path, target):
    rf = write_runfile(tmp_path, MANY)
    out = tmp_path / "o"
    p = subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-o", str(out),
                          "-d", str(tmp_path / "vd")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait for the results directory, then kill at an arbitrary moment
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (out / "current" / "run.json").exists():
        time.sleep(0.02)
    time.sleep(delay + random.random() * 0.3)
    kids = [pid for pid, _cmd in children(p.pid)]
    p.send_signal(signal.SIGKILL)
    p.communicate()
    _cleanup(target, kids + [pid for pid, _cmd in children(p.pid)])
    d = (out / "current").resolve()
    lines = (d / "results.jsonl").read_text().split("\n") if (d / "results.jsonl").exists() else []
    whole = [json.loads(x) for x in lines if x.strip() and x.strip().endswith("}")]
    res = zfsperf("report", str(d), "--format", "json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)[0]
    n = sum(sum(c["statuses"].values()) for c in rep["cases"])
    assert n == len([r for r in whole if r["iteration"] >= 1])
    for r in whole:
        assert r["status"] == "PASS" and r["figures"]["throughput"]["value"] > 0
    if whole:
        (case,) = rep["cases"]
        assert next(f for f in case["figures"] if f["figure"] == "throughput")["n"] == len(whole)
