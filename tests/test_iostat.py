"""zpool iostat parsers: human form on real zfs-fuse output, -Hp and human on captured OpenZFS output."""

import contextlib
import os

import pytest

from helpers import VERSIONS, fixture
from zfsperf.errors import InputError
from zfsperf.metrics.iostat import (RQ_CLASSES, parse_hp_reports, parse_hp_request_counts, parse_human_reports,
                                    pool_metrics)
from zfsperf.pool import destroy_busy


@pytest.mark.parametrize("version", VERSIONS)
def test_hp_and_human_agree_on_captures(version):
    hp = parse_hp_reports(fixture(version, "zpool_iostat_-Hp_-v_tank.txt"), "tank")
    assert len(hp) == 1 and hp[0]["alloc"] > 0 and hp[0]["write_bw"] > 0
    human = parse_human_reports(fixture(version, "zpool_iostat_-v_tank.txt"), "tank")
    assert len(human) == 1 and human[0]["free"] > 0


def test_hp_rows_with_latency_columns():
    rows = parse_hp_reports(fixture("openzfs-2.3.2", "zpool_iostat_-Hp_-y_-l_tank_2_5.txt"), "tank", ["-l"])
    assert len(rows) == 5 and all(r["read_ops"] == 0 for r in rows) and all(r["write_ops"] > 0 for r in rows)


@contextlib.contextmanager
def fuse_pool(lab, target, tmp_path, name):
    """A throwaway 128 MiB zfs-fuse pool on a file, destroyed afterwards."""
    vd = tmp_path / f"{name}.img"
    vd.write_bytes(b"")
    os.truncate(vd, 128 << 20)
    assert lab.run(["zpool", "create", "-m", str(tmp_path / "m"), name, str(vd)]).ok
    try:
        yield name
    finally:
        destroy_busy(target, name)           # zfs-fuse may call it busy right after iostat


def test_human_on_real_zfs_fuse(lab, target, tmp_path):
    with fuse_pool(lab, target, tmp_path, "iop"):
        res = lab.run(["zpool", "iostat", "iop", "1", "2"])
        rows = parse_human_reports(res.stdout, "iop")
        assert len(rows) == 2 and rows[0]["alloc"] > 0 and rows[0]["free"] > rows[0]["alloc"]


def test_bad_rows_name_the_line():
    with pytest.raises(InputError) as e:
        parse_human_reports("pool alloc\niop 1.2Q 3 4 5 6 7\n", "iop", "x")
    assert "x:2" in str(e.value)


@pytest.mark.parametrize("version,rebuild", [("openzfs-2.1.11", False), ("openzfs-2.3.2", True)])
def test_latency_histogram_header_and_rows(version, rebuild):
    from zfsperf.metrics.iostat import parse_hp_histogram, parse_latency_header
    cols = parse_latency_header(fixture(version, "zpool_iostat_-w_tank.txt"))
    assert cols[:8] == ["total_wait_read", "total_wait_write", "disk_wait_read", "disk_wait_write",
                        "syncq_wait_read", "syncq_wait_write", "asyncq_wait_read", "asyncq_wait_write"]
    assert cols[8:] == (["scrub", "trim", "rebuild"] if rebuild else ["scrub", "trim"])   # rebuild: 2.2+
    hist = parse_hp_histogram(fixture(version, "zpool_iostat_-Hp_-w_-y_tank_5_1.txt"), cols)
    labels = [b for b, _n in hist["total_wait_write"]]
    assert labels[0] == 1 and all(b == 2 * a + 1 for a, b in zip(labels, labels[1:]))   # 2^(j+1)-1 ns
    assert sum(n for _b, n in hist["total_wait_write"]) > 0
    with pytest.raises(InputError):
        parse_hp_histogram(fixture(version, "zpool_iostat_-Hp_-w_-y_tank_5_1.txt"), cols[:-1])


