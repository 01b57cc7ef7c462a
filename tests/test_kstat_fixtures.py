"""Kernel-only formats, checked against output captured from real OpenZFS 2.1.11 and 2.3.2."""

import pytest

from helpers import VERSIONS, fixture
from zfsperf.errors import InputError
from zfsperf.targets.kstat import parse_named, parse_named_strings, parse_sysctl, parse_txgs



@pytest.mark.parametrize("version,nfields", [("openzfs-2.1.11", 123), ("openzfs-2.3.2", 147)])
def test_arcstats_all_fields(version, nfields):
    stats = parse_named(fixture(version, "kstat_arcstats_final.txt"))
    assert len(stats) == nfields            # anchors.md: 123 fields in 2.1.11, 147 in 2.3.2
    assert stats["c_max"] > 0 and stats["size"] > 0
    assert 0 < stats["size"] <= stats["c_max"] * 1.1


def test_arcstats_version_drift():
    old = parse_named(fixture("openzfs-2.1.11", "kstat_arcstats_final.txt"))
    new = parse_named(fixture("openzfs-2.3.2", "kstat_arcstats_final.txt"))
    assert "arc_meta_limit" in old and "arc_meta_limit" not in new
    assert "iohits" in new and "iohits" not in old


@pytest.mark.parametrize("version", VERSIONS)
def test_txgs(version):
    rows = parse_txgs(fixture(version, "kstat_tank_txgs_during_load.txt"))
    assert len(rows) > 3
    assert all(r.state in "BOQWSC" for r in rows)
    assert [r.txg for r in rows] == sorted(r.txg for r in rows)
    assert any(r.nwritten > 0 for r in rows)


def test_objset_kstat_strings():
    text = fixture("openzfs-2.3.2", "kstat_tank_objset-0x54.txt")
    assert parse_named_strings(text)["dataset_name"].startswith("tank")
    nums = parse_named(text)
    assert "dataset_name" not in nums and nums["nwritten"] >= 0


def test_named_rejects_garbage():
    with pytest.raises(InputError) as e:
        parse_named("hello\nworld\n", "x")
    assert "x:2" in str(e.value)


def test_sysctl_form():
    text = "kstat.zfs.misc.arcstats.hits: 1183390\nkstat.zfs.misc.arcstats.c_max: 536870912\n" \
           "kstat.zfs.misc.zfetchstats.hits: 5\n"
    assert parse_sysctl(text, "kstat.zfs.misc.arcstats") == {"hits": 1183390, "c_max": 536870912}
