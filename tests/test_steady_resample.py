"""`zfsperf steady SERIES --interval S` re-decides at a coarser interval on each metric's mean over
each interval. The defect: it kept one raw sample per interval, so at --interval 1 a 0.4 s series'
pool metrics (zpool iostat reports once a second) were "unreadable" whenever the kept samples were
the ones without a report. A real recorded series (tests/fixtures/results-format2): fast."""

from __future__ import annotations


from helpers import FIXTURES, zfsperf


SERIES = FIXTURES / "results-format2" / "receive-fio" / "series" / "receive__threads=1.i1.jsonl"


def test_interval_means_keep_every_metric_that_was_read():
    from zfsperf import steady
    raw = steady.read_series(str(SERIES))
    coarse = steady.resample(raw, 1.0)
    assert len(raw) > len(coarse) >= 4
    for name in ("pool_mibs", "pool_kops", "workload_mibs"):
        assert sum(isinstance(s["metrics"].get(name), float) for s in coarse) >= 3, name
    out = zfsperf("steady", str(SERIES), "--method", "snia", "--interval", "1", "--window", "3").stdout
    pool = [ln for ln in out.splitlines() if ln.startswith(("pool_mibs", "pool_kops"))]
    assert len(pool) == 2 and not any("unreadable" in ln for ln in pool), out
