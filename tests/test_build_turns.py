"""Build turns without the OpenZFS guest: what `guest ab --turns` refuses before anything is built or
booted, and the pause/resume of two real QEMU processes through QMP (a machine with no guest in it:
`-machine none` boots nothing, answers QMP like any QEMU)."""

import subprocess
import time

import pytest

from helpers import RECV, write_runfile, zfsperf
from zfsperf.errors import TargetError
from zfsperf.guest.pair import GuestPair
from zfsperf.guest.qmp import Qmp
from zfsperf.guest.vm import Guest
from zfsperf.report import buildfloor
from zfsperf.report.comparison import Comparison, FigureChange
from zfsperf.units import ChangeVerdict


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
    line = RECV.splitlines().index("[[test]]") + 1                       # the test's own line
    assert words in res.stderr and f"{rf}:{line}:" in res.stderr and field in res.stderr, res.stderr
    assert time.monotonic() - t0 < 60                     # nothing was built or booted


def test_build_turns_refuse_a_workload_whose_turns_share_one_pool_and_bisect(tmp_path):
    fio = write_runfile(tmp_path, RECV.split("[[test]]")[0] + '[[test]]\nname = "f"\nworkload = "fio"\n'
                        'rw = "randread"\nsize = "16M"\nruntime = 2\n')
    res = zfsperf("guest", "ab", "--a", "2.3", "--b", "2.3", "-r", str(fio), "--turns")
    assert res.returncode == 2 and "cannot take turns between two guests" in res.stderr, res.stderr
    res = zfsperf("guest", "bisect", "--zfs-src", str(tmp_path), "--good", "a", "--bad", "b", "-r", str(fio),
                  "--case", "f", "--figure", "iops", "--turns")
    assert res.returncode == 2 and "cannot take turns between two guests" in res.stderr, res.stderr
    recv = write_runfile(tmp_path, RECV)
    res = zfsperf("guest", "ab", "--a", "2.3", "--b", "2.3", "-r", str(recv), "--turns", "--detect", "0")
    assert res.returncode == 2 and "--detect" in res.stderr, res.stderr


