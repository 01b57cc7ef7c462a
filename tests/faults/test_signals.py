"""SIGINT and SIGTERM during a case, and kill -9 of zfsperf itself, for real:
processes stopped by pid, tunables restored, the case's pool destroyed, what finished written, the
summary printed, exit 3; after kill -9 the next start restores from the journal, names what was
left, and -x removes it."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import lab_pools, why
from helpers import children, descendants, zfsperf
from helpers import DEFAULT_BATCH
from helpers import records, write_runfile

FIO_TUNED = """
[defaults]
iterations = 3
timeout = "5m"
[defaults.pool]
vdevs = 1
vdev_size = "256M"
[[test]]
name = "quick"
workload = "fio"
rw = "randread"
bs = "4k"
size = "8M"
runtime = 1
[[test]]
name = "long"
workload = "fio"
rw = "randrw"
bs = "4k"
size = "16M"
runtime = 60
tunables = { zfs_recv_write_batch_size = "128K" }
"""


def _fio_children(pid: int) -> list[int]:
    return [c for c, cmd in children(pid) if "--status-interval" in cmd]       # the workload's fio


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _alive_fio(pids) -> list[int]:
    """Those of pids still alive as fio (not zombies)."""
    out = []
    for x in pids:
        try:
            state = Path(f"/proc/{x}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and "fio" in _cmdline(x):
            out.append(x)
    return out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_a_fio_case(sig, tmp_path, params, lab):
    before = lab_pools(lab)          # another test's pool still busy is not this one's
    rf = write_runfile(tmp_path, FIO_TUNED)
    p = subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "--params-dir", str(params),
                          "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    fio_pids: list[int] = []
    while time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        if (params / "zfs_recv_write_batch_size").read_text().strip() == "131072":
            fio_pids = _fio_children(p.pid)
            if fio_pids:
                break
        time.sleep(0.05)
    assert fio_pids, "the long fio case never started"
    time.sleep(1.5)
    p.send_signal(sig)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 3, out + err
    assert all(not Path(f"/proc/{x}").exists() for x in fio_pids)           # fio stopped by pid
    assert (params / "zfs_recv_write_batch_size").read_text().strip() == DEFAULT_BATCH
    assert lab_pools(lab) <= before    # its pool is gone
    assert "Results Summary" in out and "Interrupted:" in out
    d = Path(out.rstrip().splitlines()[-1].split("\t")[-1])
    recs = records(d)
    assert [r["test"] for r in recs] == ["quick"] * 3 and all(r["status"] == "PASS" for r in recs)
    assert json.loads((d / "run.json").read_text())["command_line"]


def test_kill9_then_leftovers_named_and_removed(tmp_path, params, lab):
    before = lab_pools(lab)          # another test's pool still busy is not this one's
    rf = write_runfile(tmp_path, FIO_TUNED)
    p = subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-t", "long",
                          "--params-dir", str(params), "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    fio: list[int] = []
    jobs: set[int] = set()
    while time.monotonic() < deadline and not (fio and jobs):
        assert p.poll() is None
        fio = _fio_children(p.pid)
        jobs = descendants(fio[0]) if fio else set()       # fio's job processes, in sessions of their own
        time.sleep(0.05)
    assert fio and jobs
    p.kill()
    p.communicate()
    # nothing of the killed run keeps running: the guard's SIGTERM reached fio, which ended its
    # jobs (fio killed by SIGPIPE when zfsperf's end of its pipe closed left them running to the
    # end of their 60 s)
    left = _alive_fio([*fio, *jobs])
    until = time.monotonic() + 20
    while left and time.monotonic() < until:
        time.sleep(0.2)
        left = _alive_fio(left)
    assert not left, [_cmdline(x) for x in left]
    assert (params / "zfs_recv_write_batch_size").read_text().strip() == "131072"
    pools = lab.run(["zpool", "list", "-H", "-o", "name"]).stdout.split()
    assert len(pools) == 1
    # the next start: journal restored, leftovers named, nothing removed without -x
    res = zfsperf("run", "-r", str(rf), "-t", "quick", "-I", "1", "--params-dir", str(params),
                  "-o", str(tmp_path / "res2"), "-d", str(tmp_path / "vd"))
    assert res.returncode == 0, why(res)
    assert f"journal: restored zfs_recv_write_batch_size = {DEFAULT_BATCH}" in res.stdout
    assert f"leftover zfsperf pools: {pools[0]}" in res.stdout
    assert "leftover zfsperf vdev files in:" in res.stdout
    assert pools[0] in lab.run(["zpool", "list", "-H", "-o", "name"]).stdout.split()
    # -x removes them
    res = zfsperf("run", "-x", "-r", str(rf), "-t", "quick", "-I", "1", "--params-dir", str(params),
                  "-o", str(tmp_path / "res3"), "-d", str(tmp_path / "vd"))
    assert res.returncode == 0, why(res)
    assert f"-x: destroyed leftover zfsperf pool {pools[0]}" in res.stdout
    assert lab_pools(lab) <= before
    assert not any((tmp_path / "vd").rglob("vdev*"))
