"""Receive errors are never PASS, and a full pool is FAIL with ENOSPC named.
All on real zfs-fuse with real streams."""

import time
from pathlib import Path

from helpers import zfsperf
from helpers import receive_runfile
from helpers import last_dir, records, write_runfile
from zfsperf import proc
from zfsperf.pool import PoolManager, PoolSpec
from zfsperf.workloads.base import CaseContext, WorkloadFailed
from zfsperf.workloads.corpus import describe_spec
from zfsperf.workloads.receive import ReceiveWorkload


def test_truncated_sendfile_is_fail_with_zfs_message(tmp_path, small_corpus, lab):
    data = Path(small_corpus.stream.path).read_bytes()
    cut = tmp_path / "cut.zfs"
    cut.write_bytes(data[: len(data) * 2 // 3])
    rf = receive_runfile(tmp_path, f'{{ file = "{cut}" }}', threads="1")
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd"))
    assert res.returncode == 1
    assert "[FAIL]" in res.stdout and "[PASS]" not in res.stdout
    assert "cannot receive" in res.stdout          # zfs's own words


def test_corrupted_record_is_fail(tmp_path, small_corpus, lab):
    """Bytes flipped inside a WRITE record's payload: the receive fails its checksum, never PASS."""
    data = bytearray(Path(small_corpus.stream.path).read_bytes())
    mid = len(data) // 2
    for i in range(mid, mid + 4096):
        data[i] ^= 0xA5
    bad = tmp_path / "corrupt.zfs"
    bad.write_bytes(bytes(data))
    rf = receive_runfile(tmp_path, f'{{ file = "{bad}" }}', threads="1")
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd"))
    assert res.returncode == 1, res.stdout + res.stderr
    (rec,) = records(last_dir(res.stdout))
    assert rec["status"] == "FAIL" and rec["error"]
    assert "cannot receive" in rec["error"] or "checksum" in rec["error"] or "broken" in rec["error"], rec["error"]


def test_existing_dataset_without_force_is_fail(target, vdev_root, small_corpus, tmp_path):
    """A full stream for a dataset that exists, without -F: zfs refuses, the case FAILs with its words."""
    pools = PoolManager(target, vdev_root / "exists", run_id="faults")
    pool = pools.create(PoolSpec(vdevs=1, vdev_size=256 << 20))
    try:
        assert target.run(["zfs", "create", "-p", f"{pool.name}/rcv/s0"]).ok
        spec = {"file": small_corpus.stream.path}
        prepared = {describe_spec(spec): small_corpus}
        ctx = CaseContext(target=target, pool=pool, fields={"corpus": spec, "threads": 1}, log=proc.NULL_LOG,
                          deadline=time.monotonic() + 300, prepared=prepared, workdir=tmp_path, case_id="exists")
        try:
            ReceiveWorkload().run(ctx)
            raise AssertionError("a receive onto an existing dataset without -F passed")
        except WorkloadFailed as e:
            assert "exists" in str(e) and "-F" in str(e), str(e)
        # with force = true (zfs receive -F) the same receive goes through
        ctx.fields["force"] = True
        ctx.round = 0
        figs = ReceiveWorkload().run(ctx)
        assert figs["bytes"]["value"] == small_corpus.stream.length
    finally:
        ctx.procs.stop_all()
        pools.destroy(pool)
        pools.cleanup_files()


def test_pool_full_is_fail_with_enospc(lab, tmp_path):
    rf = write_runfile(tmp_path, """
[defaults]
iterations = 1
[defaults.pool]
vdevs = 1
vdev_size = "128M"
[[test]]
name = "full"
workload = "fio"
rw = "write"
bs = "1M"
size = "200M"          # larger than the pool, not so far that zfsperf refuses it before the run
time_based = false
""")
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "o"))
    assert res.returncode == 1
    (rec,) = records(last_dir(res.stdout))
    assert rec["status"] == "FAIL" and "ENOSPC" in rec["error"], rec["error"]
    assert "Traceback" not in res.stdout + res.stderr


def test_receive_larger_than_the_pool_is_fail(tmp_path, lab):
    rf = receive_runfile(tmp_path, '{ kind = "random", size = "96M", seed = 21 }', threads="2")
    rf.write_text(rf.read_text().replace('vdev_size = "256M"', 'vdev_size = "128M"'))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd"))
    assert res.returncode == 1, res.stdout + res.stderr
    (rec,) = records(last_dir(res.stdout))
    assert rec["status"] == "FAIL" and "space" in rec["error"].lower(), rec["error"]
    assert "Traceback" not in res.stdout + res.stderr


