"""The record-header walker against the real tool (zstreamdump) on real zfs-fuse streams."""

import re
import subprocess

import pytest

from zfsperf.workloads import corpus
from zfsperf.workloads.sendstream import StreamError, walk_file, write_digests


def zstreamdump_summary(path):
    with open(path, "rb") as f:
        out = subprocess.run(["zstreamdump"], stdin=f, capture_output=True, text=True, check=True).stdout
    counts = dict(re.findall(r"Total DRR_(\w+) records = (\d+)", out))
    length = int(re.search(r"Total stream length = (\d+)", out).group(1))
    return {k: int(v) for k, v in counts.items()}, length


@pytest.mark.parametrize("kind", ["random", "small-records", "incremental"])
def test_walker_matches_zstreamdump(kind, target, vdev_root):
    c = corpus.make(target, kind, "16M", seed=3, vdev_dir=vdev_root / "corpus")
    for s in filter(None, [c.stream, c.base]):
        counts, length = zstreamdump_summary(s.path)
        info = walk_file(s.path)
        assert info.length == length == s.length
        assert info.writes == counts["WRITE"] == s.writes
        for k, v in counts.items():
            assert info.records.get(k, 0) == v, k
    assert c.stream.incremental == (kind == "incremental")
    if kind == "small-records":
        assert c.stream.writes >= 16 * 1024 // 8     # 8K records
    # cached: the second make returns the same files without making them again
    again = corpus.make(target, kind, "16M", seed=3, vdev_dir=vdev_root / "corpus")
    assert again == c


def test_corpus_is_deterministic(target, vdev_root, tmp_path):
    """Same kind, size and seed: the same data (the streams differ only in GUIDs and times)."""
    a = corpus.make(target, "compressible", "4M", seed=11, vdev_dir=vdev_root / "c1", out=str(tmp_path / "a.zfs"))
    b = corpus.make(target, "compressible", "4M", seed=11, vdev_dir=vdev_root / "c2", out=str(tmp_path / "b.zfs"))
    assert a.stream.length == b.stream.length and a.stream.writes == b.stream.writes
    da, db = write_digests(a.stream.path), write_digests(b.stream.path)
    assert len(da) == a.stream.writes
    # the data file is the object with the most blocks; ZPL metadata objects carry timestamps
    data_obj = max({o for o, _ in da}, key=lambda o: sum(1 for k in da if k[0] == o))
    blocks_a = {k: v for k, v in da.items() if k[0] == data_obj}
    assert len(blocks_a) == 4 * 1024 // 128 and blocks_a == {k: v for k, v in db.items() if k[0] == data_obj}
    c = corpus.make(target, "compressible", "4M", seed=12, vdev_dir=vdev_root / "c3", out=str(tmp_path / "c.zfs"))
    dc = write_digests(c.stream.path)
    assert not set(blocks_a.values()) & {v for k, v in dc.items() if k[0] == data_obj}   # other seed, other data


def test_truncated_and_garbage(small_corpus, tmp_path):
    data = open(small_corpus.stream.path, "rb").read()
    cut = tmp_path / "cut.zfs"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(StreamError, match="truncated"):
        walk_file(str(cut))
    junk = tmp_path / "junk.zfs"
    junk.write_bytes(b"\x00" * 4096)
    with pytest.raises(StreamError, match="not a ZFS send stream"):
        walk_file(str(junk))
