"""The runner: tags, single tests, SKIP, tunables restored after a normal end, SIGINT and kill -9,
and --resume after a SIGKILL. Real zfs-fuse; tunables live in a directory laid out like
/sys/module/zfs/parameters (zfs-fuse has none at run time)."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest
from pathlib import Path


from helpers import lab_pools, why
from helpers import DEFAULT_BATCH, EXAMPLE, REPO, TUNED, last_dir, records, small, write_runfile, zfsperf



def test_issue_example_on_zfs_fuse(tmp_path, lab):
    rf = write_runfile(tmp_path, small(EXAMPLE))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd"))
    assert res.returncode == 0, why(res)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("Test: ")]
    assert sum("[PASS]" in ln for ln in lines if "recv-threads" in ln) == 3
    skips = [ln for ln in lines if "recv-batch" in ln]
    assert len(skips) == 2 and all("[SKIP] zfs-fuse has no tunable zfs_recv_write_batch_size" in ln for ln in skips)
    suite = ET.parse(last_dir(res.stdout) / "junit.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("5", "2", "0")


def test_tags_and_single_test_select(tmp_path):
    rf = write_runfile(tmp_path, small(EXAMPLE))
    res = zfsperf("list", "-r", str(rf), "-T", "tunables")
    assert "recv-batch" in res.stdout and "recv-threads" not in res.stdout
    res = zfsperf("list", "-r", str(rf), "-t", "recv-threads")
    assert res.stdout.count("    recv-threads threads=") == 3 and "recv-batch" not in res.stdout


def test_tunable_restored_after_normal_end(tmp_path, params, lab):
    rf = write_runfile(tmp_path, TUNED.format(iters=1, size="8M", threads=1))
    res = zfsperf("run", "-r", str(rf), "--params-dir", str(params), "-o", str(tmp_path / "res"),
                  "-d", str(tmp_path / "vd"))
    assert res.returncode == 0, why(res)
    assert (params / "zfs_recv_write_batch_size").read_text().strip() == DEFAULT_BATCH
    rec = records(last_dir(res.stdout))[0]
    assert rec["tunables"] == {"zfs_recv_write_batch_size": {"before": DEFAULT_BATCH, "set": "131072", "scope": "runtime"}}
    run = json.loads((last_dir(res.stdout) / "run.json").read_text())
    # every tunable the target exposes is recorded, the changed one and the untouched one
    every = {"zfs_recv_write_batch_size": DEFAULT_BATCH, "zfs_vdev_async_write_max_active": "10"}
    assert run["tunables"] == {"before": every, "after": every}
    # what defends the number: the zfsperf commit (runs days apart both said 0.1.0), the libraries,
    # the CPU and memory, the filesystem under the vdev files, the corpus's checksum, checked
    # against the tools that know them
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert run["software"]["commit"] == head.stdout.strip() and isinstance(run["software"]["dirty"], bool)
    import numpy
    import scipy
    assert run["software"]["libraries"]["numpy"] == numpy.__version__
    assert run["software"]["libraries"]["scipy"] == scipy.__version__
    assert run["hardware"]["cpus"] == os.cpu_count() and run["hardware"]["memory_bytes"] > 1 << 30
    fs = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", str(tmp_path / "vd")],
                        capture_output=True, text=True).stdout.split()
    assert [run["storage"]["fstype"], run["storage"]["device"]] == fs[:2]
    (ids,) = run["inputs"]["tuned"].values()
    stream = ids["stream"]
    assert stream["sha256"] == hashlib.sha256(Path(stream["path"]).read_bytes()).hexdigest()
    assert stream["bytes"] == Path(stream["path"]).stat().st_size
    md = zfsperf("report", str(last_dir(res.stdout)), "--format", "md").stdout
    assert "durability: zfs-fuse does not flush write caches" in md


def _start(tmp_path, params, iters=20, size="48M", threads=4):
    rf = write_runfile(tmp_path, TUNED.format(iters=iters, size=size, threads=threads))
    return subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "--params-dir", str(params),
                             "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_changed(params: Path, p: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        if (params / "zfs_recv_write_batch_size").read_text().strip() == "131072":
            return
        time.sleep(0.005)
    raise AssertionError("the tunable was never changed")


def test_tunable_restored_after_sigint(tmp_path, params, lab):
    before = lab_pools(lab)          # another test's pool still busy is not this one's
    p = _start(tmp_path, params)
    _wait_changed(params, p)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 3, out + err
    assert (params / "zfs_recv_write_batch_size").read_text().strip() == DEFAULT_BATCH
    assert "Interrupted:" in out and "Results Summary" in out
    assert lab_pools(lab) <= before     # its pool is gone


def test_tunable_restored_by_next_run_after_kill9(tmp_path, params, lab):
    before = lab_pools(lab)
    p = _start(tmp_path, params)
    _wait_changed(params, p)
    # a case writes its tunables before it makes its pool: kill once both are there (its own pool,
    # never one another test left: CI of 2026-12-06 killed the run before it had made one)
    deadline = time.monotonic() + 60
    while not lab_pools(lab) - before \
            and time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        time.sleep(0.01)
    p.kill()
    p.communicate()
    assert (params / "zfs_recv_write_batch_size").read_text().strip() == "131072"   # left changed
    rf = write_runfile(tmp_path, TUNED.format(iters=1, size="8M", threads=1))
    res = zfsperf("run", "-x", "-r", str(rf), "--params-dir", str(params), "-o", str(tmp_path / "res2"),
                  "-d", str(tmp_path / "vd"))
    assert res.returncode == 0, why(res)
    assert f"journal: restored zfs_recv_write_batch_size = {DEFAULT_BATCH} (left at 131072 by zfsperf pid {p.pid}" \
        in res.stdout
    assert "-x: destroyed leftover zfsperf pool" in res.stdout
    assert (params / "zfs_recv_write_batch_size").read_text().strip() == DEFAULT_BATCH
    assert lab_pools(lab) <= before


def test_resume_after_sigkill(tmp_path, lab):
    before = lab_pools(lab)          # another test's pool still busy is not this one's
    body = small(EXAMPLE).replace("iterations = 1", "iterations = 2")
    rf = write_runfile(tmp_path, body)
    p = subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-t", "recv-threads",
                          "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    d = None
    while time.monotonic() < deadline:
        cur = tmp_path / "res" / "current"
        if cur.exists() and (cur / "results.jsonl").exists() and len(records(cur.resolve())) >= 2:
            d = cur.resolve()
            break
        time.sleep(0.02)
    p.kill()
    p.communicate()
    assert d is not None
    done_before = len(records(d))
    assert done_before < 6
    res = zfsperf("run", "--resume", str(d), "-d", str(tmp_path / "vd"))
    assert res.returncode == 0, why(res)
    recs = records(d)
    keys = [(r["case"], r["iteration"]) for r in recs]
    assert len(keys) == 6 and len(set(keys)) == 6
    assert all(r["status"] == "PASS" for r in recs)
    assert lab_pools(lab) <= before


def test_warmup_runs_but_is_not_recorded(tmp_path, lab):
    body = small(EXAMPLE).replace("iterations = 1", "iterations = 1\nwarmup = 1")
    rf = write_runfile(tmp_path, body)
    res = zfsperf("run", "-v", "-r", str(rf), "-t", "recv-threads", "-o", str(tmp_path / "res"),
                  "-d", str(tmp_path / "vd"))
    assert res.returncode == 0, why(res)
    assert res.stdout.count("Warmup: recv-threads threads=") == 3
    d = last_dir(res.stdout)
    assert [r["iteration"] for r in records(d)] == [1, 1, 1]
    assert len(list((d / "logs").glob("*.warmup1.log"))) == 3


PRECISE = """
[defaults]
iterations = 3
precision = "{precision}"
max_iterations = {maximum}
budget = "{budget}"
[defaults.pool]
vdevs = 1
vdev_size = "192M"
[[test]]
name = "rr"
workload = "fio"
rw = "randread"
bs = "4k"
size = "8M"
runtime = 1
"""


@pytest.mark.parametrize("precision,maximum,budget,stopped_by,n", [
    ("0.001%", 5, "30m", "max_iterations", 5),       # unreachable: iterations run to the maximum
    ("0.001%", 9, "1s", "time budget", 3),            # the budget ends it after the least
    ("99%", 12, "30m", "precision reached", None),   # reached after the least, however many that takes
])
def test_adaptive_precision_stops_and_says_why(tmp_path, lab, precision, maximum, budget, stopped_by, n):
    """Iterations go on until the headline's 95 % CI half-width is within the target share
    of the mean (at least `iterations`), up to max_iterations or the budget; the last record says why."""
    import numpy as np
    from scipy import stats as sps
    rf = write_runfile(tmp_path, PRECISE.format(precision=precision, maximum=maximum, budget=budget))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "o"), "-d", str(tmp_path / "vd"))
    assert res.returncode == 0, why(res)
    recs = records(last_dir(res.stdout))
    n = n or len(recs)
    assert len(recs) == n >= 3 and all(r["status"] == "PASS" for r in recs)
    verdict = recs[-1]["precision"]
    assert verdict["stopped_by"] == stopped_by and verdict["iterations"] == n and verdict["figure"] == "iops"
    vals = np.array([r["figures"]["iops"]["value"] for r in recs])
    half = sps.t.ppf(0.975, n - 1) * vals.std(ddof=1) / np.sqrt(n) / vals.mean() * 100
    assert verdict["achieved_pct"] == pytest.approx(half, rel=1e-3)
    assert (half <= float(precision.rstrip("%"))) == (stopped_by == "precision reached")
    assert all("precision" not in r for r in recs[:-1])


def test_precision_on_the_command_line_is_checked(tmp_path):
    rf = write_runfile(tmp_path, PRECISE.format(precision="2%", maximum=5, budget="1m"))
    res = zfsperf("run", "-r", str(rf), "--precision", "two", "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "--precision" in res.stderr and not (tmp_path / "o").exists()
    bad = write_runfile(tmp_path, PRECISE.format(precision="120%", maximum=5, budget="1m"))
    res = zfsperf("run", "-r", str(bad), "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and ":4: " in res.stderr and "precision" in res.stderr


def test_interleave_runs_iterations_in_seeded_random_blocks(tmp_path, lab):
    """--interleave: blocks of one iteration of every case (so drift over a run, which bench/power.py
    measured on zfs-fuse, hits both sides of an A/B alike), each block in a random order drawn from
    a recorded seed (no fixed order effect), reproducible from that seed. In 2 blocks (--smoke: the
    mechanics; seed 7 draws both orders), where a run for a verdict has at least 6 (the paired test
    cannot reach p < 0.05 with fewer: tests/test_lifecycle.py, on the fake target): 12 fio cases on
    zfs-fuse, not 28 (84 s in the host lane until 2026-12-07, issue 84)."""
    import random
    rf = write_runfile(tmp_path, PRECISE.format(precision="50%", maximum=3, budget="30m")
                       .replace('precision = "50%"\n', "").replace('rw = "randread"', 'rw = ["randread", "randwrite"]')
                       .replace("iterations = 3", "iterations = 2"))
    order = {}
    seeded = ["--interleave", "--seed", "7", "--smoke"]
    for name, flag in (("plain", []), ("seed7", seeded), ("again", seeded)):
        res = zfsperf("run", "-r", str(rf), *flag, "-o", str(tmp_path / name), "-d", str(tmp_path / "vd"),
                      "--no-history")
        assert res.returncode == 0, why(res)
        d = last_dir(res.stdout)
        order[name] = [(r["sweep"]["rw"], r["iteration"]) for r in records(d)]
        if flag:
            assert json.loads((d / "run.json").read_text())["selection"]["seed"] == 7
    assert order["plain"] == [("randread", 1), ("randread", 2), ("randwrite", 1), ("randwrite", 2)]
    blocks = [order["seed7"][i:i + 2] for i in range(0, len(order["seed7"]), 2)]
    assert len(blocks) == 2
    for i, b in enumerate(blocks, 1):
        assert sorted(b) == [("randread", i), ("randwrite", i)]        # one of each, the block's number
    assert order["again"] == order["seed7"]                             # the same seed, the same order
    rng, expect = random.Random(7), []
    for i in range(1, 3):                                               # the order the seed draws
        pts = ["randread", "randwrite"]
        rng.shuffle(pts)
        expect += [(p, i) for p in pts]
    assert order["seed7"] == expect
    assert len({tuple(p for p, _ in b) for b in blocks}) == 2           # not one fixed order


TUNABLE_TURNS = """
[defaults]
iterations = 2
[defaults.pool]
vdevs = 1
vdev_size = "256M"
[[test]]
name = "recv"
workload = "receive"
corpus = { kind = "compressible", size = "8M", seed = 6 }
threads = 1
duration = "1s"
duet = "turns"
tunables = { zfs_vdev_async_write_max_active = [3, 10] }
"""


def test_a_module_tunable_takes_turns_written_and_read_back_before_every_round(tmp_path, lab, params):
    """Turns over a module tunable: one pool, the tunable written between rounds in ABBA order (BAAB
    on even iterations) and read back before each round; each side's rounds carry the value they
    ran under, the case log shows every write, and the value from before the run is back after it.
    (zfs-fuse has no tunables at run time: a directory laid out like /sys/module/zfs/parameters
    stands in, so this checks the order and the bookkeeping, not an effect.)"""
    name = "zfs_vdev_async_write_max_active"
    rf = write_runfile(tmp_path, TUNABLE_TURNS)
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"), "--no-history", "--tunables-dir", str(params))
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    recs = records(d)
    assert len(recs) == 4 and {r["status"] for r in recs} == {"PASS"}
    for it in (1, 2):
        a, b = sorted((r for r in recs if r["iteration"] == it), key=lambda r: r["tunables"][name]["set"] != "3")
        assert a["pool"]["name"] == b["pool"]["name"]
        assert a["tunables"][name] == {"before": "10", "set": "3", "scope": "runtime"} and b["tunables"][name]["set"] == "10"
        for r, value in ((a, "3"), (b, "10")):
            turns = r["turn_tunables"]
            assert turns == [{name: value}] * r["rounds"] and len(turns) >= 2, r
        log = (d / "logs" / f"{Path(a['series']).name.split('.i')[0]}.iter{it}.log")
        written = [ln.rsplit("= ", 1)[1] for ln in log.read_text().splitlines() if ln.startswith(f"# turn: {name} = ")]
        first, second = ("3", "10") if it % 2 else ("10", "3")
        abba = [first, second, second, first]
        assert written == (abba * len(written))[:len(written)] and len(written) % 4 == 0, written
    assert (params / name).read_text().strip() == "10"          # restored
    ch = next(c for c in json.loads(zfsperf("compare", str(d), "--json").stdout)["changes"]
              if c["figure"] == "throughput")
    assert ch["design"] == "turns", ch


def test_turns_over_a_tunable_need_one_tunable_and_two_values(tmp_path):
    rf = write_runfile(tmp_path, TUNABLE_TURNS.replace("[3, 10] }", "[3, 10, 12] }"))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "test[1].duet: turns over a module tunable need exactly one tunable swept over " \
        "two values" in res.stderr and not (tmp_path / "o").exists(), res.stderr
    rf = write_runfile(tmp_path, TUNABLE_TURNS.replace('duet = "turns"', "duet = true"))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and 'duet = "turns" writes it between rounds' in res.stderr, res.stderr


def test_a_checkout_is_dirty_when_its_code_changed_not_its_tests_or_documents(tmp_path):
    """run.json's software.dirty: whether the checkout's code (src/, pyproject.toml) differs from its
    commit; a changed test or document leaves it clean (git reads only the code's files: over 9p, in
    the OpenZFS guest, every file's stat was a round trip, 1.3 s of each start)."""
    from zfsperf.runinfo import checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    for f in ("src/zfsperf/rule.py", "tests/test_rule.py", "docs/guide.md", "pyproject.toml"):
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("one\n")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "one"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert checkout(tmp_path) | {"zfsperf": None} == {"zfsperf": None, "commit": head, "dirty": False}
    for f in ("tests/test_rule.py", "docs/guide.md"):
        (tmp_path / f).write_text("two\n")
    assert checkout(tmp_path)["dirty"] is False
    for f in ("src/zfsperf/rule.py", "pyproject.toml"):
        (tmp_path / f).write_text("two\n")
        assert checkout(tmp_path)["dirty"] is True, f
        subprocess.run([*git, "checkout", "-q", "--", f], check=True)
    assert checkout(tmp_path)["dirty"] is False
