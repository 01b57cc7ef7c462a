"""The runner around a measurement, on the fake target (tests/helpers.py) in seconds: the order of a
case's lifecycle, every status, adaptive precision, interleaved blocks, signals and resume.

What ZFS does is not in question here (the fake target answers every command as a success and no
pool exists); the real-ZFS tests check the same paths on the session's zfs-fuse daemon."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from helpers import TUNABLES, FakeTarget, ScriptedWorkload, interrupt_self, run_in_process, runfile
from zfsperf import runner as runner_mod
from zfsperf import workloads
from zfsperf.errors import InputError, Refused, Unavailable
from zfsperf.machine import RunLock
from zfsperf.tunables import Journal
from zfsperf.results.record import Status
from zfsperf.results.directory import ResultsDir
from zfsperf.workloads.base import CaseTimeout, WorkloadFailed, figure



class Harness:
    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp = tmp
        monkeypatch.setenv("ZFSPERF_STATE", str(tmp / "state"))
        monkeypatch.setenv("ZFSPERF_LAB", str(tmp / "lab"))
        self.target = FakeTarget(tmp / "target")
        self.wl = ScriptedWorkload(self.target)
        monkeypatch.setitem(workloads.WORKLOADS, "scripted", self.wl)
        monkeypatch.setitem(workloads.SUMMARY_FIGURES, "scripted", ["throughput"])
        monkeypatch.setitem(runner_mod.HEADLINE, "scripted", "throughput")
        monkeypatch.setattr(runner_mod, "open_target", lambda spec, **kw: self.target)
        # told before it is opened as the fake is: its implementation, with the tunables it has
        monkeypatch.setattr(runner_mod, "expected", lambda spec, tunables_dir=None: runner_mod.Expected(
            self.target.impl, "the fake target", tunables=self.target.tunables is not None))
        # daemons an earlier zfsperf left behind are the real tests' business (tests/faults/
        # test_orphans.py): a fake run must not read or consume this machine's guard notes
        monkeypatch.setattr(runner_mod.leftovers, "before_a_run", lambda cleanup, say: None)

    def run(self, rf: Path, **opts) -> tuple[int, Path, list]:
        o = runner_mod.RunOptions.of(runfile=str(rf), outdir=str(self.tmp / "out"), vdev_dir=str(self.tmp / "vdev"),
                                  check="off", store=None, quiet=True, argv=["run", "-r", str(rf)], **opts)
        r = runner_mod.Runner(o)
        r.lock = RunLock(self.tmp / "run.lock")
        code = r.run()
        d = Path(opts["resume"]) if opts.get("resume") else (self.tmp / "out" / "current").resolve()
        return code, d, ResultsDir.open(d).results()

    def workload_calls(self) -> list[tuple[str, int]]:
        return [(e[1], e[2]) for e in self.target.events if e[0] == "workload"]

    def tunables_now(self) -> dict[str, str]:
        return self.target.read_tunables()


@pytest.fixture
def h(tmp_path, monkeypatch) -> Harness:
    return Harness(tmp_path, monkeypatch)


def _index(events, pred, start=0):
    return next(i for i in range(start, len(events)) if pred(events[i]))


def test_case_lifecycle_order(h, tmp_path):
    """Each iteration: its tunables (before the pool, so that a pool-scope one applies to it), then
    a fresh pool, then the workload, then the tunables put back, then the pool destroyed; the next
    iteration starts only after all of that."""
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n'
                 'tunables = { zfs_txg_timeout = [1, 10] }\n', iterations=2)
    code, _d, recs = h.run(rf)
    assert code == 0
    ev = h.target.events
    i = 0
    for case_value in ("1", "10"):
        for it in (1, 2):
            create = _index(ev, lambda e: e[0] == "run" and e[1][:2] == ["zpool", "create"], i)
            setv = _index(ev, lambda e: e == ("set", "zfs_txg_timeout", case_value), i)
            work = _index(ev, lambda e: e[0] == "workload" and e[2] == it, i)
            restore = _index(ev, lambda e: e == ("set", "zfs_txg_timeout", TUNABLES["zfs_txg_timeout"]), work)
            destroy = _index(ev, lambda e: e[0] == "run" and e[1][:2] == ["zpool", "destroy"], work)
            assert setv < create < work < restore and work < destroy, ev[i:destroy + 1]
            i = max(restore, destroy) + 1
    assert [(r.case, r.iteration, r.status) for r in recs] == [
        ("t zfs_txg_timeout=1", 1, Status.PASS), ("t zfs_txg_timeout=1", 2, Status.PASS),
        ("t zfs_txg_timeout=10", 1, Status.PASS), ("t zfs_txg_timeout=10", 2, Status.PASS)]
    assert [r.sweep for r in recs][::2] == [{"zfs_txg_timeout": 1}, {"zfs_txg_timeout": 10}]
    assert h.tunables_now() == TUNABLES and h.target.pools == {} and h.target.closed
    assert not Journal().entries()


def test_every_status_and_the_exit_code(h, tmp_path):
    """PASS only for a workload that ran, returned figures and met its expectations; a failure,
    a timeout, a missing feature, an empty result and an unmet expectation each get their status
    and their reason; the run exits 1."""
    def script(ctx):
        mode = ctx.fields["mode"]
        if mode == "fail":
            raise WorkloadFailed("fio exited 1: no space left on device")
        if mode == "timeout":
            raise CaseTimeout("the receive was still running")
        if mode == "skip":
            raise Unavailable("this target has no zpool iostat -w")
        if mode == "empty":
            return {}
        return {"throughput": figure(float(ctx.fields.get("level", 100)), "MiB/s")}
    h.wl.script = script
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n'
                 'mode = ["ok", "fail", "timeout", "skip", "empty"]\n\n'
                 '[[test]]\nname = "e"\nworkload = "scripted"\nmode = "ok"\nlevel = [10, 100]\n'
                 'expect = { throughput = ">= 50 MiB/s" }\n', iterations=1)
    code, _d, recs = h.run(rf)
    got = {r.sweep.get("mode") or ("slow" if r.sweep["level"] == 10 else "fast"): (r.status, r.error or "")
           for r in recs}
    assert got["fast"] == (Status.PASS, "")
    assert got["ok"] == (Status.PASS, "")
    assert got["fail"][0] is Status.FAIL and "no space left" in got["fail"][1]
    assert got["timeout"][0] is Status.KILLED and "still running" in got["timeout"][1]
    assert got["skip"][0] is Status.SKIP and "iostat -w" in got["skip"][1]
    assert got["empty"][0] is Status.FAIL and "no figures" in got["empty"][1]
    assert got["slow"][0] is Status.FAIL and ">= 50" in got["slow"][1]
    assert code == 1
    assert h.target.pools == {}


def test_a_tunable_the_target_lacks_is_a_skip(h, tmp_path):
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n'
                 'tunables = { zfs_vdev_async_write_max_active = 3 }\n', iterations=1)
    code, _d, recs = h.run(rf)
    assert [r.status for r in recs] == [Status.SKIP] and "zfs_vdev_async_write_max_active" in recs[0].error
    assert h.workload_calls() == []                                 # nothing ran, no pool was made
    assert all(c[1] != "create" for c in h.target.commands("zpool"))
    assert code == 0


@pytest.mark.parametrize("values,stopped_by,n", [
    ([100.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.0], "precision reached", 3),
    ([60.0, 140.0, 70.0, 130.0, 65.0, 135.0, 80.0, 120.0], "max_iterations", 6),
])
def test_adaptive_precision_stops_for_its_reason(h, tmp_path, values, stopped_by, n):
    seq = iter(values)
    h.wl.script = lambda ctx: {"throughput": figure(next(seq), "MiB/s")}
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\nmax_iterations = 6\n',
                 iterations=3)
    code, _d, recs = h.run(rf, precision=2.0)
    assert code == 0 and len(recs) == n
    last = recs[-1].precision
    assert last.stopped_by == stopped_by and last.iterations == n and last.target_pct == 2.0
    assert all(r.precision is None for r in recs[:-1])


def test_interleaved_blocks_hold_every_case_once_in_a_seeded_order(h, tmp_path):
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\nlevel = [1, 2, 3]\n',
                 iterations=6)
    code, d, recs = h.run(rf, interleave=True, seed=7)
    assert code == 0
    calls = h.workload_calls()
    blocks = [calls[i:i + 3] for i in range(0, len(calls), 3)]
    assert len(blocks) == 6
    for i, block in enumerate(blocks, start=1):
        assert sorted(c for c, _ in block) == ["t__level=1", "t__level=2", "t__level=3"]
        assert {it for _, it in block} == {i}
    assert len({tuple(c for c, _ in b) for b in blocks}) > 1        # the order is drawn per block
    assert json.loads((d / "run.json").read_text())["selection"]["seed"] == 7
    first = calls
    h.target.events.clear()
    h.run(rf, interleave=True, seed=7)
    assert h.workload_calls() == first                              # the seed gives the order again


def test_an_ab_test_runs_its_points_in_seeded_blocks_and_the_rest_in_turn(h, tmp_path):
    """`ab = true` in the runfile is --interleave for that test alone: its sweep points in blocks of
    one iteration each, in an order drawn from the recorded seed, at least 6 blocks (the fewest with
    which the paired test can reach p < 0.05); a test without it runs its iterations one after another,
    and compare pairs the ab test's points by block."""
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\nlevel = [1, 2]\nab = true\n\n'
                 '[[test]]\nname = "u"\nworkload = "scripted"\nlevel = [5, 6]\n', iterations=3)
    code, d, recs = h.run(rf, seed=5)
    assert code == 0
    calls = h.workload_calls()
    ab = [c for c in calls if c[0].startswith("t__")]
    assert len(ab) == 12 and calls[:12] == ab                        # 6 blocks, not 3 iterations
    blocks = [ab[i:i + 2] for i in range(0, 12, 2)]
    assert all(sorted(c for c, _ in b) == ["t__level=1", "t__level=2"] and {it for _, it in b} == {i}
               for i, b in enumerate(blocks, start=1))
    assert len({tuple(c for c, _ in b) for b in blocks}) == 2        # the order is drawn per block
    assert calls[12:] == [("u__level=5", i) for i in (1, 2, 3)] + [("u__level=6", i) for i in (1, 2, 3)]
    info = json.loads((d / "run.json").read_text())
    assert info["ab"] == ["t"] and info["selection"]["seed"] == 5 and info["selection"]["interleave"] is False
    from zfsperf.report.compare import compare_within
    from zfsperf.report.pairing import ab_pairs
    from zfsperf.report.model import load_run
    run = load_run(d)
    designs = {c.case: c.design for c in compare_within(run, ab_pairs(run)).changes}
    assert designs == {"t level=1 → t level=2": "paired", "u level=5 → u level=6": "unpaired"}
    h.target.events.clear()
    h.run(rf, seed=5)
    assert h.workload_calls() == calls                              # the seed gives the order again


