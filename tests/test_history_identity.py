"""A run has an identity (host, start time, its records' sha256): a copy of a results directory
is the run it copies. The history design's noise comes only from runs of identical settings made
before BASE, never from the compared runs or their copies, and an sd of 0 is never used.

The defect these tests reproduce: three runs of identical settings and their copies in one store;
`compare r1 r2 --store H --fail-on-regression 5` chose the history design, took the between-run sd
of the copies (adjacent identical medians: 0) and printed WORSE, p 0.000, exit 1, for an A/A.
Stored results directories made here (no ZFS): fast."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path


from helpers import zfsperf



def _results(d: Path, values: list[float], *, start: float, host: str = "h1") -> Path:
    d.mkdir(parents=True)
    info = {"target": {"implementation": "zfs-fuse", "zfs_version": "0.7"}, "host": host, "start": start,
            "runfile": {"source": "t", "text": "same runfile"}, "selection": {}}
    (d / "run.json").write_text(json.dumps(info))
    (d / "results.jsonl").write_text("".join(json.dumps({
        "test": "t", "case": "c", "params": {}, "iteration": i + 1, "workload": "receive", "status": "PASS",
        "figures": {"throughput": {"value": v, "unit": "MiB/s"}}}) + "\n" for i, v in enumerate(values)))
    return d


def _level(level: float, rng: random.Random, n: int = 5, cv: float = 0.01) -> list[float]:
    return [level * (1 + rng.gauss(0, cv)) for _ in range(n)]


def _tp(res) -> dict:
    assert res.returncode in (0, 1), res.stdout + res.stderr
    return next(c for c in json.loads(res.stdout)["changes"] if c["figure"] == "throughput")


def test_copies_are_one_run_and_an_a_a_is_never_worse_at_p_0(tmp_path):
    rng = random.Random(7)
    runs = [_results(tmp_path / f"r{i}", _level(lv, rng), start=1000.0 + i)
            for i, lv in enumerate((100.0, 90.6, 97.0))]
    copies = [shutil.copytree(r, tmp_path / "copies" / f"{k}" / r.name) for k in range(2) for r in runs]
    store = str(tmp_path / "h.sqlite")
    res = zfsperf("history", "import", *map(str, runs + copies), "--store", store)
    assert res.returncode == 0 and "3 run(s) added, 6 already there" in res.stdout, res.stdout + res.stderr
    gate = zfsperf("compare", str(runs[0]), str(runs[1]), "--store", store, "--fail-on-regression", "5", "--json")
    ch = _tp(gate)
    assert ch["design"] != "history" and ch["verdict"] != "worse", ch      # no run before r1: no history
    assert ch["detectable_pct"] is None and ch["floor_pct"] > 0        # separate runs: the floor, no promise
    assert gate.returncode == 0, gate.stderr


def test_history_noise_only_from_earlier_runs_of_identical_settings(tmp_path):
    rng = random.Random(8)
    earlier = [_results(tmp_path / f"e{i}", _level(100.0 * (1 + rng.gauss(0, 0.04)), rng), start=100.0 + i)
               for i in range(6)]
    a = _results(tmp_path / "a", _level(100.0, rng), start=200.0)
    b = _results(tmp_path / "b", _level(97.0, rng), start=201.0)
    # made after BASE, and far off: if they counted, the noise would be huge and the copies of a
    # and b would make it zero
    later = [_results(tmp_path / f"l{i}", _level(50.0 if i % 2 else 150.0, rng), start=300.0 + i) for i in range(4)]
    store = str(tmp_path / "h.sqlite")
    assert zfsperf("history", "import", *map(str, earlier + later + [a, b]), "--store", store).returncode == 0
    ch = _tp(zfsperf("compare", str(a), str(b), "--store", store, "--json"))
    assert ch["design"] == "history" and "6 earlier runs of identical settings" in ch["test"], ch
    assert ch["verdict"] == "not significant" and ch["detectable_pct"] > 1, ch
    # a real 40 % drop is still called
    c = _results(tmp_path / "c", _level(60.0, rng), start=202.0)
    ch = _tp(zfsperf("compare", str(a), str(c), "--store", store, "--json"))
    assert ch["design"] == "history" and ch["verdict"] == "worse", ch


def test_runs_listed_removed_and_accepted_by_an_unambiguous_id(tmp_path):
    rng = random.Random(9)
    one = _results(tmp_path / "x" / "20261125T100000", _level(100.0, rng), start=10.0, host="h1")
    other = _results(tmp_path / "y" / "20261125T100000", _level(100.0, rng), start=10.0, host="h2")
    store = str(tmp_path / "h.sqlite")
    assert zfsperf("history", "import", str(one), str(other), "--store", store).returncode == 0
    listed = zfsperf("history", "runs", "--store", store)
    assert listed.returncode == 0
    rows = [ln.split("\t") for ln in listed.stdout.splitlines()[1:]]
    assert [(r[0], r[2], r[3]) for r in rows] == [("1", "h1", str(one)), ("2", "h2", str(other))]
    res = zfsperf("history", "accept", "20261125T100000", "--reason", "new disk", "--store", store)
    assert res.returncode == 2 and "names 2 runs" in res.stderr and "id 1" in res.stderr and "id 2" in res.stderr
    res = zfsperf("history", "accept", "2", "--reason", "new disk", "--store", store)
    assert res.returncode == 0, res.stderr
    res = zfsperf("history", "remove", "1", "--store", store)
    assert res.returncode == 0 and f"run 1 ({one}, h1) removed" in res.stdout
    ids = json.loads(zfsperf("history", "runs", "--json", "--store", store).stdout)
    assert [(r["id"], r["host"]) for r in ids] == [(2, "h2")]
    con = sqlite3.connect(store)
    assert con.execute("SELECT count(*) FROM figures WHERE run_id = 1").fetchone()[0] == 0
    res = zfsperf("history", "remove", "1", "--store", store)
    assert res.returncode == 2 and "no run \"1\"" in res.stderr


def test_a_schema_3_store_gains_identities_and_fleet_columns(tmp_path):
    rng = random.Random(10)
    a = _results(tmp_path / "a", _level(100.0, rng), start=10.0)
    store = str(tmp_path / "h.sqlite")
    assert zfsperf("history", "import", str(a), "--store", store).returncode == 0
    con = sqlite3.connect(store)
    con.execute("DROP INDEX runs_identity")
    for col in ("identity", "fleet_id", "fleet_host", "machine_class"):      # as a schema 3 store had them
        con.execute(f"ALTER TABLE runs DROP COLUMN {col}")
    con.execute("UPDATE zfsperf_meta SET value = '3' WHERE key = 'schema'")
    con.commit()
    con.close()
    copy = shutil.copytree(a, tmp_path / "copy")
    res = zfsperf("history", "import", str(copy), "--store", store)
    assert res.returncode == 0 and "1 run(s) added" in res.stdout, res.stderr    # the old row has no identity
    assert sqlite3.connect(store).execute("SELECT value FROM zfsperf_meta WHERE key = 'schema'").fetchone() == ("5",)
    res = zfsperf("history", "import", str(shutil.copytree(a, tmp_path / "copy2")), "--store", store)
    assert "0 run(s) added, 1 already there" in res.stdout


def test_a_selector_a_store_holds_as_the_module_printed_it_is_not_a_change(tmp_path):
    """The defect: a store filled before selectors read as their chosen name holds a run's
    zfs_fletcher_4_impl as "[fastest] scalar ..."; the next run's "fastest" was named as what
    changed at that run."""
    from zfsperf.history.analysis import what_changed
    from zfsperf.history.store import Store
    rng = random.Random(11)
    store = str(tmp_path / "h.sqlite")
    for name, start in (("old", 10.0), ("new", 20.0)):
        d = _results(tmp_path / name, _level(100.0, rng), start=start)
        info = json.loads((d / "run.json").read_text())
        info["tunables"] = {"before": {"zfs_fletcher_4_impl": "fastest", "zfs_txg_timeout": "5"}, "after": None}
        (d / "run.json").write_text(json.dumps(info))
        assert zfsperf("history", "import", str(d), "--store", store).returncode == 0
    con = sqlite3.connect(store)
    con.execute("UPDATE runs SET tunables = ? WHERE name = 'old'", (json.dumps(
        {"zfs_fletcher_4_impl": "[fastest] scalar superscalar superscalar4 sse2 ssse3 avx2", "zfs_txg_timeout": "5"}),))
    con.commit()
    con.close()
    with Store.open(f"sqlite:///{store}", create=False) as s:
        old, new = sorted(s.runs().values(), key=lambda r: r.started)
    assert old.tunables["zfs_fletcher_4_impl"] == "fastest" and what_changed(old, new) == []
    new.tunables["zfs_txg_timeout"] = "10"
    assert what_changed(old, new) == ["zfs_txg_timeout: 5 -> 10"]