@pytest.mark.parametrize("version,async_write", [("openzfs-2.1.11", 7146 + 446), ("openzfs-2.3.2", 7525 + 324)])
def test_request_counts_per_class_from_r(version, async_write):
    """`zpool iostat -Hp -r`, as 2.1.11 (12 columns: no rebuild) and 2.3.2 (14) print it: each
    class's individual and aggregated I/Os summed over the size buckets (the captures' sums)."""
    text = fixture(version, "zpool_iostat_-Hp_-r_tank.txt")
    got = parse_hp_request_counts(text, "tank")
    assert list(got) == list(RQ_CLASSES[:7 if version == "openzfs-2.3.2" else 6])
    assert (got["sync_read"], got["sync_write"], got["async_read"], got["async_write"]) == (6, 158, 0, async_write)
    cut = "\n".join("\t".join(ln.split("\t")[:-1]) if "\t" in ln else ln for ln in text.splitlines())
    with pytest.raises(InputError, match="ind and agg"):          # an odd width: not this table
        parse_hp_request_counts(cut, "tank")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_vdev_section_of_w_v_is_not_added_to_the_pool(version):
    """`zpool iostat -Hp -w -v`: after the pool's section, each vdev's (a blank line, its name, its
    rows: print_vdev_stats in zpool_main.c). The parser added every section into the pool's counts
    (469 became 938 with one vdev). Built from the real capture: the pool's section, then the same
    rows under a vdev's name, as a one-vdev pool prints them, then a mirror's two disks."""
    from zfsperf.metrics.iostat import parse_hp_histogram, parse_latency_header
    cols = parse_latency_header(fixture(version, "zpool_iostat_-w_tank.txt"))
    pool_only = fixture(version, "zpool_iostat_-Hp_-w_-y_tank_5_1.txt")
    rows = "\n".join(ln for ln in pool_only.splitlines() if "\t" in ln)
    with_vdevs = pool_only.rstrip("\n") + f"\n\n/var/tmp/vdev0\n{rows}\n\nmirror-1\n{rows}\n\nsdb\n{rows}\n"
    alone = parse_hp_histogram(pool_only, cols, pool="tank")
    assert sum(n for _b, n in alone["total_wait_write"]) > 0
    assert parse_hp_histogram(with_vdevs, cols, pool="tank") == alone
    assert parse_hp_histogram(with_vdevs, cols) == alone          # no pool named: the first section
    assert parse_hp_histogram(with_vdevs, cols, pool="sdb") == alone   # one vdev asked for by name
    assert parse_hp_histogram(pool_only, cols, pool="other") == {c: [] for c in cols}


@pytest.mark.parametrize("version", VERSIONS)
def test_hp_queue_columns_are_not_read_as_latencies(version):
    """-Hp -q without -l: the queue columns were read as waits (pool_lat_ms 0.0 on 2.1, whose
    18-field rows looked like -l ones). Parsed by the groups asked for: queues, no latency."""
    rows = parse_hp_reports(fixture(version, "zpool_iostat_-Hp_-q_-y_tank_1_3.txt"), "tank", ["-q"])
    assert len(rows) == 3 and all("total_wait_write" not in r for r in rows)
    assert "pool_lat_ms" not in pool_metrics(rows[0], 1)
    assert rows[1]["asyncq_write_pend"] + rows[1]["asyncq_write_activ"] >= 1
    assert ("rebuildq_write_pend" in rows[0]) == (version == "openzfs-2.3.2")      # 2.2+ only
    both = parse_hp_reports(fixture(version, "zpool_iostat_-Hp_-l_-q_tank.txt"), "tank", ["-l", "-q"])
    assert both[0]["total_wait_write"] > 0 and "syncq_read_pend" in both[0]
    with pytest.raises(InputError, match="does not fit"):          # -q output read as -l: refused
        parse_hp_reports(fixture(version, "zpool_iostat_-Hp_-q_-y_tank_1_3.txt"), "tank", ["-l"])


def test_hp_with_spaces_or_without_the_pool_is_an_error_not_nothing():
    text = fixture("openzfs-2.3.2", "zpool_iostat_-Hp_-y_-l_tank_2_5.txt")
    with pytest.raises(InputError, match="not tab-separated") as e:
        parse_hp_reports(text.replace("\t", "  "), "tank", ["-l"], "pasted.txt")
    assert "pasted.txt:1" in str(e.value)
    with pytest.raises(InputError, match="no row for pool 'other'"):
        parse_hp_reports(text, "other", ["-l"])
    with pytest.raises(InputError, match="no row for pool"):
        parse_human_reports("", "tank")


def test_human_pool_named_pool_on_real_zfs_fuse(lab, target, tmp_path):
    """The header line starts with the word `pool`: a pool named pool made it an unreadable row."""
    with fuse_pool(lab, target, tmp_path, "pool"):
        res = lab.run(["zpool", "iostat", "pool", "1", "2"])
        assert res.stdout.split("\n")[1].split()[:2] == ["pool", "alloc"]      # the header is there
        rows = parse_human_reports(res.stdout, "pool")
        assert len(rows) == 2 and rows[0]["alloc"] > 0


