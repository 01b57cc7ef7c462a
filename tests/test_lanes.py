"""tests/lanes.py (issue 71): a lane that selects no test is not a passed lane."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lanes  # noqa: E402


def test_a_lane_that_selects_no_test_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(lanes, "LOGS", tmp_path)
    empty = lanes.Lane("empty", [*lanes.PYTEST, "-q", "-m", "no_such_marker_anywhere", "tests/test_lanes.py"])
    empty.start(threading.Lock())
    assert empty.wait() == lanes.NO_TESTS and not empty.ok()
    one = lanes.Lane("one", [*lanes.PYTEST, "-q", "tests/test_lanes.py::test_a_passing_selection_passes"])
    one.start(threading.Lock())
    assert one.wait() == 0 and one.ok()


def test_a_passing_selection_passes():
    assert lanes.LANES["host"] and lanes.PHASES == [["host", "guest"], ["quiet"]]
