"""`zfsperf ab` (issue 70): an A/B of one change in one line, no runfile, in the most sensitive design
the change allows, its runfile kept with --runfile-out; one real A/B on zfs-fuse end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import why, zfsperf
from zfsperf import abline
from zfsperf.errors import InputError


def test_a_dataset_property_takes_turns_and_a_pool_scope_tunable_interleaved_blocks():
    text, rf, design = abline.build(abline.parse_change("checksum=fletcher2,sha256", "dataset", "change"),
                                    "receive", iterations=8, size="64M", argv="ab checksum=fletcher2,sha256")
    assert design == "turns" and rf.tests[0].turns and rf.tests[0].dataset == {"checksum": ["fletcher2", "sha256"]}
    assert [c.id for c in rf.cases()] == ["ab checksum=fletcher2", "ab checksum=sha256"]
    text, rf, design = abline.build(abline.parse_change("spa_num_allocators=1,4", "tunables", "--tunable"),
                                    "receive", iterations=6, size="64M", argv="ab --tunable spa_num_allocators=1,4")
    assert design.startswith("interleaved blocks (turns refused: spa_num_allocators applies only to pools created")
    assert rf.tests[0].ab and not rf.tests[0].turns and 'ab = true' in text
    _t, rf, design = abline.build(abline.parse_change("compression=off,gzip-9", "dataset", "change"),
                                  "fio:randread", iterations=6, size="32M", argv="ab")
    assert design == "turns" and rf.tests[0].workload == "fio" and rf.tests[0].fields["rw"] == "randread"


@pytest.mark.parametrize("text, said", [("recordsize=128K", "expected NAME=A,B"),
                                        ("recordsize=1M,1M", "A and B are the same value"),
                                        ("recordsize=128K,1M,4M", "expected NAME=A,B")])
def test_a_change_that_is_not_two_values_is_refused(text, said):
    with pytest.raises(InputError, match=said):
        abline.parse_change(text, "dataset", "change")


def test_bad_input_is_exit_2_and_writes_nothing(tmp_path):
    out = tmp_path / "ab.toml"
    for args, said in ((["ab"], "give one change"),
                       (["ab", "notaproperty=1,2"], "is not a dataset property zfsperf places"),
                       (["ab", "recordsize=128K,1M", "--workload", "fio:nonsense"], "invalid choice")):
        res = zfsperf(*args, "--no-history", "-o", str(tmp_path / "o"))
        assert res.returncode == 2 and said in res.stderr, (args, res.stderr)
    assert not (tmp_path / "o").exists() and not out.exists()


def test_a_one_line_ab_runs_and_prints_the_paired_verdict(lab, tmp_path):
    """On the embedded zfs-fuse, a real A/B of a dataset property taking turns: the runfile it
    wrote is the one the run recorded, and compare's paired verdict is printed."""
    out = tmp_path / "ab.toml"
    res = zfsperf("ab", "checksum=fletcher4,sha256", "-I", "6", "--size", "16M", "--runfile-out", str(out),
                  "-o", str(tmp_path / "res"), "--no-history", timeout=900)
    assert res.returncode == 0, why(res)
    assert "design: turns" in res.stdout
    d = Path(next(ln for ln in res.stdout.splitlines() if ln.startswith("Log directory:")).split("\t")[-1])
    run = json.loads((d / "run.json").read_text())
    assert run["runfile"]["text"] == out.read_text() and run["turns"] == ["ab"]
    assert "ab checksum=fletcher4 → ab checksum=sha256" in " ".join(res.stdout.split())   # the table's title
    table = res.stdout.split("(medians)", 1)[1]                           # compare's, after the run's summary
    verdicts = [ln for ln in table.splitlines() if ln.strip().startswith("throughput ")]
    assert verdicts and any(w in verdicts[0] for w in ("better", "WORSE", "same", "not significant")), res.stdout
