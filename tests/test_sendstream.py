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


def zstreamdump_file_bytes(path):
    """The bytes of the WRITE records of data (a file's contents, type 19; a zvol's, 23) that
    `zstreamdump -v` lists, and of every WRITE record."""
    with open(path, "rb") as f:
        out = subprocess.run(["zstreamdump", "-v"], stdin=f, capture_output=True, text=True, check=True).stdout
    # zfs-fuse's prints the offset and length on the line after (OpenZFS's: logical_size, on the same)
    writes = re.findall(r"^WRITE object = \d+ type = (\d+) .*?(?:length|logical_size) = (\d+)", out, re.M | re.S)
    assert writes, out[:2000]
    return sum(int(n) for t, n in writes if t in ("19", "23")), sum(int(n) for _t, n in writes)


@pytest.mark.parametrize("kind", ["random", "small-records", "incremental"])
def test_walker_matches_zstreamdump(kind, target, vdev_root):
    c = corpus.make(target, kind, "16M", seed=3, vdev_dir=vdev_root / "corpus")
    for s in filter(None, [c.stream, c.base]):
        counts, length = zstreamdump_summary(s.path)
        info = walk_file(s.path)
        assert info.length == length == s.length
        assert info.writes == counts["WRITE"] == s.writes
        # the data of the files, the rest of the WRITE records being directories, ZAPs and other metadata
        files, writes = zstreamdump_file_bytes(s.path)
        assert info.file_bytes == files == s.file_bytes and info.write_bytes == writes, (files, writes)
        assert 0 < files < writes
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


@pytest.fixture(scope="module")
def replication_streams(target, vdev_root):
    """Real `zfs send -R` / `-I` streams from zfs-fuse: a filesystem with three snapshots (data
    added between them) and a filesystem with a child, both snapshotted recursively twice."""
    d = vdev_root / "repl"
    d.mkdir(exist_ok=True)
    subprocess.run(["truncate", "-s", "128M", str(d / "v0")], check=True)
    pool = "zrepl"

    def run(*argv):
        res = target.run(list(argv))
        assert res.ok, (argv, res.error_text())
        return res
    run("zpool", "create", "-f", pool, str(d / "v0"))
    try:
        run("zfs", "create", f"{pool}/three")
        for snap in ("s1", "s2", "s3"):
            run("dd", "if=/dev/urandom", f"of=/{pool}/three/{snap}", "bs=64k", "count=4")
            run("zfs", "snapshot", f"{pool}/three@{snap}")
        run("zfs", "create", f"{pool}/fs")
        run("zfs", "create", f"{pool}/fs/child")
        run("dd", "if=/dev/urandom", f"of=/{pool}/fs/child/f", "bs=64k", "count=2")
        run("zfs", "snapshot", "-r", f"{pool}/fs@a")
        run("zfs", "snapshot", "-r", f"{pool}/fs@b")
        out = {}
        for name, argv in {"threeR": ["-R", f"{pool}/three@s3"], "fsR": ["-R", f"{pool}/fs@a"],
                           "fsRi": ["-R", "-i", "@a", f"{pool}/fs@b"],
                           "threeI": ["-I", "@s1", f"{pool}/three@s3"]}.items():
            path = d / f"{name}.zfs"
            with open(path, "wb") as f:
                p = target.popen(["zfs", "send", *argv], stdout=f)
                assert p.wait(timeout=120) == 0
            out[name] = str(path)
        yield pool, out
    finally:
        target.run(["zpool", "destroy", "-f", pool])


def test_replication_stream_identity_is_its_first_begin(replication_streams, target):
    """A full -R stream of pool/fs@s3 with earlier snapshots is full and of @s3 (it came back as
    @s2, incremental); a full -R of pool/fs@a with a child is of pool/fs@a, not pool/fs/child@a.
    The substreams are listed in order."""
    pool, paths = replication_streams
    three = walk_file(paths["threeR"])
    assert (three.toname, three.incremental, three.compound) == (f"{pool}/three@s3", False, True)
    assert [(s.toname, s.fromguid != 0) for s in three.substreams] == [
        (f"{pool}/three@s1", False), (f"{pool}/three@s2", True), (f"{pool}/three@s3", True)]
    fs = walk_file(paths["fsR"])
    assert (fs.toname, fs.incremental) == (f"{pool}/fs@a", False)
    assert [s.toname for s in fs.substreams] == [f"{pool}/fs@a", f"{pool}/fs/child@a"]
    inc = walk_file(paths["fsRi"])
    assert (inc.toname, inc.incremental, inc.fromsnap) == (f"{pool}/fs@b", True, "a")
    seq = walk_file(paths["threeI"])              # -I without -R: a header without an nvlist
    assert (seq.toname, seq.incremental) == (f"{pool}/three@s3", True)
    # the receive check looks for the stream's own snapshot: it exists after a real receive
    s = corpus.from_file(paths["threeR"]).stream
    assert s.snapshot == "s3" and not s.incremental
    p = target.popen(["zfs", "receive", f"{pool}/got"], stdin_file=paths["threeR"])
    assert p.wait(timeout=120) == 0
    snaps = target.run(["zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", f"{pool}/got"]).stdout.split()
    assert f"{pool}/got@{s.snapshot}" in snaps


