"""CPU cost per unit of work (issue 73, 1): the machine's busy CPU over a case's counted workload,
less zfsperf's own, per GiB and per thousand operations, and ZFS's own threads' per GiB; figures
judged like any other (lower is better), the share zfsperf itself took stated."""

import json
from pathlib import Path

import pytest

from zfsperf.metrics import cpucost
from zfsperf.targets.kstat import busy_seconds, thread_name, zfs_threads
from zfsperf.units import unit_direction


def test_the_machines_busy_time_from_this_machines_proc_stat():
    text = Path("/proc/stat").read_text()
    first = [int(x) for x in text.splitlines()[0].split()[1:]]
    want = (first[0] + first[1] + first[2] + first[5] + first[6]) / 100     # user nice system irq softirq
    assert busy_seconds(text) == want and want > 0
    assert busy_seconds("cpu  10 0 20 1000 5 1 2 7 0 0\ncpu0 …") == 0.33   # idle, iowait, steal left out
    for bad in ("", "cpu0 1 2 3\n"):                   # unreadable: a ValueError the target turns into None
        with pytest.raises(ValueError):
            busy_seconds(bad)


# FreeBSD's sysctl(8) output (kernel-only interfaces, replayed): kern.clockrate as the FreeBSD
# Handbook shows it on 16.0-CURRENT; kern.cp_time in sysctl's array form (user nice system
# interrupt idle, ticks of stathz over every CPU: kvm_getcptime(3)), numbers of our own
CLOCKRATE = "{ hz = 100, tick = 10000, profhz = 8128, stathz = 127 }\n"


def test_the_machines_busy_time_on_freebsd_from_kern_cp_time():
    """A FreeBSD target's CPU figures (issue 73, 1): busy ticks (all but idle) at kern.clockrate's
    stathz, the clock rate read once; a sysctl that fails, or says something else, gives none
    (the case has no CPU figures, never wrong ones)."""
    from zfsperf import proc
    from zfsperf.targets.kstat import cp_time_busy, stathz
    from zfsperf.targets.openzfs_freebsd import OpenZfsFreeBsdTarget
    assert stathz(CLOCKRATE) == 127
    assert cp_time_busy("254 0 127 127 9000\n", 127) == 4.0
    for bad in ("1 2 3 4", "1 2 x 4 5", ""):
        with pytest.raises(ValueError):
            cp_time_busy(bad, 127)
    with pytest.raises(ValueError):
        stathz("{ hz = 100, tick = 10000 }")
    answers = {"kern.clockrate": CLOCKRATE, "kern.cp_time": "1270 0 254 0 10000\n"}
    asked: list[str] = []

    class Replayed(OpenZfsFreeBsdTarget):
        def run(self, argv, **kw):
            asked.append(argv[-1])
            out = answers.get(argv[-1])
            return proc.Completed(list(argv), 0 if out is not None else 1, out or "", "", 0.001)
    t = Replayed()
    assert t.busy_cpu_seconds() == 12.0 and t.busy_cpu_seconds() == 12.0
    assert asked == ["kern.clockrate", "kern.cp_time", "kern.cp_time"]
    answers["kern.cp_time"] = "not a counter\n"
    assert t.busy_cpu_seconds() is None
    del answers["kern.cp_time"]
    assert t.busy_cpu_seconds() is None and t.zfs_cpu() is None


def test_zfs_threads_are_kernel_threads_by_name_and_nothing_else():
    """Lines as /proc/PID/stat prints them (here: this machine's own, which has no ZFS threads, and
    the form of a kernel thread's): only a child of kthreadd (pid 2) with a ZFS name counts."""
    own = Path(f"/proc/{__import__('os').getpid()}/stat").read_text()
    assert zfs_threads(own) == {}
    fields = own[own.rindex(")") + 2:].split()
    kthread = " ".join(["S", "2", *fields[2:11], "150", "50", *fields[13:]])
    lines = "\n".join([f"811 (z_wr_iss_0) {kthread}", f"812 (z_wr_iss_1) {kthread}", f"900 (txg_sync) {kthread}",
                       f"901 (kworker/0:1) {kthread}",
                       f"950 (z_fake) {' '.join(['S', '1', *fields[2:]])}"])        # a user process named z_: not
    assert zfs_threads(lines) == {"z_wr_iss": 4.0, "txg_sync": 2.0}
    assert thread_name("z_wr_int_3_1") == "z_wr_int" and thread_name("txg_sync") == "txg_sync"