@pytest.mark.parametrize("asked,said", [(2, True), (6, False), (8, False)])
def test_an_ab_asked_for_fewer_than_6_blocks_says_it_runs_6_and_why(h, tmp_path, monkeypatch, asked, said):
    """-I 2 on an interleaved run is raised to 6 blocks (the fewest with which the paired test can
    reach p < 0.05); the user is told so, with why, once; asked for 6 or more, nothing is said."""
    from zfsperf.ui import Console
    lines: list[str] = []
    monkeypatch.setattr(Console, "say", lambda self, text: lines.append(text))
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\nlevel = [1, 2]\n')
    code, _d, recs = h.run(rf, interleave=True, seed=3, iterations=asked)
    assert code == 0 and len(recs) == 2 * max(asked, 6)
    raised = [t for t in lines if t.startswith("iterations:")]
    assert raised == ([f"iterations: {asked} asked for, 6 run: an A/B's paired test cannot call a change "
                       "(p < 0.05) with fewer pairs"] if said else []), lines


@pytest.mark.parametrize("asked,blocks", [(None, 2), (3, 3)])
def test_a_smoke_run_runs_an_ab_in_the_blocks_asked_and_compare_calls_nothing(h, tmp_path, monkeypatch, asked, blocks):
    """--smoke (issue 84: an A/B's mechanics in two blocks, not twelve): an interleaved run in the
    blocks -I asks (2 when it asks none), not raised to 6; any other case of it once when -I asks
    none, though its runfile asks 4; said so at the start and in the
    summary; run.json records it, history refuses it, and compare pairs its blocks without a
    verdict."""
    from zfsperf.history.store import unfit
    from zfsperf.report.compare import compare_within
    from zfsperf.report.model import load_run
    from zfsperf.report.pairing import ab_pairs
    from zfsperf.ui import Console
    lines: list[str] = []
    monkeypatch.setattr(Console, "say", lambda self, text: lines.append(text))
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\nlevel = [1, 2]\nab = true\n'
                 '[[test]]\nname = "u"\nworkload = "scripted"\nlevel = 5\niterations = 4\n')
    code, d, recs = h.run(rf, seed=3, smoke=True, **({"iterations": asked} if asked else {}))
    assert code == 0
    got = {c: sorted(r.iteration for r in recs if r.case == c) for c in {r.case for r in recs}}
    assert got == {"t level=1": list(range(1, blocks + 1)), "t level=2": list(range(1, blocks + 1)),
                   "u": list(range(1, (asked or 1) + 1))}, got
    assert not any(t.startswith("iterations:") for t in lines), lines          # not raised to 6
    assert any(t.startswith("smoke: ") and "not a measurement" in t for t in lines), lines
    assert "Smoke:\ta check that the run works" in (d / "summary.txt").read_text()
    run = load_run(d)
    assert run.run.selection["smoke"] is True and "smoke run" in unfit(run)
    ch = {c.case: c for c in compare_within(run, ab_pairs(run)).changes}["t level=1 → t level=2"]
    assert ch.design == "paired" and not ch.verdict.decided and f"{blocks} blocks: p < 0.05 needs ≥ 6" in ch.note, ch


@pytest.mark.parametrize("flag", [["--detect", "5"], ["--precision", "2"]])
def test_a_smoke_run_with_a_stopping_rule_is_refused_before_anything(tmp_path, flag):
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "receive"\ncorpus = { kind = "random", size = "1M" }\n')
    res = run_in_process(["run", "-r", str(rf), "--smoke", *flag, "-o", str(tmp_path / "o")], cwd=str(tmp_path))
    assert res.returncode == 2 and res.stderr.startswith("zfsperf: --smoke: --smoke runs a fixed count"), res.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("body,error", [
    ('level = 1\nab = true\n', "ab needs a sweep to compare"),
    ('level = [1, 2]\nab = "yes"\n', "expected true or false, got \"yes\""),
])
def test_an_ab_test_without_a_sweep_is_refused(h, tmp_path, body, error):
    from zfsperf.errors import InputError
    from zfsperf.runfile import load
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n' + body)
    with pytest.raises(InputError) as e:
        load(str(rf))
    assert error in str(e.value) and "test[1].ab" in str(e.value) and "r.toml:15: " in str(e.value), str(e.value)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP])
def test_a_signal_abandons_the_case_and_resume_finishes_the_run(h, tmp_path, sig):
    """A signal mid-case: that iteration is not a result (no record), its tunables are put back and
    its pool destroyed, the run says it was interrupted; --resume runs exactly what is missing."""
    fired = []

    def script(ctx):
        if ctx.fields["level"] == 2 and ctx.iteration == 2 and not fired:
            fired.append(1)
            interrupt_self(sig)
        return {"throughput": figure(float(ctx.fields["level"]), "MiB/s")}
    h.wl.script = script
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\nlevel = [1, 2]\n'
                 'tunables = { zfs_txg_timeout = 9 }\n', iterations=3)
    code, d, recs = h.run(rf)
    assert code != 0 and fired
    assert [(r.sweep["level"], r.iteration) for r in recs] == [(1, 1), (1, 2), (1, 3), (2, 1)]
    assert json.loads((d / "run.json").read_text())["interrupted"] is True
    assert h.tunables_now() == TUNABLES and h.target.pools == {} and not Journal().entries()
    h.target.events.clear()
    code, d2, recs = h.run(rf, resume=str(d))
    assert code == 0 and d2 == d
    assert h.workload_calls() == [("t__level=2", 2), ("t__level=2", 3)]
    assert sorted((r.sweep["level"], r.iteration) for r in recs) == [(lv, i) for lv in (1, 2) for i in (1, 2, 3)]
    assert all(r.status is Status.PASS for r in recs)
    assert h.tunables_now() == TUNABLES and h.target.pools == {}


def test_a_signal_ends_a_case_whose_process_ignores_it_within_the_grace(h, tmp_path, monkeypatch):
    """CI: a SIGINT'd run on zfs-fuse was still running 4 min later (so every later run in that lane
    was refused by the one-run lock). After a signal the waits for a case's processes ran to the
    case timeout, so one process that outlived its SIGTERM held the run for minutes. Now a
    signal bounds them to SIGNAL_GRACE: the process is SIGKILLed by the teardown and the run ends."""
    import subprocess
    import time
    import zfsperf.workloads.base as base
    from zfsperf import proc as zproc
    monkeypatch.setattr(base, "SIGNAL_GRACE", 2.0)
    monkeypatch.setattr(zproc, "STOP_GRACE", 1.0)
    started: list[subprocess.Popen] = []

    def script(ctx):
        # a process that ignores SIGTERM and SIGINT (as one stuck in a FUSE request does)
        p = ctx.procs.add(subprocess.Popen(["sh", "-c", "trap '' TERM INT; sleep 120 & wait; sleep 120"],
                                           start_new_session=True))
        started.append(p)
        time.sleep(0.3)                         # its traps in place
        interrupt_self(signal.SIGINT)
        try:                                    # waited for the way receive and fio wait
            p.wait(timeout=max(0.1, ctx.remaining()))
        except subprocess.TimeoutExpired:
            raise ctx.overdue("the stubborn process") from None
        return {"throughput": figure(1.0, "MiB/s")}
    h.wl.script = script
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=1)
    t0 = time.monotonic()
    code, d, recs = h.run(rf)
    took = time.monotonic() - t0
    assert code != 0 and recs == [] and json.loads((d / "run.json").read_text())["interrupted"] is True
    assert took < 30, f"{took:.1f} s: the case timeout is 60 s"      # 2 s grace + 1 s SIGTERM grace
    assert started and not zproc.pid_alive(started[0].pid)
    log = "".join(f.read_text() for f in (d / "logs").rglob("*.log"))
    assert "still running 2 s after a signal asked it to end" in log, log[-2000:]


def test_target_lab_is_refused_by_name(tmp_path):
    """`lab` names only the embedded zfs-fuse daemon (glossary): `--target lab`, once an old spelling
    of the guest, is an input error that says which target to use, before anything is started."""
    from helpers import zfsperf
    res = zfsperf("run", "--target", "lab", "-o", str(tmp_path / "out"), "--no-history", "--check", "off")
    assert res.returncode == 2 and "--target guest" in res.stderr and "--target zfs-fuse" in res.stderr
    assert not (tmp_path / "out").exists()


