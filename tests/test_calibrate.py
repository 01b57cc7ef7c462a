"""`zfsperf calibrate` (issue 69 §7): identical runs on the real zfs-fuse, added to the store, after
which two separate runs of those settings are judged against this machine's run-to-run noise, and
compare's first line says so."""

import json

from helpers import flat, receive_runfile, zfsperf


def test_calibrate_then_two_separate_runs_are_judged_on_this_machines_noise(lab, session_env, tmp_path):
    rf = receive_runfile(tmp_path, '{ kind = "random", size = "16M", seed = 5 }', "1", 'duration = "1s"')
    store = str(tmp_path / "h.sqlite")
    res = zfsperf("calibrate", "-r", str(rf), "--runs", "5", "--store", store, "-o", str(tmp_path / "cal"),
                  timeout=1200)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    assert res.stdout.count("calibrate: run ") == 5
    (line,) = [ln for ln in res.stdout.splitlines() if ln.startswith("  recv / throughput:")]
    assert "5 runs, a run's sd" in line and "two separate runs see ≥" in line, line
    dirs = []
    for name in ("base", "new"):
        r = zfsperf("run", "-r", str(rf), "--store", store, "-o", str(tmp_path / name), timeout=600)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr
        dirs.append(str(tmp_path / name / "current"))
    cmp = zfsperf("compare", *dirs, "--store", store)
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr
    # the first line, however it wrapped to the width (a tmp path is long): the store and the runs
    first = flat(cmp.stdout.split("\n\n", 1)[0])
    assert first.startswith(f"judged on history: 5 earlier runs of identical settings from {store}"), first
    ch = next(c for c in json.loads(zfsperf("compare", *dirs, "--store", store, "--json").stdout)["changes"]
              if c["figure"] == "throughput")
    assert ch["design"] == "history" and ch["detectable_pct"] is not None, ch
    # (without the store: the default floor, labelled uncalibrated: tests/test_drift_floor.py)


def test_calibrate_refuses_too_few_runs_before_running_anything(tmp_path):
    res = zfsperf("calibrate", "--runs", "3", "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "--runs takes a whole number >= 5" in res.stderr
    assert not (tmp_path / "o").exists()
