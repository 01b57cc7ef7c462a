"""tests/lanes.py (issue 71): a lane that selects no test is not a passed lane."""

from __future__ import annotations

import os
import re
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import lanes  # noqa: E402
import pytest  # noqa: E402


def test_a_lane_that_selects_no_test_fails(tmp_path, monkeypatch):
    monkeypatch.setattr(lanes, "LOGS", tmp_path)
    empty = lanes.Lane("empty", [*lanes.PYTEST, "-q", "-m", "no_such_marker_anywhere", "tests/test_lanes.py"])
    empty.start(threading.Lock())
    assert empty.wait() == lanes.NO_TESTS and not empty.ok()
    one = lanes.Lane("one", [*lanes.PYTEST, "-q", "tests/test_lanes.py::test_a_passing_selection_passes"])
    one.start(threading.Lock())
    assert one.wait() == 0 and one.ok()


def test_a_lanes_time_is_its_own_whenever_it_is_waited_for(tmp_path, monkeypatch):
    """make test waits for its lanes in order: a short lane waited for after a long one took the
    long one's time as its own (the fast lane "1694 s" in a run where pytest said 332 s)."""
    monkeypatch.setattr(lanes, "LOGS", tmp_path)
    long = lanes.Lane("long", ["sh", "-c", "sleep 2; echo done"])
    short = lanes.Lane("short", ["sh", "-c", "echo done"])
    long.start(threading.Lock())
    short.start(threading.Lock())
    assert long.wait() == 0 and short.wait() == 0
    assert long.t1 - long.t0 >= 2 and short.t1 - short.t0 < 1, (long.t1 - long.t0, short.t1 - short.t0)


def test_a_passing_selection_passes():
    assert lanes.LANES["host"] and lanes.PHASES == [["host", "host2", "guest", "fast"], ["quiet"]]


MARKED_BY_HAND = re.compile(r"pytestmark\s*=|pytest\.mark\.(quiet|guest|fast)\b")


def test_a_tests_lane_is_decided_by_its_fixtures_alone():
    """No module or test marks its own lane (issue 84 §5): conftest.py decides it from the fixtures
    a test asks for, so a test that needs no guest never runs in the guest lane."""
    here = Path(__file__).resolve().parent
    marked = [f"{p.name}:{n}" for p in sorted(here.glob("*.py")) if p.name != "conftest.py"
              for n, ln in enumerate(p.read_text().splitlines(), 1) if MARKED_BY_HAND.search(ln)
              and not ln.lstrip().startswith(("#", '"'))]
    assert marked == []


def test_the_lanes_follow_the_fixtures():
    """A refusal in the guest tests' module that asks for no guest is fast; a guest test is guest;
    a format test on real runs is on the host beside the guest, and so is a test on a real A/B whose
    change is planted beyond any noise (no test judges a measured figure: bench/ does); a test that
    judges the idle machine is quiet."""
    got: dict[str, set[str]] = {}

    class Collect:
        def pytest_collection_finish(self, session):
            for i in session.items:
                got[i.nodeid] = {m.name for m in i.iter_markers()} & {"fast", "guest", "quiet"}

    pytest.main(["-p", "no:cacheprovider", "--collect-only", "-q", "-m", "", "--rootdir",
                 str(Path(__file__).resolve().parent.parent),
                 "tests/test_guest_builds.py", "tests/test_report.py", "tests/test_compare_designs.py",
                 "tests/test_machine.py"],
                plugins=[Collect()])
    assert got["tests/test_guest_builds.py::test_build_a_b_refuses_duet_and_mixed_series_before_building"] == {"fast"}
    assert got["tests/test_guest_builds.py::test_bisect_in_turns_in_two_guests_runs_its_step_and_kill9_leaves_no_twin"] == {"guest"}
    assert got["tests/test_report.py::test_report_formats_from_stored_results"] == set()          # host
    assert got["tests/test_report.py::test_real_ab_is_significant_with_its_direction"] == set()   # host
    assert got["tests/test_machine.py::test_check_measures_a_busy_cpu_and_names_it"] == {"quiet"}
    assert all(n.startswith("tests/test_machine.py") for n, m in got.items() if "quiet" in m), got
    assert got["tests/test_compare_designs.py::test_paired_blocks_see_what_drift_hides"] == {"fast"}


