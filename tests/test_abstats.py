"""The paired design's numbers agree with each other: its interval is the sign-flip test inverted.

CI printed `-30.5 % [-48.8 … -5.5 %], p 0.062, ~ (not significant)` for two builds in six blocks,
one of them reversed: an interval that excludes no change beside a test that does not reject it.
A reader cannot defend either. The interval is now the set of shifts the same exact test does
not reject, so "the interval excludes 0" and "p < 0.05" are one statement."""

import itertools
import math

import numpy as np
import pytest

from zfsperf.report import abstats


def excludes_no_change(est: abstats.Estimate) -> bool:
    assert est.ci is not None
    return est.ci[0] > 1 or est.ci[1] < 1


def test_six_blocks_one_reversed_is_neither_significant_nor_an_interval_without_zero():
    # CI's shape: five blocks 26-39 % slower, one block a little faster
    a = [2.7, 2.6, 2.8, 2.7, 2.65, 2.7]
    b = [1.8, 1.75, 1.9, 2.0, 1.85, 2.75]
    est = abstats.paired(a, b)
    assert est is not None and est.p is not None
    assert est.p == pytest.approx(4 / 64)                 # one sign reversed, the smallest: 4 of 64 flips
    assert not excludes_no_change(est), est
    # with six blocks the 95 % interval is the blocks' range of ratios: nothing narrower is defensible
    r = np.array(b) / np.array(a)
    assert est.ci[0] == pytest.approx(r.min(), rel=1e-6) and est.ci[1] == pytest.approx(r.max(), rel=1e-6)
    assert est.ci[0] <= est.ratio <= est.ci[1]


def test_interval_and_p_agree_on_every_shape():
    rng = np.random.default_rng(7)
    for n in (6, 7, 8, 10, 12, 20):
        for _ in range(20):
            a = np.exp(rng.normal(0, 0.05, n))
            b = a * np.exp(rng.normal(rng.choice([0, 0.02, 0.05, 0.2]), rng.choice([0.01, 0.05, 0.2]), n))
            est = abstats.paired(list(a), list(b))
            assert est is not None and est.ci is not None
            assert est.ci[0] <= est.ratio <= est.ci[1]
            assert excludes_no_change(est) == (est.p < abstats.ALPHA), (n, est)


def test_the_interval_is_the_set_the_test_does_not_reject():
    d = np.log([1.10, 1.02, 0.97, 1.08, 1.05, 1.12, 1.01, 1.06])
    est = abstats.paired([1.0] * len(d), list(np.exp(d)))
    lo, hi = math.log(est.ci[0]), math.log(est.ci[1])
    for delta, rejected in ((lo - 1e-6, True), (lo + 1e-6, False), (hi - 1e-6, False), (hi + 1e-6, True)):
        assert (abstats.sign_flip_p(d - delta) <= abstats.ALPHA) == rejected, delta


def test_sign_flip_p_is_the_exact_enumeration():
    d = np.array([0.3, -0.1, 0.2, 0.25, 0.05, 0.15, -0.02])
    flips = [abs(np.dot(s, d)) for s in itertools.product((1, -1), repeat=len(d))]
    want = sum(f >= abs(d.sum()) - 1e-12 for f in flips) / len(flips)
    assert abstats.sign_flip_p(d) == pytest.approx(want)


def test_under_six_blocks_no_interval_exists():
    est = abstats.paired([1, 1, 1, 1, 1], [2, 2.1, 1.9, 2.2, 2.05])
    assert est is not None and est.p == pytest.approx(2 / 32) and est.ci is None
