"""The receive path for real: zfs-fuse, real streams, the real CLI."""

import json
import time
from pathlib import Path

import pytest

from helpers import lab_pools, why
from helpers import receive_runfile, zfsperf
from zfsperf import proc
from zfsperf.pool import PoolManager, PoolSpec
from zfsperf.workloads.base import CaseContext
from zfsperf.workloads.corpus import describe_spec
from zfsperf.workloads.receive import ReceiveWorkload


def test_sweep_bytes_match_and_datasets_exist(target, vdev_root, small_corpus):
    pools = PoolManager(target, vdev_root / "rw", run_id="test-receive")
    pool = pools.create(PoolSpec(layout="stripe", vdevs=1, vdev_size=256 << 20), fs_properties={"primarycache": "none"})
    try:
        spec = {"kind": "random", "size": "24M", "seed": 7}
        for threads in (1, 2):
            ctx = CaseContext(target=target, pool=pool, fields={"corpus": spec, "threads": threads},
                              log=proc.NULL_LOG, deadline=time.monotonic() + 300,
                              prepared={describe_spec(spec): small_corpus})
            figs = ReceiveWorkload().run(ctx)
            assert figs["bytes"]["value"] == small_corpus.stream.length * threads
            assert figs["blocks"]["unit"] == "blocks/s" and figs["throughput"]["unit"] == "MiB/s"
            wall = figs["receive_time"]["value"]
            assert figs["throughput"]["value"] == pytest.approx(small_corpus.stream.length * threads / 2**20 / wall)
            assert figs["blocks"]["value"] == pytest.approx(small_corpus.stream.writes * threads / wall)
            listed = target.run(["zfs", "list", "-H", "-o", "name,used", "-r", f"{pool.name}/rcv"]).stdout
            names = {ln.split()[0] for ln in listed.splitlines()}
            assert {f"{pool.name}/rcv/s{i}" for i in range(threads)} <= names
            assert target.run(["zfs", "destroy", "-r", f"{pool.name}/rcv"]).ok
    finally:
        pools.destroy(pool)
        pools.cleanup_files()


def test_a_round_s_snapshots_and_space_are_read_in_one_command_and_a_missing_snapshot_fails(
        target, vdev_root, small_corpus, tmp_path):
    """After a round, one `zfs get -Hpr` gives both the snapshots the receives left (each stream's
    own, checked) and the space the received datasets take (under emulation each command costs a
    third of a second: a round read them with three, one before its receives): the same as `zfs
    list -t snapshot` and `zfs get` say, the received datasets' space their fresh parent's
    usedbychildren; a receive that left no snapshot fails naming it."""
    from zfsperf.workloads.base import WorkloadFailed
    pools = PoolManager(target, vdev_root / "snaps", run_id="test-receive-snaps")
    pool = pools.create(PoolSpec(layout="stripe", vdevs=1, vdev_size=256 << 20))
    try:
        spec = {"kind": "random", "size": "24M", "seed": 7}
        log = tmp_path / "round.log"
        ctx = CaseContext(target=target, pool=pool, fields={"corpus": spec, "threads": 2}, log=proc.CommandLog(log),
                          deadline=time.monotonic() + 300, prepared={describe_spec(spec): small_corpus})
        saved, target.log = target.log, ctx.log         # as a case's: the target's commands in its log
        try:
            ReceiveWorkload().run(ctx)
        finally:
            target.log = saved
        cmds = [ln for ln in log.read_text().splitlines() if ln.startswith("$ ")]
        first_receive = next(i for i, c in enumerate(cmds) if " receive " in c)
        gets = [i for i, c in enumerate(cmds) if " get " in c]
        assert len(gets) == 1 and gets[0] > first_receive, cmds
        parent = f"{pool.name}/rcv"
        snaps, space = ReceiveWorkload._received(ctx, parent)
        listed = target.run(["zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", parent]).stdout.split()
        snap = small_corpus.stream.snapshot
        assert snaps == set(listed) == {f"{parent}/s{i}@{snap}" for i in range(2)}, (snaps, listed)
        assert (space.used, space.ratio) == ReceiveWorkload._space(ctx, parent)
        own = int(target.run(["zfs", "get", "-Hp", "-o", "value", "usedbydataset", parent]).stdout)
        assert space.children == space.used - own and space.children > 2 * small_corpus.stream.write_bytes * 0.99
        # the case's space count: the received datasets' space over the payload (just over 1: metadata)
        assert 1.0 <= ctx.extra["counts"]["space_per_byte"] < 1.0 + ReceiveWorkload.METADATA_MARGIN_PCT / 100, ctx.extra
        ReceiveWorkload._verify(parent, 2, snap, snaps)
        assert target.run(["zfs", "destroy", f"{parent}/s1@{snap}"]).ok
        with pytest.raises(WorkloadFailed, match=f"left no snapshot {parent}/s1@{snap}"):
            ReceiveWorkload._verify(parent, 2, snap, ReceiveWorkload._received(ctx, parent)[0])
    finally:
        pools.destroy(pool)
        pools.cleanup_files()