WAITS_IN_A_SESSION = '''
import os, time
from pathlib import Path

def test_waits(lab):
    st = lab.state
    Path(os.environ["ZFSPERF_TEST_MARK"]).write_text(f"{st.daemon_pid} {st.holder_pid} {st.syslog_pid}")
    time.sleep(600)
'''


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_signalled_session_stops_its_zfs_fuse_daemon(session_env, tmp_path, sig):
    """CI's time limit or a closed terminal sends SIGTERM or SIGHUP (tests/lanes.py passes either on
    to its lanes): the session ends as after Ctrl-C, its fixtures torn down, its zfs-fuse daemon
    stopped with the namespace holder and syslog beside it. Before, pytest died where it stood and
    left all three running (four labs found on 2026-12-05: two host lanes stopped, and this test's
    own fail-before run, which now kills what it finds). (session_env: a test that starts a daemon
    is not fast.)"""
    import signal
    import subprocess
    import time
    from zfsperf import proc
    (tmp_path / "test_waits.py").write_text(WAITS_IN_A_SESSION)
    mark = tmp_path / "daemon.pid"
    here = Path(__file__).resolve().parent
    argv = lanes.own_run_dir([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "conftest", "-q",
                              "-o", "addopts=", str(tmp_path / "test_waits.py")], tmp_path / "vdevs")
    p = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env={**os.environ, "PYTHONPATH": str(here), "ZFSPERF_TEST_MARK": str(mark)})
    pids: list[int] = []                      # the daemon, its namespace holder, its syslog
    try:
        deadline = time.monotonic() + 120
        while not mark.exists():
            assert p.poll() is None and time.monotonic() < deadline, p.communicate()[0]
            time.sleep(0.2)
        pids = [int(x) for x in mark.read_text().split()]
        assert all(proc.pid_alive(x) for x in pids)
        # the signal to pytest itself (the namespace's sh execs it: the same pid)
        p.send_signal(getattr(signal, sig))
        out = p.communicate(timeout=120)[0]
        assert p.returncode != 0 and "KeyboardInterrupt" in out, out
        deadline = time.monotonic() + 30
        while any(proc.pid_alive(x) for x in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [x for x in pids if proc.pid_alive(x)]
        assert not left, f"the lab's processes {left} outlived its session's {sig}"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for x in pids:                        # a failure here leaves nothing to the tests after it
            if proc.pid_alive(x):
                os.kill(x, signal.SIGKILL)


def test_every_test_of_make_test_runs_in_exactly_one_lane():
    """The lanes' markers and files split the suite: each test that is not `slow` in one lane, none
    in two (the fast tier left the host lane for a lane of its own beside it, and the host tests were
    split by file into two lanes, 2026-12-05)."""
    marks: dict[str, set[str]] = {}

    class Collect:
        def pytest_collection_finish(self, session):
            for i in session.items:
                marks[i.nodeid] = {m.name for m in i.iter_markers()}

    pytest.main(["-p", "no:cacheprovider", "--collect-only", "-q", "-m", "", "--rootdir",
                 str(Path(__file__).resolve().parent.parent), "tests"], plugins=[Collect()])
    assert len(marks) > 600
    lanes_of = {n: [lane for lane in lanes.LANES if lanes.selects(lane, n, m)] for n, m in marks.items()}
    assert {n: ls for n, ls in lanes_of.items() if len(ls) != (0 if "slow" in marks[n] else 1)} == {}
    assert {ln for ls in lanes_of.values() for ln in ls} == set(lanes.LANES)
    assert {lane for phase in lanes.PHASES for lane in phase} == set(lanes.LANES)


def test_a_lane_of_its_own_has_its_own_run_and_vdev_directories(tmp_path):
    """host2 runs zfs-fuse pools beside the host lane: in its namespace /run/zfsperf is empty and
    /var/tmp/zfsperf (the default vdev directory) is a directory of its own, so neither lane's runs
    take the other's live vdev files for leftovers (or remove them with -x)."""
    import subprocess
    vdevs = tmp_path / "vdevs"
    argv = lanes.own_run_dir(["sh", "-c", "ls -A /run/zfsperf; echo --; ls -A /var/tmp/zfsperf; "
                              "mkdir /var/tmp/zfsperf/run-1"], vdevs)
    res = subprocess.run(argv, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["--"], res.stdout          # both empty, whatever the machine's hold
    assert [p.name for p in vdevs.iterdir()] == ["run-1"]   # written where the lane's directory is
    assert not Path("/var/tmp/zfsperf/run-1").exists()


def test_the_guest_lane_gets_a_larger_cpu_share_its_qemu_cannot_leave():
    """QEMU runs in a session of its own, and the kernel's autogroups share the CPU by session, so
    niceness cannot favour the guest lane (issue 84: 1,664 s against 1,716 s): a cpu cgroup can, and
    a child that starts a session of its own (setsid, as QEMU) stays in it. Where this machine has no
    cpu cgroup to give, the lane runs as it is."""
    import subprocess
    g = lanes.cpu_share_group(f"probe-{os.getpid()}")
    try:
        argv = ["setsid", "sh", "-c", "cat /proc/self/cgroup"]
        got = subprocess.run(lanes.in_cgroup(argv, g), capture_output=True, text=True, check=True).stdout
        if g is None:
            assert lanes.in_cgroup(argv, g) == argv
        else:
            assert any(ln.split(":", 2)[2] == "/" + g.name for ln in got.splitlines()
                       if "cpu" in ln.split(":")[1].split(",") or ln.startswith("0::")), got
            share = (g / "cpu.shares") if (g / "cpu.shares").exists() else (g / "cpu.weight")
            assert int(share.read_text()) in (1024 * lanes.GUEST_SHARE, 100 * lanes.GUEST_SHARE)
    finally:
        if g is not None:
            g.rmdir()


def test_one_make_test_at_a_time(tmp_path, monkeypatch, capsys):
    """Two make tests side by side emptied each other's lane directories (2026-12-07: 25 of host2's
    29 tests failed): the second is refused before any lane starts, naming the first."""
    monkeypatch.setattr(lanes, "LOCK", tmp_path / "lanes.lock")
    started: list[str] = []
    monkeypatch.setattr(lanes.Lane, "start", lambda self, lock: started.append(self.name))
    first = lanes.hold_lock(lanes.LOCK, ["make test"])
    assert first is not None
    try:
        assert lanes.main(["--lane", "quiet"]) == 2 and started == []
        err = capsys.readouterr().err
        assert f"another make test is running on this machine (pid {os.getpid()}: make test; " in err, err
    finally:
        first.release()
    again = lanes.hold_lock(lanes.LOCK, ["make test"])     # free once the first has ended
    assert again is not None
    again.release()


def test_what_a_lane_leaves_in_its_cgroup_is_stopped_with_it():
    """A lane's cgroup after the lane: a process of its own session still in it (a QEMU whose
    session teardown a signal cut short, 2026-12-07) is stopped and said, and the group removed."""
    import subprocess
    import time
    from zfsperf import proc
    g = lanes.cpu_share_group(f"left-{os.getpid()}")
    if g is None:
        pytest.skip("no cpu cgroup on this machine: the lane runs at a session's share")
    said: list[str] = []
    try:
        p = subprocess.Popen(lanes.in_cgroup(["setsid", "sleep", "300"], g))
        deadline = time.monotonic() + 10
        while not (g / "cgroup.procs").read_text().split() and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [int(x) for x in (g / "cgroup.procs").read_text().split()]
        assert left, "the sleep never entered the group"
        lanes.end_group(g, say=said.append)
        p.wait(timeout=10)
        assert not any(proc.pid_alive(x) for x in left) and not g.exists()
        assert said and "left in" in said[0] and "SIGTERM" in said[0], said
    finally:
        if g.exists():
            lanes.end_group(g)
