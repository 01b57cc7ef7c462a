"""fio JSON parsers on output captured from real fio-3.33 against real OpenZFS, and the quantize
renderer against seed 003's exact layout."""

import json

import pytest

from conftest import VERSIONS, fixture
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
    """Issue 12, defect 8: without N the merged latency was the first job's, and fio 2.x bytes are
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
