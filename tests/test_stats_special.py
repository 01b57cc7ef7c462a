"""The distributions and lines a run decides with, from scipy.special and numpy (results.stats), held
equal to scipy.stats's and scipy.ndimage's, which a run no longer imports: 13-15 s and 7 s inside the
OpenZFS guest under emulation, paid by every in-guest run that decided steady state or judged an A/B."""

import subprocess
import sys

import numpy as np
import pytest
from scipy import ndimage, stats

from zfsperf.results import stats as S


@pytest.mark.parametrize("df", [0.5, 1, 2, 2.5, 5, 11, 30, 1e6, np.inf])
def test_t_and_chi2_and_normal_as_scipy_stats_gives_them(df):
    for q in (0.5, 0.8, 0.9, 0.975, 0.995):
        assert S.t_quantile(q, df) == pytest.approx(stats.t.ppf(q, df), rel=1e-12)
        assert S.chi2_ppf(q, df) == pytest.approx(stats.chi2.ppf(q, df), rel=1e-9, nan_ok=True)
        assert S.norm_ppf(q) == pytest.approx(stats.norm.ppf(q), rel=1e-12)
    for x in (0.0, 0.7, 2.0, 4.5, 30.0):
        assert S.t_sf(x, df) == pytest.approx(stats.t.sf(x, df), rel=1e-10, abs=1e-300)
        assert S.norm_cdf(x) == pytest.approx(stats.norm.cdf(x), rel=1e-12)
        assert S.norm_sf(x) == pytest.approx(stats.norm.sf(x), rel=1e-10, abs=1e-300)


@pytest.mark.parametrize("n", [3, 4, 6, 10, 41])
def test_a_line_and_theil_sen_as_scipy_stats_gives_them(n):
    rng = np.random.default_rng(n)
    for x in (np.arange(n, dtype=float), np.sort(rng.uniform(0, 9, n)), np.delete(np.arange(n + 1.0), n // 2)):
        for y in (rng.normal(size=n) + 0.3 * x, 5 + 0 * x, 2 * x + 1, np.round(rng.normal(size=n))):
            got, want = S.line_fit(x, y), stats.linregress(x, y)
            assert got.slope == pytest.approx(want.slope, abs=1e-12)
            assert got.intercept == pytest.approx(want.intercept, abs=1e-12)
            assert got.stderr == pytest.approx(want.stderr, abs=1e-12, nan_ok=True)
            assert got.pvalue == pytest.approx(want.pvalue, rel=1e-9, abs=1e-15, nan_ok=True)
            assert S.theil_slope(x, y) == pytest.approx(stats.theilslopes(y, x)[0], abs=1e-12)


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 12, 100])
def test_the_running_median_as_scipy_ndimage_gives_it(n):
    rng = np.random.default_rng(n)
    for y in (rng.normal(size=n), np.round(rng.normal(size=n)), np.arange(n, dtype=float) ** 2):
        assert np.array_equal(S.median_filter5(y), ndimage.median_filter(y, size=5, mode="mirror"))


def test_a_run_decides_and_judges_without_scipy_stats_or_ndimage():
    """Steady state decided both ways (the changepoint method, the rounds rule), an A/B judged
    (paired, with its interval and detectable change), the sequential levels and history's test:
    none of them imports scipy.stats or scipy.ndimage any more."""
    probe = """
import sys
import numpy as np
from zfsperf import steady
from zfsperf.steady.rounds import noise_aware_rule
from zfsperf.steady.verdict import Criteria
from zfsperf.report import abstats, sequential
rng = np.random.default_rng(1)
samples = [{"t": float(i), "workload_mibs": 100 + rng.normal()} for i in range(60)]
v = steady.decide(samples, Criteria(), headline="workload_mibs")
r = noise_aware_rule(list(100 + rng.normal(size=8)), grow=True)
e = abstats.paired(list(100 + rng.normal(size=8)), list(97 + rng.normal(size=8)))
h = abstats.history(100.0, 96.0, list(100 + rng.normal(size=6)))
u = abstats.ratio_ci(100 + rng.normal(size=60), 97 + rng.normal(size=60))
lv = sequential.levels((6, 12), 12, True)
assert v is not None and r.ok is not None and e.ci and h.ci and u and lv
print(" ".join(sorted(m for m in sys.modules if m in ("scipy.stats", "scipy.ndimage"))))
"""
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "", res.stdout
