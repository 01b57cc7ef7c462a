"""fio JSON parsers on output captured from real fio-3.33 against real OpenZFS, and the quantize
renderer against the exact layout of the read-starvation study's quantize histograms (DTrace-style
power-of-two buckets: value, bar of @, count)."""

import json
import subprocess

import pytest

from helpers import VERSIONS, fixture
from zfsperf.errors import InputError
from zfsperf.metrics import fiojson
from zfsperf.metrics.quantize import quantize, render
from zfsperf.workloads.fio import histograms, stats_figures



@pytest.mark.parametrize("version", VERSIONS)
def test_jsonplus_numjobs2_merges_exactly(version):
    obj = fiojson.parse(fixture(version, "fio_randrw_70-30_4k_numjobs2_jsonplus.json"))
    jobs = obj["jobs"]
    res = fiojson.result(obj)
    for cls in ("read", "write"):
        st = res.classes[cls]
        assert st.ios == sum(j[cls]["total_ios"] for j in jobs)
        assert st.iops == pytest.approx(sum(j[cls]["iops"] for j in jobs))
        n = [j[cls]["clat_ns"]["N"] for j in jobs]
        assert st.lat_mean_ns == pytest.approx(sum(j[cls]["clat_ns"]["mean"] * k for j, k in zip(jobs, n)) / sum(n))
        assert st.lat_max_ns == max(j[cls]["clat_ns"]["max"] for j in jobs)
        # the quantize histogram holds every I/O fio counted for that direction
        h = histograms(res.classes)[cls]
        assert sum(c for _b, c in h["buckets"]) == st.ios
    assert "trim" not in histograms(res.classes)           # no trims: no histogram
    figs = stats_figures(res.classes)
    assert figs["read_iops"]["unit"] == "IOPS" and figs["write_lat_p99"]["unit"] == "us"
    assert figs["iops"]["value"] == pytest.approx(res.classes["read"].iops + res.classes["write"].iops)


@pytest.mark.parametrize("version", VERSIONS)
def test_plain_json_has_percentiles_but_no_bins(version):
    res = fiojson.result(fiojson.parse(fixture(version, "fio_fill_small_100M.json")))
    w = res.classes["write"]
    assert w.ios > 0 and not w.bins and "99.000000" in w.percentiles_ns
    assert "write_lat_p99" in stats_figures(res.classes)


@pytest.mark.parametrize("version", VERSIONS)
def test_status_interval_stream(version):
    text = fixture(version, "fio_status-interval_1_json.txt")
    objs = fiojson.split_objects(text)
    assert len(objs) >= 3
    prog = [fiojson.progress(o)["ios"] for o in objs]
    assert prog == sorted(prog) and prog[-1] > 0              # cumulative
    assert fiojson.parse(text) is objs[-1] or fiojson.parse(text) == objs[-1]


def test_bad_fio_output_is_a_clear_error():
    with pytest.raises(InputError, match="no fio JSON result"):
        fiojson.parse("fio: pid=1, err=28/file:io_u.c:1845, func=io_u error, error=No space left on device")
    with pytest.raises(InputError, match="not a number"):
        fiojson.result({"jobs": [{"jobname": "x", "read": {"total_ios": "many"}}]})


SEED_READ = """\
           value  ------------- Distribution ------------- count    
              32 |                                         0        
              64 |                                         12       
             128 |                                         48       
             256 |@                                        124      
             512 |@@@@@@@@@@                               2046     
            1024 |@@@@                                     906      
            2048 |@@@@@@                                   1244     
            4096 |@@@@@@@                                  1523     
            8192 |@@@@@@                                   1228     
           16384 |@@@@                                     774      
           32768 |@                                        173      
           65536 |                                         26       
          131072 |                                         22       
          262144 |                                         5        
          524288 |                                         0        """


def test_quantize_matches_seed_003_layout():
    # the study's Read histogram (µs buckets) rebuilt from one value per bucket
    counts = {64: 12, 128: 48, 256: 124, 512: 2046, 1024: 906, 2048: 1244, 4096: 1523, 8192: 1228,
              16384: 774, 32768: 173, 65536: 26, 131072: 22, 262144: 5}
    rows = quantize(((b * 1000 + 1, c) for b, c in counts.items()), scale=1000)
    assert render(rows) == SEED_READ


def _old(obj, version):
    """A real fio 3.33 result made to look as fio < 3.18 prints it: no N in the latency, an old
    "fio version" (derived from the real capture; fio 3.7 JSON lacks exactly that field)."""
    import copy
    o = copy.deepcopy(obj)
    o["fio version"] = version
    for j in o["jobs"]:
        for cls in ("read", "write", "trim"):
            j[cls]["clat_ns"].pop("N", None)
            j[cls]["lat_ns"].pop("N", None)
    return o


@pytest.mark.parametrize("version", ["fio-3.7", "fio-2.2.10"])
def test_fio_older_than_3_18_is_refused_clearly(version):
    """Without N the merged latency was the first job's, and fio 2.x bytes are
    KiB: refused, naming the version, instead of a number that looks right."""
    obj = json.loads(fixture("openzfs-2.3.2", "fio_randrw_70-30_4k_numjobs2_jsonplus.json"))
    with pytest.raises(InputError, match=version.replace(".", r"\.") + ".*3.18"):
        fiojson.result(_old(obj, version))
    # the same without a version string: refused for the missing N itself
    o = _old(obj, "fio-3.7")
    del o["fio version"]
    with pytest.raises(InputError, match="no sample count N"):
        fiojson.result(o)