def test_capabilities_are_declared_and_recorded(h, tmp_path):
    """A target says what it has in one declared value (recorded in run.json); the core reads that,
    and no module discovers a target's features by probing attribute names."""
    import re
    caps = h.target.capabilities()
    assert (caps.tunables, caps.txgs, caps.iostat_forms, caps.daemon_recovery, caps.remote, caps.accelerator) == \
        (True, False, (), False, False, None)
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=1)
    _code, d, _recs = h.run(rf)
    assert json.loads((d / "run.json").read_text())["target"]["capabilities"] == caps.as_dict()
    src = Path(__file__).resolve().parents[1] / "src" / "zfsperf"
    probing = re.compile(r"\b(getattr|hasattr)\(\s*(self\.)?(ctx\.)?(target|tgt|t)\b")
    found = [f"{p}:{i}" for p in src.rglob("*.py") for i, line in enumerate(p.read_text().splitlines(), 1)
             if probing.search(line)]
    assert found == []


def test_the_sampler_takes_samples_from_a_declared_target(tmp_path):
    """The sampler reads what the target declares (capabilities: txgs, iostat forms). When that
    read moved into the constructor it landed on the iostat reader, and every sample of every
    real run became {"error": "'Sampler' object has no attribute ..."}: no ARC, pool or progress
    metric at all, and the steady verdict had nothing to vote on. On the fake target (replayed
    OpenZFS 2.3 arcstats) each sample carries the ARC and progress metrics and no error."""
    from zfsperf.metrics.sampler import Sampler
    target = FakeTarget(tmp_path / "target")
    done = {"bytes": 0.0, "ios": 0.0}

    def progress() -> dict[str, float]:
        done["bytes"] += 1 << 20
        done["ios"] += 8
        return dict(done)

    s = Sampler(target, "p", tmp_path / "series.jsonl", interval=0.1, progress=progress, pool_source=False)
    s.start()
    try:
        from helpers import wait_until
        assert wait_until(lambda: len(s.snapshot()) >= 3, timeout=5)
    finally:
        s.stop()
    samples = s.snapshot()
    assert [x["info"].get("error") for x in samples] == [None] * len(samples)
    assert all(x["metrics"]["arc_size_frac"] is not None for x in samples)
    assert any((x["metrics"].get("workload_mibs") or 0) > 0 for x in samples[1:])
    assert (tmp_path / "series.jsonl").read_text().count("\n") == len(samples)


def _builds():
    from zfsperf.buildref import BuildRef
    return {"a": BuildRef("a", "OpenZFS A", "/builds/a"), "b": BuildRef("b", "OpenZFS B", "/builds/b")}


def test_a_build_ab_loads_each_case_build_before_its_pool_and_the_own_one_after(h, tmp_path):
    """Two builds as one more sweep key: every case runs once per build in interleaved blocks; the
    build's modules are loaded (only when the build changes) before the case's pool, and the
    guest's own build is loaded back when the run ends."""
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=4)
    code, d, recs = h.run(rf, interleave=True, seed=3, builds=_builds())
    assert code == 0
    ev = h.target.events
    loaded = None
    swaps = 0
    for i, e in enumerate(ev):
        if e[0] == "run" and e[1][0] == "insmod" and e[1][1].endswith("zfs.ko"):
            loaded, swaps = e[1][1], swaps + 1
        if e[0] == "workload":
            build = e[1].rsplit("build=", 1)[1]
            assert loaded == f"/hostroot/builds/{build}/zfs.ko", (e, loaded)
    calls = [c for c, _ in h.workload_calls()]
    n = calls.count("t__build=a")                      # an A/B gets at least the blocks a paired test needs
    assert n >= 4 and sorted(calls) == ["t__build=a"] * n + ["t__build=b"] * n
    assert swaps == 1 + sum(1 for x, y in zip(calls, calls[1:]) if x != y)      # no needless reload
    last_load = max(i for i, e in enumerate(ev) if e[0] == "run" and e[1][0] in ("insmod", "modprobe"))
    assert ev[last_load][1] == ["modprobe", "zfs"] and h.target.module == "own"
    assert last_load > max(i for i, e in enumerate(ev) if e[0] == "workload")
    run = json.loads((d / "run.json").read_text())
    assert run["builds"]["a"]["srcversion"] == "SRC-/hostroot/builds/a/zfs.ko"
    assert run["builds"]["b"]["label"] == "OpenZFS B"
    assert sorted({r.sweep["build"] for r in recs}) == ["a", "b"]


def test_a_build_with_its_own_userland_runs_its_zfs_commands_while_its_module_is_loaded(h, tmp_path):
    """Issue 72, 1: a side whose module is of another series than the machine's zpool and zfs
    (`run --userland old=DIR`) runs its own while its module is loaded, and only then: every zpool
    and zfs command from its load to the next one is DIR's (as the target sees the host's files),
    every other side's and the run's own after it the machine's; run.json states each side's
    userland and where it came from, and the case log names it."""
    from zfsperf.buildref import Userland
    builds = _builds()
    builds["a"].userland = Userland("/u21", "/u21/sbin", ("/u21/lib/x86_64-linux-gnu",))
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=2)
    code, d, _recs = h.run(rf, interleave=True, seed=3, builds=builds)
    assert code == 0
    own = ["env", "LD_LIBRARY_PATH=/hostroot/u21/lib/x86_64-linux-gnu", "/hostroot/u21/sbin/zfs", "version"]
    assert own in h.target.commands("env")             # its version read before the first unload
    loaded, seen = None, {"a": 0, "b": 0}
    for e in h.target.events:
        if e[0] != "run":
            continue
        argv = e[1]
        if argv[0] in ("insmod", "modprobe") and (argv[-1].endswith("zfs.ko") or argv[-1] == "zfs"):
            loaded = argv[-1].split("/")[-2] if argv[0] == "insmod" else "own"
        tool = argv[2].rsplit("/", 1)[-1] if argv[0] == "env" else argv[0]
        if tool in ("zpool", "zfs") and argv != own:
            assert (argv[0] == "env") == (loaded == "a"), (loaded, argv)
            if loaded in seen and argv[0] == "env":
                assert argv[2] == f"/hostroot/u21/sbin/{tool}", argv
            seen[loaded] = seen.get(loaded, 0) + 1
    assert seen["a"] > 0 and seen["b"] > 0 and h.target.userland is None
    run = json.loads((d / "run.json").read_text())
    assert run["builds"]["a"]["userland"] == "zfs-2.1.11-1+fake" and run["builds"]["a"]["userland_dir"] == "/u21"
    assert run["builds"]["b"]["userland"] == "zfs-2.3.2-1+fake" and run["builds"]["b"]["userland_dir"] is None
    from zfsperf.buildref import BuildRef                # kept whole for a resumed run's plan
    assert BuildRef.from_json(run["builds"]["a"]).userland == builds["a"].userland
    assert BuildRef.from_json(run["builds"]["b"]).userland is None
    log = "".join(f.read_text() for f in (d / "logs").glob("t__build=a.*.log"))
    assert "its own userland zfs-2.1.11-1+fake (/hostroot/u21/sbin)" in log, log[:2000]


def test_a_module_of_another_series_than_its_userland_is_said_before_the_first_unload(h, monkeypatch):
    """A build directory whose zfs.ko (modinfo's version) is of another series than the userland the
    side would run with is said when the switch is checked, before any rmmod, pointing at
    --userland; given its own userland of that series, nothing is said (modinfo failing: nothing)."""
    from zfsperf.buildref import Userland
    from zfsperf.tunables.modswitch import ModuleSwitch
    plain = h.target._answer
    versions = {"/hostroot/builds/a/zfs.ko": "2.1.11-1+deb12u1\n", "/hostroot/builds/b/zfs.ko": "2.3.2-1\n"}

    def answer(a, own=False):
        if a[:3] == ["modinfo", "-F", "version"]:
            return (versions[a[3]], 0) if a[3] in versions else ("", 1)
        return plain(a, own)
    monkeypatch.setattr(h.target, "_answer", answer)
    sw = ModuleSwitch(h.target, _builds())
    sw.check()
    assert len(sw.warnings) == 1 and sw.warnings[0].startswith("build a: its module is OpenZFS 2.1.11-1+deb12u1, "
                                                              "the userland it runs with is zfs-2.3.2-1+fake"), sw.warnings
    assert "--userland" in sw.warnings[0] and h.target.commands("rmmod", "insmod") == []
    builds = _builds()
    builds["a"].userland = Userland("/u21", "/u21/sbin", ("/u21/lib",))     # answers zfs-2.1.11-1+fake
    sw = ModuleSwitch(h.target, builds)
    sw.check()
    assert sw.warnings == []
    versions.clear()
    sw = ModuleSwitch(h.target, _builds())
    sw.check()
    assert sw.warnings == []


def test_a_build_ab_on_freebsd_is_refused_before_anything(h, tmp_path, monkeypatch):
    """FreeBSD's module is swapped with kldunload and kldload, which zfsperf does not do: a build A/B
    on a FreeBSD target is bad input (exit 2, --build named) before the target is touched, not a
    failure half-way."""
    monkeypatch.setattr(h.target, "impl", "openzfs-freebsd")
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=2)
    with pytest.raises(InputError) as e:
        h.run(rf, interleave=True, seed=1, builds=_builds())
    assert e.value.field == "--build" and e.value.exit_status == 2 and "kldunload" in str(e.value)
    assert h.target.events == [] and not (tmp_path / "out").exists()


