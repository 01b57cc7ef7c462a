"""Timeouts stop a case's processes by pid; KEEP pools survive -x even when they carry zfsperf's mark."""

import os
import subprocess

from helpers import lab_pools, why
from helpers import zfsperf
from helpers import TUNED, last_dir, records, write_runfile
from zfsperf.pool import OWNER_PROP


def _receives_in_lab(lab) -> list[str]:
    """`zfs receive` processes in the lab's mount namespace (a receive elsewhere on the machine, e.g.
    an ssh command line of another test session, is not this lab's)."""
    ns = os.readlink(f"/proc/{lab.state.holder_pid}/ns/mnt")
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    mine = []
    for ln in out.splitlines():
        if "zfs receive" not in ln or "nsenter" in ln or "ps -eo" in ln:
            continue
        try:
            if os.readlink(f"/proc/{ln.split()[0]}/ns/mnt") == ns:
                mine.append(ln)
        except OSError:
            continue                          # ended since ps looked
    return mine


def test_timeout_is_killed_and_processes_stopped(tmp_path, lab):
    before = lab_pools(lab)          # another test's pool still busy is not this one's
    body = TUNED.format(iters=1, size="48M", threads=4).replace('timeout = "5m"', 'timeout = "30ms"') \
        .replace('tunables = { zfs_recv_write_batch_size = "128K" }\n', "")
    rf = write_runfile(tmp_path, body)
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd"))
    assert res.returncode == 1, res.stdout + res.stderr
    rec = records(last_dir(res.stdout))[0]
    assert rec["status"] == "KILLED" and rec["error"].startswith("timeout of")
    log = next((last_dir(res.stdout) / "logs").glob("tuned*.iter1.log")).read_text()
    assert "# stopped processes by pid:" in log
    assert _receives_in_lab(lab) == []
    assert lab_pools(lab) <= before


def test_keep_pool_survives_cleanup(tmp_path, lab):
    vd = tmp_path / "keep.img"
    vd.write_bytes(b"")
    os.truncate(vd, 128 << 20)
    name = "zfsperf_keepme"
    assert lab.run(["zpool", "create", "-m", "none", "-O", f"{OWNER_PROP}=old-run", name, str(vd)]).ok
    try:
        body = TUNED.format(iters=1, size="8M", threads=1).replace(
            'tunables = { zfs_recv_write_batch_size = "128K" }\n', "")
        rf = write_runfile(tmp_path, body)
        res = zfsperf("run", "-x", "-r", str(rf), "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd"),
                      env={"KEEP": name})
        assert res.returncode == 0, why(res)
        assert f"-x: keeping {name} (in KEEP)" in res.stdout
        assert name in lab.run(["zpool", "list", "-H", "-o", "name"]).stdout.split()
    finally:
        lab.run(["zpool", "destroy", name])
