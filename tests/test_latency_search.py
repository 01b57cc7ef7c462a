"""A latency-target search (issue 73, 4): the highest IOPS at which a fio job's latency percentile
stays under a target, by bisection over fio's rate_iops (workloads/latsearch.py).

The bisection on a model machine whose latency grows with load as a queue's does (fast), the
runfile's refusals (fast), and real fio on real zfs-fuse at the two ends a machine's noise cannot
move: a target no rate can meet (1 µs: the figure 0, every step run and said) and one the full
load meets (10 s: the figure is the full load's IOPS, two sides of a sweep), in the record, the
report and compare."""

from __future__ import annotations

import json

import pytest

from helpers import flat, last_dir, records, why, write_runfile, zfsperf
from zfsperf.workloads import latsearch


def queue(cap: float, service_us: float, delivered: float = 1.0):
    """A machine of `cap` IOPS whose latency is service / (1 - load), as a queue's; `delivered`
    of each asked rate is done (1.0: all of it)."""
    asked: list[float | None] = []

    def run(rate: float | None) -> tuple[float, float]:
        asked.append(rate)
        load = 0.98 if rate is None else min(rate / cap, 0.98)
        return (cap if rate is None else rate * delivered), service_us / (1 - load)
    return run, asked


def test_the_bisection_brackets_the_rate_where_the_percentile_meets_the_target():
    run, asked = queue(cap=10_000, service_us=100)
    found = latsearch.search(run, target_us=400, percentile=99, klass="read", steps=8)
    true = 10_000 * (1 - 100 / 400)                     # latency 400 µs at 7,500 IOPS
    assert asked[0] is None and len(asked) == 9          # the full load first, then 8 steps
    assert found.low <= true <= found.high and found.high - found.low <= 10_000 / 2 ** 8 + 1
    assert [s.held for s in found.steps[1:]] == [s.latency_us <= 400 for s in found.steps[1:]]
    assert "read p99 ≤ 400 µs held up to " in found.sentence()
    d = found.as_dict()
    assert d["iops"] == found.low and d["bracket"] == [found.low, found.high] and len(d["steps"]) == 9


def test_the_ends_full_load_held_no_rate_held_and_a_rate_not_delivered():
    run, asked = queue(cap=5_000, service_us=100)
    found = latsearch.search(run, target_us=10_000, percentile=99, klass="write")
    assert asked == [None] and found.low == 5_000 and found.high is None
    assert found.sentence() == "write p99 ≤ 10 ms held at full load (5,000 IOPS)"
    run, asked = queue(cap=5_000, service_us=100)
    found = latsearch.search(run, target_us=50, percentile=99, klass="read", steps=3)
    assert found.low == 0 and found.high == 625 and len(asked) == 4
    assert "held at no rate tried" in found.sentence()
    # a machine that delivers 80 % of what it is asked: no step holds, however low its latency
    run, _ = queue(cap=5_000, service_us=100, delivered=0.8)
    assert latsearch.search(run, target_us=400, percentile=99, klass="read", steps=4).low == 0
    # whole I/Os a second: a bracket of one IOPS ends the search early
    run, asked = queue(cap=3, service_us=100)
    latsearch.search(run, target_us=120, percentile=99, klass="read", steps=10)
    assert all(r is None or float(r).is_integer() for r in asked) and len(asked) < 11


def test_a_target_takes_us_ms_and_s_or_a_number_of_us():
    assert [latsearch.parse_target(v) for v in ("500us", "500µs", "2ms", "0.5s", 250, 2.5)] == \
        [500, 500, 2000, 500_000, 250, 2.5]
    for bad in ("2", "2 min", "-1ms", "0ms", 0, True, "ms"):
        with pytest.raises(ValueError):
            latsearch.parse_target(bad)


def test_report_line_of_a_cases_searches():
    m = latsearch.merged([{"target_us": 2000, "percentile": 99, "class": "read", "iops": 1200.0,
                           "bracket": [1200.0, 1300.0], "steps": [{}] * 6},
                          {"target_us": 2000, "percentile": 99, "class": "read", "iops": 1000.0,
                           "bracket": [1000.0, 1100.0], "steps": [{}] * 6}])
    assert latsearch.line(m) == ("latency target: read p99 ≤ 2 ms held up to 1,100 IOPS (mean of 2 iterations; "
                                 "held … missed: 1,200 … 1,300; 1,000 … 1,100)")
    assert latsearch.merged([]) is None and latsearch.line(None) is None


BASE = """
[defaults]
iterations = 1
[defaults.pool]
vdevs = 1
vdev_size = "256M"
[[test]]
name = "lt"
workload = "fio"
rw = "randread"
bs = "4k"
size = "16M"
numjobs = 2
runtime = 1
"""


