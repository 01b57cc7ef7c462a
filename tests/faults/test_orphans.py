"""Nothing left running (a closed terminal, a lost ssh session, kill -9), on real zfs-fuse: each run
here starts its own zfs-fuse lab, as a user's `zfsperf run` does, and afterwards no zfsperf
process, daemon, FUSE mount, pool or vdev file of it remains."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import tmux, why
from helpers import DEFAULT_BATCH, children, descendants, zfsperf
from helpers import write_runfile
from zfsperf import proc
from zfsperf.leftovers import remove_pools_and_files
from zfsperf.pool import MANIFEST, VdevDir

RUNFILE = """
[defaults]
iterations = 2
timeout = "5m"
[defaults.pool]
vdevs = 1
vdev_size = "192M"
[[test]]
name = "recv"
workload = "receive"
corpus = { kind = "random", size = "24M", seed = 43 }
threads = 2
duration = 3
tunables = { zfs_recv_write_batch_size = "128K" }
[[test]]
name = "fio"
workload = "fio"
rw = "randrw"
bs = "4k"
size = "16M"
runtime = 4
tunables = { zfs_vdev_async_write_max_active = 3 }
"""


def _own_lab(tmp_path: Path, name: str) -> dict:
    """Environment for a run that starts (and owns) its own zfs-fuse lab, as a user's run does."""
    return {"ZFSPERF_LAB": f"/run/zfsperf/{name}-{os.getpid()}"}


def _gone_within(pids, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    left = list(pids)
    while time.monotonic() < deadline:
        left = [p for p in left if proc.pid_alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    return [(p, " ".join(proc.pid_cmdline(p))) for p in left if proc.pid_alive(p)]


def _assert_nothing_left(lab_root: str, zpid: int, vd: Path, seen: set[int], what: str) -> None:
    assert _gone_within(seen, 20) == [], what
    assert not Path(f"{lab_root}-run{zpid}").exists(), what
    assert str(vd) not in Path("/proc/self/mounts").read_text(), what
    assert [f for f in vd.rglob("*") if f.is_file()] == [], what


def test_lab_start_through_a_pipe_returns(session_env):
    """`zfsperf lab start | tee log` returns: no helper holds the caller's pipe."""
    env = {"ZFSPERF_LAB": f"/run/zfsperf/pipe-{os.getpid()}"}
    try:
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "lab", "start"], capture_output=True,
                             text=True, timeout=60, env={**os.environ, **env})     # waits for EOF on both pipes
        assert res.returncode == 0, why(res)
        assert time.monotonic() - t0 < 30
        assert "daemon pid" in res.stdout
    finally:
        zfsperf("lab", "stop", env=env)
    assert not Path(env["ZFSPERF_LAB"]).exists()


@pytest.mark.parametrize("trials", [3, pytest.param(10, marks=pytest.mark.slow)])
def test_kill9_at_random_moments_leaves_nothing(tmp_path, params, session_env, trials):
    """kill -9 at random moments of a run, one in each of `trials` equal slices of its span (so a
    few trials still reach its start, its middle and its end): nothing of it is left running."""
    rf = write_runfile(tmp_path, RUNFILE)
    env = _own_lab(tmp_path, "k9")
    base = [sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "--params-dir", str(params),
            "--no-history"]

    def start(out: Path) -> subprocess.Popen:
        # output to a file: a helper that inherited a pipe would hold it open after the kill
        out.mkdir()
        with open(out / "out.txt", "w") as f:
            return subprocess.Popen(base + ["-o", str(out / "res"), "-d", str(out / "vd")], stdout=f,
                                    stderr=subprocess.STDOUT, text=True, env={**os.environ, **env})

    t0 = time.monotonic()
    p = start(tmp_path / "calib")
    p.wait(timeout=300)
    span = time.monotonic() - t0
    assert p.returncode == 0, (tmp_path / "calib" / "out.txt").read_text()
    rng = random.Random(20261123)
    for i in range(trials):
        lo, hi = 0.5, 0.9 * span
        delay = rng.uniform(lo + i * (hi - lo) / trials, lo + (i + 1) * (hi - lo) / trials)
        o = tmp_path / f"t{i}"
        p = start(o)
        seen: set[int] = set()
        until = time.monotonic() + delay
        while time.monotonic() < until and p.poll() is None:
            descendants(p.pid, seen)
            time.sleep(0.02)
        if p.poll() is not None:
            continue                      # finished before its moment: nothing to kill
        p.kill()
        p.wait()
        what = f"trial {i}: kill -9 after {delay:.2f} s\n{(o / 'out.txt').read_text()}"
        _assert_nothing_left(env["ZFSPERF_LAB"], p.pid, o / "vd", seen, what)
    # the next start restores the tunables from the journal and runs beside nothing
    res = zfsperf("run", "-r", str(rf), "-t", "fio", "-I", "1", "--params-dir", str(params), "--no-history",
                  "-o", str(tmp_path / "next"), "-d", str(tmp_path / "next-vd"), env=env)
    assert res.returncode == 0, why(res)
    assert (params / "zfs_recv_write_batch_size").read_text().strip() == DEFAULT_BATCH
    assert (params / "zfs_vdev_async_write_max_active").read_text().strip() == "10"
    assert "refusing" not in res.stdout + res.stderr


