"""The user's path (issue 83): the README's commands run verbatim, as a user runs them, from a
scratch working directory, with the default output directory (`zfsperf-results`, relative) and the
default target (the embedded zfs-fuse; the session's daemon, found through ZFSPERF_LAB). Every
other test passes an absolute `-o`, which hid that every fio run failed without one: fio ran in
zfs-fuse's mount namespace and was handed a relative job file path. What is asserted is the form
of what the README shows (exit status, the lines and verdict words), never a measured figure."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import RECV, flat, readme_command, records, zfsperf

FIO = """[[test]]
name = "rr"
workload = "fio"
rw = "randread"
bs = "4k"
size = "64M"
runtime = "2s"
iterations = 3
"""


def log_dir(cwd: Path, stdout: str) -> Path:
    """The run's `Log directory:` line, as printed: relative to the working directory it ran in."""
    shown = next(ln for ln in stdout.splitlines() if ln.startswith("Log directory:")).split("\t")[-1]
    assert shown.startswith("zfsperf-results/"), shown
    return cwd / shown


def test_a_fio_runfile_passes_with_the_default_output_directory(lab, tmp_path):
    """The issue's repro: a fio runfile, `zfsperf run -r f.toml --no-history` from the directory
    it is in. Every iteration failed with `fio: unable to open 'zfsperf-results/…/logs/rr.i1.fio'`."""
    (tmp_path / "f.toml").write_text(FIO)
    res = zfsperf("run", "-r", "f.toml", "--no-history", cwd=str(tmp_path), timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    d = log_dir(tmp_path, res.stdout)
    recs = records(d)
    assert len(recs) == 3 and {r["status"] for r in recs} == {"PASS"}, [r.get("error") for r in recs]
    assert all(r["figures"]["read_iops"]["value"] > 0 for r in recs)
    assert (tmp_path / "zfsperf-results" / "current").resolve() == d.resolve()


def test_the_readmes_fio_ab_then_report_compare_and_history_from_a_scratch_directory(lab, tmp_path):
    """README: `zfsperf ab compression=off,gzip --workload fio:randread --runfile-out ab.toml`, then
    `zfsperf report zfsperf-results/current`, `zfsperf compare zfsperf-results/current
    --fail-on-regression 5`, and `zfsperf history --fail-on-change 10` on the default store (this
    test's own ZFSPERF_STATE, which holds this one run)."""
    env = {"ZFSPERF_STATE": str(tmp_path / "state")}
    cwd = str(tmp_path)
    res = zfsperf(*readme_command("zfsperf ab compression=off,gzip --workload fio:randread"), env=env, cwd=cwd,
                  timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    d = log_dir(tmp_path, res.stdout)
    recs = records(d)
    assert recs and {r["status"] for r in recs} == {"PASS"}, [r.get("error") for r in recs][:3]
    assert (tmp_path / "ab.toml").read_text() == json.loads((d / "run.json").read_text())["runfile"]["text"]
    assert "design: one run, both sides on one pool taking turns" in res.stdout
    assert "ab compression=off → ab compression=gzip" in " ".join(res.stdout.split())
    assert f"History:\tadded to {tmp_path / 'state' / 'history.sqlite'}" in res.stdout

    rep = zfsperf(*readme_command("zfsperf report zfsperf-results/current"), env=env, cwd=cwd)
    assert rep.returncode == 0 and "PASS" in rep.stdout, rep.stdout + rep.stderr

    # the README names this one in its prose, wrapped across two lines: not a line of a code block
    gate = zfsperf("compare", "zfsperf-results/current", "--fail-on-regression", "5", env=env, cwd=cwd)
    assert gate.returncode in (0, 1), gate.stdout + gate.stderr          # judged: passed, or a regression
    verdicts = ("= same within", "~ (not significant)", "better", "WORSE")
    assert any(v in flat(gate.stdout) for v in verdicts), gate.stdout

    hist = zfsperf(*readme_command("zfsperf history --fail-on-change 10"), env=env, cwd=cwd)
    assert hist.returncode == 2 and "a change point needs at least 4 runs" in hist.stderr, hist.stdout + hist.stderr


def test_relative_vdev_params_and_output_directories_are_the_working_directorys(lab, tmp_path):
    """`-d vd --params-dir params -o res` and a runfile's `corpus.file`, each relative, from the
    directory they are in. Every iteration failed ("truncate: cannot open 'vd/run-…/vdev0'"): the
    vdev files are made in zfs-fuse's mount namespace, where a relative path is not the user's
    working directory. Each is the working directory's: the vdev files under ./vd while the run
    lasts, the tunable written to ./params and put back, the sendfile read from ./s.zstream."""
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "zfs_recv_write_batch_size").write_text("1048576\n")
    (tmp_path / "r.toml").write_text(RECV.replace('iterations = 1', 'iterations = 2').replace(
        'steady = { mode = "off" }', 'steady = { mode = "off" }\ntunables = { zfs_recv_write_batch_size = "128K" }'))
    res = zfsperf("run", "-r", "r.toml", "-d", "vd", "--params-dir", "params", "-o", "res", "--no-history",
                  cwd=str(tmp_path), timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    d = tmp_path / "res" / "current"
    recs = records(d)
    assert len(recs) == 2 and {r["status"] for r in recs} == {"PASS"}, [r.get("error") for r in recs]
    log = (d / "logs" / "recv.iter1.log").read_text()
    assert f" -- truncate -s 134217728 {tmp_path}/vd/run-" in log, log[:2000]
    assert "# tunable zfs_recv_write_batch_size: 1048576 -> 131072" in log, log[:2000]
    assert (tmp_path / "params" / "zfs_recv_write_batch_size").read_text().strip() == "1048576"
    assert (tmp_path / "vd").is_dir() and not list((tmp_path / "vd").iterdir())     # its vdev files removed
    # a stream made the same way; and another machine's relative directory refused, naming it
    made = zfsperf("corpus", "make", "--kind", "random", "--size", "4M", "-d", "vd2", "-o", "s.zstream",
                   cwd=str(tmp_path), timeout=300)
    assert made.returncode == 0 and (tmp_path / "s.zstream").stat().st_size > 4 << 20, made.stdout + made.stderr
    (tmp_path / "f.toml").write_text(RECV.replace('{ kind = "random", size = "4M", seed = 7 }', '{ file = "s.zstream" }'))
    got = zfsperf("run", "-r", "f.toml", "-d", "vd", "-o", "res", "--no-history", cwd=str(tmp_path), timeout=600)
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr
    assert "zfs receive " in (tmp_path / "res" / "current" / "logs" / "recv.iter1.log").read_text()
    far = zfsperf("run", "-r", "r.toml", "--target", "ssh://root@localhost", "-d", "vd", "--dry-run",
                  cwd=str(tmp_path))
    assert far.returncode == 2 and "--vdev-dir" in far.stderr and '"vd" is relative' in far.stderr, far.stderr


def test_the_readmes_dry_run_checks_a_runfile_and_writes_nothing(lab, tmp_path):
    """README: `zfsperf run -r my.toml --dry-run` in the directory my.toml is in: the plan, exit 0,
    and nothing created (no zfsperf-results)."""
    (tmp_path / "my.toml").write_text(FIO)
    res = zfsperf(*readme_command("zfsperf run -r my.toml --dry-run"), cwd=str(tmp_path),
                  env={"ZFSPERF_STATE": str(tmp_path / "state")})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "rr" in res.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my.toml"]


def test_the_readmes_guest_commands_check_as_dry_runs(tmp_path):
    """The README's commands for the OpenZFS guest, verbatim with --dry-run (the guest lane runs them
    for real): each is checked against the guest's OpenZFS and writes nothing."""
    from helpers import run_in_process
    for start in ("zfsperf ab --tunable zfs_recv_write_batch_size=128K,1M --target guest",
                  "zfsperf run --target guest -r receive-batch"):
        res = run_in_process([*readme_command(start), "--dry-run", "--no-history"], cwd=str(tmp_path))
        assert res.returncode == 0, (start, res.stderr)
        assert "target    the OpenZFS guest under QEMU" in res.stdout, res.stdout
        assert "property and tunable names and values for openzfs-linux" in res.stdout, res.stdout
    assert list(tmp_path.iterdir()) == []
