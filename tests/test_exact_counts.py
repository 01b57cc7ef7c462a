"""Exact counts (issue 73, 2): what a case made ZFS do, from ZFS's own space accounting, compared
A against B exactly with a tolerance from each side's own iterations, and reported as a finding of
its own whatever the speed verdict says. A behaviour change that keeps speed (copies = 2,
compression on against off) is seen in one iteration on real zfs-fuse."""

import json
import re

from helpers import RECV, fixture
from zfsperf.metrics import counts
from zfsperf.targets.kstat import parse_txgs

ITER_A = {"space_per_byte": 1.0015, "payload_per_round": 4194304.0, "records_per_round": 32.0}


def _m(*vals: float) -> dict:
    return counts.merged([{"space_per_byte": v} for v in vals])


def test_a_receives_counts_are_ratios_to_its_work_so_more_rounds_count_the_same():
    one = counts.of_receive([4200448.0], [4194304], [32])
    three = counts.of_receive([4200448.0] * 3, [4194304] * 3, [32] * 3)
    assert one.pop("logical_bytes") == 4194304 and three.pop("logical_bytes") == 3 * 4194304
    assert one == three == {"space_per_byte": round(4200448 / 4194304, 6), "payload_per_round": 4194304.0,
                            "records_per_round": 32.0}
    assert counts.of_receive([None], [4194304], [32]) is None          # a round's space unread: none
    assert counts.of_receive([], [], []) is None


def test_a_count_beyond_its_tolerance_is_a_finding_and_an_a_a_is_not():
    a = counts.merged([ITER_A])
    assert counts.findings(a, counts.merged([dict(ITER_A)])) == []                       # A/A
    twice = counts.merged([ITER_A | {"space_per_byte": 2.0029}])
    (f,) = counts.findings(a, twice)
    assert f["count"] == "space_per_byte" and f["ratio"] == round(2.0029 / 1.0015, 4)
    assert f["tolerance_pct"] == counts.FLOOR_PCT and f["iterations"] == [1, 1]
    assert counts.sentence(f) == ("B's pool space per byte of data received is 2.00× A's (1.002 B/B → 2.003 B/B; "
                                  "exact counts, beyond ±1 %, 1 and 1 iterations)")
    # a side whose own iterations spread 2 % of their median (1.01) is held to 3 × that, 5.94 %:
    # 5 % is not a finding, 7 % is
    assert counts.findings(_m(1.0, 1.02, 1.01), _m(1.01 * 1.05)) == []
    (g,) = counts.findings(_m(1.0, 1.02, 1.01), _m(1.01 * 1.07))
    assert g["tolerance_pct"] == 5.94 and g["iterations"] == [3, 1]
    assert counts.findings(None, a) == [] and counts.findings(a, None) == []


def test_what_the_pool_wrote_to_its_vdevs_from_the_captured_txgs_kstat():
    """OpenZFS 2.3.2's txgs kstat captured under a write load: the committed txgs after the one the
    workload started at, their nwritten summed (the syncing and open ones not yet), per byte written."""
    txgs = parse_txgs(fixture("openzfs-2.3.2", "kstat_tank_txgs_during_load.txt"))
    done = [t for t in txgs if t.state == "C" and t.txg > 7]
    assert done and all(t.txg > 7 for t in done) and any(t.state != "C" for t in txgs)
    got = counts.of_txgs(txgs, 7, 2 ** 20)
    assert got == {"vdev_written_per_byte": round(sum(t.nwritten for t in done) / 2 ** 20, 6)}
    assert counts.of_txgs(txgs, 2, 2 ** 20) is None        # txgs 3 and 4 gone from the kstat: short
    assert counts.of_txgs(txgs, 7, 0) is None


def test_the_report_line_says_each_count_with_its_unit():
    assert counts.line(counts.merged([ITER_A])) == (
        "exact counts (median per iteration): pool space per byte of data received 1.002 B/B; data (WRITE "
        "payload) per round 4 MiB; WRITE records per round 32 records")
    assert counts.line(None) is None


# the helpers' receive test (1 iteration, a 4 MiB random corpus) swept over copies, and the same on a
# 60 %-compressible corpus swept over compression
RUNFILE = (RECV.replace('name = "recv"', 'name = "copies"') + 'dataset = { copies = ["1", "2"] }\n'
           + RECV.split("[[test]]")[1].replace('name = "recv"', 'name = "compression"')
           .replace('kind = "random"', 'kind = "compressible"').join(["[[test]]", ""])
           + 'dataset = { compression = ["off", "on"] }\n')


def test_copies_and_compression_are_seen_in_one_iteration_on_zfs_fuse(lab, tmp_path):
    """One iteration a case: copies=2 took about twice the pool space per byte received, compression
    on about 40 % less (the corpus is 60 % compressible), each said as a finding by compare (text and
    JSON) though no speed verdict is possible at one iteration; the stream's payload and records per
    round, the same on both sides, are no finding; report shows each case's counts."""
    from helpers import last_dir, records, write_runfile, zfsperf
    res = zfsperf("run", "-r", str(write_runfile(tmp_path, RUNFILE)), "-o", str(tmp_path / "o"), "--no-history")
    assert res.returncode == 0, res.stdout + res.stderr
    d = last_dir(res.stdout)
    space = {r["case"]: r["counts"]["space_per_byte"] for r in records(d)}
    assert len(space) == 4 and all(v > 0 for v in space.values()), space
    cmp = zfsperf("compare", str(d), "--json")
    assert cmp.returncode == 0, cmp.stderr
    js = json.loads(cmp.stdout)
    assert {f["count"] for f in js["findings"]} == {"space_per_byte"}, js["findings"]
    by_test = {("copies" if "copies" in f["case"] else "compression"): f for f in js["findings"]}
    assert set(by_test) == {"copies", "compression"}, js["findings"]
    assert 1.9 < by_test["copies"]["ratio"] < 2.1, by_test
    assert 0.3 < by_test["compression"]["ratio"] < 0.8, by_test
    notes = [n for n in js["notes"] if n.startswith("Finding: ")]
    assert len(notes) == 2 and any(re.search(r"copies=2: B's pool space per byte of data received is (1\.9\d|2\.0\d)× "
                                             r"A's \(", n) for n in notes), notes
    text = zfsperf("compare", str(d))
    assert "Finding: " in text.stdout and "exact counts, beyond ±" in " ".join(text.stdout.split()), text.stdout
    rep = zfsperf("report", str(d))
    assert rep.returncode == 0 and "exact counts (median per iteration): pool space per byte" in \
        " ".join(rep.stdout.split()), rep.stdout
