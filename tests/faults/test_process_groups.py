"""Stopping what zfsperf started stops the whole process group, not only its leader.

The guard (after kill -9 of zfsperf) and proc.stop_pid (a case's teardown) sent SIGTERM to a
process group and, once its leader was gone, took the whole group for gone: a member that
outlived the leader (a shell's child busy in I/O, say) was never sent SIGKILL. Here the group is
real: a leader that exits on SIGTERM and a member that ignores it.

Not covered by this: fio's job processes, which fio starts in sessions of their own. Seen in the
OpenZFS guest: zfsperf killed with -9 mid fio case; fio itself died (SIGPIPE on its status
output, its reader gone) and its job process ran on to the end of the job's runtime."""

import os
import signal
import subprocess
import time


from zfsperf import guard, guardian, proc


# sh leads the group and dies of SIGTERM; its child ignores SIGTERM (an ignored signal stays
# ignored across exec), like a process that does not stop when its leader does; the member
# prints its pid once its trap is set (a SIGTERM before that would end it: no test)
GROUP = ["sh", "-c", "sh -c 'trap \"\" TERM; echo $$; exec sleep 120' & wait"]


def _start() -> tuple[subprocess.Popen, int]:
    p = subprocess.Popen(GROUP, stdout=subprocess.PIPE, text=True, start_new_session=True)
    member = int(p.stdout.readline())
    assert os.getpgid(member) == p.pid
    return p, member


def _kill(*pids: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _gone(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return not proc.pid_alive(pid)


def test_stop_pid_of_a_group_stops_a_member_that_outlives_its_leader():
    p, member = _start()
    try:
        assert proc.stop_pid(p.pid, grace=1.0, proc=p, group=True) is True       # it needed SIGKILL
        assert p.poll() is not None
        assert proc.wait_group_gone(p.pid, 5.0) and proc.group_members(p.pid) == []
        deadline = time.monotonic() + 5
        while not _gone(member) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(member)
    finally:
        _kill(member, p.pid)


def test_the_guard_stops_a_member_that_outlives_its_leader(monkeypatch):
    monkeypatch.setattr(guardian, "TERM_GRACE", 0.5)          # the member ignores SIGTERM: 5 s, shorter
    p, member = _start()
    said: list[str] = []
    try:
        guardian.stop_procs([f"{p.pid} {guard.start_time(p.pid)}"], said.append)
        assert proc.group_members(p.pid) == [], said
        assert [s.split(" ")[0] for s in said] == ["SIGTERM", "SIGKILL"], said
    finally:
        _kill(member, p.pid)
        p.wait()