def test_receive_error_that_is_not_a_timeout_is_not_killed(target, vdev_root, small_corpus, tmp_path):
    """Only a timeout is KILLED. A real receive whose wait fails with an I/O
    error (injected into that one call) is an error of its own, which the runner reports as FAIL."""
    import errno

    import pytest

    from zfsperf.workloads.base import CaseTimeout

    class FailingWait(proc.ProcessSet):
        def add(self, p):
            def communicate(*_a, **_k):
                raise OSError(errno.EIO, "injected: reading the receive's output failed")
            p.communicate = communicate
            return super().add(p)

    pools, ctx = _receive_case(target, vdev_root / "eio", small_corpus, 1, tmp_path, FailingWait())
    try:
        with pytest.raises(OSError, match="injected") as info:
            ReceiveWorkload().run(ctx)
        assert not isinstance(info.value, CaseTimeout)
    finally:
        ctx.procs.stop_all()
        pools.destroy(ctx.pool)
        pools.cleanup_files()


def test_incremental_receive_must_leave_its_own_snapshot(target, vdev_root, tmp_path):
    """After the base is received, s0@base exists; a receive that 'succeeds'
    without creating @inc must not pass the check (any snapshot used to satisfy it)."""
    import pytest

    from zfsperf.workloads import corpus

    inc = corpus.make(target, "incremental", "8M", seed=5, vdev_dir=vdev_root / "inc-corpus")
    assert inc.stream.snapshot == "inc" and inc.base.snapshot == "base"
    pools = PoolManager(target, vdev_root / "inc", run_id="faults")
    pool = pools.create(PoolSpec(vdevs=1, vdev_size=256 << 20))
    try:
        parent = f"{pool.name}/rcv"
        assert target.run(["zfs", "create", "-p", "-o", "mountpoint=none", parent]).ok
        assert target.run(["zfs", "receive", f"{parent}/s0"], stdin_file=inc.base.path).ok
        ctx = CaseContext(target=target, pool=pool, fields={}, log=proc.NULL_LOG,
                          deadline=time.monotonic() + 300, workdir=tmp_path, case_id="inc")
        with pytest.raises(WorkloadFailed, match="@inc"):
            ReceiveWorkload._verify(parent, 1, inc.stream.snapshot, ReceiveWorkload._received(ctx, parent)[0])
        assert target.run(["zfs", "receive", f"{parent}/s0"], stdin_file=inc.stream.path).ok
        ReceiveWorkload._verify(parent, 1, inc.stream.snapshot, ReceiveWorkload._received(ctx, parent)[0])  # now there
    finally:
        pools.destroy(pool)
        pools.cleanup_files()


def test_each_stream_is_timed_by_its_own_exit(target, vdev_root, small_corpus, tmp_path):
    """Ends used to be stamped in collection order, so a stream that finished
    while an earlier one was still being waited for got that one's end. Here the wait for stream 0
    is held up by 1.5 s (injected after its real exit): the other streams keep their own times."""
    class SlowFirstWait(proc.ProcessSet):
        def add(self, p):
            if not self._procs:
                real = p.communicate

                def communicate(*a, **k):
                    out = real(*a, **k)
                    time.sleep(1.5)
                    return out
                p.communicate = communicate
            return super().add(p)

    pools, ctx = _receive_case(target, vdev_root / "streams", small_corpus, 3, tmp_path, SlowFirstWait())
    try:
        figs = ReceiveWorkload().run(ctx)
        secs = [s["seconds"] for s in ctx.extra["streams"]]
        assert secs[0] >= 1.5 and all(x < secs[0] - 1.0 for x in secs[1:]), secs
        mibs = [small_corpus.stream.length / (1 << 20) / x for x in secs]
        assert figs["per_stream"]["value"] == __import__("pytest").approx(sum(mibs) / 3, rel=1e-3)
    finally:
        ctx.procs.stop_all()
        pools.destroy(ctx.pool)
        pools.cleanup_files()


def _receive_case(target, vdev_dir, corpus, threads, workdir, procs):
    """A fresh pool and the context of one receive case of corpus on it, with the given ProcessSet."""
    pools = PoolManager(target, vdev_dir, run_id="faults")
    pool = pools.create(PoolSpec(vdevs=1, vdev_size=(128 + 96 * threads) << 20))
    spec = {"file": corpus.stream.path}
    ctx = CaseContext(target=target, pool=pool, fields={"corpus": spec, "threads": threads}, log=proc.NULL_LOG,
                      deadline=time.monotonic() + 300, prepared={describe_spec(spec): corpus},
                      workdir=workdir, case_id=vdev_dir.name, procs=procs)
    return pools, ctx
