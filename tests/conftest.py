"""One real zfs-fuse daemon per test session, in zfsperf's own private mount namespace, and one
OpenZFS guest, booted once, for every test that needs it (`openzfs_guest`).

The CLI runs the tests start find the daemon through ZFSPERF_LAB, corpora go to a session cache
(ZFSPERF_CACHE), and the tunables journal to a session state dir (ZFSPERF_STATE).

Markers: `quiet` (judges the machine itself: runs with nothing beside it), `guest`
(needs the OpenZFS guest), `fast` (no ZFS at all). One place decides them: the fixtures a test
asks for (LANE_FIXTURES, NEEDS_A_DAEMON), never a module-level mark. A test that asks for
`openzfs_guest` (itself or through a fixture of its own) is `guest`; one that asks for
`idle_machine` (it judges the machine) is `quiet`; one that asks for none of NEEDS_A_DAEMON (zfs-fuse, the guest, PostgreSQL, sshd,
loop devices, an idle machine) is `fast`. So a refusal in a module of guest tests that needs no
guest never waits for one, and a format test on real runs in a module of measured tests runs beside
the guest lane, not alone. tests/lanes.py, which `make test` runs, runs the guest tests beside the
other host tests, then the quiet ones, alone. (`slow`, a proof too long for `make test`, is the one
mark set by hand: tests/lanes.py leaves it to `make test-slow`.)
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from helpers import DEFAULT_BATCH, children, lab_pools


def _interrupted(signum: int, _frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config):
    """SIGTERM or SIGHUP (CI's time limit, a closed terminal, tests/lanes.py passing on either)
    ends the session as Ctrl-C does: pytest stops and tears its fixtures down, so the session's
    zfs-fuse daemon, its guest and its PostgreSQL are stopped. By default either signal killed
    pytest where it stood and left them running (tests/test_lanes.py)."""
    import signal
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _interrupted)


@pytest.fixture(autouse=True)
def cli_in_process(request):
    """A fast test's read-only commands run in this process (helpers.zfsperf)."""
    import helpers
    helpers.IN_PROCESS = request.node.get_closest_marker("fast") is not None
    yield
    helpers.IN_PROCESS = False


@pytest.fixture(autouse=True)
def no_run_outlives_its_test():
    """A `zfsperf run` a test started and left running (a test that failed while it waited for it)
    holds the one-run lock: every run in the tests after it was refused (CI: one stuck run turned
    into 12 failures). Such a run is killed with -9 when its test ends (its guard cleans up after
    it), so a failure stays the one test's."""
    yield
    for pid, cmd in children(os.getpid()):
        if "zfsperf.cli" in cmd and " run " in f"{cmd} ":
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except (OSError, ChildProcessError):
                pass


@pytest.fixture(autouse=True)
def no_pool_outlives_its_test(request):
    """A pool a test made on the session's lab and left there fails that test, and is destroyed:
    CI of 2026-12-06 had one test's pool ("kst", its destroy refused as busy) fail three later
    tests that wanted the lab without pools. A run's guard may still be removing a killed run's
    pool when its test ends: that is waited for (up to 30 s) before anything is called left."""
    from zfsperf.zfsfuse.daemon import Lab
    lab = request.getfixturevalue("lab") if "lab" in request.fixturenames else None
    if not isinstance(lab, Lab):         # no lab, or a module's own fixture of that name (the guest's builds)
        yield
        return
    before = lab_pools(lab)
    yield
    left = lab_pools(lab) - before
    deadline = time.monotonic() + 30
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = lab_pools(lab) - before
    if left:
        from zfsperf.pool import destroy_busy
        for name in sorted(left):
            destroy_busy(lab, name)
        pytest.fail(f"the test left pools on the session's lab: {', '.join(sorted(left))} (destroyed)")


NEEDS_A_DAEMON = frozenset({"session_env", "lab", "target", "openzfs_guest", "pg", "pg_url", "sshd", "loops",
                            "idle_machine", "fleet_hosts"})
LANE_FIXTURES = {"openzfs_guest": "guest", "idle_machine": "quiet"}


@pytest.hookimpl(tryfirst=True)           # before -m deselects by the markers added here
def pytest_collection_modifyitems(config, items):
    """Each test's lane from its fixtures (module docstring); then, in one session, the `quiet`
    tests first, the `guest` tests last (tests/lanes.py runs them as separate sessions)."""
    for i in items:
        names = set(getattr(i, "fixturenames", ()))
        for fixture, lane in LANE_FIXTURES.items():
            if fixture in names:
                i.add_marker(getattr(pytest.mark, lane))
        if not NEEDS_A_DAEMON & names:
            i.add_marker(pytest.mark.fast)
    quiet = [i for i in items if i.get_closest_marker("quiet")]
    guest = [i for i in items if i.get_closest_marker("guest")]
    rest = [i for i in items if i not in quiet and i not in guest]
    items[:] = quiet + rest + guest


@pytest.fixture
def idle_machine():
    """For a test that judges the machine itself (zfsperf check): nothing else may run beside it,
    so it is never fast and runs in the quiet phase. It provides nothing."""


@pytest.fixture(scope="session")
def session_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("zfsperf-session")
    env = {
        "ZFSPERF_LAB": f"/run/zfsperf/test-{os.getpid()}",
        "ZFSPERF_CACHE": str(base / "cache"),
        "ZFSPERF_STATE": str(base / "state"),
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield base
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def lab(session_env):
    from zfsperf.zfsfuse.daemon import Lab, lab_dir_from_env
    lab = Lab.start(lab_dir_from_env(), owner="lab")
    yield lab
    lab.stop()


@pytest.fixture(scope="session")
def target(lab):
    from zfsperf.zfsfuse.target import ZfsFuseTarget
    return ZfsFuseTarget(lab, owns_lab=False)


@pytest.fixture(scope="session")
def vdev_root(session_env):
    d = Path("/var/tmp") / f"zfsperf-test-{os.getpid()}"
    d.mkdir(parents=True, exist_ok=True)
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


@pytest.fixture(scope="session")
def small_corpus(target, vdev_root):
    from zfsperf.workloads import corpus
    return corpus.make(target, "random", "24M", seed=7, vdev_dir=vdev_root / "corpus")


@pytest.fixture
def params(tmp_path):
    """A directory laid out like /sys/module/zfs/parameters (zfs-fuse has no tunables at run time)."""
    d = tmp_path / "params"
    d.mkdir()
    (d / "zfs_recv_write_batch_size").write_text(DEFAULT_BATCH + "\n")
    (d / "zfs_vdev_async_write_max_active").write_text("10\n")
    return d


@pytest.fixture(scope="session")
def openzfs_guest(session_env, tmp_path_factory):
    """The OpenZFS 2.3 guest zfsperf builds (cached) and boots, shared by every guest test: stopped
    at the end, with no qemu left."""
    from zfsperf import proc
    from zfsperf.guest.vm import Guest
    from zfsperf.sshlink import Ssh
    from helpers import zfsperf
    root = tmp_path_factory.mktemp("guest")
    old = os.environ.get("ZFSPERF_GUEST_DIR")
    os.environ["ZFSPERF_GUEST_DIR"] = str(root)
    t0 = time.monotonic()
    build = zfsperf("guest", "build", "--zfs", "2.3", timeout=3600)
    assert build.returncode == 0, build.stdout + build.stderr
    up = zfsperf("guest", "up", "--zfs", "2.3", timeout=900)
    assert up.returncode == 0, up.stdout + up.stderr
    print(f"\nOpenZFS guest built and booted in {time.monotonic() - t0:.0f} s")
    g = Guest(root)
    st = g.state()
    assert st is not None and st.accel in ("tcg", "kvm")
    yield g
    Ssh(st.url(), g.ssh_options()).close()                # the tests' shared ssh connection
    down = zfsperf("guest", "down")
    assert down.returncode == 0
    assert not proc.pid_alive(st.qemu_pid)                  # no qemu left (a zombie awaits its reaper)
    live = [ln for ln in subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
            .splitlines() if "qemu-system" in ln and not ln.startswith("Z") and str(root) in ln]
    assert live == []
    if old is None:
        os.environ.pop("ZFSPERF_GUEST_DIR", None)
    else:
        os.environ["ZFSPERF_GUEST_DIR"] = old
