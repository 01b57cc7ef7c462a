"""`zfsperf guest run`'s host side without a guest: which results directory it takes out of the
command line (and moves to the host afterwards), and what it refuses before booting anything. The
guest side runs for real in test_openzfs_guest.py."""

from pathlib import Path

import pytest

from helpers import zfsperf
from zfsperf.errors import InputError
from zfsperf.inguest import shadowed, split_outdir


def test_the_results_directory_is_taken_out_of_run_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert split_outdir(["run", "-r", "quick", "-o", "res"]) == (["run", "-r", "quick"], tmp_path / "res")
    assert split_outdir(["run", "--outdir=/x/y", "-I", "1"]) == (["run", "-I", "1"], Path("/x/y"))
    assert split_outdir(["run", "-o/x/z"]) == (["run"], Path("/x/z"))
    assert split_outdir(["run"]) == (["run"], tmp_path / "zfsperf-results")        # zfsperf's default
    assert split_outdir(["info", "-o", "x"]) == (["info", "-o", "x"], None)
    with pytest.raises(InputError):
        split_outdir(["run", "-o"])
    with pytest.raises(InputError):
        split_outdir(["run", "--resume", "res/current"])


def test_paths_the_guest_mounts_over_are_named():
    assert shadowed("/var/tmp/clone/.venv/bin/python") == "/var/tmp"
    assert shadowed("/run/user/0") == "/run"
    assert shadowed("/variable") is None and shadowed("/tmp/pytest-of-root/x") is None


def test_guest_run_needs_a_command_and_refuses_nesting(tmp_path):
    env = {"ZFSPERF_GUEST_DIR": str(tmp_path / "g")}
    res = zfsperf("guest", "run", env=env)
    assert res.returncode == 2 and "needs a zfsperf command after --" in res.stderr
    res = zfsperf("guest", "run", "--", "guest", "up", env=env)
    assert res.returncode == 2 and "`guest` is a host command" in res.stderr
    res = zfsperf("guest", "up", "extra", env=env)
    assert res.returncode == 2 and "unrecognized arguments: extra" in res.stderr      # its own parser says
    assert not (tmp_path / "g").exists()                    # nothing booted, nothing made