def test_the_figures_leave_zfsperfs_own_cpu_out_and_say_its_share():
    a = cpucost.Reading(100.0, 3.0, {"zfs-fuse daemon": 40.0})
    b = cpucost.Reading(112.0, 5.0, {"zfs-fuse daemon": 46.0})
    figs, how = cpucost.cost(a, b, 2 * 2 ** 30, 20000)
    assert figs == {"cpu_s_per_gib": (5.0, "s/GiB"), "zfs_cpu_s_per_gib": (3.0, "s/GiB"),
                    "cpu_ms_per_kop": (500.0, "ms/kop")}
    assert how["machine_s"] == 12 and how["zfsperf_s"] == 2 and how["zfsperf_share_pct"] == 16.7
    assert how["zfs_threads"] == {"zfs-fuse daemon": 6.0}
    assert unit_direction("s/GiB") == -1 and unit_direction("ms/kop") == -1     # less CPU is better
    m = cpucost.merged([how, how | {"machine_s": 14}])
    assert m["machine_s"] == 13 and m["iterations"] == 2
    assert cpucost.line(m).startswith("CPU (mean of 2 iterations) over the counted workload: the machine 13 s, "
                                      "of it zfsperf's own 2 s")
    assert cpucost.merged([]) is None and cpucost.line(None) is None


def test_a_sides_turns_are_summed_into_its_figures():
    """Taking turns: a side's CPU is the machine's while it had its turns, summed over them (each
    ZFS thread by name), its work the turns' work."""
    from zfsperf.case import turns_cpu_cost
    turns = [(cpucost.Reading(100.0, 1.0, {"zfs-fuse daemon": 40.0}), cpucost.Reading(103.0, 1.5, {"zfs-fuse daemon": 42.0})),
             (cpucost.Reading(110.0, 2.0, {"zfs-fuse daemon": 45.0}), cpucost.Reading(111.0, 2.5, {"zfs-fuse daemon": 45.5}))]
    a, b = cpucost.over_turns(turns)
    assert (b.busy_s - a.busy_s, b.own_s - a.own_s, b.zfs) == (4.0, 1.0, {"zfs-fuse daemon": 2.5})
    figs, how = turns_cpu_cost(turns, {"bytes": 2 ** 30, "ops": 1000})
    assert figs["cpu_s_per_gib"] == {"value": 3.0, "unit": "s/GiB"} and figs["zfs_cpu_s_per_gib"]["value"] == 2.5
    assert figs["cpu_ms_per_kop"]["value"] == 3000.0 and how["turns"] == 2 and how["machine_s"] == 4.0
    assert turns_cpu_cost([], {"bytes": 1.0}) is None and turns_cpu_cost(turns, None) is None


def counted(tmp_path: Path, text: str, n: int) -> tuple[Path, list[dict]]:
    """A real run of the runfile text on zfs-fuse: its results directory and its n counted records."""
    from helpers import last_dir, records, write_runfile, zfsperf
    res = zfsperf("run", "-r", str(write_runfile(tmp_path, text)), "-o", str(tmp_path / "o"), "--no-history")
    assert res.returncode == 0, res.stdout + res.stderr
    d = last_dir(res.stdout)
    recs = [r for r in records(d) if r["iteration"] >= 1]
    assert len(recs) == n
    return d, recs


CASES = """
[defaults]
iterations = 2
timeout = "10m"
[defaults.pool]
vdevs = 1
vdev_size = "256M"
[[test]]
name = "recv"
workload = "receive"
corpus = { kind = "random", size = "16M", seed = 7 }
threads = 2
[[test]]
name = "wr"
workload = "fio"
rw = "write"
bs = "128k"
size = "16M"
runtime = "3s"
dataset = { checksum = ["fletcher2", "fletcher4"] }
"""