@pytest.fixture
def two_qemus(tmp_path):
    """Two real QEMU processes with a QMP socket each where Guest expects it, nothing booted."""
    procs, guests = [], []
    try:                # stopped however the test ends, its set-up too (a SIGTERM to make test left both)
        for name in ("guest", "twin"):
            root = tmp_path / name
            root.mkdir()
            g = Guest(root)
            procs.append(subprocess.Popen(["qemu-system-x86_64", "-machine", "none", "-nodefaults", "-display",
                                           "none", "-qmp", f"unix:{g.qmp_socket},server=on,wait=off"],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            guests.append(g)
        deadline = time.monotonic() + 30
        while not all(g.qmp_socket.exists() for g in guests):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "qemu did not start"
            time.sleep(0.05)
        yield guests
    finally:
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
    with pytest.raises(TargetError, match="timed out"):     # a second client meanwhile waits, and gives up
        Qmp(two_qemus[0].qmp_socket, timeout=1)
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


def test_rebuild_is_refused_for_two_sources_or_debians_build(tmp_path):
    rf = write_runfile(tmp_path, RECV)
    res = zfsperf("guest", "ab", "--a", "2.3", "--b", str(tmp_path), "-r", str(rf), "--rebuild")
    assert res.returncode == 2 and "same --a and --b" in res.stderr, res.stderr
    res = zfsperf("guest", "ab", "--a", "2.3", "--b", "2.3", "-r", str(rf), "--rebuild")
    assert res.returncode == 2 and "Debian's build" in res.stderr, res.stderr


def change(pct: float, verdict: str, ci: tuple[float, float], pairs: int = 30) -> "FigureChange":
    return FigureChange(case="recv build=a → recv build=b", figure="throughput", unit="MiB/s", old=[1.0], new=[1.0],
                        old_median=100.0, new_median=100 + pct, change_pct=pct, ci_pct=ci, p=0.03,
                        verdict=verdict, design="turns", test="sign-flip", detectable_pct=2.0, pairs=pairs)


def test_the_rebuild_floor_is_the_a_a_intervals_far_end_and_holds_smaller_build_changes(tmp_path):
    """An A/A′ whose interval is −1.5 … +4.0 % makes a floor of 4 %: a later −3 % WORSE between two
    builds of that test and figure is within noise, said why; a −9 % stays WORSE, its note naming
    the floor; another figure or accelerator is untouched."""
    tests, defs = {"recv build=a → recv build=b": "recv"}, {"recv": "d1"}
    aa = Comparison(base=None, new=None, changes=[change(1.2, "not significant", (-1.5, 4.0))])
    floors = buildfloor.measured(aa, tests, defs, "tcg", "/r/aa")
    assert floors["recv|throughput|tcg|d1"]["floor_pct"] == 4.0
    path = tmp_path / "floors.json"
    buildfloor.save(path, floors)
    small, large = change(-3.0, "worse", (-5.0, -1.0)), change(-9.0, "worse", (-11.0, -7.0))
    cmp = Comparison(base=None, new=None, changes=[small, large])
    said = buildfloor.apply(cmp, buildfloor.load(path), tests, defs, "tcg")
    assert said == ["builds of one source differ by up to 4.0 % here (recv, throughput: an A/A′ rebuild of 30 pairs, "
                    "-1.5 … +4.0 %, /r/aa)"]
    assert small.verdict == ChangeVerdict.WITHIN_NOISE and "within the rebuild floor" in small.note
    assert "the A/B's own verdict: WORSE (-5.0 … -1.0 %)" in small.note
    assert large.verdict == ChangeVerdict.WORSE and large.note.startswith("builds of one source differ by up to 4.0 %")
    assert small.detectable_pct == 4.0
    native = change(-3.0, "worse", (-5.0, -1.0))
    assert buildfloor.apply(Comparison(base=None, new=None, changes=[native]), buildfloor.load(path), tests, defs,
                            None) == [] and native.verdict == ChangeVerdict.WORSE
    # another definition of the test (or a floor kept before definitions were keyed): set aside, said so
    other = change(-3.0, "worse", (-5.0, -1.0))
    said = buildfloor.apply(Comparison(base=None, new=None, changes=[other]), buildfloor.load(path), tests,
                            {"recv": "d2"}, "tcg")
    assert other.verdict == ChangeVerdict.WORSE and not other.note, other
    assert said == ["no rebuild floor for this definition of recv (throughput): the one kept (/r/aa) was "
                    "measured of another definition of the test, and is not used"]
    buildfloor.save(path, {"recv|throughput|tcg": {**floors["recv|throughput|tcg|d1"], "run": "/r/old"}})
    assert buildfloor.apply(Comparison(base=None, new=None, changes=[change(-3.0, "worse", (-5.0, -1.0))]),
                            {"recv|throughput|tcg": buildfloor.load(path)["recv|throughput|tcg"]}, tests, defs,
                            "tcg")[0].startswith("no rebuild floor for this definition of recv")


def test_a_rebuild_floor_of_fewer_pairs_than_the_ab_is_not_precise_enough_to_hold_it(tmp_path):
    """Issue 69 §10: the floor was the far end of one A/A′'s interval with nothing recording its n,
    so a short A/A′ made it wide and later build changes inside it became "within noise"."""
    tests, defs = {"recv build=a → recv build=b": "recv"}, {"recv": "d1"}
    aa = Comparison(base=None, new=None, changes=[change(1.0, "not significant", (-6.0, 8.0), pairs=6)])
    floors = buildfloor.measured(aa, tests, defs, "tcg", "/r/short")
    assert floors["recv|throughput|tcg|d1"]["pairs"] == 6
    ab = change(-3.0, "worse", (-4.0, -2.0), pairs=30)
    said = buildfloor.apply(Comparison(base=None, new=None, changes=[ab]), floors, tests, defs, "tcg")
    assert ab.verdict == ChangeVerdict.WORSE, ab.note                   # its own verdict stands
    assert "fewer pairs than this A/B's 30: not precise enough to bound it" in said[0]
    assert "the A/B's own verdict stands" in ab.note
    old = {k: {kk: vv for kk, vv in f.items() if kk != "pairs"} for k, f in floors.items()}   # kept before pairs
    ab = change(-3.0, "worse", (-4.0, -2.0), pairs=6)
    said = buildfloor.apply(Comparison(base=None, new=None, changes=[ab]), old, tests, defs, "tcg")
    assert ab.verdict == ChangeVerdict.WORSE and "its pairs were not recorded" in said[0]