def test_percentiles_without_bins_do_not_merge_to_the_first_jobs():
    obj = json.loads(fixture("openzfs-2.3.2", "fio_randrw_70-30_4k_numjobs2_jsonplus.json"))
    for j in obj["jobs"]:
        for cls in ("read", "write", "trim"):
            j[cls]["clat_ns"].pop("bins", None)
    first = fiojson.class_stats(obj["jobs"][0], "read")
    assert first.percentiles_ns and not first.bins
    merged = fiojson.result(obj).classes["read"]
    assert merged.percentiles_ns == {}                  # unknown, not job 0's
    assert merged.lat_n == sum(j["read"]["clat_ns"]["N"] for j in obj["jobs"])


def test_unified_mixed_output_is_read_not_dropped():
    obj = json.loads(fixture("openzfs-2.3.2", "fio_randrw_70-30_4k_numjobs2_jsonplus.json"))
    for j in obj["jobs"]:
        j["mixed"] = j.pop("read")
        j.pop("write"), j.pop("trim")
        j.pop("sync", None)
    res = fiojson.result(obj)
    assert set(res.classes) == {"mixed"} and res.classes["mixed"].ios > 0
    for j in obj["jobs"]:
        j.pop("mixed")
    with pytest.raises(InputError, match="no I/O class"):
        fiojson.result(obj)


def _real_fio(tmp_path, *options: str) -> dict:
    """Real fio (3.33 here) on a small file: the output forms a user's options make."""
    out = subprocess.run(["fio", "--name=t", f"--filename={tmp_path / 'f'}", "--size=2M", "--rw=randrw",
                          "--bs=4k", "--ioengine=psync", "--randseed=1", "--output-format=json+", *options],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return fiojson.parse(out)


@pytest.mark.parametrize("version, want", [("fio-3.6-31-g4386", (3, 6)), ("fio-3.33", (3, 33)),
                                           ("fio-3.36-rc1", (3, 36)), ("fio-3.18", (3, 18)),
                                           ("fio-2.1.10", (2, 1)), ("fio-3", (3, 0))])
def test_fio_version_strings_including_git_describe(version, want):
    """A git-describe build fio-3.6-31-g4386 came back as (3, 6314386) and passed the >= 3.18 check."""
    assert fiojson.fio_version({"fio version": version}) == want


def test_unified_rw_reporting_both_counts_every_io_once(tmp_path):
    """With =both fio prints read, write AND mixed (their sum): the totals counted each I/O twice."""
    obj = _real_fio(tmp_path, "--unified_rw_reporting=both")
    job = obj["jobs"][0]
    assert job["mixed"]["total_ios"] == job["read"]["total_ios"] + job["write"]["total_ios"] > 0
    res = fiojson.result(obj)
    figs = stats_figures(res.classes)
    assert figs["iops"]["value"] == pytest.approx(job["read"]["iops"] + job["write"]["iops"])
    assert figs["bw"]["value"] == pytest.approx((job["read"]["bw_bytes"] + job["write"]["bw_bytes"]) / 1048576)
    assert figs["mixed_iops"]["value"] == pytest.approx(job["mixed"]["iops"])      # still shown, as fio's sum
    assert fiojson.progress(obj)["ios"] == job["mixed"]["total_ios"]
    # =mixed alone: the one class is the total, and progress counts it
    only = _real_fio(tmp_path, "--unified_rw_reporting=mixed")
    assert stats_figures(fiojson.result(only).classes)["iops"]["value"] == pytest.approx(only["jobs"][0]["mixed"]["iops"])
    assert fiojson.progress(only)["ios"] == only["jobs"][0]["mixed"]["total_ios"] > 0
    assert "mixed" in histograms(fiojson.result(only).classes)


def test_total_latency_percentiles_are_read_and_named(tmp_path):
    """lat_percentiles=1, clat_percentiles=0: fio puts percentiles and bins under lat_ns only; p99
    and the histogram vanished. Now read, and named as total (not completion) latency."""
    obj = _real_fio(tmp_path, "--lat_percentiles=1", "--clat_percentiles=0")
    job = obj["jobs"][0]
    assert "percentile" not in job["read"]["clat_ns"] and "percentile" in job["read"]["lat_ns"]
    st = fiojson.result(obj).classes["read"]
    assert st.lat_kind == "total" and st.lat_n == job["read"]["lat_ns"]["N"]
    assert st.lat_mean_ns == pytest.approx(job["read"]["lat_ns"]["mean"])
    figs = stats_figures(fiojson.result(obj).classes)
    assert figs["read_lat_p99"]["value"] > 0
    h = histograms(fiojson.result(obj).classes)
    assert h["read"]["latency"] == "total" and h["read"]["title"] == "Read total" and h["read"]["count"] > 0
    default = fiojson.result(_real_fio(tmp_path)).classes["read"]
    assert default.lat_kind == "completion" and default.percentiles_ns
