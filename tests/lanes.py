"""`make test`: the whole suite in two phases, so that the OpenZFS guest's emulation does not wait
for the host tests, nor they for it.

Phase 1, side by side:
  host   pytest -m "not slow and not fast and not quiet and not guest"
                                                             zfs-fuse, fio, the fake target, captures,
  host2  the same tests, split by file (HOST2_FILES)         each a half: the host tests wait on
                                                             timed workloads more than they work
                                                             (one lane kept 0.35 of a core busy and
                                                             was the long pole, 29.6 min, 2026-12-05)
  guest  pytest -m "guest and not slow"                      the OpenZFS guest under QEMU
  fast   pytest -m "fast and not slow"                       no ZFS, daemon or guest (make test-fast's
                                                             tests, one at a time: 108 s of the host
                                                             lane until 2026-12-05, when the two
                                                             lanes kept 1.39 of 2 cores busy)
Phase 2, alone:
  quiet  pytest -m "quiet and not fast and not slow"         the tests that judge the idle machine
                                                             (nothing runs beside them); measured
                                                             figures are bench/'s, never a test's

The guest lane runs in a cpu cgroup of its own with 16 times a session's CPU share (GUEST_SHARE):
QEMU, in a session of its own, would otherwise get one autogroup's share among the other lanes' and
their daemons' sessions; a cgroup its children cannot leave (the build A/B from module directories
beside three busy sessions: 583 s at equal shares, 176 s in the cgroup, 151 s alone; 2026-12-05).
The guest, fast and host2 lanes run each in a private mount namespace with its own empty
/run/zfsperf and its own /var/tmp/zfsperf (the default vdev directory): zfsperf's one-run-at-a-time
lock, its guards, its labs and its runs' vdev files live there, so the lanes' runs (the guest's
measure the guest, whose TCG timings are never speeds and never judged) do not refuse each other
or read each other's live vdev files as leftovers. Each lane is its own pytest session
with its own zfs-fuse daemon when it needs one. Output: every line of a lane as it comes, with
the lane's name in front; the whole of each lane's output is also kept in build/test-logs/. The
last lines say each lane's exit status and time, then every failed test's line (pytest's short
summary), so that the end of a long log names what failed.

One `make test` at a time on a machine (LOCK, held from the first lane to the last): the lanes'
vdev directories and cgroups are the machine's, and a second run's lane start emptied the first's
(2026-12-07: 25 of host2's 29 tests failed in two runs started by mistake side by side). A lane in
a cgroup ends with it: what is left in it when the lane's pytest has gone (a QEMU whose session
teardown a signal cut short) is stopped and said.

`python tests/lanes.py --lane host,quiet` runs those lanes only, as `make test` runs them (`make
test-lane LANE=guest`). Each lane's time and its 10 slowest tests (pytest's --durations) end the
output. `python tests/lanes.py ARGS...` with other arguments runs `pytest ARGS` once, as given
(`make test PYTEST_ARGS="tests/test_x.py"`: one area against real zfs-fuse). Exit status: 0
when every lane passed, else the first failing lane's (a lane that selected no test has failed:
pytest's exit 5).
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "build" / "test-logs"
PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
NO_TESTS = 5                                  # pytest's exit status when a selection is empty
DURATION = re.compile(r"^\d+\.\d+s (call|setup|teardown) ")   # a line of pytest's --durations
SLOWEST = 10                                  # the slowest tests each lane's summary names

HOST = "not slow and not fast and not quiet and not guest"
# host2's files: about half the host tests' time (their durations in make test of 2026-12-05:
# 794 of 1,756 s, the rest in host)
HOST2_FILES = ("tests/test_compare_designs.py", "tests/test_verdicts_stored.py", "tests/test_ab_line.py",
               "tests/test_user_path.py", "tests/test_fio.py", "tests/test_steady_real.py", "tests/test_fleet_run.py")
LANES = {
    "host": ["-m", HOST, *[f"--ignore={f}" for f in HOST2_FILES]],
    "host2": ["-m", HOST, *HOST2_FILES],
    "guest": ["-m", "guest and not slow"],
    "fast": ["-m", "fast and not slow"],
    "quiet": ["-m", "quiet and not fast and not slow"],
}
PHASES = [["host", "host2", "guest", "fast"], ["quiet"]]
OWN_RUN_DIR = {"guest", "fast", "host2"}        # lanes in a mount namespace of their own (own_run_dir)
VDEVS = Path("/var/tmp/zfsperf")                # zfsperf's default vdev directory (runner.StorageOptions)
LOCK = Path("/var/tmp/zfsperf-lanes.lock")      # one make test at a time: the lanes' directories are the machine's


def selects(name: str, nodeid: str, marks: set[str]) -> bool:
    """Whether lane name runs the test nodeid with these markers (its -m expression, its files)."""
    from _pytest.mark.expression import Expression
    args = LANES[name]
    if not Expression.compile(args[1]).evaluate(lambda m, **kw: m in marks):
        return False
    path = nodeid.split("::")[0]
    files = [a for a in args[2:] if not a.startswith("-")]
    ignored = [a.split("=", 1)[1] for a in args[2:] if a.startswith("--ignore=")]
    return (not files or path in files) and path not in ignored


def lane_vdevs(name: str) -> Path:
    """The directory a lane in a namespace of its own sees as /var/tmp/zfsperf."""
    return Path(f"{VDEVS}-lane-{name}")


def own_run_dir(argv: list[str], vdevs: Path) -> list[str]:
    """argv run in a private mount namespace with an empty tmpfs on /run/zfsperf and vdevs (made
    empty first) on /var/tmp/zfsperf."""
    Path("/run/zfsperf").mkdir(parents=True, exist_ok=True)
    VDEVS.mkdir(parents=True, exist_ok=True)
    subprocess.run(["rm", "-rf", str(vdevs)], check=False)
    vdevs.mkdir(parents=True)
    return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
            f'mount -t tmpfs -o mode=755 zfsperf-lane /run/zfsperf && mount --bind "$0" {VDEVS} && exec "$@"',
            str(vdevs), *argv]


# the guest lane's share of the CPU against every other session's: QEMU runs in a session of its
# own, and the kernel's autogroups share the CPU between sessions, so niceness cannot favour it;
# a cgroup can, and its children (QEMU) cannot leave it
SHARE_LANES = {"guest"}                         # lanes in a cgroup of their own, GUEST_SHARE times the CPU
# times a session's share (cgroup v1 cpu.shares, v2 cpu.weight): beside three busy sessions a group
# of two busy processes got 1.16 cores at 4 and 1.67 at 16 (2026-12-06); at 4 the guest lane took
# 24.9 min beside the host lanes, 17.3 alone
GUEST_SHARE = 16
CGROUP_V1 = Path("/sys/fs/cgroup/cpu")
CGROUP_V2 = Path("/sys/fs/cgroup")


def cpu_share_group(name: str, share: int = GUEST_SHARE) -> Path | None:
    """A cpu cgroup of lane name's own with `share` times the default weight (cgroup v1 or v2), or
    None where this machine gives none (no cpu controller, no permission)."""
    try:
        if (CGROUP_V1 / "cpu.shares").exists():
            g = CGROUP_V1 / f"zfsperf-lane-{name}"
            g.mkdir(exist_ok=True)
            (g / "cpu.shares").write_text(str(1024 * share))
            return g
        if "cpu" in (CGROUP_V2 / "cgroup.subtree_control").read_text().split():
            g = CGROUP_V2 / f"zfsperf-lane-{name}"
            g.mkdir(exist_ok=True)
            (g / "cpu.weight").write_text(str(100 * share))
            return g
    except OSError:
        return None
    return None


def in_cgroup(argv: list[str], group: Path | None) -> list[str]:
    """argv run inside cgroup `group` (as it is where group is None)."""
    if group is None:
        return argv
    return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(group), *argv]


def end_group(group: Path, say: Callable[[str], None] = print) -> None:
    """A lane's cgroup after its lane: whatever is still in it (its pytest is gone) stopped (TERM,
    then KILL after a grace: proc.stop_pid) and said; then the group removed."""
    from zfsperf import proc
    with contextlib.suppress(OSError):
        left = [int(x) for x in (group / "cgroup.procs").read_text().split()]
        if left:
            say(f"make test: {len(left)} process(es) left in {group} after its lane: stopped (SIGTERM, then SIGKILL)")
        for pid in left:
            proc.stop_pid(pid, grace=10.0)
        group.rmdir()


def hold_lock(path: Path, argv: list[str]) -> Any:
    """The one-make-test-at-a-time lock (machine.RunLock's flock, on its own file), held until this
    process ends; None (said on stderr, naming the holder) when another make test holds it."""
    from zfsperf.errors import InputError
    from zfsperf.machine import RunLock, lock_holder
    lock = RunLock(path)
    try:
        lock.acquire(argv)
    except InputError:
        h = lock_holder(path) or {}
        print(f"make test: another make test is running on this machine (pid {h.get('pid', '?')}: "
              f"{' '.join(h.get('argv') or [])}; {path}): its lanes' directories and cgroups are the same "
              "as this one's", file=sys.stderr)
        return None
    return lock


class Lane:
    def __init__(self, name: str, argv: list[str]) -> None:
        self.name, self.argv = name, argv
        self.proc: subprocess.Popen | None = None
        self.rc: int | None = None
        self.t0 = self.t1 = 0.0
        self.last = ""
        self.failures: list[str] = []           # pytest's short summary: FAILED/ERROR lines
        self.slowest: list[str] = []            # pytest's --durations lines, slowest first

    def start(self, out_lock: threading.Lock) -> None:
        LOGS.mkdir(parents=True, exist_ok=True)
        log = open(LOGS / f"{self.name}.log", "w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, text=True, bufsize=1)

        def pump() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            in_durations = False
            for line in self.proc.stdout:
                log.write(line)
                log.flush()
                if line.strip():
                    self.last = line.rstrip()
                if line.startswith(("FAILED ", "ERROR ")):
                    self.failures.append(line.rstrip())
                if "slowest" in line and "durations" in line and line.startswith("="):
                    in_durations = True
                elif in_durations and DURATION.match(line):
                    self.slowest.append(line.rstrip())
                elif in_durations and line.strip():
                    in_durations = False
                with out_lock:
                    sys.stdout.write(f"[{self.name}] {line}")
                    sys.stdout.flush()
            self.t1 = time.monotonic()          # its output ended with it: its own time, whenever it is waited for
            log.close()
        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()

    def wait(self) -> int:
        assert self.proc is not None
        self.rc = self.proc.wait()
        self.pump.join()
        return self.rc

    def ok(self) -> bool:
        """Passed: exit 0. A lane that selected no test did not pass (exit 5): its markers selected
        nothing, which is a mistake in them, never a green lane."""
        return self.rc == 0


def main(args: list[str]) -> int:
    only = None
    if args[:1] == ["--lane"] and len(args) == 2:     # `make test-lane LANE=guest`: lanes by name, as make test runs them
        only = args[1].split(",")
        unknown = [n for n in only if n not in LANES]
        if unknown:
            print(f"lanes.py: no lane {unknown[0]} (lanes: {', '.join(LANES)})", file=sys.stderr)
            return 2
    elif args:
        return subprocess.run([*PYTEST, *args], cwd=ROOT).returncode
    lock = hold_lock(LOCK, ["make test", *args])
    if lock is None:
        return 2
    t0 = time.monotonic()
    out_lock = threading.Lock()
    done: list[Lane] = []
    running: list[Lane] = []

    def forward(signum: int, _frame) -> None:     # SIGTERM/SIGHUP to make: the lanes end their sessions
        for lane in running:
            if lane.proc is not None and lane.proc.poll() is None:
                lane.proc.send_signal(signum)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)

    groups: list[Path | None] = []
    for phase in PHASES:
        running = []
        for name in phase:
            if only is not None and name not in only:
                continue
            argv = [*PYTEST, *LANES[name]]
            argv = own_run_dir(argv, lane_vdevs(name)) if name in OWN_RUN_DIR else argv
            if name in SHARE_LANES:
                group = cpu_share_group(name)
                groups.append(group)
                print(f"make test: the {name} lane " + (f"in cgroup {group}, {GUEST_SHARE} times a session's CPU share"
                                                        if group else "at a session's CPU share (no cpu cgroup here)"))
                argv = in_cgroup(argv, group)
            lane = Lane(name, argv)
            lane.start(out_lock)
            running.append(lane)
        try:
            for lane in running:
                lane.wait()
        except KeyboardInterrupt:                  # Ctrl-C reached the lanes too: let them end their sessions
            for lane in running:
                lane.wait()
            for g in groups:
                if g is not None:
                    end_group(g)
            return 130
        done += running
        for g in groups:                          # empty once its lane ended, or emptied
            if g is not None:
                end_group(g)
        groups = []
        for lane in running:                     # what a lane's runs left in its own vdev directory
            if lane.name in OWN_RUN_DIR:
                subprocess.run(["rm", "-rf", str(lane_vdevs(lane.name))], check=False)
    print(f"\nmake test: {time.monotonic() - t0:.0f} s in all (phase 1: host, host2, guest and fast side by side; phase 2: quiet alone)")
    for lane in done:
        said = " (selected no test: a failure)" if lane.rc == NO_TESTS else ""
        print(f"  {lane.name:6} exit {lane.rc}{said}  {lane.t1 - lane.t0:5.0f} s  {lane.last}")
    for lane in done:                              # where each lane's time goes
        if lane.slowest:
            print(f"  {lane.name}: its {min(SLOWEST, len(lane.slowest))} slowest")
            for line in lane.slowest[:SLOWEST]:
                print(f"    {line}")
    for lane in done:                              # what failed, where the end of a CI log shows it
        for line in lane.failures:
            print(f"  {lane.name:6} {line}")
    print(f"  each lane's whole output: {LOGS}/")
    failed = [lane for lane in done if not lane.ok()]
    if failed:
        return failed[0].rc or 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