def test_a_2_1_build_loads_its_seven_modules_between_spl_and_zfs_and_unloads_them_all():
    """OpenZFS 2.1 builds nine modules (spl, znvpair, zcommon, zunicode, zavl, icp, zlua, zzstd,
    zfs), 2.2 and later two: a build's directory is loaded in modinfo's dependency order, options
    on zfs only, and an unload takes zfs, the seven, then spl (the machine's own after a 2.1 build:
    none left behind for modprobe's 2.3 spl to meet)."""
    from zfsperf import proc
    from zfsperf.tunables.reload import ModuleLoader
    ran: list[list[str]] = []
    loaded = ["zfs", "zzstd", "zlua", "icp", "zavl", "zunicode", "zcommon", "znvpair", "spl", "ext4"]

    def run(argv, **_kw):
        argv = [str(a) for a in argv]
        ran.append(argv)
        if argv[0] == "rmmod":
            loaded.remove(argv[1])
        out = {"ls": "icp.ko\nspl.ko\nzavl.ko\nzcommon.ko\nzfs.ko\nzlua.ko\nznvpair.ko\nzunicode.ko\nzzstd.ko\n",
               "cat": "".join(f"{m} 1 0 - Live 0x0\n" for m in loaded) if argv[1:] == ["/proc/modules"] else "SRC\n"}
        return proc.Completed(argv, 0, out.get(argv[0], ""), "", 0.001)

    class Params:
        def read_all(self):
            return {"zfs_arc_max": "0"}
    src = ModuleLoader(run, Params()).reload({"zfs_arc_max": "0"}, "/b/21", what="build old")
    assert src == "SRC"
    assert [a[1] for a in ran if a[0] == "rmmod"] == ["zfs", "zzstd", "zlua", "icp", "zavl", "zunicode", "zcommon",
                                                       "znvpair", "spl"]
    assert loaded == ["ext4"]
    assert [a[1:] for a in ran if a[0] == "insmod"] == [["/b/21/spl.ko"], ["/b/21/znvpair.ko"], ["/b/21/zcommon.ko"],
                                                        ["/b/21/zunicode.ko"], ["/b/21/zavl.ko"], ["/b/21/icp.ko"],
                                                        ["/b/21/zlua.ko"], ["/b/21/zzstd.ko"],
                                                        ["/b/21/zfs.ko", "zfs_arc_max=0"]]


def test_a_signal_during_a_build_ab_still_loads_the_own_build_back(h, tmp_path):
    fired = []

    def script(ctx):
        if ctx.iteration == 2 and not fired:
            fired.append(1)
            interrupt_self(signal.SIGHUP)
        return {"throughput": figure(100.0, "MiB/s")}
    h.wl.script = script
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=3)
    code, _d, _recs = h.run(rf, interleave=True, seed=1, builds=_builds())
    assert code != 0 and fired
    assert h.target.module == "own" and h.target.pools == {}


# /proc/mounts and /proc/swaps as a machine whose root and swap are on ZFS has them (the kernel's formats)
ROOT_ON_ZFS = "rpool/ROOT/debian / zfs rw,relatime,xattr,posixacl,casesensitive 0 0\nproc /proc proc rw 0 0\n"
SWAP_ON_ZVOL = ("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
                "/dev/zd0                                partition\t8388604\t\t0\t\t-2\n")


@pytest.mark.parametrize("machine", ["a foreign pool", "root on ZFS", "swap on a zvol", "the module held"])
def test_a_build_ab_is_refused_before_any_unload_where_the_module_must_stay(machine, h, tmp_path, monkeypatch):
    """Issue 72, 2: the module is unloaded only where nothing else needs it. A pool that is not
    zfsperf's imported (unloading needs every pool exported, and zfsperf exports only its own), the
    root file system or swap on ZFS, or the module held with no pool imported: refused with the
    reason, exit 2, before any rmmod, insmod or pool. Before, the run went on to its first swap."""
    answers = {"root on ZFS": (["cat", "/proc/mounts"], ROOT_ON_ZFS),
               "swap on a zvol": (["cat", "/proc/swaps"], SWAP_ON_ZVOL),
               "the module held": (["cat", "/sys/module/zfs/refcnt"], "2\n")}
    if machine == "a foreign pool":
        h.target.pools["tank"] = "-"                 # imported, without zfsperf's mark
    else:
        argv, text = answers[machine]
        plain = h.target._answer
        monkeypatch.setattr(h.target, "_answer", lambda a, own=False: (text, 0) if a == argv else plain(a, own))
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=2)
    o = runner_mod.RunOptions.of(runfile=str(rf), outdir=str(tmp_path / "out"), vdev_dir=str(tmp_path / "vdev"),
                                 check="off", store=None, quiet=True, argv=["run"], interleave=True, seed=1,
                                 builds=_builds())
    r = runner_mod.Runner(o)
    r.lock = RunLock(tmp_path / "run.lock")
    with pytest.raises(Refused) as e:
        r.run()
    assert e.value.exit_status == 2
    said = {"a foreign pool": "pool tank is imported and is not zfsperf's", "root on ZFS": "/ is on ZFS (rpool/ROOT/debian)",
            "swap on a zvol": "swap is on a ZFS volume (/dev/zd0)",
            "the module held": "the zfs module is in use by something else (its use count is 2"}[machine]
    assert said in str(e.value), str(e.value)
    assert h.target.commands("rmmod", "insmod", "modprobe") == [] and h.workload_calls() == []
    assert not [c for c in h.target.commands("zpool") if c[1] == "create"]
    assert h.target.module == "own"


def test_a_build_ab_killed_with_9_leaves_the_guest_its_own_build_at_the_next_start(h, tmp_path, monkeypatch):
    """A build A/B killed with -9 never reached its restore: the guest kept the last build's module,
    and the next run on it measured that module while recording the guest's own (nothing journaled
    the swap). Now the swap is journaled before the load: the state a kill -9 leaves mid-case (the
    journal as it was then, its zfsperf dead, build a still loaded) is put right by the next run,
    which loads the guest's own build back before its first pool and leaves the journal empty. The
    journal's module backend reaches the fake target's rmmod/modprobe (kernel-only commands)."""
    import subprocess
    from zfsperf.tunables import backend, journal as journal_mod
    left: dict = {}

    def script(ctx):
        if "build=a" in ctx.case_id and not left:           # what a kill -9 here would leave
            left["journal"] = Journal().entries()
            left["module"] = h.target.module
        return {"throughput": figure(100.0, "MiB/s")}
    h.wl.script = script
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=1)
    code, _d, _recs = h.run(rf, interleave=True, seed=1, builds=_builds())
    assert code == 0 and h.target.module == "own" and not Journal().path.exists()
    assert left["module"] == "/hostroot/builds/a/zfs.ko"
    dead = subprocess.Popen(["true"])
    dead.wait()
    Journal().path.parent.mkdir(parents=True, exist_ok=True)
    Journal().path.write_text(json.dumps([{**e, "pid": dead.pid} for e in left["journal"]]))
    h.target.module = left["module"]
    real = journal_mod.open_backend
    monkeypatch.setattr(journal_mod, "open_backend", lambda spec: backend.ReloadTunables(spec, h.target.run)
                        if spec.kind == "module" else real(spec))
    h.target.events.clear()
    h.wl.script = lambda ctx: {"throughput": figure(100.0, "MiB/s")}
    code, _d, _recs = h.run(runfile(tmp_path / "plain.toml", '[[test]]\nname = "p"\nworkload = "scripted"\n',
                                    iterations=1))
    assert code == 0 and h.target.module == "own", h.target.module
    ev = h.target.events
    back = _index(ev, lambda e: e[0] == "run" and e[1] == ["modprobe", "zfs"])
    assert back < _index(ev, lambda e: e[0] == "run" and e[1][:2] == ["zpool", "create"])
    assert not Journal().path.exists()
    entry = next(e for e in left["journal"] if e["name"] == "zfs module build")
    assert entry["backend"]["kind"] == "module" and entry["old"] == "the machine's own", entry


def test_two_builds_cannot_duet(h, tmp_path):
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "receive"\nduet = true\n'
                 'corpus = { kind = "random", size = "4M" }\ndataset = { compression = ["off", "lz4"] }\n'
                 'steady = { mode = "off" }\n', iterations=1)
    from zfsperf.errors import InputError
    with pytest.raises(InputError) as e:
        h.run(rf, builds=_builds())
    assert e.value.field == "duet" and e.value.line is not None and str(rf) in str(e.value)
    assert not (tmp_path / "out").exists()                  # refused before anything was written


def test_a_build_ab_pairs_each_sweep_point_with_itself_on_the_other_build(h, tmp_path):
    """With a sweep besides the builds, compare pairs `level=1 build=a` with `level=1 build=b`,
    never a point with another point."""
    from zfsperf.report import compare
    from zfsperf.report.model import load_run
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\nlevel = [1, 2]\n', iterations=6)
    h.wl.script = lambda ctx: {"throughput": figure(10.0 * ctx.fields["level"], "MiB/s")}
    code, d, _recs = h.run(rf, interleave=True, seed=2, builds=_builds())
    assert code == 0
    from zfsperf.report.pairing import ab_pairs
    pairs = ab_pairs(load_run(d))
    assert sorted((a.case, b.case) for a, b in pairs) == [("t level=1 build=a", "t level=1 build=b"),
                                                          ("t level=2 build=a", "t level=2 build=b")]
    cmp = compare.compare_within(load_run(d), pairs)
    assert {ch.design for ch in cmp.changes} == {"paired"}
    assert all(ch.change_pct == 0 for ch in cmp.changes)        # the same level on both builds: no change


def test_no_html_writes_the_records_and_leaves_the_page_to_later(h, tmp_path):
    """--no-html: junit.xml and results.csv as always, no report.html and no matplotlib imported;
    `zfsperf report DIR --html` draws the same page later."""
    import subprocess
    import sys
    h.wl.script = lambda ctx: {"throughput": figure(100.0, "MiB/s")}
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=1)
    code, d, _recs = h.run(rf, html=False)
    assert code == 0
    assert (d / "junit.xml").is_file() and (d / "results.csv").is_file() and not (d / "report.html").exists()
    # what a run imports before its first case: no matplotlib (it is drawn only for a page)
    probe = subprocess.run([sys.executable, "-c", "import sys, zfsperf.cli, zfsperf.runner; "
                            "print(any(m.startswith('matplotlib') for m in sys.modules))"],
                           capture_output=True, text=True)
    assert probe.stdout.strip() == "False", probe.stderr
    code, d2, _ = h.run(rf)
    assert (d2 / "report.html").is_file()


