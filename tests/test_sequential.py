"""--detect looks after every block and may stop on a decision: α stays honest (report.sequential).

The defect this guards: a run that stops as soon as its verdict is significant at 0.05, looking
after every block, calls an A/A changed far more often than 5 %. The simulations here are seeded:
their rates are fixed numbers for this code, not measurements that could flake."""

import json

import numpy as np
import pytest

from zfsperf.report import abstats, sequential
from zfsperf.report.abstats import ALPHA, MIN_BLOCKS


def _aa_false_alarms(levels_for, n_max: int, runs: int = 1500, seed: int = 3) -> float:
    """A/A sequences of log ratios (Gaussian), a look after every block from MIN_BLOCKS: the share
    that some look calls significant at the level levels_for(blocks) gives it."""
    rng = np.random.default_rng(seed)
    alarms = 0
    for _ in range(runs):
        d = rng.normal(0, 0.05, n_max)
        for b in range(MIN_BLOCKS, n_max + 1):
            if abstats.sign_flip_p(d[:b]) < levels_for(b):
                alarms += 1
                break
    return alarms / runs


def test_looking_after_every_block_at_005_is_the_defect_and_spending_keeps_alpha():
    n_max = 14
    naive = _aa_false_alarms(lambda b: ALPHA, n_max)
    spent = _aa_false_alarms(lambda b: sequential.level(b, MIN_BLOCKS, n_max, final=(b == n_max)), n_max)
    se = (ALPHA * (1 - ALPHA) / 1500) ** 0.5
    assert naive > ALPHA + 4 * se, naive           # the defect: about twice the promised rate
    assert spent <= ALPHA + 2 * se, spent           # spent over the looks: within α


def test_the_levels_spend_alpha_and_a_final_look_spends_what_is_left():
    lv = sequential.levels(tuple(range(6, 13)), 12, final=True)
    assert all(0 <= x <= ALPHA for x in lv)
    assert list(lv[:-1]) == sorted(lv[:-1])         # O'Brien-Fleming type: early looks held tighter
    assert lv[0] < 0.01 and lv[-1] > 0.03
    # a run that stops at block 8 for a reason unrelated to the change makes block 8 its last look
    early = sequential.level(8, 6, 12, final=True)
    assert sequential.level(8, 6, 12, final=False) < early <= ALPHA
    assert sequential.levels((6, 7, 8), 12, final=True) == sequential.levels((6, 7, 8), 12, final=True)
    assert sequential.spent(1.0) == ALPHA and sequential.spent(0.25) < 0.001
    with pytest.raises(ValueError):
        sequential.levels((8, 6), 12, final=True)


def test_compare_judges_a_detect_run_at_its_recorded_level(tmp_path):
    """A run that looked 7 times is judged at the level of its last look, said beside the verdict:
    p 0.031 is significant at 0.05 and not at the recorded 0.0276."""
    from helpers import stored_results
    from zfsperf.report.compare import compare_within
    from zfsperf.report.pairing import ab_pairs
    from zfsperf.report.model import load_run
    d = tmp_path / "r"
    a = [100.0, 101, 99, 100, 102, 98]
    b = [95.0, 96, 94, 95.5, 97, 93]
    stored_results(d, [], interleave=True)
    recs = []
    for i, (x, y) in enumerate(zip(a, b), 1):
        for case, v, sweep in (("c x=1", x, 1), ("c x=2", y, 2)):
            recs.append({"case": case, "test": "c", "workload": "receive", "iteration": i, "status": "PASS",
                         "sweep": {"x": sweep}, "figures": {"throughput": {"value": v, "unit": "MiB/s"}}})
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    run = load_run(d)
    plain = next(c for c in compare_within(run, ab_pairs(run)).changes if c.figure == "throughput")
    assert plain.verdict == "worse" and plain.p == pytest.approx(2 / 64)
    info = json.loads((d / "run.json").read_text())
    info["detect"] = {"stopped_by": "max_iterations", "blocks": 6,
                      "sequential": {"method": sequential.METHOD, "looks": 1, "alpha": 0.0276}}
    (d / "run.json").write_text(json.dumps(info))
    run = load_run(d)
    ch = next(c for c in compare_within(run, ab_pairs(run)).changes if c.figure == "throughput")
    assert ch.verdict == "not significant" and "α = 0.0276" in ch.note, ch
    assert ch.ci_pct is None                         # no 97.2 % interval exists with 6 blocks
