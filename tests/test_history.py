"""Every run in one store; change points across runs, on real zfs-fuse runs; the same
code against a real PostgreSQL server started here (Debian's postgresql), never a mock."""

import json
from pathlib import Path

import pytest

from helpers import flat, why
from helpers import pg_cluster, zfsperf
from helpers import last_dir, write_runfile


RUNFILE = """
[params]
comp = "off"
[defaults]
iterations = 3          # a run's figure is the median of 3: one iteration slowed by the machine is not a level
[defaults.pool]
vdevs = 1
vdev_size = "384M"
[defaults.dataset]
compression = "${comp}"
[[test]]
name = "recv"
workload = "receive"
corpus = { kind = "random", size = "24M", seed = 4 }
threads = 1
steady = { mode = "off" }
"""


# run-to-run drift of one setting on zfs-fuse reaches ~20 % (bench/power.py): the smallest change
# a change point is asked to be; compression=gzip-9 moves receive throughput by ~90 %
MIN_CHANGE = "25"


def _runs(tmp_path: Path, rf: Path, store: str, settings: list[str]) -> list[Path]:
    dirs = []
    for i, comp in enumerate(settings):
        # --no-html: alike pages would add time and test nothing here
        res = zfsperf("run", "-q", "-r", str(rf), "-D", f"comp={comp}", "-o", str(tmp_path / "res"),
                      "--store", store, "--no-html")
        assert res.returncode == 0, why(res)
        assert f"History:\tadded to {store}" in res.stdout
        dirs.append(last_dir(res.stdout))
    return dirs


