"""The copy workload (issue 73, 2: a clone that silently became a full copy): files fio writes into
one dataset, copied by `cp` into another. Its input checks here in-process; on real zfs-fuse (no
block cloning: cp copies) a copy across datasets and within one, its figures and counts, and a
`reflink = "always"` that zfs-fuse cannot do failing the case, never PASS. Cloning itself, and the
A/B that sees it turned off, on OpenZFS 2.3 in the guest (tests/test_openzfs_guest.py)."""

import json

import pytest

from helpers import last_dir, records, write_runfile, zfsperf
from zfsperf.errors import InputError
from zfsperf.runfile import load

COPY = """
[defaults]
iterations = 1
timeout = "10m"
[defaults.pool]
vdevs = 1
vdev_size = "256M"
[[test]]
name = "cp"
workload = "copy"
size = "4M"
files = 2
across = [true, false]
steady = { mode = "off" }
[[test]]
name = "clone"
workload = "copy"
size = "1M"
files = 1
reflink = "always"
steady = { mode = "off" }
"""


@pytest.mark.parametrize("old,new,field", [
    ('reflink = "always"', 'reflink = "sometimes"', "reflink"),
    ("files = 1\n", "files = 0\n", "files"),
    ('size = "1M"', 'size = "0"', "size"),
])
def test_a_bad_copy_field_is_refused_with_its_file_line_and_field(tmp_path, old, new, field):
    path = tmp_path / "bad.toml"
    path.write_text(COPY.replace(old, new, 1))
    with pytest.raises(InputError) as e:
        load(str(path)).cases()
    assert e.value.file == str(path) and e.value.line is not None and field in (e.value.field or ""), e.value


def test_files_copied_across_datasets_and_within_one_on_zfs_fuse_and_a_clone_it_cannot_do_fails(lab, tmp_path):
    """zfs-fuse has no block cloning: `cp --reflink=auto` copies, across two datasets and within one,
    each case PASS with its throughput and copy time and its counts per byte written (the source
    and its copy); `cp --reflink=always` fails there, and so does its case, with cp's message."""
    res = zfsperf("run", "-r", str(write_runfile(tmp_path, COPY)), "-o", str(tmp_path / "o"), "--no-history")
    assert res.returncode == 1, res.stdout + res.stderr          # the clone case failed
    d = last_dir(res.stdout)
    recs = {(r["test"], json.dumps(r["sweep"])): r for r in records(d)}
    assert sorted(r["status"] for r in recs.values()) == ["FAIL", "PASS", "PASS"], recs
    for (test, _sweep), r in recs.items():
        if test == "clone":
            assert r["status"] == "FAIL" and "cp --reflink=always failed" in r["error"], r
            continue
        assert r["figures"]["throughput"]["unit"] == "MiB/s" and r["figures"]["throughput"]["value"] > 0, r
        assert r["figures"]["copy_time"]["unit"] == "s" and r["figures"]["copy_time"]["value"] > 0, r
        assert r["counts"]["logical_bytes"] == 2 * 2 * 4 * 2 ** 20, r           # the source and its copy
    log = "".join(p.read_text() for p in (d / "logs").glob("cp*.log"))
    assert "cp --reflink=auto -- " in log and "/dst" in log and "/src/copy" in log, log[-2000:]