def _hangup_mid(tmp_path: Path, params: Path, workload: str, marker: str) -> None:
    rf = write_runfile(tmp_path, RUNFILE)
    env = _own_lab(tmp_path, f"hup-{workload}")
    sock = tmp_path / f"tmux-{workload}.sock"
    argv = [sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-t", workload, "--params-dir", str(params),
            "--no-history", "-o", str(tmp_path / "res"), "-d", str(tmp_path / "vd")]
    envargs = [a for k, v in {**env, "ZFSPERF_STATE": os.environ["ZFSPERF_STATE"],
                              "ZFSPERF_CACHE": os.environ["ZFSPERF_CACHE"]}.items() for a in ("-e", f"{k}={v}")]
    res = tmux(sock, "new-session", "-d", "-x", "160", "-y", "40", "-P", "-F", "#{pane_pid}", *envargs,
                "-c", str(Path(__file__).resolve().parent.parent), "--", *argv)
    assert res.returncode == 0, res.stderr
    zpid = int(res.stdout.strip())
    try:
        seen: set[int] = set()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert proc.pid_alive(zpid), tmux(sock, "capture-pane", "-p").stdout
            descendants(zpid, seen)
            if any(marker in " ".join(proc.pid_cmdline(c)) for c in seen if proc.pid_alive(c)):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"no {marker} process ever ran")
        time.sleep(1.0)
        descendants(zpid, seen)
        assert proc.pid_alive(zpid)
    finally:
        tmux(sock, "kill-server")                 # the terminal is gone: SIGHUP to the pane's processes
    assert _gone_within([zpid], 60) == [], "zfsperf did not end after the hangup"
    # a hangup is an interrupt like Ctrl-C: torn down, tunables restored, results and summary written
    d = next((tmp_path / "res").iterdir())
    summary = (d / "summary.txt").read_text()
    assert "Interrupted:" in summary, summary
    assert json.loads((d / "run.json").read_text())["interrupted"] is True
    assert (params / "zfs_recv_write_batch_size").read_text().strip() == DEFAULT_BATCH
    assert (params / "zfs_vdev_async_write_max_active").read_text().strip() == "10"
    _assert_nothing_left(env["ZFSPERF_LAB"], zpid, tmp_path / "vd", seen, summary)


def test_terminal_closed_mid_receive(tmp_path, params, session_env):
    _hangup_mid(tmp_path, params, "recv", "receive")


def test_terminal_closed_mid_fio(tmp_path, params, session_env):
    _hangup_mid(tmp_path, params, "fio", "--status-interval")


