"""compare that never cries wolf on run-to-run drift and sees small changes where the design allows:
separate runs judged against between-run variance (several runs a side, or the history store's),
one interleaved run analysed as pairs, and the detectable change stated with every verdict.

The statistics are checked on stored results directories (exact, fast); the designs on real
zfs-fuse runs."""

import json
import random
import re
from pathlib import Path

import pytest

from helpers import why
from helpers import flat, zfsperf
from helpers import last_dir, records, write_runfile
from helpers import stored_results as _results, level_run as _run, throughput_change as _tp



def test_two_runs_a_drift_apart_are_not_called_worse(tmp_path):
    """The defect: two runs of identical settings whose levels drifted 6 % apart, each with a tight
    1 % spread inside, were called WORSE at p = 0.008 and failed a 5 % gate. One run a side with no
    history cannot tell drift from a change: now 'cannot be judged between separate runs', the gate holds,
    and the verdict says which changes it judges (beyond the floor)."""
    rng = random.Random(1)
    a = _results(tmp_path / "a", _run(100.0, rng))
    b = _results(tmp_path / "b", _run(94.0, rng))
    ch = _tp(zfsperf("compare", str(a), str(b), "--json", "--no-history"))
    assert ch["verdict"] == "within unknown drift" and ch["design"] == "iterations", ch
    assert ch["detectable_pct"] is None and ch["floor_pct"] == 75.0       # no change promised, the floor said
    gate = zfsperf("compare", str(a), str(b), "--fail-on-regression", "5", "--no-history")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "cannot be judged between separate runs" in flat(gate.stdout)
    assert "only beyond −42.9 … +75 % judged" in flat(gate.stdout)
    assert "does not fail the gate" in gate.stderr
    # a change far beyond any drift is still called, without an interval: the iterations' is not the
    # change's (issue 87), the floor decided it
    c = _results(tmp_path / "c", _run(50.0, rng))
    ch = _tp(zfsperf("compare", str(a), str(c), "--json", "--no-history"))
    assert ch["verdict"] == "worse" and ch["ci_pct"] is None and "beyond the drift floor" in ch["note"], ch


def test_several_runs_a_side_the_run_is_the_unit(tmp_path):
    rng = random.Random(2)
    levels = [100.0, 104.0, 97.0, 102.0, 99.0, 103.0]      # ~3 % between runs, 1 % inside each
    base = [_results(tmp_path / f"a{i}", _run(levels[i], rng)) for i in range(3)]
    same = [_results(tmp_path / f"b{i}", _run(levels[3 + i], rng)) for i in range(3)]
    slower = [_results(tmp_path / f"c{i}", _run(0.8 * levels[3 + i], rng)) for i in range(3)]
    ch = _tp(zfsperf("compare", *map(str, base), "--vs", *map(str, same), "--json", "--no-history"))
    assert ch["design"] == "runs" and ch["verdict"] == "not significant", ch
    assert ch["detectable_pct"] is not None and ch["detectable_pct"] > 3
    ch = _tp(zfsperf("compare", *map(str, base), "--vs", *map(str, slower), "--json", "--no-history"))
    assert ch["verdict"] == "worse" and ch["p"] < 0.05 and ch["ci_pct"][0] < -20 * 0.5 and ch["ci_pct"][1] < 0, ch
    out = " ".join(zfsperf("compare", *map(str, base), "--vs", *map(str, slower), "--no-history").stdout.split())
    assert "the run as the unit" in out and "Welch's t on log run medians" in out      # (lines wrapped to fit)


