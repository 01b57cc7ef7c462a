"""Progress as a person sees it: one overall bar with iterations done of the total, elapsed time and
an ETA from the history store's earlier runs of the same cases, on a real terminal (tmux); plain
lines when the output is not a terminal."""

import os
import re
import shlex
import sys
import time
from pathlib import Path

from helpers import tmux, zfsperf
from helpers import write_runfile
from zfsperf.ui import Eta

RF = """
[defaults]
iterations = 2
[defaults.pool]
vdevs = 1
vdev_size = "512M"
[[test]]
name = "rand"
workload = "fio"
rw = "randread"
bs = "4k"
size = "32M"
runtime = 3
numjobs = [1, 2]
"""


def test_eta_counts_remaining_iterations_by_case():
    e = Eta({"a": 2, "b": 2}, {"a": 10.0})
    assert e.left() == (None, "")                       # b never seen: nothing honest to say yet
    e.done("b", 4.0)
    left, src = e.left()
    assert left == 2 * 10.0 + 1 * 4.0 and src == "this run"
    e2 = Eta({"a": 3}, {"a": 10.0})
    assert e2.left() == (30.0, "history")


def test_live_screen_shows_the_bar_and_an_eta_from_history(tmp_path, session_env):
    rf = write_runfile(tmp_path, RF)
    store = tmp_path / "h.sqlite"
    first = zfsperf("run", "-r", str(rf), "--store", str(store), "-o", str(tmp_path / "a"))
    assert first.returncode == 0, first.stdout + first.stderr
    # not a terminal: plain lines, no bar
    assert "ETA" not in first.stdout and "Test: rand numjobs=2 iter=2" in first.stdout
    took = float(re.search(r"Running Time:\s+(\d+):(\d+)", first.stdout).group(1)) * 60 + \
        float(re.search(r"Running Time:\s+(\d+):(\d+)", first.stdout).group(2))

    sock = tmp_path / "tmux.sock"
    env = {k: os.environ[k] for k in ("ZFSPERF_STATE", "ZFSPERF_CACHE", "ZFSPERF_LAB") if k in os.environ}
    envargs = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    argv = [sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "--store", str(store),
            "-o", str(tmp_path / "b"), "--check", "off"]
    res = tmux(sock, "new-session", "-d", "-x", "200", "-y", "40", *envargs,
                "-c", str(Path(__file__).resolve().parent.parent), "--", "bash", "--norc", "--noprofile")
    assert res.returncode == 0, res.stderr
    tmux(sock, "send-keys", shlex.join(argv), "Enter")          # typed at the terminal, as a person would
    screens = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            screen = tmux(sock, "capture-pane", "-p").stdout
            screens.append(screen)
            if "Results Summary" in screen:
                break
            time.sleep(0.5)
    finally:
        tmux(sock, "kill-server")
    bars = [ln for s in screens for ln in s.splitlines() if "ETA" in ln and "iterations" in ln]
    assert bars, screens[-1]
    # mid-run: iterations done of the total, elapsed, and an ETA made from the store's past runs
    # (the bar's first state, "starting", already carries the ETA: the one wanted names a case)
    found = [(ln, re.search(r"([0-3])/4 iterations .*ETA (\d+):(\d+) \(history\)", ln)) for ln in bars]
    bar, m = next(((ln, m) for ln, m in found if m and "rand numjobs=" in ln), (bars, None))
    assert m, bar                                                      # the case and iteration running
    eta = int(m.group(2)) * 60 + int(m.group(3))
    assert 0 <= eta <= 2 * took + 10, (eta, took, bar)                 # made of the first run's seconds
    # the per-case lines are printed above the bar as each iteration ends
    assert any("Test: rand numjobs=1 iter=1" in s for s in screens)
