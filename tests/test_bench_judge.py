"""The benches' A/A counts (bench/power.py, build_turns.py, tunable_turns.py) judge a window of pairs
as compare itself does: a false alarm is a window compare calls better or WORSE, not one whose p is
under 0.05 while compare says "within noise" (a significant change under its 1 % floor)."""

import importlib.util
import json
from pathlib import Path

import numpy as np


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", Path(__file__).resolve().parents[1] / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


power = _bench("power")
build_turns = _bench("build_turns")

A = [100.0, 98.0, 103.0, 101.0, 99.0, 102.0]


def _scaled(pcts: list[float]) -> list[float]:
    return [a * (1 + p / 100) for a, p in zip(A, pcts)]


def test_six_tiny_gains_of_one_sign_are_within_noise_not_a_false_alarm():
    # the window session 32's duet A/A held: six differences of 0.1-0.3 %, p 0.031 by the exact test
    b = _scaled([0.32, 0.27, 0.22, 0.26, 0.12, 0.19])
    assert power.verdict(A, b) == "within noise"
    assert not power.called(power.paired(A, b))
    assert power.three_way([(np.array(A), np.array(b))]) == {"called": 0, "same": 1, "cant_tell": 0}


def test_a_window_compare_calls_is_counted_both_ways():
    gain = _scaled([4.0, 5.0, 6.0, 3.0, 5.5, 4.5])
    loss = _scaled([-4.0, -5.0, -6.0, -3.0, -5.5, -4.5])
    assert power.verdict(A, gain) == "better" and power.verdict(A, loss) == "worse"
    assert power.called(power.paired(A, gain)) and power.called(power.paired(A, loss))


def test_mixed_signs_are_not_significant():
    b = _scaled([4.0, -5.0, 6.0, -3.0, 5.5, -4.5])
    assert power.verdict(A, b) == "not significant"


def test_a_pairs_spread_is_taken_apart_into_its_rounds_and_its_iterations(tmp_path, capsys):
    """bench/build_turns.py's spread_parts on planted rounds: a round's own noise (sd 10 %), a slower
    second round alike on both sides (the pool filling: left out), and a shift of one side's whole
    iteration (sd 6 %) that more rounds cannot narrow. It recovers both parts."""
    rng = np.random.default_rng(7)
    rows, pairs = [], []
    for it in range(1, 401):
        logs = {}
        for side in ("a", "b"):
            t = np.array([0.0, 0.3, 0.3, 0.5]) + rng.normal(0, 0.06) + rng.normal(0, 0.10, 4)
            logs[side] = t
            rows.append({"status": "PASS", "sweep": {"build": side}, "iteration": it,
                         "streams": [{"round": k, "seconds": float(np.exp(x))} for k, x in enumerate(t)]})
        pairs.append(np.log(np.exp(logs["a"]).sum() / np.exp(logs["b"]).sum()))
    f = tmp_path / "results.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    pair_sd = float(np.std(pairs, ddof=1) * 100)
    parts = build_turns.spread_parts([f], pair_sd)
    assert 9.5 < parts["round_sd_pct"] < 10.5 and parts["rounds_a_side"] == 4, parts
    assert 6.5 < parts["between_iterations_pct"] < 10.5, parts      # sqrt(2) x 6 % = 8.5 %: one shift a side
    assert "between iterations" in capsys.readouterr().out

