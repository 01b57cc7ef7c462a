"""Sync writes (issue 73, 3): fio's O_SYNC / O_DSYNC writes, the built-in sync-write A/B, and the
ZIL's counters of a case: read from each dataset's objset kstat as real OpenZFS 2.3.2 prints it
(captured output, helpers.fixture), summed over a side's datasets as growth between two readings, and
said in report and compare. The real counters of a sync=always side are
tests/test_openzfs_guest.py's."""

import json
import re
import subprocess
from pathlib import Path

import pytest

from helpers import fixture
from zfsperf.metrics import zil
from zfsperf.targets.kstat import parse_named
from zfsperf.targets.openzfs_linux import OpenZfsLinuxTarget

OBJSETS = ("0x36", "0x54", "0x5e", "0x83")


def _sysroot(tmp_path: Path) -> Path:
    """A directory laid out like / with the pool's captured objset kstats (and their neighbours)."""
    root = tmp_path / "root"
    k = root / "proc/spl/kstat/zfs/tank"
    k.mkdir(parents=True)
    (root / "sys/module/zfs/parameters").mkdir(parents=True)
    for o in OBJSETS:
        (k / f"objset-{o}").write_text(fixture("openzfs-2.3.2", f"kstat_tank_objset-{o}.txt"))
    (k / "txgs").write_text(fixture("openzfs-2.3.2", "kstat_tank_txgs_during_load.txt"))
    (k / "state").write_text(fixture("openzfs-2.3.2", "kstat_tank_state.txt"))
    return root


def test_each_datasets_zil_counters_from_its_objset_kstat(tmp_path):
    t = OpenZfsLinuxTarget(str(_sysroot(tmp_path)))
    got = t.zil_counters("tank")
    assert sorted(got) == ["tank", "tank/fs", "tank/gz", "tank/small"]      # by each objset's dataset_name
    want = parse_named(fixture("openzfs-2.3.2", "kstat_tank_objset-0x54.txt"))
    assert got["tank/fs"] == {k: v for k, v in want.items() if k.startswith("zil_")}
    assert set(zil.FIELDS) <= set(got["tank/fs"])
    assert t.zil_counters("nopool") is None                 # no kstat directory: no counters


def test_a_cases_growth_summed_over_its_datasets_a_new_one_from_zero():
    """before: the captured objsets (all 0); after: one dataset with the machine's ZIL kstat of the
    same capture (612 records in 9 commits), and a dataset made in between with the same again; a
    side of a duet counts only the datasets at and under its own."""
    objs = {f"objset-{o}": {k: v for k, v in parse_named(fixture("openzfs-2.3.2", f"kstat_tank_objset-{o}.txt")).items()
                            if k.startswith("zil_")} for o in OBJSETS}
    objs = {n: objs[f"objset-{o}"] for n, o in (("tank", "0x36"), ("tank/fs", "0x54"), ("tank/small", "0x5e"),
                                                  ("tank/gz", "0x83"))}
    machine = parse_named(fixture("openzfs-2.3.2", "kstat_zil_final.txt"))
    after = {**objs, "tank/fs": dict(machine), "tank/fs/new": dict(machine)}
    d = zil.delta(objs, after)
    assert d["zil_commit_count"] == 2 * machine["zil_commit_count"] == 18
    assert d["zil_itx_count"] == 2 * 612 and d["zil_itx_indirect_bytes"] == 2 * machine["zil_itx_indirect_bytes"]
    assert d["datasets"] == 5
    assert zil.delta(objs, after, "tank/fs")["zil_commit_count"] == 18 and zil.delta(objs, after, "tank/fs")["datasets"] == 2
    assert zil.delta(objs, after, "tank/f")["datasets"] == 0            # a name's prefix is not a parent
    assert zil.delta(objs, after, "tank/small")["zil_commit_count"] == 0
    assert zil.delta(None, after) == {"unavailable": zil.delta(None, None)["unavailable"]}
    assert "when the workload ended" in zil.delta(objs, None)["unavailable"]
    m = zil.merged([d, zil.delta(objs, objs)])
    assert m["iterations"] == 2 and m["zil_commit_count"] == 9 and m["zil_itx_count"] == 612
    assert zil.line(m) == ("ZIL (mean of 2 iterations): 612 log records (612 indirect, 0 copied, 0 need-copy) "
                           "in 9 commits; log blocks: 5 in the pool, 0 on a log device")
    assert zil.merged([{"unavailable": "x"}]) is None