# ---------------------------------------------------------------- compound streams built record by record
def _record(endian: str, rtype: int, *, versioninfo: int = 0, fromguid: int = 0, toname: str = "",
            payload: bytes = b"") -> bytes:
    """One dmu_replay_record_t (312 bytes, include/sys/zfs_ioctl.h) and its payload: drr_type,
    drr_payloadlen, then for a BEGIN drr_magic, drr_versioninfo, creation time, type, flags,
    toguid, fromguid and toname."""
    import struct
    from zfsperf.workloads.sendstream import BACKUP_MAGIC, DRR_BEGIN, RECORD_SIZE
    hdr = bytearray(RECORD_SIZE)
    struct.pack_into(endian + "II", hdr, 0, rtype, len(payload))
    if rtype == DRR_BEGIN:
        struct.pack_into(endian + "QQQIIQQ", hdr, 8, BACKUP_MAGIC, versioninfo, 0, 2, 0, 0xABC, fromguid)
        hdr[56:56 + len(toname)] = toname.encode()
    return bytes(hdr) + payload


def _nvlist(encoding: int, pairs: dict[str, str]) -> bytes:
    """A packed nvlist of string pairs as libnvpair's XDR encoder lays it out (big-endian; each pair:
    its encoded and decoded sizes, the name's length and bytes, type 9 (string), one element, the
    string's length and bytes, each padded to 4), ended by a zero pair."""
    import struct
    pad = lambda b: b + b"\0" * (-len(b) % 4)      # noqa: E731
    out = bytes([encoding, 1, 0, 0]) + struct.pack(">ii", 0, 1)
    for k, v in pairs.items():
        body = struct.pack(">I", len(k)) + pad(k.encode()) + struct.pack(">ii", 9, 1) \
            + struct.pack(">I", len(v)) + pad(v.encode())
        out += struct.pack(">ii", 8 + len(body), 8 + len(body)) + body
    return out + struct.pack(">ii", 0, 0)


def _compound(tmp_path, name: str, endian: str, header: bytes, first_from: int) -> str:
    """`zfs send -R`'s shape: a header BEGIN (compound) with its nvlist, its END, then one substream
    (BEGIN with first_from as its source, END), then the final END."""
    from zfsperf.workloads.sendstream import DMU_COMPOUNDSTREAM, DRR_BEGIN, DRR_END
    data = (_record(endian, DRR_BEGIN, versioninfo=DMU_COMPOUNDSTREAM, toname="p/clone@b", payload=header)
            + _record(endian, DRR_END)
            + _record(endian, DRR_BEGIN, versioninfo=1, fromguid=first_from, toname="p/clone@b")
            + _record(endian, DRR_END) + _record(endian, DRR_END))
    path = tmp_path / f"{name}.zfs"
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("endian", ["<", ">"])
@pytest.mark.parametrize("encoding", [0, 1], ids=["native", "xdr"])
def test_a_replication_stream_from_a_clones_origin_is_incremental(tmp_path, endian, encoding):
    """`zfs send -R -i` whose from-snapshot is a clone's origin names no fromsnap in its header: it
    was read as a full stream. The first substream's source decides too (it needs a snapshot on the
    receiving side), in either byte order, whether the header nvlist is XDR or native."""
    header = _nvlist(encoding, {"tosnap": "b"})
    inc = walk_file(_compound(tmp_path, "inc", endian, header, first_from=0x1234))
    assert (inc.compound, inc.incremental, inc.fromsnap, inc.complete) == (True, True, "", True)
    assert [(s.toname, s.fromguid) for s in inc.substreams] == [("p/clone@b", 0x1234)]
    full = walk_file(_compound(tmp_path, "full", endian, header, first_from=0))
    assert (full.incremental, full.complete) == (False, True)
    if encoding == 1:            # XDR: the header's own fromsnap is read, and says incremental alone
        named = walk_file(_compound(tmp_path, "named", endian, _nvlist(1, {"tosnap": "b", "fromsnap": "a"}), 0))
        assert (named.incremental, named.fromsnap) == (True, "a")


def test_a_header_nvlist_in_an_unknown_encoding_is_a_clear_error(tmp_path):
    with pytest.raises(StreamError, match="encoding 7"):
        walk_file(_compound(tmp_path, "odd", "<", _nvlist(7, {"tosnap": "b"}), 0))
