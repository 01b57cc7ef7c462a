"""What a user reads when they mistype (issue 83): one prefix, no source path, the values the
default target takes, and a did-you-mean for every name they type (a property, a field, a pool
field, a tunable, a figure); exit 2 and nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import run_in_process

RUN = Path(__file__).resolve().parent / "fixtures" / "results-format2" / "receive-fio"
RECV = '[[test]]\nname = "t"\nworkload = "receive"\ncorpus = { kind = "random", size = "8M" }\n'


@pytest.mark.parametrize("extra, said", [
    ("iteratons = 3\n", "test[1].iteratons: unknown field for a receive test; did you mean iterations"),
    ('dataset = { compresion = "off" }\n', '"compresion" is not a dataset property zfsperf places; did you mean '
                                         'compression?'),
    ("pool = { vdev = 2 }\n", 'unknown pool field "vdev"; did you mean vdevs'),
    ("tunables = { zfs_txg_timout = 5 }\n", "has a tunable zfs_txg_timout; did you mean zfs_txg_timeout?"),
    ('dataset = { checksum = "skien" }\n', "checksum takes on, off, fletcher2, fletcher4, sha256, noparity, sha512, "
                                          "skein, edonr, blake3, not \"skien\"; zfs-fuse (pool v23, the default "
                                          "target) takes only on, off, fletcher2, fletcher4, sha256")])
def test_a_typo_in_a_runfile_says_what_was_meant(tmp_path, extra, said):
    rf = tmp_path / "t.toml"
    rf.write_text(RECV + extra)
    res = run_in_process(["run", "-r", str(rf), "--dry-run"], cwd=str(tmp_path))
    assert res.returncode == 2 and said in res.stderr, res.stderr
    assert res.stderr.startswith(f"zfsperf: {rf}:5: ") and "src/" not in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.toml"]


def test_a_figure_typo_in_compare_says_what_was_meant():
    res = run_in_process(["compare", str(RUN), "--figures", "thruput", "--no-history"])
    assert res.returncode == 2 and 'the figure "thruput"; did you mean throughput?' in res.stderr, res.stderr
    assert res.stdout == ""
