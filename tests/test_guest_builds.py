"""Two OpenZFS builds against each other, and a bisect, in a real OpenZFS guest under QEMU.

A git repository is made from Debian's zfs-dkms 2.3 source with four commits (helpers.openzfs_repo):
the import, a comment in dmu_recv.c, a deliberate 100 ms pause per WRITE record of a receive, and a
README note. zfsperf builds each commit's modules (incrementally, from the guest build's own tree
of the same source: a commit that touches one file compiles one file), swaps them in the running guest between cases, and must call the ends of the
range WORSE with an interval, and name the pause's commit as the first worse one. Under TCG the
pause is a real cost (a sleep, not emulated CPU work): the verdict is about the build, not QEMU."""

import json
import subprocess
import time

import pytest

from helpers import why
from helpers import last_dir, openzfs_repo, records, write_runfile, zfsperf
from zfsperf.guest.vm import Guest
from zfsperf.sshlink import Ssh

pytestmark = pytest.mark.guest

RECV = """
[defaults]
iterations = 1
timeout = "10m"
[defaults.pool]
vdevs = 1
vdev_size = "128M"
[[test]]
name = "recv"
workload = "receive"
corpus = { kind = "random", size = "4M", seed = 7 }
threads = 1
steady = { mode = "off" }
"""


@pytest.fixture(scope="module")
def lab(openzfs_guest, tmp_path_factory):
    """A repository of four commits and the booted guest of the same series (Debian's 2.3 build)."""
    repo = tmp_path_factory.mktemp("builds") / "zfs"
    return repo, openzfs_repo(repo), openzfs_guest


def srcversion(g: Guest) -> str:
    res = Ssh(g.state().url(), g.ssh_options()).run(["cat", "/sys/module/zfs/srcversion"])
    assert res.ok, res.stderr
    return res.stdout.strip()


def test_ab_of_two_builds_is_paired_worse_with_its_interval(lab, tmp_path):
    repo, commits, g = lab
    own = srcversion(g)
    res = zfsperf("guest", "ab", "--a", f"{repo}@{commits['base']}", "--b", f"{repo}@{commits['note']}",
                  "-r", str(write_runfile(tmp_path, RECV)), "--blocks", "6", "--seed", "11",
                  "-o", str(tmp_path / "o"), timeout=3600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    d = last_dir(res.stdout)
    recs = records(d)
    assert [r["status"] for r in recs] == ["PASS"] * 12
    assert sorted({r["sweep"]["build"] for r in recs}) == ["a", "b"]
    # blocks: one iteration of each build per block, the order drawn from the recorded seed
    run = json.loads((d / "run.json").read_text())
    assert run["selection"]["interleave"] is True and run["selection"]["seed"] == 11
    assert sorted((r["sweep"]["build"], r["iteration"]) for r in recs) == \
        sorted((b, i) for b in "ab" for i in range(1, 7))
    # run.json names each build: version, commit, not dirty, and the module that was loaded
    builds = run["builds"]
    assert builds["a"]["info"]["commit"] == commits["base"] and builds["b"]["info"]["commit"] == commits["note"]
    assert builds["a"]["info"]["dirty"] is False and builds["a"]["info"]["version"].startswith("2.3.")
    assert builds["a"]["srcversion"] != builds["b"]["srcversion"]
    # the paired verdict: worse, with its interval, said with its design and test
    assert "design: one run, interleaved blocks" in out and "sign-flip" in out
    line = next(ln for ln in res.stdout.splitlines() if "throughput" in ln and "build=a" in ln)
    assert "WORSE (" in line and " … " in line, line
    cmp = zfsperf("compare", str(d), "--json")
    ch = next(c for c in json.loads(cmp.stdout)["changes"] if c["figure"] == "throughput")
    assert ch["verdict"] == "worse" and ch["design"] == "paired" and ch["ci_pct"][1] < 0
    md = (d / "compare.md").read_text()
    assert commits["note"][:12] in md and "WORSE" in md
    if run["target"].get("accelerator") == "tcg":
        assert "only relative, CPU-bound differences" in res.stdout
    # the guest has its own build loaded again
    assert srcversion(g) == own


def test_bisect_names_the_commit_that_added_the_cost_and_resumes(lab, tmp_path):
    repo, commits, g = lab
    rf = str(write_runfile(tmp_path, RECV))
    # the range base..cost: comment, cost (one halving; the search itself: tests/test_bisect_rule.py).
    # 8 blocks, not 6: with 6 the exact sign-flip test is significant only when every block agrees,
    # and beside the host lane under TCG one block in six came out reversed (CI, 2026-11-26: -41 %,
    # p 0.094); with 8, that run's blocks and two more like them give p of about 0.02
    argv = ("guest", "bisect", "--zfs-src", str(repo), "--good", commits["base"], "--bad", commits["cost"],
            "-r", rf, "--case", "recv", "--figure", "throughput", "--blocks", "8", "--seed", "5",
            "-o", str(tmp_path / "b"))
    res = zfsperf(*argv, timeout=3600)
    assert res.returncode == 0, why(res)
    assert f"first worse commit: {commits['cost']}" in res.stdout, res.stdout
    state = json.loads((tmp_path / "b" / "bisect.json").read_text())
    steps = state["steps"]
    assert sorted(steps) == sorted([commits["cost"], commits["comment"]])
    assert steps[commits["cost"]]["verdict"] == "worse"
    # the comment costs nothing: on the good side (not worse, or — a false positive of the 5 %
    # level — worse by far less than the pause)
    full = steps[commits["cost"]]["change_pct"]
    assert steps[commits["comment"]]["verdict"] != "worse" or \
        abs(steps[commits["comment"]]["change_pct"]) < abs(full) / 2, steps[commits["comment"]]
    assert state["first"]["commit"] == commits["cost"]
    # the same command again resumes: no step is measured twice
    again = zfsperf(*argv, timeout=600)
    assert again.returncode == 0 and "resuming" in again.stdout + again.stderr
    assert "measuring" not in again.stdout + again.stderr
    assert f"first worse commit: {commits['cost']}" in again.stdout


def test_build_a_b_refuses_duet_and_mixed_series_before_building(tmp_path):
    duet = write_runfile(tmp_path, RECV.replace('threads = 1', 'threads = 1\nduet = true\n'
                                                'dataset = { compression = ["off", "lz4"] }'))
    t0 = time.monotonic()
    res = zfsperf("guest", "ab", "--a", "2.3", "--b", "2.3", "-r", str(duet))
    assert res.returncode == 2 and "duet" in res.stderr and str(duet) in res.stderr, res.stderr
    res = zfsperf("guest", "ab", "--a", "2.1", "--b", "2.3", "-r", str(write_runfile(tmp_path, RECV)))
    assert res.returncode == 2 and "--b" in res.stderr and "one series" in res.stderr, res.stderr
    assert time.monotonic() - t0 < 60                     # refused up front: nothing was built or booted
    live = [ln for ln in subprocess.run(["ps", "-eo", "args="], capture_output=True, text=True).stdout.splitlines()
            if "qemu-system" in ln and str(tmp_path) in ln]
    assert live == []