def test_every_case_alone_on_zfs_fuse_has_its_cpu_figures(lab, tmp_path):
    """A receive and a fio write, each alone: CPU seconds per GiB and per thousand operations (the
    machine's less zfsperf's), the zfs-fuse daemon's per GiB, in the record with how they were
    taken, in report's table and line, and judged by compare (lower is better)."""
    from helpers import zfsperf
    d, recs = counted(tmp_path, CASES, 6)
    for r in recs:
        f, how = r["figures"], r["cpu"]
        assert f["cpu_s_per_gib"]["unit"] == "s/GiB" and f["cpu_s_per_gib"]["value"] > 0, r
        assert f["cpu_ms_per_kop"]["value"] > 0 and f["zfs_cpu_s_per_gib"]["value"] > 0, r
        assert 0 < how["zfs_s"] <= how["machine_s"] + 0.5 and how["zfsperf_s"] >= 0, how
        assert list(how["zfs_threads"]) == ["zfs-fuse daemon"]
        assert "work" not in r
        gib = how["bytes"] / 2 ** 30
        assert abs(f["cpu_s_per_gib"]["value"] - how["work_s"] / gib) <= 0.01 / gib + 1e-6, (f, how)
    rep = zfsperf("report", str(d))
    words = " ".join(rep.stdout.split())
    assert "cpu_s_per_gib" in words and "s/GiB" in words and "of it zfsperf's own" in words, rep.stdout
    cmp = json.loads(zfsperf("compare", str(d), "--json").stdout)          # the two checksums' cases
    assert any(c["figure"] == "cpu_s_per_gib" for c in cmp["changes"]), cmp["changes"]


TURNS = """
[defaults]
iterations = 2
timeout = "10m"
[defaults.pool]
vdevs = 1
vdev_size = "384M"
[[test]]
name = "recv"
workload = "receive"
corpus = { kind = "compressible", size = "16M", seed = 6 }
threads = 1
duration = "2s"
duet = "turns"
dataset = { compression = ["off", "gzip-9"] }
[[test]]
name = "rr"
workload = "fio"
rw = "randread"
bs = "4k"
size = "8M"
runtime = 2
duet = "turns"
dataset = { checksum = ["fletcher2", "fletcher4"] }
"""


def test_each_side_taking_turns_on_zfs_fuse_has_its_own_cpu_figures(lab, tmp_path):
    """Issue 73, 1 in turns (until 2026-12-05 only a case alone had CPU figures): each side's CPU
    is read around its own turns, so a receive into gzip-9 and one into no compression, taking
    turns on one pool, each have their figures, and the daemon's CPU per GiB is the gzip side's
    larger (compression is CPU work in the daemon: the direction of a planted cost, not a size);
    a fio test in turns has its figures too, and compare judges them in the turns design."""
    from helpers import zfsperf
    d, recs = counted(tmp_path, TURNS, 8)
    for r in recs:
        f, how = r["figures"], r["cpu"]
        assert f["cpu_s_per_gib"]["unit"] == "s/GiB" and f["zfs_cpu_s_per_gib"]["value"] > 0, r
        assert f["cpu_ms_per_kop"]["unit"] == "ms/kop" and how["turns"] >= 2, how
        assert list(how["zfs_threads"]) == ["zfs-fuse daemon"] and how["work_s"] <= how["machine_s"], how
    zfs = {c: sorted(r["figures"]["zfs_cpu_s_per_gib"]["value"] for r in recs if r["case"] == c)
           for c in ("recv compression=off", "recv compression=gzip-9")}
    assert min(zfs["recv compression=gzip-9"]) > max(zfs["recv compression=off"]), zfs
    cmp = json.loads(zfsperf("compare", str(d), "--json").stdout)
    judged = {(c["case"].split()[0], c["figure"]) for c in cmp["changes"] if c["design"] == "turns"}
    assert {("recv", "zfs_cpu_s_per_gib"), ("rr", "cpu_ms_per_kop")} <= judged, judged