class _Replay:
    """A target whose `zpool iostat -w` header and long-running reports are real processes replaying
    output captured from OpenZFS 2.1.11 (`cat` of the file), or a process that prints only an error."""
    impl = "openzfs-linux"

    def __init__(self, tmp, reports: dict[str, str | None]) -> None:
        self.tmp, self.reports = tmp, reports

    def capabilities(self):
        from types import SimpleNamespace
        return SimpleNamespace(iostat_forms=["-Hp", "-w", "-l"], remote=False)

    def run(self, argv):
        from zfsperf import proc
        assert argv == ["zpool", "iostat", "-w", "tank"]
        return proc.Completed(argv, 0, fixture("openzfs-2.1.11", "zpool_iostat_-w_tank.txt"), "", 0.01)

    def popen(self, argv, stderr=None):
        import subprocess
        name = self.reports["-w" if "-w" in argv else "-l"]
        if name is None:                           # the report never comes: an error and exit 1
            cmd = ["sh", "-c", "echo \"cannot open 'tank': no such pool\" >&2; exit 1"]
        else:
            path = self.tmp / name
            path.write_text(fixture("openzfs-2.1.11", name))
            cmd = ["cat", str(path)]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr)


def test_pool_latency_of_a_measured_interval(tmp_path):
    from zfsperf.metrics.iostat import PoolLatency
    pl = PoolLatency(_Replay(tmp_path, {"-w": "zpool_iostat_-Hp_-w_-y_tank_5_1.txt",
                                        "-l": "zpool_iostat_-Hp_-y_-l_tank_2_5.txt"}), "tank", 5)
    pl.start()
    got = pl.finish()
    assert got["histograms"] and got["average_wait_ns"] and "unavailable" not in got


def test_a_pool_latency_report_that_never_came_is_unavailable_not_a_failed_case(tmp_path):
    """A `zpool iostat -Hp -y -l` that printed no report (seen once in the guest: exit without a row)
    made a fio case that had run fine FAIL with 'no row for pool'. The pool-side latency was not
    measured: it is recorded as unavailable, with the command, its exit status and its message."""
    from zfsperf.metrics.iostat import PoolLatency
    pl = PoolLatency(_Replay(tmp_path, {"-w": "zpool_iostat_-Hp_-w_-y_tank_5_1.txt", "-l": None}), "tank", 5)
    pl.start()
    got = pl.finish()
    assert set(got) == {"unavailable"}, got
    assert "zpool iostat -Hp -y -l tank 5 1` printed no report (exit status 1: cannot open 'tank'" in got["unavailable"]


def test_a_report_process_ssh_failed_to_start_is_started_again(tmp_path):
    """CI, the guest lane beside the host lane: a fio case's `pool_latency` was unavailable (no
    report), so the guest test found no columns. On a loaded guest ssh now and then refuses a
    shared-connection session: exit 255 at once, the command never ran. That report process is
    started again (as fio and receive already were), and the record says how late its interval began."""
    from types import SimpleNamespace
    from zfsperf.metrics.iostat import PoolLatency

    class Refused(_Replay):
        starts: list[str] = []

        def capabilities(self):
            return SimpleNamespace(iostat_forms=["-Hp", "-w", "-l"], remote=True)

        def popen(self, argv, stderr=None):
            import subprocess
            self.starts.append(" ".join(argv))
            if "-l" in argv and sum("-l" in a.split() for a in self.starts) == 1:   # refused once, by ssh
                return subprocess.Popen(["sh", "-c", "exit 255"], stdout=subprocess.PIPE, stderr=stderr)
            return super().popen(argv, stderr=stderr)

    pl = PoolLatency(Refused(tmp_path, {"-w": "zpool_iostat_-Hp_-w_-y_tank_5_1.txt",
                                        "-l": "zpool_iostat_-Hp_-y_-l_tank_2_5.txt"}), "tank", 5)
    pl.start()
    got = pl.finish()
    assert "unavailable" not in got, got
    assert got["histograms"] and got["average_wait_ns"]
    assert list(got["late_s"]) == ["-Hp -y -l"] and 0.2 <= got["late_s"]["-Hp -y -l"] < 5, got
    assert Refused.starts.count("zpool iostat -Hp -y -l tank 5 1") == 2


def test_a_cut_short_interval_does_not_wait_for_its_report(tmp_path):
    """Ctrl-C during a fio case on OpenZFS: the case's `zpool iostat -Hp -y -w/-l POOL T 1` side
    processes report only after T seconds (the fio runtime), and the case waited for them, 30 s
    each, before its teardown: a SIGINT'd run in the guest took 63 s to end. A cut-short interval
    is abandoned: its report processes are stopped at once."""
    import time
    from zfsperf.metrics.iostat import PoolLatency

    class Slow(_Replay):
        def popen(self, argv, stderr=None):     # a report that comes after its 60 s interval
            import subprocess
            return subprocess.Popen(["sleep", "60"], stdout=subprocess.PIPE, stderr=stderr)

    pl = PoolLatency(Slow(tmp_path, {}), "tank", 60)
    pl.start()
    procs = [p for _f, p in pl.procs]
    assert len(procs) == 2 and all(p.poll() is None for p in procs)
    t0 = time.monotonic()
    pl.abandon()
    assert time.monotonic() - t0 < 10
    assert all(p.poll() is not None for p in procs)