def test_cli_small_sweep_pass(tmp_path, lab):
    before = lab_pools(lab)          # another test's pool still busy is not this one's
    rf = receive_runfile(tmp_path, '{ kind = "random", size = "24M", seed = 7 }',
                  extra='expect = { throughput = ">= 1 MiB/s" }')
    out = tmp_path / "res"
    res = zfsperf("run", "-r", str(rf), "-o", str(out), "-d", str(tmp_path / "vd"))
    assert res.returncode == 0, why(res)
    assert "Test: recv threads=1 iter=1" in res.stdout and "[PASS]" in res.stdout and "MiB/s" in res.stdout
    assert "Results Summary" in res.stdout and res.stdout.rstrip().splitlines()[-1].startswith("Log directory:")
    d = Path(res.stdout.rstrip().splitlines()[-1].split("\t")[-1])
    recs = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in recs] == ["PASS", "PASS"]
    assert recs[1]["figures"]["bytes"]["value"] == 2 * recs[0]["figures"]["bytes"]["value"]
    run = json.loads((d / "run.json").read_text())
    assert run["target"]["implementation"] == "zfs-fuse" and run["runfile"]["text"].startswith("\n[defaults]")
    assert (d / "junit.xml").exists() and (d / "summary.txt").exists() and (out / "current").resolve() == d
    assert any(p.name.startswith("recv__threads=2") for p in (d / "logs").iterdir())
    # nothing of the run is left in the lab
    assert lab_pools(lab) <= before
    assert not (tmp_path / "vd").exists() or not any((tmp_path / "vd").iterdir())


def test_unmet_expectation_is_fail_with_both_numbers(tmp_path, lab):
    rf = receive_runfile(tmp_path, '{ kind = "random", size = "24M", seed = 7 }', threads="1",
                  extra='expect = { throughput = ">= 1000000 MiB/s" }')
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd"))
    assert res.returncode == 1
    assert "expected throughput >= 1e+06 MiB/s, got" in res.stdout


def test_duration_runs_rounds_back_to_back_and_stops_when_the_pool_is_full(tmp_path, lab):
    """duration: receive rounds back to back for that long, figures over every round's timed part;
    on a pool too small for the whole duration the rounds end early and the result says so."""
    from helpers import last_dir
    corpus = '{ kind = "random", size = "24M", seed = 7 }'
    recs = {}
    for size in ("1G", "128M"):
        rf = receive_runfile(tmp_path, corpus, threads="2", extra='duration = "2s"')
        rf.write_text(rf.read_text().replace('vdev_size = "256M"', f'vdev_size = "{size}"'))
        res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / size), "-d", str(tmp_path / "vd"))
        assert res.returncode == 0, why(res)
        (recs[size],) = [json.loads(x) for x in (last_dir(res.stdout) / "results.jsonl").read_text().splitlines()]
    rec = recs["1G"]
    n = rec["rounds"]
    assert n >= 2 and "duration_note" not in rec
    assert len(rec["streams"]) == 2 * n and {s["round"] for s in rec["streams"]} == set(range(n))
    assert rec["figures"]["bytes"]["value"] / (2 * n) == pytest.approx(24 * 2**20, rel=0.05)   # all of it, each round
    assert rec["figures"]["throughput"]["value"] == pytest.approx(
        rec["figures"]["bytes"]["value"] / 2**20 / rec["figures"]["receive_time"]["value"])
    small = recs["128M"]                       # 48M a round does not fit twice: one round, and said
    assert small["rounds"] == 1 and "would not hold another" in small["duration_note"]
    bad = receive_runfile(tmp_path, corpus, extra='duration = "soon"')
    res = zfsperf("run", "-r", str(bad), "-o", str(tmp_path / "bad"))
    assert res.returncode == 2 and "duration" in res.stderr