def test_run_refuses_beside_an_orphan_and_x_stops_it_in_order(tmp_path, params, session_env):
    """An orphan (its zfsperf and that one's guard both killed with -9, as an older zfsperf left
    them): named with its CPU and memory by `lab status` and by a new run, which refuses to measure;
    -x stops its clients, destroys its pool, removes its vdev files, stops the daemon and removes
    its state directory, then measures."""
    rf = write_runfile(tmp_path, RUNFILE.replace("runtime = 4", "runtime = 120"))
    short = tmp_path / "short.toml"
    short.write_text(RUNFILE)
    env = _own_lab(tmp_path, "orphan")
    p = subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-t", "fio",
                          "--params-dir", str(params), "--no-history", "-o", str(tmp_path / "res"),
                          "-d", str(tmp_path / "vd")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env={**os.environ, **env})
    deadline = time.monotonic() + 120
    kids: list[tuple[int, str]] = []
    while time.monotonic() < deadline:
        kids = children(p.pid)
        if any("--status-interval" in cmd for _c, cmd in kids):
            break
        time.sleep(0.05)
    guard = [c for c, cmd in kids if "zfsperf.guard" in cmd]
    assert guard, kids
    os.kill(guard[0], signal.SIGKILL)
    proc.wait_gone(guard[0], 5)
    p.kill()
    p.wait()
    root = Path(f"{env['ZFSPERF_LAB']}-run{p.pid}")
    state = json.loads((root / "state.json").read_text())
    assert proc.pid_alive(state["daemon_pid"])                  # the orphan: its daemon runs on
    vdevs = [f for f in (tmp_path / "vd").rglob("*") if f.is_file() and f.name != MANIFEST]
    assert vdevs
    try:
        st = zfsperf("lab", "status", env=env)
        assert f"orphaned zfs-fuse daemon pid {state['daemon_pid']}" in st.stdout, st.stdout
        assert "% CPU" in st.stdout and "MiB resident" in st.stdout
        res = zfsperf("run", "-r", str(rf), "-t", "fio", "-I", "1", "--params-dir", str(params), "--no-history",
                      "-o", str(tmp_path / "res2"), "-d", str(tmp_path / "vd"), env=env)
        assert res.returncode == 2, res.stdout + res.stderr
        assert "refusing to measure beside" in res.stderr and str(state["daemon_pid"]) in res.stderr
        assert "MiB resident" in res.stderr
        assert not (tmp_path / "res2").exists()                 # nothing started or written
        assert proc.pid_alive(state["daemon_pid"]) and all(f.exists() for f in vdevs)
        res = zfsperf("run", "-x", "-r", str(short), "-t", "fio", "-I", "1", "--params-dir", str(params),
                      "--no-history",
                      "-o", str(tmp_path / "res3"), "-d", str(tmp_path / "vd"), env=env)
        out = res.stdout
        assert res.returncode == 0, out + res.stderr
        # the killed run's fio and its job process (fio, started with SIGPIPE ignored, outlives the
        # zfsperf that read its output; with that zfsperf's guard killed too, nothing stopped them)
        stopping = next(ln for ln in out.splitlines() if "still running against the lab" in ln)
        assert "stopping 2 process(es)" in stopping and stopping.count("(fio ") == 2, out
        order = [out.index(s) for s in ("stopping 2 process", "destroyed zfsperf pool", "removed 1 vdev file",
                                        "stopped zfs-fuse daemon")]
        assert order == sorted(order), out
        assert not proc.pid_alive(state["daemon_pid"]) and not root.exists()
        assert not any(f.exists() for f in vdevs)
    finally:
        if proc.pid_alive(state["daemon_pid"]):                 # the test failed: leave nothing
            from zfsperf.zfsfuse.daemon import Lab
            from zfsperf.zfsfuse.orphans import teardown
            lab = Lab.find(root)
            if lab is not None:
                teardown(lab, lambda _t: None)


def test_x_never_removes_a_file_under_a_live_pool(tmp_path, target, lab):
    """-x removed leftover vdev files under a live pool (one it may not destroy): now a file that a
    process (here the daemon) has open is kept, still listed, and named."""
    vd = VdevDir(target, tmp_path / "vd" / "run-1")
    files = vd.files(["vdev0"], 128 << 20, False)
    name = f"live{os.getpid()}"
    assert lab.run(["zpool", "create", "-m", "none", name, files[0]]).ok      # not marked: never destroyed
    try:
        said: list[str] = []
        remove_pools_and_files(target, tmp_path / "vd", said.append)
        assert Path(files[0]).exists(), said
        assert (tmp_path / "vd" / "run-1" / MANIFEST).exists()
        assert any("still open" in s for s in said), said
    finally:
        lab.run(["zpool", "destroy", "-f", name])
    said = []
    remove_pools_and_files(target, tmp_path / "vd", said.append)
    assert not Path(files[0]).exists(), said
