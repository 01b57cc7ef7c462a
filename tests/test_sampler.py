"""The sampler on real zfs-fuse, the normalised metrics on real OpenZFS captures, and the gate in
the runner: a series is recorded, the verdict is recorded, the measurement comes after it, and
the offline `zfsperf steady` re-decides the same first steady sample from the stored series."""

import json
import re
import subprocess
import time

import pytest

from helpers import why
from helpers import VERSIONS, fixture, zfsperf
from helpers import last_dir, records, write_runfile
from zfsperf.metrics import arc
from zfsperf.metrics.iostat import parse_hp_reports, pool_metrics
from zfsperf.metrics.sampler import Sampler
from zfsperf.pool import PoolManager, PoolSpec
from zfsperf.targets.kstat import parse_named


@pytest.mark.parametrize("version", VERSIONS)
def test_arc_metrics_from_openzfs_arcstats(version):
    before = parse_named(fixture(version, "kstat_arcstats_before_load.txt"))
    after = parse_named(fixture(version, "kstat_arcstats_after_write_load.txt"))
    lv = arc.level_metrics(after)
    assert lv["arc_size_frac"] == pytest.approx(after["size"] / after["c_max"])
    assert lv["arc_mru_frac"] == pytest.approx(after["mru_size"] / (after["mru_size"] + after["mfu_size"]))
    assert lv["arc_data_frac"] == pytest.approx(after["data_size"] / (after["data_size"] + after["metadata_size"]))
    iv = arc.interval_metrics(before, after, 10.0, l2_capacity=None, l2_write_max=None)
    dh, dm = after["hits"] - before["hits"], after["misses"] - before["misses"]
    assert iv["arc_hit_ratio"] == pytest.approx(dh / (dh + dm))
    assert not any(k.startswith("l2_") for k in iv)           # no cache devices: absent, not zero
    iv2 = arc.interval_metrics(before, after, 10.0, l2_capacity=4 << 30, l2_write_max=8 << 20)
    assert {"l2_size_frac", "l2_write_frac", "l2_hit_ratio"} <= set(iv2)


def test_arc_metrics_absent_where_zfs_fuse_lacks_fields(target, vdev_root):
    pm = PoolManager(target, vdev_root / "arcprobe", run_id="t")
    pool = pm.create(PoolSpec(vdevs=1, vdev_size=128 << 20))      # /zfs-kstat is there while a pool is
    try:
        cur = target.kstat_fields("arcstats", arc.FIELDS)
    finally:
        pm.destroy(pool)
        pm.cleanup_files()
    lv = arc.level_metrics(cur)
    assert 0 < lv["arc_size_frac"] and "arc_mru_frac" not in lv and "arc_data_frac" not in lv


@pytest.mark.parametrize("version", VERSIONS)
def test_pool_latency_from_hp_l(version):
    rows = parse_hp_reports(fixture(version, "zpool_iostat_-Hp_-y_-l_tank_2_5.txt"), "tank", ["-l"])
    assert rows and all("total_wait_write" in r for r in rows)
    r = rows[0]
    m = pool_metrics(r, 2)
    assert m["pool_kops"] == pytest.approx((r["read_ops"] + r["write_ops"]) / 1000)
    # only writes in this capture: the average op latency is the write total_wait, ns -> ms
    assert r["read_ops"] == 0 and m["pool_lat_ms"] == pytest.approx(r["total_wait_write"] / 1e6)


class BrokenKstats:
    """A zfs-fuse target whose kstat reads fail (e.g. the daemon's /zfs-kstat went away)."""
    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def kstat_fields(self, name, fields):
        raise OSError("Transport endpoint is not connected")


