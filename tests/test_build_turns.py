"""Build turns without the OpenZFS guest: what `guest ab --turns` refuses before anything is built or
booted, and the pause/resume of two real QEMU processes through QMP (a machine with no guest in it:
`-machine none` boots nothing, answers QMP like any QEMU)."""

import subprocess
import time

import pytest

from helpers import write_runfile, zfsperf
from zfsperf.errors import TargetError
from zfsperf.guest.pair import GuestPair
from zfsperf.guest.qmp import Qmp
from zfsperf.guest.vm import Guest

RECV = """
[defaults]
iterations = 1
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


@pytest.mark.parametrize("change, field, words", [
    ("threads = [1, 2]", "threads", "sweeps threads"),
    ('steady = { mode = "gate" }', "steady", "a paused guest is not sampled"),
])
def test_build_turns_refuse_what_they_cannot_hold_before_booting(tmp_path, change, field, words):
    rf = write_runfile(tmp_path, RECV.replace("threads = 1" if field == "threads" else 'steady = { mode = "off" }',
                                              change))
    t0 = time.monotonic()
    res = zfsperf("guest", "ab", "--a", "2.3", "--b", "2.3", "-r", str(rf), "--turns")
    assert res.returncode == 2, res.stderr
    assert words in res.stderr and f"{rf}:7" in res.stderr and field in res.stderr, res.stderr
    assert time.monotonic() - t0 < 60                     # nothing was built or booted


def test_build_turns_refuse_a_workload_whose_turns_share_one_pool_and_bisect(tmp_path):
    fio = write_runfile(tmp_path, RECV.split("[[test]]")[0] + '[[test]]\nname = "f"\nworkload = "fio"\n'
                        'rw = "randread"\nsize = "16M"\nruntime = 2\n')
    res = zfsperf("guest", "ab", "--a", "2.3", "--b", "2.3", "-r", str(fio), "--turns")
    assert res.returncode == 2 and "cannot take turns between two guests" in res.stderr, res.stderr
    res = zfsperf("guest", "bisect", "--zfs-src", str(tmp_path), "--good", "a", "--bad", "b", "-r", str(fio),
                  "--case", "f", "--figure", "iops", "--turns")
    assert res.returncode == 2 and "--turns" in res.stderr, res.stderr


@pytest.fixture
def two_qemus(tmp_path):
    """Two real QEMU processes with a QMP socket each where Guest expects it, nothing booted."""
    procs, guests = [], []
    for name in ("guest", "twin"):
        root = tmp_path / name
        root.mkdir()
        g = Guest(root)
        procs.append(subprocess.Popen(["qemu-system-x86_64", "-machine", "none", "-nodefaults", "-display", "none",
                                       "-qmp", f"unix:{g.qmp_socket},server=on,wait=off"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        guests.append(g)
    deadline = time.monotonic() + 30
    while not all(g.qmp_socket.exists() for g in guests):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "qemu did not start"
        time.sleep(0.05)
    yield guests
    for p in procs:
        p.kill()
        p.wait()


def test_a_turn_pauses_the_other_guest_and_reads_both_back(two_qemus):
    pair = GuestPair(two_qemus)
    try:
        assert pair.names() == ["guest", "twin"]
        to_twin = pair.turn_to(1)()
        assert to_twin == {"running": "twin", "states": {"guest": "paused", "twin": "running"}}
        assert pair.turn_to(0)() == {"running": "guest", "states": {"guest": "running", "twin": "paused"}}
        assert pair.resume_all() == ["twin"]            # after a turn both run again
        assert pair.resume_all() == []
    finally:
        pair.close()
    q = Qmp(two_qemus[0].qmp_socket)     # QEMU takes one QMP client at a time: the next one, once closed
    try:
        assert q.status() == "running"
        q.pause()
        assert q.status() == "paused"
        with pytest.raises(TargetError, match="CommandNotFound"):
            q.execute("no-such-command")
    finally:
        q.close()


def test_a_socket_without_qemu_is_a_target_error(tmp_path):
    with pytest.raises(TargetError, match="QMP socket"):
        Qmp(tmp_path / "nothing.sock")
