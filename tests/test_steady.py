"""The SNIA range/slope detector and the vote, on series whose answer is known by construction."""

import json

import numpy as np
import pytest

from conftest import zfsperf
from zfsperf.steady import Criteria, check_metric, decide


def series(values_by_metric: dict[str, list], dt: float = 1.0) -> list[dict]:
    n = len(next(iter(values_by_metric.values())))
    return [{"t": i * dt, "metrics": {k: v[i] for k, v in values_by_metric.items()}} for i in range(n)]


def test_hand_computed_five_point_window():
    """SNIA's 5-round window: y = 100 102 98 101 99 at t = 1..5.
    mean 100; range 4; slope = Σ(x−3)(y−100)/Σ(x−3)² = −3/10 = −0.3; excursion 0.3·4 = 1.2."""
    m = check_metric("iops", np.arange(1, 6, dtype=float), np.array([100, 102, 98, 101, 99], float),
                     Criteria(window=5))
    assert m.mean == pytest.approx(100) and m.range == pytest.approx(4) and m.excursion == pytest.approx(1.2)
    assert m.steady
    # a 5-point ramp 90..110: range 20 (= 20 % of 100, allowed), excursion 5·4 = 20 > 10: not steady
    r = check_metric("iops", np.arange(1, 6, dtype=float), np.array([90, 95, 100, 105, 110], float),
                     Criteria(window=5))
    assert r.range == pytest.approx(20) and r.range_ok and r.excursion == pytest.approx(20) and not r.slope_ok


def test_steady_series_is_steady_at_exactly_w():
    rng = np.random.default_rng(1)
    s = series({"a": list(1000 + rng.normal(0, 5, 60)), "b": list(50 + rng.normal(0, 0.5, 60))})
    v = decide(s, Criteria(window=20))
    assert v.steady and v.first_steady_index == 20


def test_ramp_is_never_steady():
    s = series({"a": list(np.linspace(100, 400, 80)), "b": list(np.linspace(10, 90, 80))})
    v = decide(s, Criteria(window=20))
    assert not v.steady and v.first_steady_index is None


def test_vote_and_unreadable_counts_as_steady():
    n = 40
    steady = [100.0] * n
    ramp = list(np.linspace(10, 1000, n))
    # 2 of 3 steady = 67 % < 70 %: not steady
    assert not decide(series({"a": steady, "b": steady, "c": ramp}), Criteria(window=10)).steady
    # an unreadable metric counts as steady and is flagged: 3 of 3 -> steady
    v = decide(series({"a": steady, "b": steady, "c": [None] * n}), Criteria(window=10))
    assert v.steady and v.first_steady_index == 10 and v.as_dict()["unreadable"] == ["c"]
    # a metric that ramps up and then settles: steady once the window has left the ramp
    settle = list(np.linspace(0, 100, 15)) + [100.0] * 25
    v = decide(series({"a": settle}), Criteria(window=10))
    assert v.steady and 15 < v.first_steady_index <= 26


def test_cli_steady_json_and_errors(tmp_path):
    p = tmp_path / "s.jsonl"
    rng = np.random.default_rng(2)
    p.write_text("\n".join(json.dumps(x) for x in series({"arc_size_pct": list(80 + rng.normal(0, 1, 30))})))
    res = zfsperf("steady", str(p), "--window", "5", "--json")
    out = json.loads(res.stdout)
    assert out["steady"] is True and out["first_steady_index"] == 5 and "arc_size_pct" in out["metrics"]
    res = zfsperf("steady", str(p), "--window", "5")
    assert "first steady at sample 5" in res.stdout and "arc_size_pct" in res.stdout
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"t": 0, "metrics": {}}\nnot json\n{"t": 2, "metrics": {}}\n')
    res = zfsperf("steady", str(bad))
    assert res.returncode == 2 and f"{bad}:2" in res.stderr


@pytest.mark.parametrize("text", ["", "hello, not a series\n", '{"zfsperf_version": "0.1.0", "host": "x"}\n',
                                  '{"status": "PASS", "figures": {}}\n{"status": "FAIL", "figures": {}}\n'])
def test_cli_steady_on_a_file_that_is_not_a_series_is_exit_2(tmp_path, text):
    """Issue 14, item 4: not "0 samples ... never steady" and exit 0, but a clear error."""
    p = tmp_path / "not-a-series.jsonl"
    p.write_text(text)
    res = zfsperf("steady", str(p))
    assert res.returncode == 2, res.stdout + res.stderr
    assert str(p) in res.stderr and "never steady" not in res.stdout


def test_cli_and_runner_share_one_default_window(tmp_path):
    """Issue 12, defect 13: `zfsperf steady` without --window decides as the runner does."""
    from zfsperf.steady import SteadySpec
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in series({"arc_size_pct": [80.0] * 15})))
    res = zfsperf("steady", str(p), "--json")
    out = json.loads(res.stdout)
    w = SteadySpec().criteria.window
    assert w == Criteria().window
    assert out["steady"] is True and out["first_steady_index"] == w