def test_sampler_records_series_and_survives_a_broken_source(target, vdev_root, tmp_path):
    pm = PoolManager(target, vdev_root / "sampler", run_id="t")
    pool = pm.create(PoolSpec(vdevs=1, vdev_size=256 << 20, cache_vdevs=1, cache_size=64 << 20))
    try:
        path = tmp_path / "s.jsonl"
        s = Sampler(target, pool.name, path, interval=0.5, l2_capacity=pool.l2_capacity)
        lines = _sampled_write(s, target, pool, 64)
        assert len(lines) >= 4 and all(set(x) == {"t", "metrics", "info"} for x in lines)
        ts = [x["t"] for x in lines]
        assert ts == sorted(ts)
        assert any(isinstance(x["metrics"].get("pool_mibs"), float) and x["metrics"]["pool_mibs"] > 0
                   for x in lines), "the write load shows in zpool iostat"
        assert all(isinstance(x["metrics"]["arc_size_frac"], float) for x in lines)
        assert "l2_size_frac" in lines[-1]["metrics"]          # a cache device: L2 metrics present
        assert s.overhead()["samples"] == len(lines)

        broken = Sampler(BrokenKstats(target), pool.name, tmp_path / "b.jsonl", interval=0.3,
                         pool_source=False)
        broken.start()
        time.sleep(1.0)
        broken.stop()
        bl = [json.loads(x) for x in (tmp_path / "b.jsonl").read_text().splitlines()]
        assert bl and all(x["metrics"]["arc_size_frac"] is None for x in bl)
    finally:
        pm.destroy(pool)
        pm.cleanup_files()


GATED = """
[defaults]
iterations = 1
[defaults.pool]
vdevs = 1
vdev_size = "384M"
[[test]]
name = "gated"
workload = "receive"
corpus = { kind = "random", size = "24M", seed = 3 }
threads = 2
steady = { mode = "gate", window = 4, interval = 1, timeout = 25 }
[[test]]
name = "recorded"
workload = "receive"
corpus = { kind = "random", size = "24M", seed = 3 }
threads = 1
"""


def test_gate_in_the_runner_and_offline_agreement(lab, tmp_path):
    rf = write_runfile(tmp_path, GATED)
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "out"))
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    gated, recorded = records(d)
    st = gated["steady"]
    assert st["mode"] == "gate" and st["rounds"] >= 1
    series = [json.loads(x) for x in (d / gated["series"]).read_text().splitlines()]
    assert any(isinstance(s["metrics"].get("arc_size_frac"), float) for s in series)
    assert any(isinstance(s["metrics"].get("pool_kops"), float) for s in series)
    assert any(isinstance(s["metrics"].get("workload_mibs"), float) and s["metrics"]["workload_mibs"] > 0
               for s in series)
    assert all(m >= 0 for s in series for k, m in s["metrics"].items() if k.startswith("workload") and m is not None)
    assert gated["figures"]["throughput"]["value"] > 0
    # the measurement comes after the verdict; its time is the time of the first steady sample
    assert st["measure_start"] >= (st["time_to_steady"] or 0)
    if st["steady"]:
        assert st["time_to_steady"] == series[st["first_steady_index"] - 1]["t"]
        assert set(st["passed"]) | set(st["unreadable"]) | set(st["failed"]) >= {"arc_size_frac", "pool_kops"}
    else:
        assert st["note"].startswith("not steady after")
    # anyone can re-decide later from the stored series and gets the same answer
    off = json.loads(zfsperf("steady", str(d / gated["series"]), "--window", "4", "--json").stdout)
    assert off["first_steady_index"] == st["first_steady_index"]
    assert off["method"] == st["method"] == "changepoint" and off["steady"] == st["steady"]
    # the gate's verdict was taken on the samples before its "decided" marker, and the file says so
    events = [x["info"]["event"] for x in series if (x.get("info") or {}).get("event")]
    assert events == ["decided", "workload end"], events
    # record mode (the default): a verdict and a series, no preconditioning
    assert recorded["steady"]["mode"] == "record" and "rounds" not in recorded["steady"]
    assert (d / recorded["series"]).exists()
    # decided on the samples taken while the workload ran (not its wind-down after the marker),
    # by the changepoint method with the workload's headline, and re-decided alike from the file
    rec_series = [json.loads(x) for x in (d / recorded["series"]).read_text().splitlines()]
    end = [i for i, x in enumerate(rec_series) if (x.get("info") or {}).get("event") == "workload end"]
    assert len(end) == 1
    rs = recorded["steady"]
    assert rs["samples"] == end[0] and rs["method"] == "changepoint" and "arc_size_frac" in rs["classes"]
    off = json.loads(zfsperf("steady", str(d / recorded["series"]), "--json", "--headline", "workload_mibs").stdout)
    assert (off["steady"], off["first_steady_index"], off["samples"]) == (rs["steady"], rs["first_steady_index"],
                                                                        rs["samples"])


