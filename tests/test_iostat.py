"""zpool iostat parsers: human form on real zfs-fuse output, -Hp and human on captured OpenZFS output."""

import os

import pytest

from conftest import VERSIONS, fixture
from zfsperf.errors import InputError
from zfsperf.metrics.iostat import parse_hp_reports, parse_human_reports
from zfsperf.pool import destroy_busy


@pytest.mark.parametrize("version", VERSIONS)
def test_hp_and_human_agree_on_captures(version):
    hp = parse_hp_reports(fixture(version, "zpool_iostat_-Hp_-v_tank.txt"), "tank")
    assert len(hp) == 1 and hp[0]["alloc"] > 0 and hp[0]["write_bw"] > 0
    human = parse_human_reports(fixture(version, "zpool_iostat_-v_tank.txt"), "tank")
    assert len(human) == 1 and human[0]["free"] > 0


def test_hp_rows_with_latency_columns():
    rows = parse_hp_reports(fixture("openzfs-2.3.2", "zpool_iostat_-Hp_-y_-l_tank_2_5.txt"), "tank")
    assert len(rows) == 5 and all(r["read_ops"] == 0 for r in rows) and all(r["write_ops"] > 0 for r in rows)


def test_human_on_real_zfs_fuse(lab, target, tmp_path):
    vd = tmp_path / "io.img"
    vd.write_bytes(b"")
    os.truncate(vd, 128 << 20)
    assert lab.run(["zpool", "create", "-m", str(tmp_path / "m"), "iop", str(vd)]).ok
    try:
        res = lab.run(["zpool", "iostat", "iop", "1", "2"])
        rows = parse_human_reports(res.stdout, "iop")
        assert len(rows) == 2 and rows[0]["alloc"] > 0 and rows[0]["free"] > rows[0]["alloc"]
    finally:
        destroy_busy(target, "iop")           # zfs-fuse may call it busy right after iostat


def test_bad_rows_name_the_line():
    with pytest.raises(InputError) as e:
        parse_human_reports("pool alloc\niop 1.2Q 3 4 5 6 7\n", "iop", "x")
    assert "x:2" in str(e.value)


@pytest.mark.parametrize("version,rebuild", [("openzfs-2.1.11", False), ("openzfs-2.3.2", True)])
def test_latency_histogram_header_and_rows(version, rebuild):
    from zfsperf.metrics.iostat import parse_hp_histogram, parse_latency_header
    cols = parse_latency_header(fixture(version, "zpool_iostat_-w_tank.txt"))
    assert cols[:8] == ["total_wait_read", "total_wait_write", "disk_wait_read", "disk_wait_write",
                        "syncq_wait_read", "syncq_wait_write", "asyncq_wait_read", "asyncq_wait_write"]
    assert cols[8:] == (["scrub", "trim", "rebuild"] if rebuild else ["scrub", "trim"])   # rebuild: 2.2+
    hist = parse_hp_histogram(fixture(version, "zpool_iostat_-Hp_-w_-y_tank_5_1.txt"), cols)
    labels = [b for b, _n in hist["total_wait_write"]]
    assert labels[0] == 1 and all(b == 2 * a + 1 for a, b in zip(labels, labels[1:]))   # 2^(j+1)-1 ns
    assert sum(n for _b, n in hist["total_wait_write"]) > 0
    with pytest.raises(InputError):
        parse_hp_histogram(fixture(version, "zpool_iostat_-Hp_-w_-y_tank_5_1.txt"), cols[:-1])
