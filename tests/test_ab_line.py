"""`zfsperf ab` (issue 70): an A/B of one change in one line, no runfile, in the most sensitive design
the change allows, its runfile kept with --runfile-out; one real A/B on zfs-fuse end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import after_compare_title, flat, run_in_process, table_row, why, zfsperf
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
    """The README's `zfsperf ab checksum=fletcher2,fletcher4` as a user runs it (from their own
    directory, the default output directory and target; fewer and smaller pairs by its flags): a
    real A/B taking turns on the embedded zfs-fuse, the runfile it wrote the one the run recorded,
    and the lines the README shows: the design, the table's title, the headline's verdict. At 2
    pairs (issue 84: 6 took 225 s of the host lane beside the others), so the verdict is "too few
    iterations", said before the run; compare's verdicts of real turns: tests/test_compare_designs.py."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "zfsperf ab checksum=fletcher2,fletcher4 " in readme
    res = zfsperf("ab", "checksum=fletcher2,fletcher4", "-I", "2", "--size", "16M", "--runfile-out", "ab.toml",
                  "--no-history", cwd=str(tmp_path), timeout=900)
    assert res.returncode == 0, why(res)
    assert "design: turns" in res.stdout
    shown = next(ln for ln in res.stdout.splitlines() if ln.startswith("Log directory:")).split("\t")[-1]
    assert shown.startswith("zfsperf-results/"), shown                 # relative, as the user's -o is
    run = json.loads((tmp_path / shown / "run.json").read_text())
    assert run["runfile"]["text"] == (tmp_path / "ab.toml").read_text() and run["turns"] == ["ab"]
    assert "design: one run, both sides on one pool taking turns round by round (ABBA)" in flat(res.stdout)
    assert "ab checksum=fletcher2 → ab checksum=fletcher4" in flat(res.stdout)   # the table's title
    table = after_compare_title(res.stdout)                           # compare's, after the run's summary
    assert table.split("\n\n")[1].split()[:2] == ["figure", "old"], table
    row = table_row(table, "throughput")
    assert "too few iterations" in row and "ab: warning: -I 2: 2 pair(s) can never reach p < 0.05" in res.stdout, \
        res.stdout


@pytest.mark.parametrize("args, said", [
    (["checksum=fletcher2,fletcher4", "--size", "1K"], "--size: corpus.size must be at least 1M"),
    (["checksum=fletcher2,fletcher4", "--size", "100G"], "--size: its data (100G) can never fit its pool"),
    (["checksum=blake3,sha256"], 'checksum=blake3,sha256: checksum on zfs-fuse (pool v23) takes on, off'),
    (["--tunable", "zfs_txg_timeout=5,10"], "--tunable: every case sets a module tunable (zfs_txg_timeout) "
                                            "and zfs-fuse has no tunables at run time: nothing would run")])
def test_an_ab_error_names_what_the_user_typed_and_touches_nothing(tmp_path, args, said):
    """Issue 83: ab's errors pointed into its deleted temporary runfile (`/tmp/zfsperf-ab-….toml:26:
    test[1].…`), repeated their prefix (`checksum: checksum: corpus.size`) or blamed `pool.vdev_size`
    for --size; a tunable A/B on zfs-fuse, neither side of which can run, made a corpus, 16 SKIPs, a
    results directory and a history row. Each is refused up front, in the terms of the command
    line, with nothing written (the default output directory, from the user's directory)."""
    import tempfile
    before = set(Path(tempfile.gettempdir()).glob("zfsperf-ab-*"))
    res = run_in_process(["ab", *args], cwd=str(tmp_path))
    assert res.returncode == 2 and res.stderr.startswith(f"zfsperf: {said}"), res.stderr
    assert ".toml" not in res.stderr and "checksum: checksum" not in res.stderr
    assert list(tmp_path.iterdir()) == [] and set(Path(tempfile.gettempdir()).glob("zfsperf-ab-*")) == before


def test_a_runfile_every_case_of_which_sets_a_tunable_is_refused_on_zfs_fuse(tmp_path):
    """The same refusal for a runfile: file, line and field, exit 2, nothing written; a runfile with
    one case that runs keeps its tunable cases as SKIP (the dry run says so)."""
    rf = tmp_path / "t.toml"
    rf.write_text('[[test]]\nname = "t"\nworkload = "receive"\ncorpus = { kind = "random", size = "8M" }\n'
                  'tunables = { zfs_txg_timeout = [5, 10] }\n')
    res = run_in_process(["run", "-r", str(rf), "--target", "zfs-fuse"], cwd=str(tmp_path))
    assert res.returncode == 2 and res.stderr.startswith(f"zfsperf: {rf}:5: test[1].tunables.zfs_txg_timeout: "
                                                        "every case sets a module tunable"), res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.toml"]
    rf.write_text(rf.read_text() + '\n[[test]]\nname = "u"\nworkload = "receive"\n'
                  'corpus = { kind = "random", size = "8M" }\n')
    res = run_in_process(["run", "-r", str(rf), "--target", "zfs-fuse", "--dry-run"], cwd=str(tmp_path))
    assert res.returncode == 0 and "its cases will be SKIP" in res.stdout, res.stderr


def test_the_help_s_ab_examples_pass_their_dry_run_on_the_default_target(tmp_path):
    """`ab --help`'s first example (recordsize=128K,1M) was refused on the default target: every
    example without --target checks, as a dry run, from the user's directory."""
    from zfsperf.cliargs import EXAMPLES
    for line in EXAMPLES["ab"]:
        argv = line.split()[1:]
        if "--target" in argv:
            continue
        res = run_in_process([*argv, "--dry-run"], cwd=str(tmp_path))
        assert res.returncode == 0 and "dry run:" in res.stdout, (line, res.stderr)


def test_the_dry_run_gives_a_receive_test_s_time_and_says_what_too_few_pairs_cannot_do(tmp_path, monkeypatch):
    """Issue 83: the dry run gave no time for a receive test (the README promises one), `ab -I 3`
    passed with no word that 3 pairs can never reach p < 0.05, and `--target guest` did not say
    its image must first be built, nor how long that takes."""
    res = run_in_process(["ab", "checksum=fletcher2,fletcher4", "-I", "3", "--dry-run", "--no-history"],
                         cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    time_line = next(ln for ln in res.stdout.splitlines() if ln.strip().startswith("time "))
    # 2 sides × (1 warm-up + 3) iterations × (1 GiB at 400 MiB/s + 5 s of set-up shared by the 2 sides)
    assert "about 40 s at an assumed 400 MiB/s received and 5 s of set-up an iteration" in time_line, time_line
    assert "3 pair(s) can never reach p < 0.05: the sign-flip test's smallest p is 2 / 2^3 = 0.25" in res.stdout
    six = run_in_process(["ab", "checksum=fletcher2,fletcher4", "-I", "6", "--dry-run", "--no-history"],
                         cwd=str(tmp_path))
    assert six.returncode == 0 and "can never reach" not in six.stdout, six.stdout
    from zfsperf.guest import build, vm
    monkeypatch.setattr(build, "find_build", lambda series: None)
    monkeypatch.setattr(vm.Guest, "state", lambda self: None)
    res = run_in_process(["ab", "--tunable", "zfs_txg_timeout=5,10", "--dry-run", "--no-history", "--target", "guest"],
                         cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert "its image is not built yet: the run builds it first (`zfsperf guest build`, about 12 min" in res.stdout
    assert list(tmp_path.iterdir()) == []