def test_one_run_a_side_judged_by_the_history_of_identical_settings(tmp_path):
    rng = random.Random(3)
    store = tmp_path / "h.sqlite"
    past = [_results(tmp_path / f"p{i}", _run(100.0 * (1 + rng.gauss(0, 0.05)), rng), start=1 + i)
            for i in range(10)]
    assert zfsperf("history", "import", *map(str, past), "--store", str(store)).returncode == 0
    a = _results(tmp_path / "a", _run(100.0, rng), start=100)
    b = _results(tmp_path / "b", _run(94.0, rng), start=101)       # within the 5 % run-to-run noise
    ch = _tp(zfsperf("compare", str(a), str(b), "--json", "--store", str(store)))
    assert ch["design"] == "history" and ch["verdict"] == "not significant", ch
    c = _results(tmp_path / "c", _run(60.0, rng), start=102)
    ch = _tp(zfsperf("compare", str(a), str(c), "--json", "--store", str(store)))
    assert ch["design"] == "history" and ch["verdict"] == "worse", ch
    # another host's runs are not this machine's noise
    d = _results(tmp_path / "d", _run(94.0, rng), host="elsewhere", start=103)
    ch = _tp(zfsperf("compare", str(a), str(d), "--json", "--store", str(store)))
    assert ch["design"] == "iterations"