def _duet(h, tmp_path, mode: str, script=None, turns=None):
    h.wl.duet_modes = ("together", "turns")
    if script is not None:
        h.wl.script = script
    if turns is not None:
        h.wl.run_turns = turns
    elif mode == "turns":
        h.wl.run_turns = lambda ctxs: [h.wl.run(c) for c in ctxs]
    body = ('[[test]]\nname = "d"\nworkload = "scripted"\n'
            f'duet = {json.dumps(mode) if mode == "turns" else "true"}\n'
            'dataset = { checksum = ["fletcher2", "fletcher4"] }\n'
            'tunables = { zfs_txg_timeout = 1 }\n')
    return h.run(runfile(tmp_path / "d.toml", body, iterations=2))


@pytest.mark.parametrize("mode", ["together", "turns"])
def test_a_duet_has_the_single_case_lifecycle(h, tmp_path, mode):
    """A duet (at once or taking turns) goes through the same lifecycle as a single case: its
    tunables, one fresh pool, both sides' workload, the tunables back, the pool destroyed."""
    code, _d, recs = _duet(h, tmp_path, mode)
    assert code == 0
    ev = h.target.events
    i = 0
    for it in (1, 2):
        setv = _index(ev, lambda e: e == ("set", "zfs_txg_timeout", "1"), i)
        create = _index(ev, lambda e: e[0] == "run" and e[1][:2] == ["zpool", "create"], i)
        work = [k for k in range(create, len(ev)) if ev[k][0] == "workload" and ev[k][2] == it]
        restore = _index(ev, lambda e: e == ("set", "zfs_txg_timeout", TUNABLES["zfs_txg_timeout"]), work[-1])
        destroy = _index(ev, lambda e: e[0] == "run" and e[1][:2] == ["zpool", "destroy"], work[-1])
        assert len(work) == 2 and setv < create < work[0] and work[-1] < restore < destroy, ev[i:destroy + 1]
        i = destroy + 1
    assert [r.status for r in recs] == [Status.PASS] * 4
    assert h.tunables_now() == TUNABLES and h.target.pools == {}


@pytest.mark.parametrize("mode", ["together", "turns"])
def test_what_a_duet_side_raises_becomes_its_outcome_as_a_single_case_s_does(h, tmp_path, mode):
    """One mapping from exception to outcome: a side the target cannot run is a SKIP, a timeout is
    KILLED, as for a single case (a duet side's Unavailable was an 'internal error' FAIL); the pool
    and tunables are given back all the same."""
    def script(ctx):
        if ctx.fields.get("checksum") == "fletcher4" or "B" in ctx.pool.root:
            raise Unavailable("this target has no fletcher4")
        return {"throughput": figure(100.0, "MiB/s")}

    def turns(ctxs):
        raise CaseTimeout("the rounds ran past the case timeout")
    code, _d, recs = _duet(h, tmp_path, mode, script=script, turns=turns if mode == "turns" else None)
    got = {(r.sweep["checksum"], r.status) for r in recs}
    if mode == "together":
        assert got == {("fletcher2", Status.PASS), ("fletcher4", Status.SKIP)}, [(r.case, r.error) for r in recs]
        assert all("no fletcher4" in (r.error or "") for r in recs if r.status is Status.SKIP)
    else:
        assert got == {("fletcher2", Status.KILLED), ("fletcher4", Status.KILLED)}
        assert all(r.error.startswith("timeout of 60 s: the rounds ran past") for r in recs)
    assert h.tunables_now() == TUNABLES and h.target.pools == {}


def _params(h) -> Path:
    return Path(h.target.tunables.directory)


def test_a_tunable_read_only_on_the_target_is_refused_before_anything_is_written(h, tmp_path):
    """A parameter whose file no one may write (mode 0444: read once, when the module loads) is a
    load-scope tunable. Root can still write such a file where it is a plain file, and the
    kernel's would take the write and change nothing: a silent A/A. The case fails naming the
    scope, before any tunable is written or any pool made."""
    (_params(h) / "zfs_txg_timeout").chmod(0o444)
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n'
                 'tunables = { zfs_txg_timeout = [1, 10], zfs_recv_write_batch_size = "128K" }\n', iterations=1)
    code, _d, recs = h.run(rf)
    assert code == 1
    assert [r.status for r in recs] == [Status.FAIL, Status.FAIL]
    assert all("zfs_txg_timeout is read only when the zfs module loads" in r.error and "mode 444" in r.error
               for r in recs), [r.error for r in recs]
    assert not [e for e in h.target.events if e[0] == "set"]            # nothing written, not even the other
    assert not [c for c in h.target.commands("zpool") if c[1] == "create"]   # no pool made
    assert h.tunables_now() == TUNABLES and not Journal().entries()


def test_a_pool_scope_tunable_is_written_before_its_pool_and_its_scope_recorded(h, tmp_path):
    """spa_num_allocators applies only to pools created after it is written (zfs.4 of 2.3.2): each
    case writes it first, then makes its fresh pool; each record says the scope it was set in."""
    (_params(h) / "spa_num_allocators").write_text("4\n")
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n'
                 'tunables = { spa_num_allocators = [1, 2], zfs_txg_timeout = 3 }\n', iterations=1)
    code, _d, recs = h.run(rf)
    assert code == 0, [r.error for r in recs]
    ev = h.target.events
    i = 0
    for value in ("1", "2"):
        setv = _index(ev, lambda e: e == ("set", "spa_num_allocators", value), i)
        create = _index(ev, lambda e: e[0] == "run" and e[1][:2] == ["zpool", "create"], i)
        assert setv < create, ev[i:create + 1]
        i = create + 1
    assert [r.tunables["spa_num_allocators"]["scope"] for r in recs] == ["pool", "pool"]
    assert [r.tunables["zfs_txg_timeout"]["scope"] for r in recs] == ["runtime", "runtime"]
    assert (_params(h) / "spa_num_allocators").read_text().strip() == "4"


def test_a_pool_scope_tunable_on_the_target_cannot_take_turns(h, tmp_path):
    """Written between rounds on one pool, a pool-scope value would change nothing: refused on the
    target too (a release whose manual says so), the case failed with the scope named."""
    h.wl.duet_modes = ("turns",)
    h.wl.run_turns = lambda ctxs: [h.wl.run(c) for c in ctxs]
    (_params(h) / "zio_taskq_batch_pct").write_text("80\n")
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "d"\nworkload = "scripted"\nduet = "turns"\n'
                 'tunables = { zfs_txg_timeout = [1, 2] }\n', iterations=1)
    code, _d, recs = h.run(rf)            # a runtime tunable takes turns
    assert code == 0 and [r.tunables["zfs_txg_timeout"]["scope"] for r in recs] == ["runtime", "runtime"]
    from zfsperf.tunables.journal import TunableSession
    s = TunableSession(h.target.tunables, Journal())
    with pytest.raises(Exception, match="applies only to pools created or imported after it is written.*"
                                        "cannot take turns"):
        s.apply({"zio_taskq_batch_pct": "50"}, between_rounds=True)
    assert (_params(h) / "zio_taskq_batch_pct").read_text().strip() == "80" and not Journal().entries()


@pytest.mark.parametrize("share", [True, False])
def test_tunable_turns_on_a_workload_that_keeps_its_files_run_both_sides_on_one_set_of_datasets(h, tmp_path,
                                                                                                share):
    """The defect: turns over a module tunable gave each side a dataset of its own (duetA, duetB),
    so the two sides differed in more than the tunable; the starvation mix's A/A (the tunable
    written 10 on both sides) found the second side's reader alone 1.5 % faster over 180
    iterations. A workload whose turns keep their files (fio, the mix: turns_share_files) now
    runs both sides of a tunable's turns on one set of datasets; one whose rounds make fresh
    datasets per side (receive) keeps a dataset a side, and a dataset property's duet always does."""
    h.wl.duet_modes = ("turns",)
    h.wl.turns_share_files = share
    seen: list[tuple[str, str]] = []

    def turns(ctxs):
        seen.extend((c.pool.fs, c.pool.mountpoint) for c in ctxs)
        return [h.wl.run(c) for c in ctxs]
    h.wl.run_turns = turns
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "d"\nworkload = "scripted"\nduet = "turns"\n'
                 'tunables = { zfs_txg_timeout = [1, 2] }\n', iterations=2)
    code, _d, recs = h.run(rf)
    assert code == 0 and len(recs) == 4
    made = [a[-1] for a in h.target.commands("zfs") if a[1] == "create"]
    assert len(seen) == 4, seen
    for it in (0, 1):                       # each iteration's two sides
        (fa, ma), (fb, mb) = seen[2 * it:2 * it + 2]
        assert (fa == fb and ma == mb) is share, seen
        assert all(m.endswith("/" + f.split("/", 1)[1]) for f, m in ((fa, ma), (fb, mb))), seen
    assert len(made) == (2 if share else 4) and all(m.split("/", 1)[1] in ("duet", "duetA", "duetB")
                                                    for m in made), made
    assert all((r.pool.get("sides") == "one set of datasets") is share for r in recs), [r.pool for r in recs]
    code2, _d2, recs2 = _duet(h, tmp_path, "turns")                     # a property's duet: a dataset each
    assert code2 == 0
    made2 = [a[-1].split("/", 1)[1] for a in h.target.commands("zfs") if a[1] == "create"][len(made):]
    assert sorted(made2) == ["duetA", "duetA", "duetB", "duetB"] and not any("sides" in r.pool for r in recs2), made2


