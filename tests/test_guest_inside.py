"""`zfsperf guest run`'s host side without a guest: which results directory it takes out of the
command line (and moves to the host afterwards), and what it refuses before booting anything. The
guest side runs for real in test_openzfs_guest.py."""

from pathlib import Path

import pytest

from helpers import zfsperf
from zfsperf.errors import InputError
from zfsperf.inguest import host_paths, shadowed, split_outdir


def test_the_results_directory_is_taken_out_of_run_and_bisect_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert split_outdir(["run", "-r", "quick", "-o", "res"]) == (["run", "-r", "quick"], tmp_path / "res")
    assert split_outdir(["run", "--outdir=/x/y", "-I", "1"]) == (["run", "-I", "1"], Path("/x/y"))
    assert split_outdir(["run", "-o/x/z"]) == (["run"], Path("/x/z"))
    assert split_outdir(["run"]) == (["run"], tmp_path / "zfsperf-results")        # zfsperf's default
    assert split_outdir(["info", "-o", "x"]) == (["info", "-o", "x"], None)
    # a bisect's bisect.json and runs/ (until 2026-12-05 its -o went to the guest's own /tmp)
    assert split_outdir(["bisect", "--good", "a", "-o", "b"]) == (["bisect", "--good", "a"], tmp_path / "b")
    assert split_outdir(["bisect"]) == (["bisect"], tmp_path / "zfsperf-bisect")
    with pytest.raises(InputError):
        split_outdir(["run", "-o"])
    with pytest.raises(InputError):
        split_outdir(["run", "--resume", "res/current"])


def test_paths_the_guest_mounts_over_are_named():
    assert shadowed("/var/tmp/clone/.venv/bin/python") == "/var/tmp"
    assert shadowed("/run/user/0") == "/run"
    assert shadowed("/variable") is None and shadowed("/tmp/pytest-of-root/x") is None


def test_the_host_files_a_guest_run_names_are_looked_up_afresh_in_the_guest(tmp_path):
    """The paths the guest checks before it runs (a file it once looked for in vain stays missing
    there until its names are dropped): the working directory and every argument, or option value
    after `=`, naming a file or directory here, by real path; none the guest mounts its own over."""
    (tmp_path / "rf.toml").write_text("")
    (tmp_path / "d").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "d")
    got = host_paths(["run", "-r", "rf.toml", "--store=d", "-I", "2", "-D", "x=1", "link", "gone.toml",
                      "/var/tmp", "/proc"], str(tmp_path))
    real = str(tmp_path.resolve())
    assert got == [real, f"{real}/rf.toml", f"{real}/d"], got


def test_guest_run_needs_a_command_and_refuses_nesting(tmp_path):
    env = {"ZFSPERF_GUEST_DIR": str(tmp_path / "g")}
    res = zfsperf("guest", "run", env=env)
    assert res.returncode == 2 and "needs a zfsperf command after --" in res.stderr
    res = zfsperf("guest", "run", "--", "guest", "up", env=env)
    assert res.returncode == 2 and "`guest` is a host command" in res.stderr
    res = zfsperf("guest", "up", "extra", env=env)
    assert res.returncode == 2 and "unrecognized arguments: extra" in res.stderr      # its own parser says
    assert not (tmp_path / "g").exists()                    # nothing booted, nothing made


def test_a_bisect_from_the_guest_lands_in_its_directory_and_a_resumed_one_keeps_its_steps(tmp_path):
    """What `guest run -- bisect` wrote in the exchange directory moved to -o on the host: the
    state (its steps' run directories named where they landed) and runs/; a resumed bisect's new
    state replaces the one it resumed from, its new runs join the old ones."""
    from zfsperf.inguest import InsideRun
    inside = InsideRun.__new__(InsideRun)
    inside.token = "1-2"
    dest, xdir = tmp_path / "b", tmp_path / "x" / "1-2"
    (dest / "runs" / "20261205T000000").mkdir(parents=True)
    (dest / "bisect.json").write_text('{"steps": {"c1": {}}}')
    (xdir / "runs" / "20261205T010000").mkdir(parents=True)
    (xdir / "runs" / "20261205T010000" / "run.json").write_text("{}")
    (xdir / "bisect.json").write_text('{"steps": {"c1": {}, "c2": {"results_dir": "%s/runs/20261205T010000"}}}' % xdir)
    moved = inside._collect(xdir, dest)
    assert moved == [dest / "runs" / "20261205T010000"]
    assert sorted(p.name for p in (dest / "runs").iterdir()) == ["20261205T000000", "20261205T010000"]
    assert (dest / "bisect.json").read_text() == \
        '{"steps": {"c1": {}, "c2": {"results_dir": "%s/runs/20261205T010000"}}}' % dest
    assert sorted(p.name for p in dest.iterdir()) == ["bisect.json", "runs"] and not xdir.exists()


def test_a_runs_summary_waits_for_its_report_line_and_a_bisects_lines_do_not():
    """A run's lines from "Log directory:" on are held for the Report line drawn on the host; a
    bisect prints a "Log directory:" per step, and until 2026-12-05 every later step's lines waited
    for the end of the whole bisect."""
    from zfsperf.inguest import held
    assert not held("run", True, [], "Test: recv [PASS]\n") and held("run", True, [], "Log directory:\tx\n")
    assert held("run", True, ["Log directory:\tx\n"], "anything\n") and not held("run", False, [], "Log directory: x")
    assert not held("bisect", True, [], "Log directory:\tx\n") and not held("bisect", True, ["x"], "bisect: measuring")