def test_paired_blocks_see_what_drift_hides(tmp_path):
    """One interleaved run: the level drifts 15 % over the run, B is 3 % slower than A in every
    block. Unpaired, the drift swamps it; paired, it is called with its interval."""
    rng = random.Random(4)
    d = tmp_path / "ab"
    d.mkdir()
    (d / "run.json").write_text(json.dumps({"target": {}, "runfile": {"source": "t"},
                                            "selection": {"interleave": True, "seed": 1}}))
    lines = []
    for i in range(8):
        level = 100.0 * (1 + 0.02 * i)
        for arm, f in (("a", 1.0), ("b", 0.97)):
            lines.append({"test": "t", "case": f"t arm={arm}", "params": {"arm": arm}, "iteration": i + 1,
                          "workload": "receive", "status": "PASS",
                          "figures": {"throughput": {"value": level * f * (1 + rng.gauss(0, 0.003)), "unit": "MiB/s"}}})
    (d / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    ch = _tp(zfsperf("compare", str(d), "--json"))
    assert ch["design"] == "paired" and ch["verdict"] == "worse", ch
    assert ch["p"] == pytest.approx(2 / 2 ** 8) and ch["ci_pct"][0] < -3 < ch["ci_pct"][1] < 0
    assert ch["detectable_pct"] < 3
    txt = " ".join(zfsperf("compare", str(d), "--cases", "t arm=a", "t arm=b").stdout.split())
    assert "sign-flip permutation" in txt and "WORSE" in txt
    bad = zfsperf("compare", str(d), "--cases", "t arm=a", "nope")
    assert bad.returncode == 2 and "--cases: no case \"nope\"" in bad.stderr


AB = """
[defaults]
iterations = 6
[defaults.pool]
vdevs = 1
vdev_size = "256M"
[[test]]
name = "recv"
workload = "receive"
corpus = {{ kind = "compressible", size = "16M", seed = 5 }}
threads = 1
duration = "2s"           # rounds back to back: one 16M receive alone is over in 0.1 s, too noisy to pair
dataset = {{ {prop} }}
steady = {{ mode = "off" }}
"""


def _interleaved(tmp_path: Path, name: str, prop: str, *, runfile_ab: bool = False) -> Path:
    """An interleaved run of AB: with --interleave, or (runfile_ab) with `ab = true` in the runfile."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    rf = tmp_path / f"{name}.toml"
    rf.write_text(AB.format(prop=prop) + ("ab = true\n" if runfile_ab else ""))
    res = zfsperf("run", "-q", "-r", str(rf), *([] if runfile_ab else ["--interleave"]), "--seed", "11",
                  "-o", str(tmp_path / name), "--no-history")
    assert res.returncode == 0, why(res)
    return last_dir(res.stdout)


def test_interleaved_ab_of_a_real_property_is_called_with_its_interval(tmp_path, lab):
    """`ab = true` in the runfile (the same blocks as --interleave, for this test). The cost planted
    is gzip-9 on a compressible stream (about -60 % on zfs-fuse), far beyond any drift between
    blocks on a loaded machine: its direction is the mechanics' check; how small a change the design
    sees is bench/power.py's figure."""
    d = _interleaved(tmp_path, "ab", 'compression = ["off", "gzip-9"]', runfile_ab=True)
    assert json.loads((d / "run.json").read_text())["ab"] == ["recv"]
    assert len(records(d)) == 12
    ch = _tp(zfsperf("compare", str(d), "--json"))
    assert ch["design"] == "paired" and ch["verdict"] == "worse", ch
    lo, hi = ch["ci_pct"]
    assert lo <= ch["change_pct"] <= hi < 0 and ch["p"] <= 2 / 2 ** 6
    # A is the sweep's first point whatever block order wrote first: with gzip-9's records first in
    # results.jsonl (a shuffled first block can do that), the verdict is still gzip-9 against off
    # (bench/power.py once saw lzjb "better, +133 %" that way)
    import shutil
    flipped = tmp_path / "flipped"
    shutil.copytree(d, flipped)
    lines = (d / "results.jsonl").read_text().splitlines()
    gz = [ln for ln in lines if json.loads(ln)["sweep"].get("compression") == "gzip-9"]
    assert 0 < len(gz) < len(lines)
    (flipped / "results.jsonl").write_text("\n".join(gz + [ln for ln in lines if ln not in gz]) + "\n")
    ch2 = _tp(zfsperf("compare", str(flipped), "--json"))
    assert ch2["verdict"] == "worse" and ch2["change_pct"] == pytest.approx(ch["change_pct"]), ch2


def test_interleaved_aa_is_judged_paired_and_says_what_it_could_see(tmp_path, lab):
    """A user property with no effect on ZFS: A and B are the same, judged by the paired design,
    and the line a user reads agrees with the JSON: "same within ±5 %" when its whole interval lies
    inside ±5 %, else the detectable change it printed ("could see ≥ X %", X the JSON's
    detectable_pct). How often an A/A is called (3-4 %) and how large X is are measured figures of
    bench/calibration.py and bench/aa_runs.py, not judged here: until 2026-12-03 this test asserted
    X < 50 % on a real run and failed CI at 50.8 % on a loaded machine (issue 84)."""
    d = _interleaved(tmp_path, "aa", '"zfsperf:arm" = ["a", "b"]')
    ch = _tp(zfsperf("compare", str(d), "--json"))
    assert ch["design"] == "paired", ch
    assert ch["verdict"] in ("same", "not significant", "within noise", "better", "worse"), ch
    lo, hi = ch["ci_pct"]
    assert lo <= hi and 0 <= ch["p"] <= 1, ch
    assert ch["detectable_pct"] is not None and ch["detectable_pct"] > 0, ch
    out = flat(zfsperf("compare", str(d)).stdout)
    if ch["verdict"] == "same":          # the third outcome: its whole interval inside ±5 %
        assert ch["margin_pct"] == 5.0 and -5 <= lo <= hi <= 5, ch
        assert "= same within ±5 %" in out, out
    elif ch["verdict"] == "not significant":
        assert f"could see ≥ {ch['detectable_pct']:.1f} %" in out, out


DETECT = """
[defaults]
iterations = 1
max_iterations = {maximum}
[defaults.pool]
vdevs = 1
vdev_size = "192M"
[[test]]
name = "rr"
workload = "fio"
rw = "randread"
bs = "4k"
size = "8M"
runtime = 1
dataset = {{ "zfsperf:arm" = ["a", "b"] }}
"""


@pytest.mark.parametrize("want,maximum,stopped_by,blocks", [
    ("0.001%", 7, "max_iterations", 7),                   # unreachable: the blocks run to the maximum
    ("90%", 12, None, None),                              # as far as its own pairs' spread allows
])
def test_detect_runs_blocks_until_the_change_it_asks_for_is_visible(want, maximum, stopped_by, blocks,
                                                                   tmp_path, lab):
    """--detect stops at what it was asked for: an unreachable change runs to the maximum; 90 % (an
    A/A of 4k reads from the ARC, whose pairs agree within a few % on a quiet machine) stops where
    the run's own figures say: reached (at 6 blocks or later, before the maximum, its worst pair's
    detectable change within 90 %) or not (the maximum, its worst beyond 90 %). Whether 90 % is
    reached is a measured figure: make test's host2 lane beside a cold guest build saw this A/A's pairs
    spread to 214 % at 12 blocks (2026-12-06). That it stops at the 6th block when the pairs allow
    is tests/test_lifecycle.py's, on scripted figures; how many blocks a small change takes is
    bench/power.py's figure."""
    rf = write_runfile(tmp_path, DETECT.format(maximum=maximum))
    res = zfsperf("run", "-r", str(rf), "--detect", want, "-o", str(tmp_path / "res"), "--no-history")
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    det = json.loads((d / "run.json").read_text())["detect"]
    assert len(records(d)) == 2 * det["blocks"]
    ch = _tp_iops(zfsperf("compare", str(d), "--json"))
    seq = det["sequential"]                                            # the level of its last look, kept
    assert seq["looks"] == det["blocks"] - 5 and 0 < seq["alpha"] <= 0.05, det
    if det["stopped_by"] == "decided":
        # an A/A whose blocks all agree within ±5 % (or, 1 in 32, all one way) is decided at any
        # look, the first (block 6) to the last (the maximum), and before any other reason to stop
        # is asked (a decision at block 6 beats "detectable change reached" there): the verdict
        # compare gives is that decision
        assert 6 <= det["blocks"] <= maximum, det
        assert ch["verdict"] in ("same", "better", "worse") and f"α = {seq['alpha']:.4f}" in ch["note"], ch
    else:
        assert det["stopped_by"] == (stopped_by or det["stopped_by"]), det
        if blocks is not None:
            assert det["blocks"] == blocks, det
        elif det["stopped_by"] == "detectable change reached":
            assert 6 <= det["blocks"] < maximum and det["worst_pct"] <= 90, det
        else:                                   # not reached: every block it may run, its worst past 90 %
            assert det["stopped_by"] == "max_iterations" and det["blocks"] == maximum and det["worst_pct"] > 90, det
        (pct,) = det["achieved_pct"].values()
        # what compare says of the same run, at the 90 % upper bound of its pairs' spread that the stop
        # waits for (issue 69); compare prints its "could see" at that bound too since issue 87 (it was
        # below it, from the spread's median-unbiased estimate): the two are one figure
        from zfsperf.report import abstats
        # (run.json keeps 3 decimals, compare's pair_sd is rounded too: 147.239 against 147.24002 failed at abs=1e-3)
        assert pct == pytest.approx(abstats.signflip_detectable(ch["pair_sd"], ch["pairs"], seq["alpha"]), rel=1e-4)
        assert pct == pytest.approx(ch["detectable_pct"], rel=1e-4)
    assert f"Detect:\t\t{want.rstrip('%')} % wanted" in res.stdout


def _tp_iops(res) -> dict:
    return next(c for c in json.loads(res.stdout)["changes"] if c["figure"] == "iops")


DUET = """
[defaults]
iterations = 6
[defaults.pool]
vdevs = 1
vdev_size = "384M"
[[test]]
name = "recv"
workload = "receive"
corpus = {{ kind = "compressible", size = "16M", seed = 6 }}
threads = 1
duration = "2s"
duet = true
dataset = {{ {prop} }}
"""


DUET_FIO = """
[defaults]
iterations = 6
[defaults.pool]
vdevs = 1
vdev_size = "384M"
[[test]]
name = "rr"
workload = "fio"
rw = "randread"
bs = "4k"
size = "16M"
runtime = 2
duet = true
dataset = {{ {prop} }}
"""


def _duet(tmp_path: Path, name: str, prop: str, template: str = DUET, iterations: int = 6) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    rf = tmp_path / f"{name}.toml"
    rf.write_text(template.format(prop=prop).replace("iterations = 6", f"iterations = {iterations}"))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / name), "--no-history")
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    recs = records(d)
    assert len(recs) == 2 * iterations
    # both sides of an iteration ran on one pool at the same time, each with its own figures
    for i in range(1, iterations + 1):
        a, b = [r for r in recs if r["iteration"] == i]
        assert a["pool"]["name"] == b["pool"]["name"] and a["figures"] != b["figures"]
        assert a["pool"]["dataset"] != b["pool"]["dataset"]
        assert a["start"] < b["start"] + 1 and b["start"] < a["start"] + 1
    return d