@pytest.mark.parametrize("extra,said", [
    ('latency_target = "2ms"\nlatency_percentile = 95', "test[1].latency_percentile: latency_percentile takes 50, 90, 99, 99.9"),
    ('latency_steps = 4', "test[1].latency_steps: latency_steps belongs to a latency-target search"),
    ('latency_target = "0ms"', "test[1].latency_target: latency_target: must be more than 0"),
    ('latency_target = "2ms"\nlatency_steps = 13', "test[1].latency_steps: latency_steps must be between 1 and 12"),
    ('latency_target = "2ms"\nlatency_class = "sync"', "test[1].latency_class: latency_class takes read, write or trim"),
    ('latency_target = "2ms"\nclients = ["h1"]', "test[1].latency_target: a latency-target search runs one job set"),
    ('latency_target = "2ms"\nduet = true\ndataset = { compression = ["off", "lz4"] }',
     "test[1].latency_target: a latency-target search bisects one job set's rate: it cannot duet"),
])
def test_a_search_the_runfile_cannot_hold_is_refused_with_its_line(tmp_path, extra, said):
    rf = write_runfile(tmp_path, BASE + extra + "\n")
    res = zfsperf("run", "-r", str(rf), "--dry-run")
    assert res.returncode == 2 and said in res.stderr and str(rf) in res.stderr, res.stderr


def test_real_fio_searches_the_ends_on_zfs_fuse(lab, tmp_path):
    rf = write_runfile(tmp_path, BASE + 'latency_target = "1us"\nlatency_steps = 3\n'
                       + BASE.split("[[test]]")[1].replace('name = "lt"', '[[test]]\nname = "loose"')
                       + 'latency_target = "10s"\ndataset = { compression = ["off", "lzjb"] }\n')
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "o"))
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    tight, loose, loose_lzjb = sorted(records(d), key=lambda r: (r["case"] != "lt", r["case"]))
    assert tight["status"] == loose["status"] == loose_lzjb["status"] == "PASS", [r["case"] for r in records(d)]
    s = tight["latency_search"]
    assert s["iops"] == 0 and tight["figures"]["latency_target_iops"] == {"value": 0.0, "unit": "IOPS"}
    assert s["target_us"] == 1 and s["percentile"] == 99 and s["class"] == "read"
    assert [st["rate"] for st in s["steps"]][0] is None and len(s["steps"]) == 4
    assert not any(st["held"] for st in s["steps"]) and s["bracket"][1] == s["steps"][-1]["rate"] > 0
    rates = [st["rate"] for st in s["steps"][1:]]
    assert rates == sorted(rates, reverse=True)              # missed every time: halving down
    full = s["steps"][0]["iops"]
    assert full == pytest.approx(tight["figures"]["iops"]["value"])   # the case's figures are the full load's
    # the steady verdict judges the full load's part of the series only (until 2026-12-05 the whole
    # series, every step's rate in one: a verdict about no load)
    st = tight["steady"]
    assert st["timescale"]["part"].startswith("the unthrottled step"), st
    sampled = [json.loads(ln) for ln in (d / tight["series"]).read_text().splitlines() if '"metrics"' in ln]
    assert 0 < st["timescale"]["raw_samples"] < len(sampled) / 2, (st, len(sampled))
    log = (d / "logs" / "lt.iter1.log").read_text()
    assert log.count("# latency search: rate_iops ") == 3 and "# latency search: unthrottled: " in log
    jobs = sorted((d / "logs").glob(f"{tight['case']}.i1.t*.fio"))
    assert len(jobs) == 4 and "rate_iops" not in jobs[0].read_text()
    assert f"rate_iops={int(round(rates[0] / 2))}" in jobs[1].read_text()      # each of the 2 jobs its half
    for k in range(4):
        assert json.loads((d / "fio" / f"{tight['case']}.i1.t{k}.json").read_text())["jobs"]
    ls = loose["latency_search"]
    assert len(ls["steps"]) == 1 and ls["bracket"][1] is None
    assert loose["figures"]["iops"]["value"] > 0
    assert loose["figures"]["latency_target_iops"]["value"] == pytest.approx(loose["figures"]["iops"]["value"])
    rep = flat(zfsperf("report", str(d)).stdout)              # lines wrapped to the terminal joined
    assert "latency target: read p99 ≤ 1 µs held up to 0 IOPS (mean of 1 iteration; held … missed: 0 … " in rep
    assert "latency target: read p99 ≤ 10 s held up to " in rep and "… full load)" in rep
    assert "judged on the unthrottled step" in rep, rep
    # compare: the figure judged like any, the two sides' searches said in words beside it
    cmp = zfsperf("compare", str(d))
    out = flat(cmp.stdout)
    assert "read p99 ≤ 10 s held up to " in out and "(its figure: latency_target_iops)" in out, cmp.stdout
    assert "latency_target_iops" in out
