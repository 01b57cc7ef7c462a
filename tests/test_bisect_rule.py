"""Which side of a bisect a measured step falls on (guest/ab.py Step.changed), on the figures a
step records: no guest, no build."""

import pytest

from zfsperf.guest.ab import Step

pytestmark = pytest.mark.fast


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