def test_a_duet_aa_runs_both_sides_at_once_and_is_judged_as_a_duet(tmp_path, lab):
    """The same property on both sides (a user property ZFS ignores), at the least size that runs
    the design (2 iterations). Whether a duet A/A's interval holds 1 as often as it should (95 %) is
    a measured figure: bench/power.py's duet false-alarm rate (until 2026-12-04 judged here on one
    real run, twice, in the quiet lane: issue 84)."""
    d = _duet(tmp_path, "aa", '"zfsperf:arm" = ["a", "b"]', iterations=2)
    ch = _tp(zfsperf("compare", str(d), "--json"))
    assert ch["design"] == "duet" and ch["verdict"] == "too few iterations" and ch["pairs"] == 2, ch
    out = flat(zfsperf("compare", str(d)).stdout)
    assert "both sides at once on one pool" in out and "needs ≥ 6 pairs" in out, out


def test_duet_ab_of_a_real_property(tmp_path, lab):
    """4k random reads of a 16M file: from the ARC (primarycache=all), or every one from the vdevs
    (a 128k record read and checksummed for each): each side on its own dataset with its own
    property, judged as a duet whose verdict is its interval's. Whether the verdict is WORSE is a
    measured figure, not this test's: alone here −59 to −75 %, but CI's run of 2026-12-05 (four lanes
    at once) saw the ARC side from 3,643 to 14,811 IOPS and missed it; bench/power.py judges real
    changes of known direction in a duet."""
    d = _duet(tmp_path, "ab", 'primarycache = ["all", "none"]', DUET_FIO)
    recs = records(d)
    assert {r["pool"]["dataset"]["primarycache"] for r in recs if r["case"].endswith("=all")} == {"all"}, recs
    assert {r["pool"]["dataset"]["primarycache"] for r in recs if r["case"].endswith("=none")} == {"none"}, recs
    ch = next(c for c in json.loads(zfsperf("compare", str(d), "--json").stdout)["changes"] if c["figure"] == "iops")
    assert ch["design"] == "duet" and ch["pairs"] == 6 and ch["unit"] == "IOPS", ch
    lo, hi = ch["ci_pct"]
    assert lo <= ch["change_pct"] <= hi, ch
    assert ch["verdict"] == ("worse" if hi < 0 else "better" if lo > 0 else ch["verdict"]), ch
    assert ch["verdict"] not in ("better", "worse") or (lo > 0 or hi < 0), ch


