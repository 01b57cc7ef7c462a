"""Bisect's rules (buildab.py), without a guest or a build: which side a measured step falls on
(Step.changed, on the figures a step records) and the halving search over the commits
(first_changed: what the real bisect test halves once on a range of two commits, in make test-slow;
make test's range is one commit, decided by BAD's own step)."""

import json
import math
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from zfsperf.buildab import AbResult, Step, bisect, first_changed
from zfsperf.units import ChangeVerdict



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


class _TooFewBench:
    """A bench whose every A/B is 2 pairs: its verdict "too few iterations" (no guest, no build)."""
    turns = True

    def __init__(self):
        self.measured: list[str] = []

    def check_runfile(self, runfile, case):
        return SimpleNamespace(source=runfile)

    def settings(self, detect):
        return {"turns": True, "detect": detect}

    def good_series(self, src, good):
        return "2.3"

    def side(self, src, commit, name, field):
        return SimpleNamespace(spec=commit, series="2.3", ref=SimpleNamespace(info={"commit": commit}))

    def check_step(self, good, side, short, good_rev):
        pass

    def how(self, blocks):
        return f"{blocks} iterations of turns"

    def ab(self, sides, good, **kw):
        self.measured.append(next(k for k in sides if k != "good"))
        ch = SimpleNamespace(figure="throughput", verdict=ChangeVerdict.TOO_FEW, change_pct=-80.0, ci_pct=None,
                             p=None, detectable_pct=None)
        return AbResult(0, Path("/nowhere"), SimpleNamespace(changes=[ch]))

    def close(self):
        pass


def test_a_bisect_whose_blocks_are_too_few_says_so_and_stops(tmp_path, capsys):
    """BAD's own step, measured first, in blocks too few to call a change (`--blocks 2`: the
    mechanics' size): the bisect says why it has nothing to look for, exit 1, nothing halved; its
    state keeps the step, and the same command again measures nothing."""
    repo = tmp_path / "zfs"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for i in range(3):
        (repo / "f").write_text(str(i))
        subprocess.run([*git, "add", "f"], check=True)
        subprocess.run([*git, "commit", "-qm", f"c{i}"], check=True)
    revs = subprocess.run([*git, "rev-list", "--reverse", "HEAD"], capture_output=True, text=True).stdout.split()
    for attempt in range(2):
        bench = _TooFewBench()
        rc = bisect(bench, str(repo), revs[0], revs[2], "rf.toml", "rcv", "throughput", blocks=2,
                    outdir=str(tmp_path / "b"), say=print)
        out = capsys.readouterr().out
        assert rc == 1 and bench.measured == ([revs[2][:8]] if attempt == 0 else []), (bench.measured, out)
        assert (f"bisect: {revs[2][:12]} against {revs[0]}: too few iterations — its 2 blocks cannot call a change "
                "(p < 0.05 needs 6): nothing to look for") in out, out
    state = json.loads((tmp_path / "b" / "bisect.json").read_text())
    assert list(state["steps"]) == [revs[2]] and "first" not in state