def _detect_run(h, tmp_path, sd: float, seed: int, levels: str, max_iterations: int, want: float):
    """An interleaved --detect run of the scripted workload over `levels` (a sweep of `level`), each
    figure its level times a Gaussian of spread sd (seeded); returns
    run.json's detect, the results directory and the records."""
    import random as _random
    rng = _random.Random(seed)
    h.wl.script = lambda ctx: {"throughput": figure(float(ctx.fields["level"]) * (1 + rng.gauss(0, sd)), "MiB/s")}
    rf = runfile(tmp_path / "r.toml", f'[[test]]\nname = "t"\nworkload = "scripted"\nmax_iterations = {max_iterations}\n'
                 f'level = {levels}\n', iterations=1)
    code, d, recs = h.run(rf, interleave=True, detect=want, seed=3)
    assert code == 0
    return json.loads((d / "run.json").read_text())["detect"], d, recs


@pytest.mark.parametrize("b_level,verdict,want,blocks,alpha", [(70.0, "worse", 1e-6, 8, 0.0127),
                                                              (100.0, "same", 0.5, 12, 0.0331)])
def test_detect_stops_on_a_decision_at_a_spent_level(h, tmp_path, b_level, verdict, want, blocks, alpha):
    """--detect looks after every block from the 6th and stops once every pair is decided, each
    look at its spent level (report.sequential): with at most 12 blocks, 0.005 at the 6th and
    0.008 at the 7th, below what 6 or 7 pairs can give (0.031, 0.016), so a clear change is decided
    at the 8th (0.013 ≥ 2/2^8), not before; a sameness within the ±0.5 % asked for (a B 0.4 % noisy a
    figure) at the 12th, its interval inside ±0.5 % only then; the level is recorded and compare
    judges the run at it."""
    det, d, recs = _detect_run(h, tmp_path, 0.004, 5, f"[100, {b_level}]", 12, want)
    assert det["stopped_by"] == "decided" and det["blocks"] == blocks, det
    assert det["sequential"]["looks"] == blocks - 5 and det["sequential"]["alpha"] == pytest.approx(alpha, abs=0.001)
    assert len(recs) == 2 * blocks
    from zfsperf.report.compare import compare_within
    from zfsperf.report.pairing import ab_pairs
    from zfsperf.report.model import load_run
    run = load_run(d)
    (ch,) = [c for c in compare_within(run, ab_pairs(run)).changes if c.figure == "throughput"]
    assert ch.verdict == verdict and f"α = {det['sequential']['alpha']:.4f}" in ch.note, ch


def test_detect_stops_at_the_first_look_that_sees_the_change_asked_for(h, tmp_path):
    """--detect 90 on a near A/A (B 0.5 % above A) whose pairs spread about 10 % (too wide for a
    sameness within ±5 %, too narrow to call a change): every pair could see 90 % at the first look,
    the 6th block, so the run
    stops there for that reason, its worst pair's detectable change recorded within 90 %, and not a
    block more. (tests/test_compare_designs.py runs the same on real zfs-fuse reads, where whether
    90 % is reached is the machine's.)"""
    det, _d, recs = _detect_run(h, tmp_path, 0.10, 7, "[100, 100.5]", 12, 90.0)
    assert det["stopped_by"] == "detectable change reached" and det["blocks"] == 6, det
    assert 0 < det["worst_pct"] <= 90 and len(recs) == 12, det


def test_detect_records_the_level_it_decided_at_and_compare_calls_what_it_decided(h, tmp_path):
    """A change every block showed (B a fifth of A) under --detect with up to 126 blocks: the sign-flip
    p beyond 16 pairs is a Monte Carlo share, at least 1/65536, so the run decides at the 26th block,
    whose level (1.53e-05) is the first above it. run.json rounded that level to six decimals
    (1.5e-05, below the p), and compare then called the change the run had decided "not
    significant" (`zfsperf bisect --detect` of a commit 5 times slower, 2026-12-06). The level is
    kept whole now, compare calls it WORSE, and both say it as 1.5e-05, not 0.0000."""
    from zfsperf.report import sequential
    from zfsperf.report.compare import compare_within
    from zfsperf.report.pairing import ab_pairs
    from zfsperf.report.model import load_run
    det, d, _recs = _detect_run(h, tmp_path, 0.05, 5, "[100, 20]", 126, 5.0)
    assert det["stopped_by"] == "decided" and det["blocks"] == 26, det
    assert det["sequential"]["alpha"] == sequential.level(26, 6, 126, final=False), det
    run = load_run(d)
    (ch,) = [c for c in compare_within(run, ab_pairs(run)).changes if c.figure == "throughput"]
    assert ch.verdict == "worse" and "α = 1.5e-05" in ch.note, ch


class RepeatingTransport(FakeTarget):
    """A target whose transport runs `zpool create` twice and answers the second (ssh's retry of a
    quick exit 255 after the command had already run on the guest: CI at 2c32097)."""

    def run(self, argv, **kw):
        res = super().run(argv, **kw)
        if list(argv[:2]) == ["zpool", "create"]:
            res = super().run(argv, **kw)
        return res


def test_a_create_the_transport_repeated_is_the_runs_own_pool(tmp_path):
    from zfsperf.pool import PoolManager, PoolSpec
    from zfsperf.errors import TargetError
    t = RepeatingTransport(tmp_path / "target")
    pm = PoolManager(t, tmp_path / "vd", run_id="run-1")
    pool = pm.create(PoolSpec(vdevs=1, vdev_size=64 << 20), name="zfsperf_rep")
    assert pool.name == "zfsperf_rep" and t.pools == {"zfsperf_rep": "run-1"}
    # a pool another creator made in between, under the same name, is never taken for ours
    t2 = FakeTarget(tmp_path / "t2")
    pm2 = PoolManager(t2, tmp_path / "vd2", run_id="run-2")
    real_run = t2.run

    def racing(argv, **kw):
        if list(argv[:2]) == ["zpool", "create"]:
            t2.pools["zfsperf_x"] = "someone-else"
        return real_run(argv, **kw)
    t2.run = racing
    with pytest.raises(TargetError, match="zpool create zfsperf_x failed"):
        pm2.create(PoolSpec(vdevs=1, vdev_size=64 << 20), name="zfsperf_x")


def test_a_resumed_run_plans_from_run_json_and_leaves_the_options_alone(h, tmp_path):
    """The plan is decided once: a resume reads it from run.json (iterations, seed, selection) and
    what it has already measured; the options it was given are never overwritten (they were, field
    by field), and run.json stores the plan as one unit."""
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\nlevel = [1, 2]\n', iterations=3)
    code, d, _recs = h.run(rf, iterations=2, interleave=True, seed=7)
    assert code == 0
    sel = json.loads((d / "run.json").read_text())["selection"]
    assert sel["iterations"] == 2 and sel["seed"] == 7 and sel["interleave"] is True
    o = runner_mod.RunOptions.of(runfile=str(rf), outdir=str(tmp_path / "out"), vdev_dir=str(tmp_path / "vdev"),
                              check="off", store=None, quiet=True, argv=["run", "--resume", str(d)], resume=str(d))
    r = runner_mod.Runner(o)
    r.lock = RunLock(tmp_path / "run.lock")
    assert r.run() == 0
    assert (r.plan.iterations, r.plan.seed, r.plan.interleave) == (2, 7, True)
    assert len(r.plan.done) == 2 * max(2, runner_mod.MIN_BLOCKS)       # blocks: at least MIN_BLOCKS each
    c = o.choice
    assert (c.iterations, c.seed, c.interleave, c.tags, c.test) == (None, None, False, None, None)


class _Tagged(list):
    """A target's event list that also writes each event, tagged with the target, to a shared one."""
    def __init__(self, shared: list, tag: str) -> None:
        super().__init__()
        self.shared, self.tag = shared, tag

    def append(self, e) -> None:
        super().append(e)
        self.shared.append((self.tag, *e))


class _FakePair:
    """GuestPair's calls, as events: which guest a turn ran in, and both resumed after it."""
    def __init__(self, shared: list) -> None:
        self.shared, self.states = shared, {"guest": "running", "twin": "running"}

    def names(self) -> list[str]:
        return ["guest", "twin"]

    def turn_to(self, index: int, log=None):
        def turn() -> dict:
            self.states = {n: "running" if i == index else "paused" for i, n in enumerate(self.names())}
            self.shared.append(("pair", "turn", self.names()[index]))
            return {"running": self.names()[index], "states": dict(self.states)}
        return turn

    def resume_all(self) -> list[str]:
        paused = [n for n, s in self.states.items() if s != "running"]
        self.states = {n: "running" for n in self.states}
        self.shared.append(("pair", "resumed", *paused))
        return paused

    def close(self) -> None:
        self.shared.append(("pair", "closed"))


class _GuestTurns(ScriptedWorkload):
    """A workload that takes turns across two guests (build turns), each call an event."""
    duet_modes = ("turns",)
    turns_across_guests = True

    def run(self, ctx):
        ctx.target.events.append(("workload", ctx.case_id, ctx.iteration))
        return self.script(ctx)

    def run_turns(self, ctxs):
        from zfsperf.workloads.turns import take_turns
        return [figs[0] for figs in take_turns(ctxs, self.run, duration=0, settled=True)]


def _two_guests(h, tmp_path, monkeypatch) -> tuple[list, FakeTarget]:
    """Build turns on two fake guests: the lab's (h.target) and its twin, their events also in one
    shared, tagged list (returned with the twin); the pair's pauses and resumes are events too."""
    from zfsperf import runner as runner_mod

    shared: list = []
    twin = FakeTarget(tmp_path / "twin")
    h.target.events, twin.events = _Tagged(shared, "guest"), _Tagged(shared, "twin")
    fake_pair = _FakePair(shared)
    monkeypatch.setattr(runner_mod, "open_twin", lambda spec, log=None, say=print: twin)
    monkeypatch.setattr(runner_mod, "turn_pair", lambda spec: fake_pair)
    return shared, twin


