"""Bisect's rules (buildab.py), without a guest or a build: which side a measured step falls on
(Step.changed, on the figures a step records) and the halving search over the commits
(first_changed: what the real bisect test halves once on a range of two commits, in make test-slow;
make test's range is one commit, decided by BAD's own step)."""

import math

import pytest

from zfsperf.buildab import Step, first_changed



def step(verdict, change_pct):
    return Step("0" * 40, verdict, change_pct, None, 0.03 if verdict != "no change" else 0.4, 5.0, "/nowhere")


def test_a_step_carries_the_change_when_significant_and_nearer_bad():
    # BAD is 60 % worse than GOOD
    assert step("worse", -58.0).changed("worse", -60.0)
    assert step("worse", -30.0).changed("worse", -60.0)            # half of it: nearer BAD or midway
    assert not step("worse", -4.0).changed("worse", -60.0)         # significant, but nearer GOOD
    assert not step("no change", -59.0).changed("worse", -60.0)    # not significant
    assert not step("better", 10.0).changed("worse", -60.0)        # the other direction
    assert step("better", 12.0).changed("better", 20.0) and not step("better", 3.0).changed("better", 20.0)
    assert step("worse", None).changed("worse", -60.0)             # no change figure: the verdict decides


@pytest.mark.parametrize("n", range(1, 10))
def test_the_search_names_the_first_changed_commit_in_log2_steps(n):
    for first in range(n):
        asked = []

        def changed(i):
            asked.append(i)
            return i >= first
        assert first_changed(n, changed) == first
        assert len(asked) <= math.ceil(math.log2(n)) and n - 1 not in asked     # the last is known
        assert len(set(asked)) == len(asked)                                    # none measured twice
