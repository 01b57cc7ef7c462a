"""The dry run is the plan (issue 70): every check a run would make against the chosen target, then
what it would do, creating nothing. Checks run in-process on the real runfile loader and plan; one
test runs the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import REPO, zfsperf
from zfsperf import dryrun, props
from zfsperf.errors import InputError
from zfsperf.opentarget import expected
from zfsperf.plan import Choice, Plan
from zfsperf.pool import hold_problem
from zfsperf.runfile import loads
from zfsperf.workloads import WORKLOADS

FUSE = REPO / "tests" / "fixtures" / "zfs-fuse"

RECEIVE = '''[[test]]
name = "r"
workload = "receive"
corpus = {{ kind = "random", size = "64M" }}
threads = 1
{extra}
'''


def plan_of(text: str, tmp_path: Path) -> tuple[Plan, list]:
    rf = tmp_path / "rf.toml"
    rf.write_text(text)
    plan = Plan.new(Choice(runfile=str(rf)))
    return plan, plan.cases()


def test_the_zfs_fuse_property_names_are_the_ones_it_prints():
    ds = {ln.split("\t")[1] for ln in (FUSE / "zfs_get_-H_all_pool.txt").read_text().splitlines() if ln.strip()}
    pool = {ln.split()[1] for ln in (FUSE / "zpool_get_all_pool.txt").read_text().splitlines()[1:] if ln.strip()}
    assert props.ZFS_FUSE_DATASET == ds and props.ZFS_FUSE_POOL == pool


@pytest.mark.parametrize("extra, field, said", [
    ('[test.dataset]\nrecordsize = ["128K", "1M"]', "test[1].dataset.recordsize", "takes 512 to 128K"),
    ('[test.dataset]\ncompression = "lz4"', "test[1].dataset.compression", 'not "lz4"'),
    ('[test.dataset]\nsync = "always"', "test[1].dataset.sync", "has no dataset property sync"),
])
def test_what_zfs_fuse_cannot_take_is_refused_at_its_line(extra, field, said, tmp_path):
    plan, cases = plan_of(RECEIVE.format(extra=extra), tmp_path)
    dryrun.target_check(cases, "openzfs-linux", plan.runfile)           # OpenZFS takes it
    with pytest.raises(InputError) as e:
        dryrun.target_check(cases, "zfs-fuse", plan.runfile)
    assert e.value.field == field and e.value.line == 7 and said in e.value.message, e.value


@pytest.mark.parametrize("extra, field, said", [
    ('expect = { thruput = ">= 100 MiB/s" }', "test[1].expect.thruput", 'no figure "thruput" (its figures: throughput'),
    ('expect = { throughput = ">= 100 MB/s" }', "test[1].expect.throughput", 'reported in MiB/s, not "MB/s"'),
])
def test_an_expect_names_a_figure_the_workload_reports_in_its_unit(extra, field, said, tmp_path):
    with pytest.raises(InputError) as e:
        plan_of(RECEIVE.format(extra=extra), tmp_path)
    assert e.value.field == field and e.value.line == 6 and said in e.value.message, e.value
    plan_of(RECEIVE.format(extra='expect = { throughput = ">= 1 MiB/s", blocks = "> 0" }'), tmp_path)


@pytest.mark.parametrize("extra, field, said", [
    ('duration = "1000d"', "test[1].duration", "beyond its timeout (20 min): it could only time out"),
    ('iterations = 1000000000', "test[1].iterations", "would run 11,574 days or more"),
])
def test_an_iteration_that_can_only_time_out_or_a_case_of_years_is_refused(extra, field, said, tmp_path):
    plan, cases = plan_of(RECEIVE.format(extra=extra), tmp_path)
    with pytest.raises(InputError) as e:
        dryrun.time_check(cases, None, plan.runfile)
    assert e.value.field == field and e.value.line == 6 and said in e.value.message, e.value


def test_a_target_that_cannot_be_reached_is_exit_2_before_anything(tmp_path, monkeypatch):
    with pytest.raises(InputError, match=r"no kernel OpenZFS on this machine"):
        expected("openzfs")
    with pytest.raises(InputError, match=r'ssh host "nosuch\.invalid" does not resolve'):
        expected("ssh://root@nosuch.invalid")
    monkeypatch.setenv("ZFSPERF_LAB", str(tmp_path / "no-lab"))         # no `zfsperf lab` running
    assert expected("auto").impl == "zfs-fuse" and "started for it and stopped after" in expected("auto").how
    (tmp_path / "no-lab").mkdir()
    (tmp_path / "no-lab" / "state.json").write_text("{}")                # one that may still run
    assert f"`zfsperf lab` at {tmp_path / 'no-lab'}" in expected("zfs-fuse").how


def test_the_default_suite_keeps_the_same_work_each_iteration_and_its_pool_holds_it(tmp_path):
    """The default suite is cut short nowhere: each iteration receives a fixed amount (io_size),
    which its pool holds whole; a pool too small for it is refused up front."""
    plan = Plan.new(Choice())
    for c in plan.cases():
        kept = WORKLOADS[c.test.workload].kept_bytes(c.fields)
        assert kept is not None and hold_problem(c.test.pool, kept) is None, c.id
    small = plan.cases()[-1]
    small.test.pool.vdev_size = 1024 ** 3
    assert "make vdev_size at least" in (hold_problem(small.test.pool, WORKLOADS["receive"].kept_bytes(small.fields))
                                         or "")


def test_io_size_is_whole_rounds_and_does_not_go_with_duration(tmp_path):
    plan, cases = plan_of(RECEIVE.format(extra='threads = [1, 3]\nio_size = "200M"').replace("threads = 1\n", ""),
                          tmp_path)
    assert [WORKLOADS["receive"].rounds(c.fields, None) for c in cases] == [4, 2]      # 200/64, 200/192 up
    with pytest.raises(InputError, match="io_size and duration do not go together"):
        plan_of(RECEIVE.format(extra='io_size = "1G"\nduration = "4s"'), tmp_path)


def test_the_dry_run_prints_the_plan_and_creates_nothing(tmp_path):
    text = RECEIVE.format(extra='duet = "turns"\nio_size = "256M"\n[test.dataset]\nchecksum = ["fletcher4", "sha256"]')
    rf = tmp_path / "rf.toml"
    rf.write_text(text)
    env = {"ZFSPERF_STATE": str(tmp_path / "state"), "ZFSPERF_LAB": str(tmp_path / "no-lab")}
    res = zfsperf("run", "-r", str(rf), "--dry-run", "-o", str(tmp_path / "o"), "-d", str(tmp_path / "v"),
                  env=env, timeout=60)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "nothing was started or written" in out
    assert "target    the embedded zfs-fuse: a daemon of the run's own" in out
    assert "for zfs-fuse (pool v23)" in out
    assert "test r (receive): 2 case(s); turns: the two sides take turns on one pool in ABBA order" in out
    assert "cases   A checksum=fletcher4" in out and "cases   B checksum=sha256" in out
    assert "each    3 iteration(s), a fresh pool each: stripe of 2 × 2G (sparse files); 256M received" in out
    assert "creates   a results directory under" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rf.toml"]