def test_build_turns_give_each_build_a_guest_crosswise_and_pause_the_other_in_each_turn(h, tmp_path, monkeypatch):
    """guest ab --turns on two fake guests: every iteration has build A in one guest and B in the
    other (crosswise in ABBA order over the iterations: A in the lab's guest in iterations 1, 4, 5,
    ..., so a guest loads another build every other iteration, not every one), makes a pool in
    each, runs ABBA turns, each
    in its build's guest after the pair paused the other, both resumed after every turn; the
    pools are destroyed and each guest gets its own build back when the run ends. Before the group
    each side has one settling turn (the first receive after both guests made their pools was about
    20 % slower and twice as variable), run the same way and left out of its figures."""
    shared, twin = _two_guests(h, tmp_path, monkeypatch)
    seen: set = set()

    def first_is_slow(ctx):            # a side's first turn of an iteration: 10 times slower
        key = (ctx.case_id, ctx.iteration)
        slow = key not in seen
        seen.add(key)
        return {"throughput": figure(10.0 if slow else 100.0, "MiB/s")}
    monkeypatch.setitem(workloads.WORKLOADS, "turny", _GuestTurns(h.target, first_is_slow))
    monkeypatch.setitem(runner_mod.HEADLINE, "turny", "throughput")
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "turny"\n', iterations=2)
    code, d, recs = h.run(rf, interleave=True, seed=3, builds=_builds(), build_turns=True)
    assert code == 0, recs
    work = [i for i, e in enumerate(shared) if e[1] == "workload"]
    its = sorted({shared[i][3] for i in work})
    assert its == list(range(1, len(its) + 1)) and len(its) >= 6
    for it in its:
        mine = [i for i in work if shared[i][3] == it]
        assert len(mine) == 6                             # a settling turn a side, then one ABBA group
        assert shared[mine[0]][2] != shared[mine[1]][2]
        for i in mine:
            tag, _w, case, _it = shared[i]
            build = case.rsplit("build=", 1)[1]
            assert tag == ("guest" if (it in (1, 4, 5, 8, 9)) == (build == "a") else "twin"), (it, shared[i])
            turn = max(k for k in range(i) if shared[k][:2] == ("pair", "turn"))
            assert shared[turn][2] == tag and all(shared[k][1] != "workload" for k in range(turn + 1, i))
            assert shared[i + 1][:2] == ("pair", "resumed")   # the other guest runs again after the turn
        first, last = mine[0], mine[-1]
        for g in ("guest", "twin"):                       # a pool each, made before the turns, gone after
            create = max(k for k in range(first) if shared[k][:2] == (g, "run") and shared[k][2][:2] == ["zpool", "create"])
            destroy = next(k for k in range(last, len(shared)) if shared[k][:2] == (g, "run")
                           and shared[k][2][:2] == ["zpool", "destroy"])
            assert create < first and destroy > last
    for g in (h.target, twin):                            # each guest's own build back at the end
        assert g.module == "own" and g.pools == {}
    # a guest loads a build where the arrangement changes: iterations 1, 2, 4, 6 of 6 (6 before)
    for g in ("guest", "twin"):
        loads = [e[2][-1] for e in shared if e[:2] == (g, "run") and e[2][0] == "insmod" and e[2][-1].endswith("zfs.ko")]
        assert len(loads) == 4 and len(its) == 6, (g, loads)
    log = (d / "logs" / "t__build=a.iter1.log").read_text()
    assert [ln.split(" (")[0] for ln in log.splitlines() if ln.startswith("# a settling turn of ")] == \
        ["# a settling turn of t__build=a", "# a settling turn of t__build=b"], log
    # each side's module named in the iteration's log by the guest it ran in and its srcversion
    # (iteration 1: A in the lab's guest, B in the twin; iterations 2 and 3 the other way round,
    # 3 without a load: the module it names is the one iteration 2 loaded)
    for it, where in ((1, {"a": "guest", "b": "twin"}), (2, {"a": "twin", "b": "guest"}),
                      (3, {"a": "twin", "b": "guest"}), (4, {"a": "guest", "b": "twin"})):
        text = (d / "logs" / f"t__build=a.iter{it}.log").read_text()
        assert [ln for ln in text.splitlines() if ln.startswith("# module: ")] == \
            [f"# module: {where[b]}: build {b}, srcversion SRC-/hostroot/builds/{b}/zfs.ko" for b in "ab"], text
    run = json.loads((d / "run.json").read_text())
    assert run["selection"]["build_turns"] is True and run["turns"] == ["t"]
    assert run["builds"]["a"]["srcversion_twin"] == "SRC-/hostroot/builds/a/zfs.ko"
    for r in recs:
        assert r.detail["guest"] in ("guest", "twin") and len(r.detail["turn_guests"]) == 2
        assert r.detail["settle_turns"] == 1 and r.figures["throughput"].value == 100.0, r.figures
        assert all(t["running"] == r.detail["guest"] for t in r.detail["turn_guests"])


def test_build_turns_set_up_one_guest_after_the_other(h, tmp_path, monkeypatch):
    """Each iteration of build turns loads its build and makes its pool in one guest, then in the
    other, never both at once: entering both at once saved 6.5 s of a 35 s pair under TCG but
    widened a pair's spread from 10-12 % to 16.5-16.8 % (A/As of 30-54 pairs, docs/benchmarks.md)."""
    import time
    shared, twin = _two_guests(h, tmp_path, monkeypatch)
    for g in (h.target, twin):              # a module load takes a while: at once, the other's set-up runs in it
        def answer(argv, own=False, answer=g._answer):
            if argv[0] in ("insmod", "modprobe"):
                time.sleep(0.1)
            return answer(argv, own)
        g._answer = answer
    monkeypatch.setitem(workloads.WORKLOADS, "turny", _GuestTurns(h.target))
    monkeypatch.setitem(runner_mod.HEADLINE, "turny", "throughput")
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "turny"\n', iterations=1)
    code, d, recs = h.run(rf, interleave=True, seed=3, builds=_builds(), build_turns=True)
    assert code == 0 and recs and all(r.status is Status.PASS for r in recs), [(r.status, r.error) for r in recs]
    for it in sorted({r.iteration for r in recs}):
        first = next(i for i, e in enumerate(shared) if e[1] == "workload" and e[3] == it)
        last = max((i for i, e in enumerate(shared[:first]) if e[1] == "run" and e[2][:2] == ["zpool", "destroy"]),
                   default=-1)
        mine = [e[0] for e in shared[last + 1:first] if e[1] == "run" and e[2][0] in ("rmmod", "insmod", "zpool")
                and e[2][:2] != ["zpool", "list"]]
        switches = sum(1 for x, y in zip(mine, mine[1:]) if x != y)
        assert mine and switches == 1, (it, mine)       # all of one guest's set-up, then all of the other's


def _builds_apart(h, tmp_path, monkeypatch, noise: list[float], slower: list[float]) -> None:
    """A build A/B on the fake target whose build b reads noise[k] * slower[0] of a's 100 MiB/s in
    block k (both lists changed in place by the test between runs), its floors in a cache of the
    test's own, its run lock the harness's."""
    from zfsperf import machine
    monkeypatch.setenv("ZFSPERF_GUEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(machine, "RunLock", lambda: RunLock(tmp_path / "run.lock"))

    def script(ctx):
        b = "build=b" in ctx.case_id
        return {"throughput": figure(100 * (noise[(ctx.iteration - 1) % len(noise)] * slower[0] if b else 1.0),
                                     "MiB/s")}
    h.wl.script = script


def test_a_rebuild_a_a_keeps_its_floor_and_a_later_build_change_inside_it_is_not_called(h, tmp_path, monkeypatch):
    """run_ab on the fake target: an A/A′ (rebuild) whose pairs differ by up to 3 % keeps the far end
    of its interval as the floor of the test's headline (in the build cache); a later A/B whose B
    is 1 % slower in every pair -- significant, and inside the floor -- is "within noise", said in
    its note and in compare.md; one 30 % slower stays WORSE with the floor beside it."""
    from zfsperf import buildab
    from zfsperf.report import buildfloor
    noise = [1.0, 1.03, 0.99, 1.02, 0.98, 1.01, 1.0, 0.97, 1.02, 0.99, 1.03, 0.98]
    slower = [1.0]
    _builds_apart(h, tmp_path, monkeypatch, noise, slower)
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=6)
    sides = _builds()

    def ab(rebuild: bool) -> buildab.AbResult:
        return buildab.run_ab(sides, str(rf), blocks=6, seed=1, outdir=str(tmp_path / "o"), tags=None, test=None,
                              argv=["guest", "ab"], say=lambda _m: None, rebuild=rebuild)
    res = ab(True)
    assert res.rc == 0
    floors = buildfloor.load(tmp_path / "cache" / buildab.FLOORS)
    (k, f), = floors.items()
    assert k.startswith("t|throughput|native|")
    assert 2.0 < f["floor_pct"] < 6.0 and f["run"] == str(res.results_dir)
    assert res.floors and "builds of one source differ by up to" in res.floors[0]
    noise[:] = [1.0] * len(noise)
    slower[0] = 0.99
    res = ab(False)
    ch = next(c for c in res.comparison.changes if c.figure == "throughput")
    assert ch.verdict == "within noise" and "within the rebuild floor" in ch.note, ch
    assert "builds of one source differ by up to" in (res.results_dir / "compare.md").read_text()
    slower[0] = 0.7
    res = ab(False)
    ch = next(c for c in res.comparison.changes if c.figure == "throughput")
    assert ch.verdict == "worse" and ch.note.startswith("builds of one source differ by up to"), ch


