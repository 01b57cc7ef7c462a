"""iterations = "steady" (issue 86): a case goes on until its steady verdict is decided, judged on
a window that grows with it; each look at a level that keeps the stopping from inflating either
error. Generated iterations, in process: the rule and the runner's stop, no ZFS."""

from __future__ import annotations

import numpy as np
import pytest

from zfsperf.results.record import CaseRecord, StopReason
from zfsperf.errors import InputError
from zfsperf.runfile import loads
from zfsperf.runner import Precision
from zfsperf.steady import rounds


def _records(values: list[float]) -> list[CaseRecord]:
    return [CaseRecord.from_json({"case": "t", "status": "PASS", "iteration": i + 1, "figures": {"t": {"value": v}},
                                  "steady": {"samples": 3, "steady": False, "criteria": {"window": 10}}})
            for i, v in enumerate(values)]


def _until_decided(values: list[float], cap: int = rounds.GROW_CAP):
    """The runner's stop, fed the values one iteration at a time: (iterations run, why it stopped)."""
    p = Precision(None, rounds.GROW_FIRST, cap, 3600.0, "t", until_steady=True)
    for n, rec in enumerate(_records(values), start=1):
        p.add(rec)
        why = p.decided(n)
        if why is not None:
            return n, why
    raise AssertionError("never stopped")


def _series(drift_pct: float, cv_pct: float, n: int, rng: np.random.Generator) -> list[float]:
    """n iterations drifting drift_pct across every ROUNDS_WINDOW of them, with a spread of cv_pct."""
    i = np.arange(n)
    return list(100 * (1 + drift_pct / 100 * i / (rounds.ROUNDS_WINDOW - 1)) * (1 + cv_pct / 100 * rng.standard_normal(n)))


def test_a_flat_case_stops_steady_before_its_cap_and_says_after_how_many():
    rng = np.random.default_rng(3)
    values = _series(0, 2, rounds.GROW_CAP, rng)
    n, why = _until_decided(values)
    assert why.stopped_by == StopReason.STEADY and rounds.GROW_FIRST <= n < rounds.GROW_CAP, (n, why)
    assert why.until == "steady" and why.cap == rounds.GROW_CAP and why.iterations == n
    recs = _records(values[:n])
    recs[-1].precision = why
    v = rounds.case_verdict(recs, "t")              # read back from the records alone, as a report does
    assert v.steady is True and f"the {n} iterations within" in v.why and "per 5 iterations ruled out" in v.why, v
    assert v.window == list(range(1, n + 1)) and v.look_alpha == rounds.LOOK_ALPHA


def test_a_drifting_case_stops_not_steady():
    n, why = _until_decided(_series(25, 2, rounds.GROW_CAP, np.random.default_rng(4)))
    assert why.stopped_by == StopReason.STEADY and n < rounds.GROW_CAP, (n, why)


def test_a_noisy_case_reaches_its_cap_cant_tell_and_says_how_many_more_would_decide():
    values = _series(0, 12, 8, np.random.default_rng(5))
    n, why = _until_decided(values, cap=8)
    assert n == 8 and why.stopped_by == StopReason.MAX_ITERATIONS, (n, why)
    recs = _records(values)
    recs[-1].precision = why
    v = rounds.case_verdict(recs, "t")
    assert v.word == "can't tell" and v.more and v.more > 0, v
    assert f"about {v.more} more iteration(s) would decide it at this spread and drift" in v.why, v
    assert "stopped by max_iterations after 8 iterations" in v.why, v
    # the more asked for, were the spread and the line's drift the same, would decide it: the
    # drift's interval, narrowed by them, fits inside ±10 %; one fewer would not
    na = rounds.noise_aware_rule(values, grow=True, alpha=v.look_alpha)
    drift = (na.trend_lo + na.trend_hi) / 2
    room = 1 - abs(drift) / 10

    def half(m: int) -> float:
        return 10 * na.spread_pct / (room * rounds.cv_that_rules_out(np.arange(m - 1, dtype=float), 4, v.look_alpha))
    assert abs(drift) + room * half(8 + v.more) <= 10 < abs(drift) + room * half(8 + v.more - 1), (drift, v.more)


def test_a_failed_iteration_stops_the_case():
    recs = _records([100.0, 101.0])
    recs[1] = CaseRecord.from_json({"case": "t", "status": "FAIL", "iteration": 2, "figures": {}})
    p = Precision(None, rounds.GROW_FIRST, 12, 3600.0, "t", until_steady=True)
    p.add(recs[0])
    assert p.decided(1) is None
    p.add(recs[1])
    assert p.decided(2).stopped_by == StopReason.FAILED


def _rates(drift: float, cv: float, cap: int, trials: int, seed: int) -> tuple[float, float]:
    """(share called steady, share called not steady) of simulated cases stopped at their first
    decided look, by the product's own rule (rounds.growing_verdict)."""
    rng = np.random.default_rng(seed)
    said = {True: 0, False: 0, None: 0}
    for _ in range(trials):
        y = _series(drift, cv, cap, rng)
        v = None
        for n in range(rounds.GROW_FIRST, cap + 1):
            v = rounds.growing_verdict(y[:n], cap).steady
            if v is not None:
                break
        said[v] += 1
    return said[True] / trials, said[False] / trials


