"""Per-class latency histograms A against B (issue 42, item 4): the p99 read from power-of-two
buckets, its interval from resampling iterations, and the side-by-side text a pull request shows."""

import numpy as np
import pytest

from zfsperf.report import classhist
from zfsperf.report.model import CaseData
from zfsperf.results.record import CaseRecord, Status


def test_the_p99_is_interpolated_inside_its_power_of_two_bucket():
    assert classhist.quantile([[512, 99], [1024, 1]]) == pytest.approx(1024.0)      # the 99th of 100: 512's top
    assert classhist.quantile([[512, 98], [1024, 2]]) == pytest.approx(1024 + 1024 * 0.5)
    assert classhist.quantile({0: 50, 1: 50}, 0.5) == pytest.approx(1.0)
    assert np.isnan(classhist.quantile([[8, 0]]))


def _case(name: str, iterations: list[dict[int, int]]) -> CaseData:
    c = CaseData("t", name, "fio", {})
    for i, counts in enumerate(iterations, 1):
        r = CaseRecord(test="t", case=name, sweep={}, iteration=i, workload="fio", status=Status.PASS)
        r.histograms = {"read": {"title": "Read", "unit": "us", "buckets": [[b, n] for b, n in sorted(counts.items())]}}
        c.records.append(r)
    return c


def test_a_slower_tail_is_seen_with_an_interval_and_an_a_a_interval_holds_zero():
    rng = np.random.default_rng(3)

    def side(tail: int) -> list[dict[int, int]]:
        return [{256: int(rng.integers(900, 1000)), 512: int(rng.integers(80, 100)), 1024: tail + int(rng.integers(0, 3))}
                for _ in range(6)]
    a, b, a2 = _case("A", side(5)), _case("B", side(60)), _case("A2", side(5))
    (ch,) = classhist.changes(a, b, "A → B", paired=True)
    assert ch.cls == "read" and ch.change_pct > 20 and ch.ci_pct[0] > 0
    assert sum(n for _b, n in ch.a) == sum(sum(it.values()) for it in [dict(map(tuple, r.histograms["read"]["buckets"]))
                                                                       for r in a.records])
    (aa,) = classhist.changes(a, a2, "A → A2", paired=True)
    assert aa.ci_pct[0] < 0 < aa.ci_pct[1]
    text = ch.side_by_side()
    assert "A | B" in text and text.count("\n") == 1 + len({b for b, _n in ch.a + ch.b})
    # two iterations a side: the p99s and no interval
    (few,) = classhist.changes(_case("x", side(5)[:2]), _case("y", side(60)[:2]), "x → y", paired=True)
    assert few.ci_pct is None and "[" not in few.line()


def test_an_a_a_interval_leaves_out_zero_no_more_often_than_its_level():
    """The defect: the p99 interval was a percentile bootstrap over iterations, which on the
    starvation mix's A/A in the guest left out 0 in 13-15 % of windows of 6 (nominal 5 %). Simulated
    A/As (iterations that vary as real turns do: each iteration's and each turn's tail weight
    drawn, both sides from one law) must leave it out in no more than about 5 %."""
    rng = np.random.default_rng(11)

    def turn(u: float) -> dict[int, int]:
        v = u * rng.lognormal(0, 0.35)
        return {256: int(rng.poisson(900)), 512: int(rng.poisson(80)), 1024: int(rng.poisson(12 * v)),
                2048: int(rng.poisson(4 * v)), 4096: int(rng.poisson(1 * v))}
    reps, left_out = 200, 0
    for _ in range(reps):
        us = rng.lognormal(0, 0.35, 6)
        a, b = {i: turn(u) for i, u in enumerate(us)}, {i: turn(u) for i, u in enumerate(us)}
        lo, hi = classhist._interval(a, b, paired=True)
        left_out += lo > 0 or hi < 0
    assert left_out <= 0.075 * reps, f"an A/A's interval left out 0 in {left_out} of {reps}"