def _with_zil(d: Path, counters: dict) -> Path:
    lines = [json.loads(ln) | {"zil": {f: counters.get(f, 0) for f in zil.FIELDS} | {"datasets": 2}}
             for ln in (d / "results.jsonl").read_text().splitlines()]
    (d / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return d


def test_report_and_compare_say_each_sides_zil(tmp_path):
    """Runs whose records hold the ZIL's counters, as a kernel-OpenZFS run records them: report's
    line under the case (text and JSON), compare's context line A → B."""
    from helpers import stored_results, zfsperf
    a = _with_zil(stored_results(tmp_path / "a", [100.0] * 5), {"zil_commit_count": 9, "zil_itx_count": 612,
                                                                "zil_itx_indirect_count": 612})
    b = _with_zil(stored_results(tmp_path / "b", [80.0] * 5, start=100), {
        "zil_commit_count": 300, "zil_itx_count": 640, "zil_itx_copied_count": 640, "zil_itx_metaslab_slog_count": 40})
    rep = zfsperf("report", str(b))
    assert rep.returncode == 0, rep.stderr
    assert "ZIL (mean of 5 iterations): 640 log records (0 indirect, 640 copied, 0 need-copy) in 300 commits; " \
           "log blocks: 0 in the pool, 40 on a log device" in " ".join(rep.stdout.split()), rep.stdout
    js = json.loads(zfsperf("report", str(a), "--format", "json").stdout)
    assert [c["zil"]["zil_commit_count"] for c in js[0]["cases"]] == [9], js
    cmp = zfsperf("compare", str(a), str(b), "--json")
    assert cmp.returncode == 0, cmp.stderr
    lines = [n for n in json.loads(cmp.stdout)["notes"] if n.startswith("Context (not judged): ")]
    assert any(re.search(r"the ZIL per iteration: 612 log records .* in 9 commits; .* → 640 log records .* in 300 "
                         r"commits; log blocks: 0 in the pool, 40 on a log device", ln) for ln in lines), lines


@pytest.mark.parametrize("sync,line", [(True, "sync=sync"), ("sync", "sync=sync"), ("dsync", "sync=dsync"),
                                       (False, None)])
def test_fio_writes_with_o_sync_or_o_dsync_as_fio_itself_parses_them(tmp_path, sync, line):
    from zfsperf.workloads.fio import job_lines
    lines = job_lines({"rw": "randwrite", "bs": "4k", "size": "1M", "sync": sync}, 3)
    assert [x for x in lines if x.startswith("sync=")] == ([line] if line else [])
    job = tmp_path / "j.fio"
    job.write_text("[j]\n" + "\n".join(lines) + f"\nfilename={tmp_path / 'f'}\n")
    res = subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr              # fio's own option table takes it


def test_a_sync_mode_fio_does_not_have_is_refused_with_its_line(tmp_path):
    from helpers import write_runfile, zfsperf
    rf = write_runfile(tmp_path, """
[[test]]
name = "w"
workload = "fio"
rw = "randwrite"
size = "8M"
sync = "osync"
""")
    res = zfsperf("run", "-r", str(rf), "--dry-run")
    assert res.returncode == 2 and f"{rf}:7" in res.stderr and "sync" in res.stderr and "'dsync'" in res.stderr, \
        res.stderr


def test_the_builtin_sync_write_ab_is_refused_on_zfs_fuse_before_anything_runs(tmp_path):
    """zfs-fuse has no sync property: the built-in says so with its line, exit 2, nothing made."""
    from helpers import zfsperf
    res = zfsperf("run", "-r", "sync-write", "--dry-run", cwd=str(tmp_path))
    assert res.returncode == 2 and "<builtin:sync-write>:" in res.stderr and "no dataset property sync" in res.stderr, \
        res.stderr
    assert list(tmp_path.iterdir()) == []
    # its log-device A/B has no sync property: it runs on zfs-fuse, in interleaved blocks
    res = zfsperf("run", "-r", "sync-write", "-t", "slog", "--dry-run", cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "interleaved blocks" in res.stdout and "A log_vdevs=0" in res.stdout and "B log_vdevs=1" in res.stdout


def _dir(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir()
    return tmp_path / name


SLOG = """
[defaults]
iterations = 1
[defaults.pool]
vdevs = 1
vdev_size = "256M"
log_vdevs = [0, 1]
[[test]]
name = "fsyncw"
workload = "fio"
rw = "randwrite"
bs = "4k"
size = "8M"
runtime = 2
fsync = 1
"""


def test_a_pool_key_sweep_gives_each_case_a_pool_of_its_own(tmp_path):
    """log_vdevs = [0, 1]: two cases, a pool without and with a separate log device (the A/B of a
    log device for sync writes); a duet cannot hold it (one pool), a bad value names its line."""
    from helpers import write_runfile, zfsperf
    from zfsperf.runfile import expand, load
    t = load(str(write_runfile(tmp_path, SLOG))).tests[0]
    cases = expand(t)
    assert [c.id for c in cases] == ["fsyncw log_vdevs=0", "fsyncw log_vdevs=1"]
    assert [c.pool.log_vdevs for c in cases] == [0, 1] and [c.pool.describe() for c in cases][1].endswith("+ log of 1")
    assert t.pool_sweeps == {"log_vdevs": [0, 1]}
    duet = write_runfile(_dir(tmp_path, "d"), SLOG.replace("fsync = 1", 'fsync = 1\nduet = true\ndataset = { atime = ["on", "off"] }'))
    res = zfsperf("run", "-r", str(duet), "--dry-run")
    assert res.returncode == 2 and "log_vdevs is a pool key" in res.stderr, res.stderr
    bad = write_runfile(_dir(tmp_path, "b"), SLOG.replace("log_vdevs = [0, 1]", 'log_vdevs = [0, "one"]'))
    res = zfsperf("run", "-r", str(bad), "--dry-run")
    assert res.returncode == 2 and f"{bad}:7" in res.stderr and "log_vdevs" in res.stderr, res.stderr
    res = zfsperf("run", "-r", str(write_runfile(_dir(tmp_path, "n"), SLOG.replace("\nvdevs = 1\n", "\nvdevs = [1, 2]\n"))),
                  "--dry-run")
    assert res.returncode == 2 and ":5: defaults.pool.vdevs: expected an integer, got [1, 2]" in res.stderr, \
        res.stderr                                                            # only log and cache devices sweep


def test_fsynced_writes_with_and_without_a_log_device_on_zfs_fuse(lab, tmp_path):
    """The sweep run for real: each case's pool made with its own log devices (zpool create's
    argv in its log), fio's fsync'd writes PASS on both."""
    from helpers import last_dir, records, write_runfile, zfsperf
    res = zfsperf("run", "-r", str(write_runfile(tmp_path, SLOG)), "-o", str(tmp_path / "o"), "--no-history")
    assert res.returncode == 0, res.stdout + res.stderr
    d = last_dir(res.stdout)
    recs = {r["sweep"]["log_vdevs"]: r for r in records(d)}
    assert {k: r["status"] for k, r in recs.items()} == {0: "PASS", 1: "PASS"}
    assert recs[1]["pool"]["layout"].endswith("+ log of 1") and "log" not in recs[0]["pool"]["layout"]
    assert recs[1]["figures"]["write_iops"]["value"] > 0 and recs[1]["figures"]["sync_ops"]["value"] > 0
    creates = {k: [ln for ln in (d / "logs").glob(f"*log_vdevs={k}*.log").__next__().read_text().splitlines()
                   if "zpool create" in ln] for k in (0, 1)}
    assert creates[1] and " log " in creates[1][0] and not any(" log " in ln for ln in creates[0]), creates