def _share_bounds(k: float, trials: int) -> tuple[float, float]:
    """The 95 % Clopper-Pearson interval of a share k seen in trials."""
    from scipy.stats import binomtest
    ci = binomtest(round(k * trials), trials).proportion_ci()
    return ci.low, ci.high


def test_the_stopping_rule_keeps_both_errors_within_5_percent_and_needs_its_correction(monkeypatch):
    """At a 10 % spread and a cap of 20 (16 looks): a 15 % drift called steady, and no drift called
    not steady, not shown above 5 % of simulated cases (the share's own 95 % interval reaches
    below it); read at 95 % a look (no correction for stopping at the first decided one), no
    drift is called not steady shown above 5 % (18 of 100 cases; bench/steady_eval.py --growing
    gives the whole grid)."""
    trials = 100
    steady_on_drift = _rates(15, 10, 20, trials, 11)[0]
    unsteady_on_flat = _rates(0, 10, 20, trials, 12)[1]
    assert _share_bounds(steady_on_drift, trials)[0] <= 0.05, steady_on_drift
    assert _share_bounds(unsteady_on_flat, trials)[0] <= 0.05, unsteady_on_flat
    monkeypatch.setattr(rounds, "LOOK_ALPHA", rounds.TREND_ALPHA)
    uncorrected = _rates(0, 10, 20, trials, 12)[1]
    assert _share_bounds(uncorrected, trials)[0] > 0.05, uncorrected


def test_the_runfile_takes_steady_as_iterations_with_its_cap_and_refuses_what_cannot_wait():
    base = ('[[test]]\nname = "r"\nworkload = "receive"\ncorpus = { kind = "random", size = "4M" }\n'
            'iterations = "steady"\n')
    t = loads(base, "r.toml").tests[0]
    assert t.until_steady and t.iterations == rounds.GROW_FIRST and t.steady_cap == rounds.GROW_CAP
    assert t.steady_budget == 100 and t.max_iterations == 30 and t.budget == 1800     # precision's, --detect's
    given = loads(base + 'max_iterations = 8\nbudget = "5m"\n', "r.toml").tests[0]
    assert (given.steady_cap, given.steady_budget, given.max_iterations, given.budget) == (8, 300, 8, 300)
    for extra, said in (('precision = "2%"\n', "precision is another stopping rule"),
                        ('steady = { mode = "off" }\n', 'steady mode "off"'),
                        ('steady = { method = "snia" }\n', 'method "snia"')):
        with pytest.raises(InputError) as e:
            loads(base + extra, "r.toml")
        assert said in str(e.value) and "iterations" in str(e.value), str(e.value)
    with pytest.raises(InputError) as e:
        loads(base.replace('"steady"', '"stedy"'), "r.toml")
    assert 'r.toml:5: test[1].iterations: expected a whole number >= 1 or "steady", got "stedy"' in str(e.value)


def test_a_case_budget_counts_from_its_own_first_iteration_not_from_the_runs_start(monkeypatch):
    """The runner makes every case's stop when the run starts; a case run after others (case after
    case, the default) had their minutes taken from its budget, and stopped by "time budget" after
    its first look however little it had run."""
    import zfsperf.runner as runner
    now = [1000.0]
    monkeypatch.setattr(runner.time, "monotonic", lambda: now[0])
    p = Precision(None, rounds.GROW_FIRST, 12, 60.0, "t", until_steady=True)
    now[0] += 600                                   # ten minutes of the cases before this one
    assert p.decided(0) is None                     # asked before its first iteration: its clock starts
    values = _series(0, 12, 6, np.random.default_rng(5))
    for n, rec in enumerate(_records(values), start=1):
        now[0] += 5
        p.add(rec)
        if n >= rounds.GROW_FIRST:
            why = p.decided(n)
            assert why is None or why.stopped_by != StopReason.BUDGET, (n, why)
    now[0] += 60
    assert p.decided(6).stopped_by == StopReason.BUDGET


def test_the_command_line_gives_a_count_or_another_rule_and_the_built_in_suite_waits_for_steady():
    """The default suite iterates until steady; -I N, --precision, --detect, --interleave and a build
    A/B make it a fixed count or another stopping rule (blocks stay paired), as the dry run says."""
    from zfsperf.plan import Plan
    from zfsperf.runfile import load
    rf = load("quick")
    (t,) = rf.tests
    assert t.until_steady and t.steady_cap == rounds.GROW_CAP and t.steady_budget == 100
    # what runs the suite another way keeps its own limits: `run --detect 3%` its 30 blocks and 30 min
    assert t.max_iterations == 30 and t.budget == 1800
    assert Plan(runfile=rf).until_steady(t)
    for other in ({"iterations": 5}, {"precision": 2.0}, {"detect": 3.0}, {"interleave": True},
                  {"builds": {"a": object(), "b": object()}}):
        assert not Plan(runfile=rf, **other).until_steady(t), other