def test_pool_metrics_are_read_under_a_comma_decimal_locale(target, vdev_root, tmp_path, monkeypatch):
    """Zfs-fuse's `zpool iostat` honours the locale (11,4T under de_DE) and
    every pool sample used to become null. zfsperf runs its tools with LC_ALL=C."""
    loc = tmp_path / "locales"
    loc.mkdir()
    made = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8", str(loc / "de_DE.UTF-8")],
                          capture_output=True, text=True)
    assert (loc / "de_DE.UTF-8").is_dir(), made.stderr
    monkeypatch.setenv("LOCPATH", str(loc))
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    pm = PoolManager(target, vdev_root / "locale", run_id="t")
    pool = pm.create(PoolSpec(vdevs=1, vdev_size=256 << 20))
    try:
        # the precondition: under this locale zfs-fuse's own tool prints decimal commas
        raw = subprocess.run(target.wrap(["zpool", "iostat", pool.name]), capture_output=True, text=True)
        assert re.search(r"\d,\d", raw.stdout), raw.stdout
        s = Sampler(target, pool.name, tmp_path / "s.jsonl", interval=0.5)
        lines = _sampled_write(s, target, pool, 48)
        assert any(isinstance(x["metrics"].get("pool_mibs"), float) for x in lines), lines
        assert "pool_mibs" not in s.unreadable()
    finally:
        pm.destroy(pool)
        pm.cleanup_files()


@pytest.mark.parametrize("version", VERSIONS)
def test_l2arc_fill_is_allocated_bytes_and_l2_reads_are_a_metric(version):
    """L2_size_frac divides l2_asize (what the cache device holds) by its
    capacity, not the logical l2_size; L2ARC reads, which the pool row of `zpool iostat` leaves
    out, are their own metric (l2_read_mibs)."""
    before = parse_named(fixture(version, "kstat_arcstats_before_load.txt"))
    final = parse_named(fixture(version, "kstat_arcstats_final.txt"))
    assert final["l2_asize"] < final["l2_size"]                  # compressed ARC: they differ
    cap = 4 << 30
    iv = arc.interval_metrics(before, final, 100.0, l2_capacity=cap, l2_write_max=8 << 20)
    assert iv["l2_size_frac"] == pytest.approx(final["l2_asize"] / cap)
    assert iv["l2_read_mibs"] == pytest.approx((final["l2_read_bytes"] - before["l2_read_bytes"]) / 100 / 2**20)
    assert iv["l2_read_mibs"] > 0


def _sampled_write(s: Sampler, target, pool, mib: int) -> list[dict]:
    """A real write load of mib MiB (dd, fsync) on pool while s samples it; the series it wrote."""
    s.start()
    dd = subprocess.run(target.wrap(["dd", "if=/dev/urandom", f"of={pool.mountpoint}/f", "bs=1M",
                                     f"count={mib}", "conv=fsync", "status=none"]), timeout=120)
    time.sleep(2.6)
    s.stop()
    assert dd.returncode == 0
    return [json.loads(x) for x in s.path.read_text().splitlines()]


def test_arc_hit_ratio_counts_iohits_as_arcstat_does():
    """OpenZFS 2.2+ publishes iohits (reads that found their I/O in flight); arcstat there counts
    them among the reads: hit% = hits / (hits + iohits + misses). They were ignored, so the ratio
    came out too high. The real 2.3.2 capture had no in-flight hits during its load, so this test
    adds some to the 'after' reading; the 2.1.11 capture has no iohits field at all."""
    before = parse_named(fixture("openzfs-2.3.2", "kstat_arcstats_before_load.txt"))
    after = dict(parse_named(fixture("openzfs-2.3.2", "kstat_arcstats_after_write_load.txt")))
    assert "iohits" in before and "iohits" in after
    after["iohits"] = before["iohits"] + 5000
    dh, dm = after["hits"] - before["hits"], after["misses"] - before["misses"]
    iv = arc.interval_metrics(before, after, 10.0, l2_capacity=None, l2_write_max=None)
    assert iv["arc_hit_ratio"] == pytest.approx(dh / (dh + 5000 + dm))
    assert arc.hit_ratio_definition(after) == arc.HIT_RATIO_WITH_IOHITS
    old = parse_named(fixture("openzfs-2.1.11", "kstat_arcstats_after_write_load.txt"))
    assert "iohits" not in old and arc.hit_ratio_definition(old) == arc.HIT_RATIO_CLASSIC
    assert "iohits" in arc.FIELDS                     # the sampler reads it where it is published
