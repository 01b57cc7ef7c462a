"""DISKS: real block devices (loop devices here). A used disk is refused unless --force; a clean one
is used and its pool label wiped afterwards."""

import subprocess

import pytest

from helpers import zfsperf
from helpers import small, write_runfile, records, last_dir
from helpers import EXAMPLE


@pytest.fixture
def loopdev(tmp_path):
    img = tmp_path / "disk.img"
    img.write_bytes(b"")
    subprocess.run(["truncate", "-s", "320M", str(img)], check=True)
    dev = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True, check=True).stdout.strip()
    yield dev
    subprocess.run(["losetup", "-d", dev], check=False)


def test_used_disk_refused_and_untouched(tmp_path, loopdev, lab):
    subprocess.run(["mkfs.ext4", "-q", loopdev], check=True)
    before = subprocess.run(["blkid", "-p", "-o", "export", loopdev], capture_output=True, text=True).stdout
    rf = write_runfile(tmp_path, small(EXAMPLE).replace('layout = "mirror"', 'layout = "stripe"')
                       .replace("vdevs = 2", "vdevs = 1"))
    res = zfsperf("run", "-r", str(rf), "-t", "recv-threads", "-o", str(tmp_path / "res"),
                  env={"DISKS": loopdev})
    assert res.returncode == 2
    assert f"refusing {loopdev}: it holds a ext4 filesystem (use --force" in res.stderr
    assert not (tmp_path / "res").exists()
    after = subprocess.run(["blkid", "-p", "-o", "export", loopdev], capture_output=True, text=True).stdout
    assert after == before


def test_clean_disk_used_and_label_wiped(tmp_path, loopdev, lab):
    rf = write_runfile(tmp_path, small(EXAMPLE).replace('layout = "mirror"', 'layout = "stripe"')
                       .replace("vdevs = 2", "vdevs = 1"))
    res = zfsperf("run", "-r", str(rf), "-t", "recv-threads", "-o", str(tmp_path / "res"),
                  env={"DISKS": loopdev})
    assert res.returncode == 0, res.stdout + res.stderr
    assert [r["status"] for r in records(last_dir(res.stdout))] == ["PASS"] * 3
    assert subprocess.run(["blkid", "-p", loopdev]).returncode == 2      # no signature left
