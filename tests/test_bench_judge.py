"""The benches' A/A counts (bench/power.py, build_turns.py, tunable_turns.py) judge a window of pairs
as compare itself does: a false alarm is a window compare calls better or WORSE. Since the 1 % noise
floor went (issue 69), a significant change under 1 % is such a call too: better or WORSE, told as
smaller than the margin, never "same"."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest


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


def test_six_tiny_gains_of_one_sign_are_a_call_told_as_smaller_than_the_margin():
    # the window session 32's duet A/A held: six differences of 0.1-0.3 %, p 0.031 by the exact test;
    # the 1 % floor printed it "within noise" (then "same"), hiding that the test called it
    b = _scaled([0.32, 0.27, 0.22, 0.26, 0.12, 0.19])
    assert power.verdict(A, b) == "better"
    assert power.called(power.paired(A, b))
    assert power.three_way([(np.array(A), np.array(b))]) == {"called": 1, "same": 0, "cant_tell": 0}


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


def _fio_slice(src: dict, iops: float, lat: float) -> dict:
    """A real fio json+ output (OpenZFS 2.3.2) with its reads' IOPS and latencies scaled."""
    o = json.loads(json.dumps(src))
    for job in o["jobs"]:
        job["read"]["iops"] *= iops
        clat = job["read"]["clat_ns"]
        clat["bins"] = {str(round(int(k) * lat)): v for k, v in clat["bins"].items()}
        clat["percentile"] = {k: v * lat for k, v in clat["percentile"].items()}
    return o


def test_fio_turns_slices_pair_each_slice_with_the_one_that_ran_beside_it(tmp_path):
    """bench/power.py judges fio turns also with the slice pair as the unit: side A's k-th slice of an
    iteration against side B's k-th (adjacent in ABBA). Planted slices share a level with the slice
    beside them (it changes slice by slice), and B is 10 % faster with latencies 10 % shorter: every
    pair then says exactly that, which only the right pairing does."""
    src = json.loads((Path(__file__).parent / "fixtures" / "openzfs-2.3.2" /
                      "fio_randrw_70-30_4k_numjobs2_jsonplus.json").read_text())
    (tmp_path / "fio").mkdir()
    rows = []
    for it in range(1, 5):
        # a record's case as a run writes it, and its slices' files as the fio workload names them
        for case, file, gain in (("rr zfsperf:arm=a", "rr__zfsperf_arm=a", 1.0),
                                 ("rr zfsperf:arm=b", "rr__zfsperf_arm=b", 1.1)):
            rows.append({"status": "PASS", "case": case, "sweep": {"zfsperf:arm": case[-1]}, "iteration": it,
                         "figures": {"iops": {"value": 100.0}}})
            for k in (1, 2):
                level = 1 + it / 10 + k / 100
                (tmp_path / "fio" / f"{file}.i{it}.s{k}.json").write_text(
                    json.dumps(_fio_slice(src, level * gain, level / gain)))
    (tmp_path / "results.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    a, b, where = power.slice_pairs(tmp_path, "iops")
    assert where.tolist() == [1, 1, 2, 2, 3, 3, 4, 4] and np.allclose(b / a, 1.1), (a, b)
    assert np.allclose(a / a[0], [(1 + it / 10 + k / 100) / 1.11 for it in range(1, 5) for k in (1, 2)])
    a, b, _ = power.slice_pairs(tmp_path, "read_lat_p99")
    assert np.allclose(b / a, 1 / 1.1, rtol=1e-3) and len(set(np.round(a, 3))) == 8, (a, b)
    windows = power.slice_windows(tmp_path, 2, 2, "iops")
    assert [(len(x), len(y)) for x, y in windows] == [(4, 4), (4, 4)]
    assert power.paired(*windows[0]) == "not significant"        # four pairs: the sign-flip test cannot call
    assert power.called(power.paired(*power.slice_pairs(tmp_path, "iops")[:2]))     # eight pairs all faster


def test_fio_turns_p99_of_merged_bins_is_judged_by_relabelling_slice_pairs():
    """bench/power.py's other p99 design: each side's p99 from its slices' json+ bins merged over the
    window, its p from relabelling whole slice pairs. Real bins (OpenZFS 2.3.2 fio json+), B's 10 %
    longer in every pair: of the 2^8 labellings of 8 pairs only the observed one and its mirror are
    that far apart; A against itself: no change; the planted scale moves B's side."""
    src = json.loads((Path(__file__).parent / "fixtures" / "openzfs-2.3.2" /
                      "fio_randrw_70-30_4k_numjobs2_jsonplus.json").read_text())
    bins = {int(k): v for k, v in src["jobs"][0]["read"]["clat_ns"]["bins"].items()}
    longer = {round(k * 1.1): v for k, v in bins.items()}
    assert power.merged_p99_p([(bins, longer)] * 8) == pytest.approx(2 / 2 ** 8)
    assert power.merged_p99_p([(bins, bins)] * 8) == 1.0
    assert power.merged_p99_p([(bins, bins)] * 8, scale=1.1) == pytest.approx(2 / 2 ** 8)
    # half the pairs one way, half the other: nothing to call
    assert power.merged_p99_p([(bins, longer), (longer, bins)] * 4) > 0.5