def replayed(src: Path, dst: Path, start: float, factor: float) -> Path:
    """A copy of the real results directory src as a later run of the same settings: run.json's
    start moved to `start`, every rate (unit …/s) of every record times `factor` and every time (s)
    divided by it. The records, set-up and defines stay the real run's."""
    import shutil
    shutil.copytree(src, dst)
    info = json.loads((dst / "run.json").read_text())
    info["start"] = start
    (dst / "run.json").write_text(json.dumps(info))
    lines = []
    for line in (dst / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for fig in (rec.get("figures") or {}).values():
            fig["value"] *= factor if fig["unit"].endswith("/s") else 1 / factor if fig["unit"] == "s" else 1
        lines.append(json.dumps(rec))
    (dst / "results.jsonl").write_text("\n".join(lines) + "\n")
    return dst


@pytest.fixture(scope="module")
def history(lab, tmp_path_factory):
    """Two real runs, compression=off then gzip-9 (receive throughput drops ~10x on zfs-fuse), each
    added to the store by `zfsperf run` as it ends; then a history of 16 runs replayed from them
    (10 of off, 6 of gzip-9, each scaled by a seeded ±2 % run-to-run spread) imported into a store
    of its own. Until 2026-12-03 the 16 were real consecutive runs, and zfs-fuse's throughput fell
    285 → 105 MiB/s within minutes on an unchanged setting: the change point tests judged the
    machine (issue 84). The real runs' drift is a benchmark's figure (bench/power.py), not a test's."""
    import random
    tmp = tmp_path_factory.mktemp("history")
    rf = write_runfile(tmp, RUNFILE)
    off, gz = _runs(tmp, rf, str(tmp / "real.sqlite"), ["off", "gzip-9"])
    rng = random.Random(84)
    t0 = json.loads((off / "run.json").read_text())["start"]
    changed = [replayed(off if i < 10 else gz, tmp / "replayed" / f"{off.name}.r{i:02d}", t0 + 600 * (i + 1),
                        1 + rng.gauss(0, 0.02)) for i in range(16)]
    store = str(tmp / "h.sqlite")
    res = zfsperf("history", "import", *map(str, changed), "--store", store)
    assert res.returncode == 0 and "16 run(s) added" in res.stdout, res.stdout + res.stderr
    return tmp, store, changed, changed[:10]


def test_one_change_point_at_the_run_that_changed(history):
    tmp, store, changed, _ = history
    res = zfsperf("history", "--store", store, "--figure", "throughput", "--json", "--min-change", MIN_CHANGE)
    assert res.returncode == 0, res.stderr
    (s,) = json.loads(res.stdout)["series"]
    assert s["case"] == "recv" and len(s["runs"]) == 16
    assert [r["run"] for r in s["runs"]] == [d.name for d in changed]          # oldest first
    (cp,) = s["change_points"]
    assert cp["index"] == 10 and cp["run"] == changed[10].name
    assert cp["verdict"] == "worse" and cp["change_pct"] < -30 and cp["p"] < 0.01
    assert "-D comp: off -> gzip-9" in cp["what_changed"]
    # the terminal view, the trend chart and the CI gate
    html = tmp / "trend.html"
    res = zfsperf("history", "--store", store, "--figure", "throughput", "--fail-on-change", "20", "--recent", "6",
                  "--html", str(html), "--min-change", MIN_CHANGE)
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"at run 11 ({changed[10].name})" in flat(res.stdout) and "worse" in res.stdout
    assert "change: recv throughput" in res.stderr
    assert html.read_text().count("data:image/png;base64,") == 1
    # not recent any more (the change is 6 runs back): the gate passes
    assert zfsperf("history", "--store", store, "--figure", "throughput", "--fail-on-change", "20",
                   "--recent", "5", "--min-change", MIN_CHANGE).returncode == 0


def test_no_change_point_on_an_unchanged_history(history):
    tmp, _store, changed, unchanged = history
    store = str(tmp / "unchanged.sqlite")
    res = zfsperf("history", "import", *map(str, unchanged), "--store", store)
    assert res.returncode == 0 and "10 run(s) added" in res.stdout, res.stdout + res.stderr
    out = json.loads(zfsperf("history", "--store", store, "--json", "--min-change", MIN_CHANGE).stdout)
    assert {s["figure"] for s in out["series"]} >= {"throughput", "blocks", "per_stream"}
    for s in out["series"]:
        assert len(s["runs"]) == 10 and s["change_points"] == [], s
    # importing again adds nothing
    again = zfsperf("history", "import", *map(str, changed[:6]), "--store", store)
    assert "0 run(s) added, 6 already there" in again.stdout
    # options where a user puts them: between the action and the directories, and between those
    # ("unrecognized arguments" before); the same import, so nothing new is added
    for argv in (["history", "import", "--store", store, *map(str, changed[:2])],
                 ["history", "import", str(changed[0]), "--store", store, str(changed[1])],
                 ["history", "--store", store, "import", *map(str, changed[:2])]):
        res = zfsperf(*argv)
        assert res.returncode == 0 and "0 run(s) added, 2 already there" in res.stdout, (argv, res.stderr)


def test_options_go_anywhere_in_every_subcommand():
    """Every subcommand parses options between its positionals exactly as before them."""
    from zfsperf.cliargs import build_parser
    cases = {"history": (["import", "d1", "d2"], ["--store", "s.sqlite"]),
             "compare": (["a", "b"], ["--json"]), "report": (["a", "b"], ["--format", "md"]),
             "steady": (["series.jsonl"], ["--window", "8"]), "list": ([], ["-r", "quick"])}
    ap = build_parser()
    sub = next(a for a in ap._actions if a.dest == "cmd")
    assert set(cases) <= set(sub.choices)
    for cmd, (pos, opt) in cases.items():
        want = ap.parse_args([cmd, *opt, *pos])
        for i in range(len(pos) + 1):
            assert ap.parse_args([cmd, *pos[:i], *opt, *pos[i:]]) == want, (cmd, i)


def test_bad_input_touches_nothing(history, tmp_path):
    tmp, _store, changed, _ = history
    store = tmp_path / "new.sqlite"
    res = zfsperf("history", "import", str(changed[0]), str(tmp_path / "nope"), "--store", str(store))
    assert res.returncode == 2 and "nope" in res.stderr and not store.exists()
    res = zfsperf("history", "--store", "mysql://x/y")
    assert res.returncode == 2 and "--store" in res.stderr
    res = zfsperf("history", "--store", str(tmp_path / "missing.sqlite"))      # reading creates nothing
    assert res.returncode == 2 and "no history store" in res.stderr and not (tmp_path / "missing.sqlite").exists()
    zfsperf("history", "import", str(changed[0]), "--store", str(tmp_path / "one.sqlite"))
    res = zfsperf("history", "--store", str(tmp_path / "one.sqlite"), "--case", "no such case")
    assert res.returncode == 2 and "no runs" in res.stderr


# ------------------------------------------------------------------ PostgreSQL, a real server
@pytest.fixture(scope="module")
def pg():
    with pg_cluster() as c:
        yield c


@pytest.fixture(scope="module")
def pg_url(pg):
    return pg.url("postgres", "zfsperf")


def test_hosts_opening_a_new_store_at_once_all_get_it(pg):
    """Found by a fleet's hosts checking their runs at once against a new PostgreSQL store (CI):
    two connections creating the schema together collide in PostgreSQL's catalogue ("duplicate
    key value violates unique constraint pg_type_typname_nsp_index": CREATE TABLE IF NOT EXISTS is
    not safe against a concurrent one), and that host's check failed the fleet. Eight at once, as
    the check (probe) and as the run (open): every one succeeds, and the schema is made once."""
    import threading
    from zfsperf.history.store import SCHEMA_VERSION, Store
    for db in ("fresh_probe", "fresh_open"):
        pg.sql(f"CREATE DATABASE {db}")
    for db, how in (("fresh_probe", Store.probe), ("fresh_open", lambda u: Store.open(u).conn.close())):
        url = pg.url("postgres", db)
        start, errors = threading.Barrier(8), []

        def one() -> None:
            start.wait()
            try:
                how(url)
            except Exception as e:          # what the host's check would have printed
                errors.append(f"{type(e).__name__}: {e}")
        threads = [threading.Thread(target=one) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [], (db, errors)
    with Store.open(pg.url("postgres", "fresh_open")) as s:
        rows = s.execute("SELECT value FROM zfsperf_meta WHERE key = 'schema'").fetchall()
    assert rows == [(str(SCHEMA_VERSION),)]


def test_the_same_history_on_postgresql(history, pg_url):
    tmp, store, changed, _ = history
    res = zfsperf("history", "import", *map(str, changed), "--store", pg_url)
    assert res.returncode == 0 and "16 run(s) added" in res.stdout, res.stdout + res.stderr
    pg = json.loads(zfsperf("history", "--store", pg_url, "--figure", "throughput", "--json").stdout)["series"]
    lite = json.loads(zfsperf("history", "--store", store, "--figure", "throughput", "--json").stdout)["series"]
    assert pg == lite                                   # every run, value and change point alike
    big = json.loads(zfsperf("history", "--store", pg_url, "--figure", "throughput", "--json",
                             "--min-change", MIN_CHANGE).stdout)["series"]
    assert [c["index"] for c in big[0]["change_points"]] == [10]
    # a run adds itself to a PostgreSQL store too
    rf = write_runfile(tmp, RUNFILE)
    res = zfsperf("run", "-q", "-r", str(rf), "-o", str(tmp / "res"), "--store", pg_url)
    assert res.returncode == 0 and "History:\tadded to postgresql://" in res.stdout, res.stdout + res.stderr
    out = json.loads(zfsperf("history", "--store", pg_url, "--figure", "throughput", "--json").stdout)
    assert len(out["series"][0]["runs"]) == 17


def test_triage_accepted_changes_outliers_and_set_up_markers(history, tmp_path):
    """`history accept RUN --reason` marks the real gzip-9 change as expected: the gate ignores it and
    the trend page shows why; a level must hold --min-segment runs; the page marks where the set-up
    (here the runfile's -D value) changed."""
    import shutil
    tmp, store0, changed, _ = history
    store = str(tmp_path / "copy.sqlite")
    shutil.copy(store0, store)                                   # the module's store stays as it was
    gate = ["history", "--store", store, "--figure", "throughput", "--fail-on-change", "20", "--recent", "6",
            "--min-change", MIN_CHANGE]
    assert zfsperf(*gate).returncode == 1
    # bad input: an unknown run, or no reason -> exit 2, nothing written
    assert zfsperf("history", "accept", "20000101T000000", "--reason", "x", "--store", store).returncode == 2
    assert zfsperf("history", "accept", str(changed[10]), "--store", store).returncode == 2
    res = zfsperf("history", "accept", str(changed[10]), "--reason", "gzip-9 on purpose", "--store", store)
    assert res.returncode == 0 and f"a change at {changed[10].name} is accepted" in res.stdout, res.stdout + res.stderr
    html = tmp_path / "trend.html"
    res = zfsperf(*gate, "--html", str(html))
    assert res.returncode == 0, why(res)                      # expected: the gate passes
    assert "accepted: gzip-9 on purpose" in flat(res.stdout)
    page = html.read_text()
    assert "gzip-9 on purpose" in page
    assert f"run 11 ({changed[10].name}): -D comp: off -&gt; gzip-9" in page    # the set-up marker
    js = json.loads(zfsperf("history", "--store", store, "--figure", "throughput", "--json",
                            "--min-change", MIN_CHANGE).stdout)
    (s,) = js["series"]
    assert s["change_points"][0]["accepted"] == "gzip-9 on purpose"
    assert {"run": changed[10].name, "what": "-D comp: off -> gzip-9"} in s["annotations"]
    # the 6 gzip-9 runs are a level at --min-segment 6, not at 7
    for n, expect in (("6", 1), ("7", 0)):
        js = json.loads(zfsperf("history", "--store", store, "--figure", "throughput", "--json", "--min-segment", n,
                                "--min-change", MIN_CHANGE).stdout)
        assert len(js["series"][0]["change_points"]) == expect, (n, js["series"][0]["change_points"])


def test_a_short_level_is_an_excursion_only_when_the_series_comes_back():
    import numpy as np
    from zfsperf.history import analysis
    # a short excursion that comes back is outlier runs, both its edges dropped; one that moves on keeps one
    assert analysis.short_segments([5, 6], np.array([1, 1, 1, 1, 1, 9, 1, 1, 1.]), 2) == ([], [5])
    assert analysis.short_segments([5, 6], np.array([1, 1, 1, 1, 1, 5, 9, 9, 9.]), 2) == ([5], [])
    # a drift up for 4 runs, then the real fall (these 16 runs of this module on a slow day): not
    # an excursion that came back, one change at the fall (it was both change points dropped)
    drift = np.array([370, 371, 337, 341, 372, 351, 408, 471, 439, 447, 44, 44, 42, 43, 45, 42.])
    assert analysis.short_segments([6, 10], drift, 6) == ([10], [])
    assert analysis.short_segments([6, 10], drift[::-1].copy(), 6) == ([6], [])    # a rise, then a drift


def test_a_step_below_min_change_does_not_split_the_history():
    """These 16 runs of this module (a clean-clone run that failed it): a 12 % drift at run 8, then
    gzip-9's fall at run 11. With --min-change 25 the drift is no change point, and the fall is
    tested against the ten runs before it, not the three of the drift: one change, at the fall."""
    import numpy as np
    from zfsperf.history import analysis
    runs = np.array([308.77, 322.45, 297.13, 309.04, 309.23, 323.29, 307.13, 267.84, 279.09, 276.67,
                     30.66, 28.12, 30.66, 27.03, 27.57, 28.33])
    with analysis._seeded(1):
        found = analysis.e_divisive(runs, analysis.PVALUE, analysis.WINDOW)
    assert found == [7, 10]
    assert analysis.large_steps(found, runs, 25.0) == [10]
    assert analysis.large_steps(found, runs, 0.0) == [7, 10]         # no --min-change: both stand
    assert analysis.large_steps([7], runs[:10], 25.0) == []


def test_a_run_in_which_nothing_passed_never_goes_into_history(tmp_path):
    """Issue 83: an A/B neither side of which could run left a history row of 16 SKIPs. A run with
    no PASS iteration (every one SKIP, FAIL or KILLED) measured nothing: `history import` says so
    and leaves it out, beside a run that passed, which goes in."""
    import shutil
    src = Path(__file__).parent / "fixtures" / "results-format2" / "receive-fio"
    good, bad = tmp_path / "good", tmp_path / "bad"
    shutil.copytree(src, good)
    shutil.copytree(src, bad)
    recs = [json.loads(ln) for ln in (bad / "results.jsonl").read_text().splitlines() if ln.strip()]
    assert any(r["status"] == "PASS" for r in recs)
    (bad / "results.jsonl").write_text("".join(json.dumps({**r, "status": "SKIP" if i % 2 else "FAIL"}) + "\n"
                                               for i, r in enumerate(recs)))
    run = json.loads((bad / "run.json").read_text())
    run["start"] = run.get("start", 0) + 1                 # another run, not a copy of the good one
    (bad / "run.json").write_text(json.dumps(run))
    res = zfsperf("history", "import", str(bad), str(good), "--store", str(tmp_path / "h.sqlite"))
    assert res.returncode == 0, why(res)
    assert f"{bad}: not added: no iteration passed (FAIL, SKIP): it measured nothing" in res.stdout
    assert ": 1 run(s) added, 0 already there" in res.stdout
    runs = zfsperf("history", "runs", "--store", str(tmp_path / "h.sqlite"), "--json")
    assert runs.returncode == 0, why(runs)
    assert [r["path"] for r in json.loads(runs.stdout)] == [str(good)]
