"""Never harm what is not ours: a pool created outside zfsperf before the run (with
a name zfsperf would have chosen), a pool in KEEP even with --force, and used disks (tests in
test_disks.py and test_safety.py beside this file)."""

import os
import subprocess

import pytest

from helpers import why
from helpers import zfsperf
from helpers import receive_runfile
from helpers import small, write_runfile
from helpers import EXAMPLE


def test_foreign_pool_untouched(tmp_path, lab, target):
    """A pool created outside zfsperf before the run (even with a zfsperf-like name) is untouched."""
    vd = tmp_path / "foreign"
    vd.write_bytes(b"")
    import os
    os.truncate(vd, 128 << 20)
    name = "zfsperf_abcdef"
    assert lab.run(["zpool", "create", "-m", "none", name, str(vd)]).ok
    try:
        assert lab.run(["zfs", "create", f"{name}/keepme"]).ok
        rf = receive_runfile(tmp_path, '{ kind = "random", size = "24M", seed = 7 }', threads="1")
        res = zfsperf("run", "-x", "-r", str(rf), "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd"))
        assert res.returncode == 0, why(res)
        assert lab.run(["zfs", "list", "-H", "-o", "name", f"{name}/keepme"]).ok
        from zfsperf.pool import PoolManager
        pm = PoolManager(target, tmp_path / "x", run_id="t")
        ok, reason = pm.may_destroy(name)
        assert not ok and "existed before" in reason
    finally:
        lab.run(["zpool", "destroy", name])


@pytest.fixture
def keep_disk(tmp_path, lab):
    img = tmp_path / "keep.img"
    img.write_bytes(b"")
    os.truncate(img, 192 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True,
                         check=True).stdout.strip()
    res = lab.run(["zpool", "create", "-f", "-m", "none", "keepdisk", str(lab.root / "hostdev" / dev[len("/dev/"):])])
    assert res.ok, res.stderr
    lab.run(["zpool", "export", "keepdisk"])
    yield dev
    lab.run(["zpool", "import", "-d", str(lab.root / "hostdev"), "keepdisk"])
    lab.run(["zpool", "destroy", "keepdisk"])
    subprocess.run(["losetup", "-d", dev], check=False)


def test_force_never_takes_a_keep_pool_disk(tmp_path, keep_disk):
    before = subprocess.run(["blkid", "-p", "-o", "export", keep_disk], capture_output=True, text=True).stdout
    assert "TYPE=zfs_member" in before and "LABEL=keepdisk" in before
    rf = write_runfile(tmp_path, small(EXAMPLE).replace('layout = "mirror"', 'layout = "stripe"')
                       .replace("vdevs = 2", "vdevs = 1"))
    res = zfsperf("run", "--force", "-x", "-r", str(rf), "-t", "recv-threads", "-o", str(tmp_path / "res"),
                  env={"DISKS": keep_disk, "KEEP": "keepdisk"})
    assert res.returncode == 2, res.stdout + res.stderr
    assert "it holds pool keepdisk, which is in KEEP" in res.stderr
    assert not (tmp_path / "res").exists()
    after = subprocess.run(["blkid", "-p", "-o", "export", keep_disk], capture_output=True, text=True).stdout
    assert after == before
    # without --force the same disk is refused as used, with the reason
    res = zfsperf("run", "-r", str(rf), "-t", "recv-threads", "-o", str(tmp_path / "res"), env={"DISKS": keep_disk})
    assert res.returncode == 2 and "it holds a ZFS pool label" in res.stderr