TURNS = DUET.replace("duet = true", 'duet = "turns"')


def _turn_order(d: Path, it: int) -> str:
    """The sides' receives in the order the case log ran them: "ABBA…"."""
    log = next((d / "logs").glob(f"*.iter{it}.log")).read_text()
    return "".join(m for m in re.findall(r"^\$ .*zfs receive \S*?/duet([AB])/", log, re.M))


def test_turns_take_turns_abba_and_an_aa_is_judged_as_turns(tmp_path, lab):
    """duet = "turns": both sides on one pool, round by round in ABBA groups (the side that goes
    first swaps every iteration), equal rounds each, at the least size that shows both groups (2
    iterations). How often a turns A/A's interval misses 1 is bench/power.py's figure (until
    2026-12-04 judged here on real runs in the quiet lane: issue 84)."""
    d = _duet(tmp_path, "aa", '"zfsperf:arm" = ["a", "b"]', TURNS, iterations=2)
    ch = _tp(zfsperf("compare", str(d), "--json"))
    assert ch["design"] == "turns" and ch["verdict"] == "too few iterations" and ch["pairs"] == 2, ch
    assert "taking turns round by round" in zfsperf("compare", str(d)).stdout
    assert json.loads((d / "run.json").read_text())["turns"] == ["recv"]
    recs = records(d)
    for it in (1, 2):
        a, b = [r for r in recs if r["iteration"] == it]
        assert a["rounds"] == b["rounds"] and a["rounds"] % 2 == 0 and a["turns"] == "ABBA"
        order = _turn_order(d, it)
        assert len(order) == 2 * a["rounds"], order
        group = "ABBA" if it % 2 else "BAAB"
        assert order == group * (len(order) // 4), order
    # each side records what a single case records (until 2026-12-02 duet and turns records had
    # neither): its workload's cross-checks and the sampler's cost
    for r in recs:
        names = {c["name"] for c in r.get("cross_checks") or []}
        assert "received data vs pool space" in names, r.get("cross_checks")
        assert r["sampler"]["samples"] > 0 and r["sampler"]["sampler_cpu_ms_per_sample"] is not None, r
    assert any("stream WRITE records vs blocks on disk" in {c["name"] for c in r["cross_checks"]} for r in recs)


def test_turns_ab_of_a_real_property_is_worse_with_its_interval(tmp_path, lab):
    """gzip-9 on a compressible stream costs CPU in the txg sync that ends each receive: in turns
    that sync is its own round's (a duet, both syncing together, shares it and saw about -8 %)."""
    d = _duet(tmp_path, "ab", 'compression = ["off", "gzip-9"]', TURNS)
    ch = _tp(zfsperf("compare", str(d), "--json"))
    assert ch["design"] == "turns" and ch["verdict"] == "worse", ch
    lo, hi = ch["ci_pct"]
    assert lo <= ch["change_pct"] <= hi < 0 and ch["p"] <= 2 / 2 ** 6
    # the gate on the one run: it judged no comparison (an in-run pair's label named no case, so no
    # headline was found) and passed whatever the change; now it judges the pair and fails
    gate = zfsperf("compare", str(d), "--fail-on-regression", "1")
    assert "(1 comparisons, 1 with a p-value)" in gate.stderr, gate.stderr
    assert gate.returncode == 1 and "regression: " in gate.stderr and " throughput " in gate.stderr, gate.stderr


def test_detect_on_a_test_that_takes_turns(tmp_path, lab):
    """--detect on a turns test: iteration after iteration (each one both sides' turns) until the
    detectable change compare computes is reached, at least 6."""
    rf = write_runfile(tmp_path, TURNS.format(prop='"zfsperf:arm" = ["a", "b"]').replace(
        "iterations = 6", "iterations = 1\nmax_iterations = 12").replace('duration = "2s"', 'duration = "1s"'))
    res = zfsperf("run", "-r", str(rf), "--detect", "90%", "-o", str(tmp_path / "res"), "--no-history")
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    det = json.loads((d / "run.json").read_text())["detect"]
    assert 6 <= det["blocks"] <= 12 and len(records(d)) == 2 * det["blocks"], det
    ch = _tp(zfsperf("compare", str(d), "--json"))
    assert ch["design"] == "turns" and ch["pairs"] == det["blocks"], ch
    if det["stopped_by"] == "detectable change reached":          # at 6 pairs unless the pairs spread wide
        assert det["worst_pct"] <= 90 and ch["detectable_pct"] <= 90, (det, ch)
    else:
        assert det["stopped_by"] in ("decided", "max_iterations"), det


MIXED_TURNS = """
[defaults]
iterations = 6
[[test]]
name = "mix"
workload = "mixed"
runtime = 2
reader = { rw = "randread", bs = "128k", size = "8M" }
writer = { rw = "write", bs = "1M", size = "8M" }
duet = "turns"
dataset = { "zfsperf:arm" = ["a", "b"] }
"""


def test_duets_and_turns_are_refused_where_they_cannot_run(tmp_path):
    # the starvation mix takes turns, but its reader and writer already share the pool: never at once
    rf = write_runfile(tmp_path, MIXED_TURNS.replace('duet = "turns"', "duet = true"))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"))
    assert res.returncode == 2 and \
        'test[1].duet: a mixed test cannot duet (only receive and fio)' in res.stderr, res.stderr
    rf = write_runfile(tmp_path, MIXED_TURNS.replace('duet = "turns"', "settle = 1"))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"))
    assert res.returncode == 2 and 'test[1].settle: settle is left out after each switch of a turn: it needs ' \
        'duet = "turns"' in res.stderr, res.stderr
    rf = write_runfile(tmp_path, MIXED_TURNS.replace('duet = "turns"', 'duet = "turns"\nslice = 0'))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"))
    assert res.returncode == 2 and 'test[1].slice: slice: must be at least 1 s' in res.stderr, res.stderr
    rf = write_runfile(tmp_path, DUET_FIO.format(prop='"zfsperf:arm" = ["a", "b"]').replace("runtime = 2",
                                                                                          'runtime = 2\nslice = 1'))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"))
    assert res.returncode == 2 and 'slice is the length of a turn: it needs duet = "turns"' in res.stderr, res.stderr
    rf = write_runfile(tmp_path, DUET_FIO.format(prop='"zfsperf:arm" = ["a", "b"]').replace(
        "duet = true", 'duet = "turns"\nclients = ["127.0.0.1"]'))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"))
    assert res.returncode == 2 and "test[1].clients: fio load hosts cannot take turns" in res.stderr, res.stderr
    assert not (tmp_path / "res").exists()
    rf.write_text(DUET.format(prop='"zfsperf:arm" = ["a", "b"]').replace("duet = true", 'duet = "sometimes"'))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"))
    assert res.returncode == 2 and f"{rf}:13: test[1].duet: expected true, false or \"turns\"" in res.stderr, res.stderr
    assert not (tmp_path / "res").exists()


def test_a_duet_over_a_module_tunable_is_refused(tmp_path):
    rf = write_runfile(tmp_path, DUET.format(prop='compression = "off"').replace(
        "duet = true", "duet = true\ntunables = { zfs_vdev_async_write_max_active = [3, 10] }"))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"))
    assert res.returncode == 2 and f"{rf}:13: test[1].duet: zfs_vdev_async_write_max_active is a module tunable" \
        in res.stderr, res.stderr
    assert not (tmp_path / "res").exists()
    rf.write_text(DUET.format(prop='compression = "off"').replace("threads = 1", "threads = [1, 2]"))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"))
    assert res.returncode == 2 and "test[1].duet: threads is a workload field" in res.stderr, res.stderr


def test_history_change_points_carry_the_run_level_test(tmp_path):
    """history's change points are judged by the runs' own spread too (Welch's t with the runs of
    each segment as the units, as `compare --vs`): a real step passes it and says so."""
    rng = random.Random(9)
    dirs = []
    for i in range(12):
        d = _results(tmp_path / f"r{i:02d}", _run(100.0 * (0.7 if i >= 6 else 1.0) * (1 + rng.gauss(0, 0.02)), rng))
        info = json.loads((d / "run.json").read_text())
        info["start"] = 1000.0 + i
        (d / "run.json").write_text(json.dumps(info))
        dirs.append(d)
    store = str(tmp_path / "h.sqlite")
    assert zfsperf("history", "import", *map(str, dirs), "--store", store).returncode == 0
    (series,) = [s for s in json.loads(zfsperf("history", "--store", store, "--figure", "throughput",
                                                 "--json").stdout)["series"]]
    (cp,) = series["change_points"]
    assert cp["index"] == 6 and cp["verdict"] == "worse" and cp["runs_p"] < 0.05, cp


def _fio_turns_dir(d: Path, slices: list[tuple[float, float]] | None, its: int = 6) -> Path:
    """A results directory of a fio test taking turns (format 3, as a run writes it), `its`
    iterations: with `slices`, each record keeps its slices' read IOPS (the k-th slice pair's level
    times (A's factor, B's factor) = slices[k]; the iteration's figure their mean), else only the
    figure per iteration (a record from before slices were kept); the p99 alike on both sides but
    in the first iteration."""
    d.mkdir(parents=True)
    info = {"format": 3, "target": {"implementation": "zfs-fuse", "zfs_version": "0.7"}, "host": "h",
            "start": 0, "runfile": {"source": "t", "text": "t"}, "selection": {}, "duets": ["rr"],
            "turns": ["rr"], "ab": []}
    (d / "run.json").write_text(json.dumps(info))
    rows = []
    for it in range(1, its + 1):
        for side, arm in enumerate("ab"):
            per = [1000.0 * (1 + it / 50 + k / 10) * ((gain[side]) if slices else 1) for k, gain in
                   enumerate(slices or [(1, 1)])]
            rec = {"test": "rr", "case": f"rr zfsperf:arm={arm}", "sweep": {"zfsperf:arm": arm}, "iteration": it,
                   "workload": "fio", "status": "PASS", "turns": "ABBA",
                   "figures": {"read_iops": {"value": sum(per) / len(per), "unit": "IOPS"},
                               "read_lat_p99": {"value": 50.0 + (side if it == 1 else 0), "unit": "us"}}}
            if slices:
                rec["slices"] = {"count": len(per), "seconds": 1.0, "settle_seconds": 0,
                                 "figures": [{"read_iops": v} for v in per]}
            rows.append(rec)
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def test_fio_turns_judge_throughput_on_slice_pairs_and_latency_per_iteration(tmp_path):
    """fio turns: a side's k-th slice ran beside the other side's k-th, so compare judges their IOPS
    slice pair by slice pair (12 pairs from 6 iterations of one ABBA group each), the unit §3 of
    issue 37 asks for; percentiles stay per iteration, from each side's merged bins. Records
    without slice figures are judged per iteration as before."""
    def change(d: Path, figure: str) -> dict:
        return next(c for c in json.loads(zfsperf("compare", str(d), "--json").stdout)["changes"]
                    if c["figure"] == figure)
    # B +4 % in each iteration's first slice pair, -1 % in its second: per iteration B is always
    # faster (six of six, the least p 6 pairs give), per slice pair 6 up and 6 down
    d = _fio_turns_dir(tmp_path / "mixed", [(1.0, 1.04), (1.0, 0.99)])
    ch = change(d, "read_iops")
    assert ch["design"] == "turns" and "12 slice pairs of 6 iterations" in ch["test"], ch
    assert ch["p"] > 0.05 and ch["verdict"] != "better", ch
    assert ch["old_median"] < ch["new_median"]                      # the medians shown: the iterations'
    p99 = change(d, "read_lat_p99")
    assert "6 pairs" in p99["test"] and "slice" not in p99["test"], p99
    # the design line names each unit once, with the figures it was used for
    assert ("test: sign-flip permutation on log ratios (exact), 12 slice pairs of 6 iterations (IOPS and MiB/s) "
            "and 6 pairs (the other figures); α = 0.05") in " ".join(zfsperf("compare", str(d)).stdout.split()), \
        zfsperf("compare", str(d)).stdout
    # every slice pair 2 % faster: twelve of twelve, p = 2 / 2^12
    d = _fio_turns_dir(tmp_path / "up", [(1.0, 1.02), (1.0, 1.02)])
    ch = change(d, "read_iops")
    # read_iops is not fio's headline (iops): exploratory, its p Holm-adjusted over the case's other figures
    assert ch["verdict"] == "better" and ch["p_raw"] == pytest.approx(2 / 2 ** 12) and ch["exploratory"], ch
    # a record without slice figures: per iteration
    d = _fio_turns_dir(tmp_path / "old", None)
    ch = change(d, "read_iops")
    assert "6 pairs" in ch["test"] and "slice" not in ch["test"], ch
