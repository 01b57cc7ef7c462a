"""compare's three outcomes: WORSE / better, same within ±δ, or can't tell (with the change the data
could have seen). "Same" needs the whole 95 % interval inside ±δ and a design whose interval holds
the question's variance; one run a side without history never says it (its drift is unknown).

Checked on stored results directories, the way `zfsperf compare` reads them (exact, no ZFS)."""

import json
import random

from helpers import level_run as _run, stored_results as _results, throughput_change as _tp, zfsperf, flat

from zfsperf.cliargs import build_parser
from zfsperf.report.compare import MARGIN_PCT
from zfsperf.report.comparison import FigureChange
from zfsperf.report.designs import SAME_DESIGNS
from zfsperf.report.export.compare.text import verdict_text


def _sides(tmp_path, name: str, levels_a: list[float], levels_b: list[float], seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    a = [_results(tmp_path / f"{name}a{i}", _run(lv, rng, cv=0.005)) for i, lv in enumerate(levels_a)]
    b = [_results(tmp_path / f"{name}b{i}", _run(lv, rng, cv=0.005)) for i, lv in enumerate(levels_b)]
    return a, b


def test_runs_a_side_that_agree_closely_are_the_same_and_a_tight_margin_cannot_tell(tmp_path):
    a, b = _sides(tmp_path, "aa", [100.0, 100.6, 99.5, 100.2], [100.3, 99.7, 100.1, 99.9], seed=4)
    ch = _tp(zfsperf("compare", *map(str, a), "--vs", *map(str, b), "--json", "--no-history"))
    assert ch["design"] == "runs" and ch["verdict"] == "same" and ch["margin_pct"] == MARGIN_PCT, ch
    assert -MARGIN_PCT <= ch["ci_pct"][0] <= ch["ci_pct"][1] <= MARGIN_PCT
    out = flat(zfsperf("compare", *map(str, a), "--vs", *map(str, b), "--no-history").stdout)
    assert f"= same within ±{MARGIN_PCT:g} % ({ch['ci_pct'][0]:+.1f} … {ch['ci_pct'][1]:+.1f} %)" in out, out
    md = zfsperf("compare", *map(str, a), "--vs", *map(str, b), "--no-history", "--format", "md").stdout
    assert "= same within ±5 %" in md
    # the same data with a margin narrower than its interval: can't tell, and what it could see
    lo, hi = ch["ci_pct"]
    tight = max(abs(lo), abs(hi)) / 2
    ch2 = _tp(zfsperf("compare", *map(str, a), "--vs", *map(str, b), "--json", "--no-history", "--margin", f"{tight}"))
    assert ch2["verdict"] == "not significant" and "margin_pct" not in ch2, ch2
    out = flat(zfsperf("compare", *map(str, a), "--vs", *map(str, b), "--no-history", "--margin", f"{tight}").stdout)
    assert "could see ≥" in out
    # the gate passes a "same"
    gate = zfsperf("compare", *map(str, a), "--vs", *map(str, b), "--no-history", "--fail-on-regression", "5",
                   "--allow-setup-change")
    assert gate.returncode == 0, gate.stdout + gate.stderr


def test_a_real_drop_is_still_worse_and_a_wide_interval_cannot_tell(tmp_path):
    a, b = _sides(tmp_path, "ab", [100.0, 100.6, 99.5], [80.1, 79.7, 80.4], seed=5)
    ch = _tp(zfsperf("compare", *map(str, a), "--vs", *map(str, b), "--json", "--no-history"))
    assert ch["verdict"] == "worse" and ch["ci_pct"][1] < -MARGIN_PCT, ch
    a, b = _sides(tmp_path, "wide", [100.0, 108.0, 93.0], [104.0, 95.0, 101.0], seed=6)     # ~7 % between runs
    ch = _tp(zfsperf("compare", *map(str, a), "--vs", *map(str, b), "--json", "--no-history"))
    assert ch["verdict"] == "not significant" and (ch["ci_pct"][0] < -MARGIN_PCT or ch["ci_pct"][1] > MARGIN_PCT), ch


def test_one_run_a_side_without_history_never_says_same(tmp_path):
    """Its interval holds only the iterations' spread: the drift between separate runs is unknown,
    so an interval inside ±δ proves nothing about the runs."""
    rng = random.Random(7)
    a = _results(tmp_path / "a", _run(100.0, rng, cv=0.002, n=8))
    b = _results(tmp_path / "b", _run(100.0, rng, cv=0.002, n=8))
    ch = _tp(zfsperf("compare", str(a), str(b), "--json", "--no-history"))
    assert ch["design"] == "iterations" and ch["verdict"] != "same", ch
    assert "iterations" not in SAME_DESIGNS and "unpaired" not in SAME_DESIGNS


def test_the_rule_itself_and_its_flag():
    def change(verdict: str, design: str, ci: tuple[float, float] | None) -> FigureChange:
        ch = FigureChange("c", "throughput", "MiB/s", [1.0], [1.0], 1.0, 1.0, 0.0, ci, 0.5, verdict, design=design)
        ch.judge_same(5.0)
        return ch
    assert change("not significant", "turns", (-2.0, 3.0)).verdict == "same"
    assert change("within noise", "paired", (-0.5, -0.1)).verdict == "same"
    assert change("not significant", "turns", (-2.0, 5.1)).verdict == "not significant"
    assert change("not significant", "turns", None).verdict == "not significant"
    assert change("worse", "turns", (-3.0, -1.0)).verdict == "worse"          # a real change stays called
    assert change("too few iterations", "paired", (-1.0, 1.0)).verdict == "too few iterations"
    assert change("within unknown drift", "iterations", (-1.0, 1.0)).verdict == "within unknown drift"
    same = change("not significant", "duet", (-1.25, 0.5))
    assert verdict_text(same) == "= same within ±5 % (-1.2 … +0.5 %)" and same.as_dict()["margin_pct"] == 5.0
    half = FigureChange("c", "throughput", "MiB/s", [1.0], [1.0], 1.0, 1.0, 0.0, (-1.25, 0.5), 0.5,
                        "not significant", design="turns")
    half.judge_same(4.64534 / 2)             # a bisect step's margin: half of BAD's change, as computed
    assert verdict_text(half) == "= same within ±2.32 % (-1.2 … +0.5 %)", verdict_text(half)
    assert build_parser().parse_args(["compare", "a", "b"]).margin is None      # the run's own: margin_of
    res = zfsperf("compare", "a", "b", "--margin", "0")
    assert res.returncode == 2 and "--margin" in res.stderr
    assert json.loads(json.dumps(same.as_dict()))["verdict"] == "same"
