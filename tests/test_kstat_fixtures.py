"""Kernel-only formats, checked against output captured from real OpenZFS 2.1.11 and 2.3.2."""

import numpy as np
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
def test_the_per_txg_table_of_a_case_from_the_real_kstat(version):
    """The txgs a case committed (newer than the one when its workload started, state C), each
    with its sync, open and wait times in ms and its dirty and written MiB, as the kstat gives them
    in ns and bytes; a start older than the kstat's history is counted as missed, not hidden."""
    from zfsperf.metrics import txgtable
    rows = parse_txgs(fixture(version, "kstat_tank_txgs_during_load.txt"))
    committed = [r for r in rows if r.state == "C"]
    start = committed[len(committed) // 2].txg
    tab = txgtable.table(rows, start)
    mine = [r for r in committed if r.txg > start]
    assert [row[0] for row in tab["rows"]] == [r.txg for r in mine] and mine
    first, r = tab["rows"][0], mine[0]
    cols = tab["columns"]
    assert first[cols.index("sync_ms")] == pytest.approx(r.stime / 1e6, abs=1e-3)
    assert first[cols.index("open_ms")] == pytest.approx(r.otime / 1e6, abs=1e-3)
    assert first[cols.index("wait_ms")] == pytest.approx((r.qtime + r.wtime) / 1e6, abs=1e-3)
    assert first[cols.index("written_mib")] == pytest.approx(r.nwritten / 2 ** 20, abs=1e-3)
    s = tab["summary"]
    assert s["count"] == len(mine) and "missed" not in tab
    syncs = sorted(x.stime / 1e6 for x in mine)
    assert s["sync_ms"]["max"] == pytest.approx(syncs[-1], abs=1e-3) and s["sync_ms"]["unit"] == "ms"
    assert s["sync_ms"]["median"] == pytest.approx(float(np.median(syncs)), abs=1e-3)
    oldest = min(x.txg for x in rows)
    assert txgtable.table(rows, oldest - 5)["missed"] == 4          # txgs the kstat no longer held
    merged = txgtable.merged([tab, tab])
    assert merged["count"] == 2 * len(mine) and merged["iterations"] == 2
    assert txgtable.line(merged).startswith(f"txgs (median / p90 / max per txg): {2 * len(mine)} committed in 2 ")
    assert txgtable.line(txgtable.merged([txgtable.table(None, None)])) == f"txgs: {txgtable.UNAVAILABLE}"


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


def test_compare_sets_the_two_sides_txg_tables_side_by_side_as_context(tmp_path):
    """compare shows each side's per-txg medians, A against B, as context (never a verdict): here
    A's iterations committed the first half of a real 2.3.2 load's txgs and B's the second."""
    import json
    from zfsperf.metrics import taskq, txgtable
    from zfsperf.report import compare
    from zfsperf.report.export.compare import text as comparetext
    from zfsperf.targets.kstat import parse_taskq_summary
    from zfsperf.report.model import load_run
    rows = parse_txgs(fixture("openzfs-2.3.2", "kstat_tank_txgs_during_load.txt"))
    committed = [r for r in rows if r.state == "C"]
    mid = committed[len(committed) // 2].txg
    halves = {"a": txgtable.table([r for r in rows if r.txg <= mid], committed[0].txg - 1),
              "b": txgtable.table(rows, mid)}
    dirs = {}
    for side, tab in halves.items():
        d = dirs[side] = tmp_path / side
        d.mkdir()
        (d / "run.json").write_text(json.dumps({"target": {"implementation": "openzfs-linux"},
                                                "runfile": {"source": "t"}}))
        idle = {n: {"pending": 0, "delayed": 0, "active": 0} for n in taskq.WATCHED}
        queues = taskq.summary([{"t": 0, "metrics": {}, "info": {"taskq": taskq.sample(
            parse_taskq_summary(fixture("openzfs-2.3.2", "kstat_taskq_summary_during_load.txt"), "summary"))
            if side == "b" else idle}}])
        (d / "results.jsonl").write_text("".join(json.dumps({
            "test": "t", "case": "c", "params": {}, "iteration": i, "workload": "receive", "status": "PASS",
            "figures": {"throughput": {"value": 100.0 + i, "unit": "MiB/s"}}, "txgs": tab, "taskqs": queues}) + "\n"
            for i in range(1, 6)))
    cmp = compare.compare_runs([load_run(dirs["a"])], [load_run(dirs["b"])])
    # the I/O taskqs beside them: B's z_wr_iss held the real load's 48 pending tasks, A's none
    (tq,) = [n for n in comparetext.notes(cmp) if n.startswith("Context (not judged): c: taskqs")]
    assert "z_wr_iss 0 → 48 (peak 0 → 48)" in tq
    (line,) = [n for n in comparetext.notes(cmp) if n.startswith("Context (not judged): c: txgs ")]
    sa, sb = (txgtable.merged([halves[s]] * 5) for s in "ab")
    assert f"txgs {sa['count']} → {sb['count']}" in line
    assert f"syncing {txgtable.number(sa['sync_ms']['median'])} → {txgtable.number(sb['sync_ms']['median'])} ms" in line
    assert all(ch.figure != "txgs" for ch in cmp.changes)           # context, never judged


def test_the_io_taskqs_from_the_real_summary_kstat():
    """/proc/spl/kstat/taskq/summary as OpenZFS 2.3.2 printed it while a gzip-9 pool was written:
    every taskq's threads and queued tasks; the sampler keeps the I/O taskqs (instances added up),
    and a case's summary is their mean and peak. A table without its header is refused with the
    file and line."""
    from zfsperf.metrics import taskq
    from zfsperf.targets.kstat import parse_taskq_summary
    text = fixture("openzfs-2.3.2", "kstat_taskq_summary_during_load.txt")
    rows = parse_taskq_summary(text, "summary")
    body = [ln for ln in text.splitlines()[4:] if ln.strip()]
    assert len(rows) == len(body) == 30
    wr = rows["z_wr_iss.0"]
    assert (wr["threads"], wr["active"], wr["idle"], wr["max"]) == (1, 1, 0, 1)
    assert (wr["pending"], wr["normal"], wr["high"], wr["delayed"]) == (48, 48, 0, 0)   # the writes' backlog
    # the per-taskq named kstat of the same moment agrees on the thread counts
    named = parse_named(fixture("openzfs-2.3.2", "kstat_taskq_z_wr_iss.0_during_load.txt"))
    assert named["threads_total"] == wr["threads"] and named["threads_max"] == wr["max"]
    s = taskq.sample(rows | {"z_wr_iss.1": dict(wr, pending=2, active=0)})
    assert s["z_wr_iss"] == {"pending": 50, "delayed": 0, "active": 1} and set(s) == set(taskq.WATCHED)
    samples = [{"t": i, "metrics": {}, "info": {"taskq": taskq.sample(rows) if i % 2 else
                                                  {n: {"pending": 0, "delayed": 0, "active": 0} for n in taskq.WATCHED}}}
               for i in range(4)]
    one = taskq.summary(samples)
    assert one["samples"] == 4 and one["queues"]["z_wr_iss"] == {"pending_mean": 24.0, "pending_max": 48,
                                                                  "delayed_max": 0, "active_mean": 0.5}
    both = taskq.merged([one, one | {"shared": True}])
    assert both["queues"]["z_wr_iss"]["pending_max"] == 48 and both["samples"] == 8
    assert taskq.line(both).startswith("taskqs (tasks pending, mean / peak over 8 samples; every pool's "
                                       "instances, both sides (one pool)): z_wr_iss 24 / 48")
    with pytest.raises(InputError) as e:
        parse_taskq_summary("\n".join(text.splitlines()[3:]), "summary")
    assert e.value.file == "summary" and e.value.line == 1