def test_a_rebuild_floor_is_not_inherited_by_another_definition_of_the_same_test(h, tmp_path, monkeypatch):
    """The floor was kept per test name: an A/A′ of test "t" on one pool made a wide floor, and a
    later A/B of a test also named "t" on another pool (another workload, never measured twice)
    took that floor and called its B, 1 % slower in every pair, "within noise" instead of WORSE.
    Now a floor belongs to the test's definition: the other "t" gets none, and is told why."""
    from zfsperf import buildab
    noise = [1.0, 1.03, 0.99, 1.02, 0.98, 1.01]
    slower = [1.0]
    _builds_apart(h, tmp_path, monkeypatch, noise, slower)

    def ab(rebuild: bool, vdev_size: str) -> buildab.AbResult:
        rf = runfile(tmp_path / f"r{vdev_size}.toml", f'[[test]]\nname = "t"\nworkload = "scripted"\n'
                     f'pool = {{ vdev_size = "{vdev_size}" }}\n', iterations=6)
        return buildab.run_ab(_builds(), str(rf), blocks=6, seed=1, outdir=str(tmp_path / "o"), tags=None,
                              test=None, argv=["guest", "ab"], say=lambda _m: None, rebuild=rebuild)
    assert ab(True, "256M").rc == 0
    noise[:] = [1.0] * 6
    slower[0] = 0.99
    res = ab(False, "512M")
    ch = next(c for c in res.comparison.changes if c.figure == "throughput")
    assert ch.verdict == "worse" and "rebuild floor" not in (ch.note or ""), ch
    assert any(line.startswith("no rebuild floor for this definition of t (throughput)") for line in res.floors), \
        res.floors
    res = ab(False, "256M")                   # the definition the floor was measured of still has it
    ch = next(c for c in res.comparison.changes if c.figure == "throughput")
    assert ch.verdict == "within noise" and "within the rebuild floor" in ch.note, ch



def test_run_build_rebuild_keeps_its_floor_and_compare_holds_a_later_build_run_to_it(h, tmp_path, monkeypatch,
                                                                                     capsys):
    """Issue 72, 1 on a kernel-OpenZFS machine: `run --build a=SRC --build b=SRC --rebuild` (the
    second side compiled again) keeps the A/A′'s floor in the build cache and says it; a later
    `run --build` whose B is 1 % slower in every pair -- significant, inside the floor -- is
    "within noise" in `zfsperf compare RUN`, the floor stated (until 2026-12-06 only `guest ab`
    kept and applied floors: compare called it WORSE)."""
    from zfsperf import cli
    from zfsperf.buildref import BuildRef
    noise = [1.0, 1.03, 0.99, 1.02, 0.98, 1.01]
    slower = [1.0]
    _builds_apart(h, tmp_path, monkeypatch, noise, slower)
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=6)
    src = {"kind": "source", "src": "/src/zfs", "rev": "c" * 40}

    def run(out: str, rebuilt: bool) -> Path:
        builds = {"a": BuildRef("a", "OpenZFS @ c", "/builds/a", dict(src)),
                  "b": BuildRef("b", "OpenZFS @ c again", "/builds/b", {**src, "rebuilt": rebuilt})}
        o = runner_mod.RunOptions.of(runfile=str(rf), outdir=str(tmp_path / out), vdev_dir=str(tmp_path / "vdev"),
                                     check="off", store=None, quiet=True, argv=["run"], iterations=6,
                                     interleave=True, seed=1, builds=builds)
        assert cli._run(o, builds) == 0
        return (tmp_path / out / "current").resolve()
    run("aa", True)
    said = capsys.readouterr().out
    assert "builds of one source differ by up to" in said and "recorded in" in said, said
    noise[:] = [1.0] * 6
    slower[0] = 0.99
    ab = run("ab", False)
    said = capsys.readouterr().out                   # an A/B keeps no floor, and says the one that holds it
    assert "recorded in" not in said and "builds of one source differ by up to" in said, said
    assert cli.main(["compare", str(ab), "--json"]) == 0
    ch = next(c for c in json.loads(capsys.readouterr().out)["changes"] if c["figure"] == "throughput")
    assert ch["verdict"] == "within noise" and "within the rebuild floor" in ch["note"], ch


def test_detect_decides_same_only_within_the_change_it_asks_for(h, tmp_path):
    """--detect 3 asks to see a change of 3 %: an interval inside ±5 % (compare's default margin)
    but not inside ±3 % decides nothing. The defect: a B 1.5 % slower, whose run stopped at the 6th
    block (1.9 % visible), was called "same within ±5 %" with its interval reaching below -3 %, and
    a look could stop on such a "same". Now the looks and compare afterwards judge within ±3 %."""
    import random as _random
    rng = _random.Random(11)
    h.wl.script = lambda ctx: {"throughput": figure(float(ctx.fields["level"]) * (1 + rng.gauss(0, 0.012)),
                                                    "MiB/s")}
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\nmax_iterations = 16\n'
                 'level = [100, 98.5]\n', iterations=1)
    code, d, _recs = h.run(rf, interleave=True, detect=3.0, seed=3)
    assert code == 0
    det = json.loads((d / "run.json").read_text())["detect"]
    from zfsperf.report.compare import compare_within
    from zfsperf.report.pairing import ab_pairs
    from zfsperf.report.model import load_run
    run = load_run(d)
    (ch,) = [c for c in compare_within(run, ab_pairs(run)).changes if c.figure == "throughput"]
    wide = [c for c in compare_within(run, ab_pairs(run), margin_pct=5.0).changes if c.figure == "throughput"]
    # (before issue 69 this run stopped at the 6th block with the ±5 % interval reaching below -3 %;
    # the stop now waits for 80 % power at a 90 % upper bound of the pairs' spread: 7 blocks here)
    assert det["blocks"] >= 7 and wide[0].verdict in ("same", "worse"), (det, wide[0])
    assert det["stopped_by"] != "decided" or ch.verdict != "same" or ch.margin_pct == 3.0, (det, ch)
    assert ch.verdict != "same" or (ch.margin_pct == 3.0 and -3 <= ch.ci_pct[0] and ch.ci_pct[1] <= 3), ch


def test_a_tunable_aa_spelled_two_ways_takes_turns_with_a_write_before_every_round(h, tmp_path, monkeypatch):
    """`tunables = { zfs_recv_write_batch_size = ["1M", 1048576] }` in turns: one value spelled two
    ways, an A/A that pays what a real tunable A/B pays (a write and a read-back before every round).
    The defect: once normalised the two sides' values were equal, so the case ran as a plain duet
    in turns, nothing written between rounds and no turn_tunables kept (the guest bench's 246-
    iteration A/A measured that, not what it said). Now every round of both sides is preceded by
    its write, and each record keeps the value read back per round."""
    from zfsperf.workloads.turns import take_turns
    name = "zfs_recv_write_batch_size"

    class Turns(ScriptedWorkload):
        duet_modes = ("turns",)

        def run(self, ctx):
            ctx.target.events.append(("workload", ctx.case_id, ctx.iteration))
            return self.script(ctx)

        def run_turns(self, ctxs):
            return [figs[0] for figs in take_turns(ctxs, self.run, duration=0)]
    monkeypatch.setitem(workloads.WORKLOADS, "turny",
                        Turns(h.target, lambda ctx: {"throughput": figure(100.0, "MiB/s")}))
    rf = runfile(tmp_path / "r.toml", f'[[test]]\nname = "t"\nworkload = "turny"\nduet = "turns"\n'
                 f'tunables = {{ {name} = ["1M", 1048576] }}\n', iterations=2)
    code, _d, recs = h.run(rf)
    assert code == 0 and len(recs) == 4
    for r in recs:
        assert r.tunables[name]["set"] == "1048576" and r.tunables[name]["scope"] == "runtime", r.tunables
        assert r.detail.get("turn_tunables") == [{name: "1048576"}] * 2, r.detail    # ABBA: two rounds a side
    ev = h.target.events
    for i, e in enumerate(ev):                # every round: its side's value written just before it
        if e[0] == "workload":
            assert ev[i - 1] == ("set", name, "1048576"), ev[i - 3:i + 1]


def test_guest_ab_and_bisect_take_x_to_the_guests_leftovers(h, tmp_path, monkeypatch):
    """Every guest run names a killed run's vdev files "(remove with -x)"; guest ab and bisect had no
    -x to give. Now `guest ab -x` and `guest bisect -x` reach the run's own leftover handling, which
    removes them on the guests, and without -x it only names them."""
    from zfsperf import buildab, cli, machine
    monkeypatch.setenv("ZFSPERF_GUEST_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(machine, "RunLock", lambda: RunLock(tmp_path / "run.lock"))
    seen: list[bool] = []
    monkeypatch.setattr(runner_mod.leftovers, "on_the_target",
                        lambda target, root, say, *, cleanup, resume_owner=None: seen.append(cleanup))
    rf = runfile(tmp_path / "r.toml", '[[test]]\nname = "t"\nworkload = "scripted"\n', iterations=2)
    for x in (True, False):
        res = buildab.run_ab(_builds(), str(rf), blocks=2, seed=1, outdir=str(tmp_path / "o"), tags=None,
                             test=None, argv=["guest", "ab"], say=lambda _m: None, cleanup=x)
        assert res.rc == 0
    assert seen == [True, False]
    given: dict[str, object] = {}
    monkeypatch.setattr(buildab, "guest_ab", lambda *a, **kw: given.update(ab=kw["cleanup"]) or 0)
    monkeypatch.setattr(buildab, "guest_bisect", lambda *a, **kw: given.update(bisect=kw["cleanup"]) or 0)
    assert cli.main(["guest", "ab", "--a", "2.3", "--b", "2.3", "-r", str(rf), "-x"]) == 0
    assert cli.main(["guest", "bisect", "--zfs-src", str(tmp_path), "--good", "a", "--bad", "b", "-r", str(rf),
                     "--case", "t", "--figure", "throughput"]) == 0
    assert given == {"ab": True, "bisect": False}
