"""Many hosts' runs of one A/B combined (issue 74, 3: `zfsperf fleet compare`): each host's own
paired verdict first, then a random-effects combination over the fleet and per machine class.

Fed recorded figures: one real turns A/B of zfs-fuse (tests/fixtures/results-format2/receive-ab-turns,
8 pairs) copied once a host, each host's B side scaled by a planted factor and its run.json naming
its host and CPUs, so that what each host's own verdict and the combination must say is known."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from zfsperf.errors import InputError
from zfsperf.report import fleet

FIXTURE = Path(__file__).parent / "fixtures" / "results-format2" / "receive-ab-turns"
B = "ab checksum=fletcher4"


def host(tmp: Path, name: str, factor: float, cpus: int = 2) -> Path:
    """The fixture as host `name`'s run, its B side's throughput times `factor`."""
    d = tmp / name
    shutil.copytree(FIXTURE, d)
    run = json.loads((d / "run.json").read_text())
    run["host"], run["hardware"] = name, {**run["hardware"], "cpus": cpus}
    (d / "run.json").write_text(json.dumps(run))
    lines = []
    for ln in (d / "results.jsonl").read_text().splitlines():
        r = json.loads(ln)
        if r["case"] == B and "throughput" in r.get("figures", {}):
            r["figures"]["throughput"]["value"] *= factor
        lines.append(json.dumps(r))
    (d / "results.jsonl").write_text("\n".join(lines) + "\n")
    return d


def test_each_host_first_then_the_fleet_and_the_class_that_differs(tmp_path):
    """Three 2-CPU hosts where B costs 10 % and one 4-CPU host where it gains 10 %: each host's own
    verdict is its own run's, the 2-CPU class is WORSE with an interval around -10 %, the 4-CPU
    class (one host) is its host's verdict, and the fleet's between-host spread says they differ."""
    aa = fleet.compare_fleet([host(tmp_path, "h0", 1.0), host(tmp_path, "h0b", 1.0)])
    base = aa.hosts[0].change
    assert base is not None and aa.case.startswith("ab checksum=fletcher2") and aa.figure == "throughput"
    ds = [host(tmp_path, f"h{i}", 0.9) for i in (1, 2, 3)] + [host(tmp_path, "h4", 1.1, cpus=4)]
    fc = fleet.compare_fleet(ds)
    assert [h.name for h in fc.hosts] == ["h1", "h2", "h3", "h4"]
    for h, f in zip(fc.hosts, (0.9, 0.9, 0.9, 1.1)):      # each host's own change: its pairs' ratio
        assert h.change is not None and h.change.pairs == 8
        assert h.change.change_pct == pytest.approx(((1 + base.change_pct / 100) * f - 1) * 100, abs=1e-6)
    small = next(c for c in fc.classes if c.label.startswith("2 × "))
    big = next(c for c in fc.classes if c.label.startswith("4 × "))
    assert small.hosts == 3 and small.verdict == "worse" and small.ci_pct[0] < small.change_pct < small.ci_pct[1] < 0
    assert small.change_pct == pytest.approx(fc.hosts[0].change.change_pct, abs=1e-6)   # identical hosts
    assert small.tau_pct == pytest.approx(0, abs=1e-6) and small.predict_pct is not None
    assert big.hosts == 1 and big.change_pct == pytest.approx(fc.hosts[3].change.change_pct)
    assert big.verdict == fc.hosts[3].change.verdict
    f = fc.fleet
    assert f is not None and f.hosts == 4 and f.tau_pct > 5 and f.i2 > 0.5       # the classes differ
    assert f.predict_pct[0] < min(h.change.change_pct for h in fc.hosts)
    assert f.predict_pct[1] > max(h.change.change_pct for h in fc.hosts)
    b = fc.between                      # the subgroup test names the class that fares worst
    assert b is not None and b["differ"] and b["df"] == 1 and b["worst"] == small.label and b["p"] < 0.05
    assert aa.between is None           # one class: nothing to tell apart
    words = fleet.text(fc)
    assert "the fleet: " in words and "class 2 × " in words and "a new host would see [" in words, words
    assert f"the classes differ (Q " in words and f"class {small.label} fares worst, " in words, words
    same = fleet.compare_fleet([host(tmp_path, f"s{i}", 0.9) for i in (1, 2)] + [host(tmp_path, "s3", 0.9, cpus=4)])
    assert same.between is not None and not same.between["differ"] and same.between["q"] == pytest.approx(0, abs=1e-9)
    assert json.loads(json.dumps(fc.as_dict()))["fleet"]["hosts"] == 4


def test_a_host_without_a_pair_is_named_and_the_gate_fails_on_a_class(tmp_path, capsys):
    """A host whose run is not an A/B stays in the list with why; the gate fails on the class that
    regressed even where the fleet as a whole does not."""
    from zfsperf import cli
    solo = tmp_path / "solo"
    shutil.copytree(FIXTURE, solo)
    (solo / "results.jsonl").write_text("".join(ln + "\n" for ln in (FIXTURE / "results.jsonl").read_text().splitlines()
                                                if json.loads(ln)["case"] != B))
    ds = [host(tmp_path, f"h{i}", 0.8) for i in (1, 2)] + [host(tmp_path, f"h{i}", 1.2, cpus=4) for i in (3, 4)]
    assert cli.main(["fleet", "compare", *map(str, ds), str(solo), "--fail-on-regression", "5"]) == 1
    out, err = capsys.readouterr()
    assert "no verdict: its run has no A/B pair" in out and "regression: class 2 × " in err, (out, err)
    assert "regression: the fleet" not in err
    assert cli.main(["fleet", "compare", str(ds[0]), "--class", "bad"]) == 2
    assert "HOST=CLASS" in capsys.readouterr().err
    with pytest.raises(InputError):
        fleet.compare_fleet([ds[0]])


def test_the_prediction_interval_is_the_combined_spread_with_t_of_k_minus_2():
    """Three hosts' log ratios with known variances: the combination is statsmodels' (Paule-Mandel's
    between-host variance), and the prediction interval t(k-2) · sqrt(τ² + se²) around it (Higgins
    et al. 2009); hosts that agree better than their noise have τ 0 and I² 0, not a negative
    variance (DerSimonian-Laird's there, untruncated: 3 identical hosts were 'p 0')."""
    from scipy import stats
    from statsmodels.stats.meta_analysis import combine_effects
    import numpy as np
    from zfsperf.report.comparison import FigureChange
    hs = []
    for name, ln, sd, n in (("a", -0.10, 0.05, 8), ("b", -0.02, 0.04, 8), ("c", -0.15, 0.06, 6)):
        ch = FigureChange(case="x → y", figure="throughput", unit="MiB/s", old=[1.0], new=[1.0], old_median=1,
                          new_median=1, change_pct=math.expm1(ln) * 100, ci_pct=None, p=0.01, verdict="worse",
                          pair_sd=sd, pairs=n)
        hs.append(fleet.Host(name, Path(name), "k", ch))
    c = fleet.combine("fleet", hs, "MiB/s")
    res = combine_effects(np.array([-0.10, -0.02, -0.15]), np.array([0.05 ** 2 / 8, 0.04 ** 2 / 8, 0.06 ** 2 / 6]),
                          method_re="iterated")
    assert c.change_pct == pytest.approx(math.expm1(res.mean_effect_re) * 100)
    half = stats.t.ppf(0.975, 1) * math.sqrt(res.tau2 + res.sd_eff_w_re ** 2)
    assert c.predict_pct == pytest.approx((math.expm1(res.mean_effect_re - half) * 100,
                                           math.expm1(res.mean_effect_re + half) * 100))
    same = [fleet.Host(h.name, h.path, "k", h.change) for h in hs]
    for h in same:
        h.change.change_pct, h.change.pair_sd = -10.0, 0.05
    c = fleet.combine("k", same, "MiB/s")
    assert c.tau_pct == 0 and c.i2 == 0 and c.ci_pct[0] < -10 < c.ci_pct[1] and 0 < c.p < 0.05


def test_a_machines_class_is_derived_from_what_it_is_or_named(tmp_path):
    """Each run.json carries its machine's class (issue 74, 2): its CPUs, memory, the disk under its
    vdevs (as the kernel says: /sys/class/block/<dev>/queue/rotational) and the target's ZFS, or the
    label `run --class` gave; fleet compare takes the recorded one."""
    from zfsperf import runinfo
    st = runinfo.storage(str(tmp_path))
    dev = Path("/sys/class/block") / Path(st["device"]).name if st["device"] else None
    if dev is not None and (dev.resolve() / "queue" / "rotational").exists():
        rot = (dev.resolve() / "queue" / "rotational").read_text().strip()
        assert st["disk"] == ("rotational" if rot == "1" else "nvme" if dev.name.startswith("nvme") else "ssd")
    assert runinfo.disk_kind("tmpfs") is None and runinfo.disk_kind("/dev/no-such-disk") is None
    from zfsperf.results.record import machine_label
    label = machine_label({"cpus": 4, "cpu_model": "EPYC", "memory_bytes": 64 * 2 ** 30}, {"disk": "nvme"},
                                  {"implementation": "openzfs-linux", "zfs_version": "2.3.2-1"})
    assert label == "4 × EPYC, 64 GiB, nvme disk, openzfs-linux 2.3.2-1"
    # over ssh the class is the measured machine's (what the OpenZFS guest's /proc said), not the
    # controller's, whose disk is not the remote vdevs'
    guest = {"cpus": 1, "cpu_model": "QEMU Virtual CPU version 2.5+", "memory_bytes": 3 * 2 ** 30, "kernel": "6.1.0-57-amd64"}
    assert machine_label({"cpus": 4, "cpu_model": "EPYC", "memory_bytes": 64 * 2 ** 30}, {"disk": "nvme"},
                         {"implementation": "openzfs-linux", "zfs_version": "OpenZFS 2.3.2", "machine": guest}) \
        == "1 × QEMU Virtual CPU version 2.5+, 3 GiB, openzfs-linux OpenZFS 2.3.2"
    # and its disk the one the target read under its own vdevs (the controller's nvme is not it)
    assert machine_label({"cpus": 4, "cpu_model": "EPYC", "memory_bytes": 64 * 2 ** 30},
                         {"disk": "rotational", "read_on": "target"},
                         {"implementation": "openzfs-linux", "zfs_version": "OpenZFS 2.3.2", "machine": guest}) \
        == "1 × QEMU Virtual CPU version 2.5+, 3 GiB, rotational disk, openzfs-linux OpenZFS 2.3.2"
    d = host(tmp_path, "h1", 1.0)
    run = json.loads((d / "run.json").read_text())
    run["machine_class"] = {"label": "lab rack 3", "given": True}
    (d / "run.json").write_text(json.dumps(run))
    fc = fleet.compare_fleet([d, host(tmp_path, "h2", 1.0)])
    assert [h.klass for h in fc.hosts] == ["lab rack 3", "2 × Intel(R) Xeon(R) Processor, 24 GiB, zfs-fuse 0.7.0-25+b1"]


def test_run_class_is_recorded_by_a_real_run(lab, tmp_path):
    """`zfsperf run --class LABEL` on zfs-fuse: run.json's machine_class is the label, given; without
    it, derived from this machine; a label that is not one line of text is refused before the run."""
    from helpers import RECV, last_dir, why, write_runfile, zfsperf
    rf = write_runfile(tmp_path, RECV.replace('size = "4M"', 'size = "1M"'))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "a"), "--no-history", "--no-html", "--class", "rack 3")
    assert res.returncode == 0, why(res)
    assert json.loads((last_dir(res.stdout) / "run.json").read_text())["machine_class"] == {"label": "rack 3",
                                                                                          "given": True}
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "b"), "--no-history", "--no-html")
    mc = json.loads((last_dir(res.stdout) / "run.json").read_text())["machine_class"]
    assert mc["given"] is False and mc["label"].startswith(f"{__import__('os').cpu_count()} × "), mc
    bad = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "c"), "--class", "two\nlines")
    assert bad.returncode == 2 and "--class" in bad.stderr and not (tmp_path / "c").exists(), bad.stderr


def fleet_record(tmp: Path, hosts: dict[str, dict]) -> Path:
    """A fleet's directory as `fleet run` writes it: fleet.json and each host's results under hosts/."""
    d = tmp / "fleet-x"
    (d / "hosts").mkdir(parents=True)
    entries = {}
    for name, e in hosts.items():
        if "factor" in e:
            run = host(d / "hosts" / name, name, e["factor"])
            entries[name] = {"status": "ok", "dir": str(run.relative_to(d))}
        else:
            entries[name] = e
    (d / "fleet.json").write_text(json.dumps({"format": 1, "fleet_id": "x", "hosts": entries}))
    return d


def test_a_fleet_s_directory_stands_for_its_hosts_and_names_the_one_that_did_not_run(tmp_path):
    """`fleet compare FLEET-DIR` (issue 74, 1): the hosts by their inventory names, each host's own
    verdict, a host that failed or could not be reached listed with its task and why (never
    dropped); a fleet.json that is not one is an input error naming it."""
    d = fleet_record(tmp_path, {"a": {"factor": 0.9}, "b": {"factor": 0.9},
                                "c": {"status": "unreachable", "task": "zfsperf run", "why": "Connection refused"}})
    fc = fleet.compare_fleet([d])
    assert [h.name for h in fc.hosts] == ["a", "b", "c"]
    assert fc.hosts[2].change is None and fc.hosts[2].why == "unreachable at 'zfsperf run': Connection refused"
    assert fc.fleet is not None and fc.fleet.hosts == 2 and fc.classes == []
    assert "c                        no verdict: unreachable at 'zfsperf run'" in fleet.text(fc)
    (d / "fleet.json").write_text("{")
    with pytest.raises(InputError, match="fleet.json: not a fleet record"):
        fleet.compare_fleet([d])


def test_an_inventory_ansible_cannot_read_is_refused_naming_it(tmp_path):
    """ansible-inventory reads the inventory (issue 74, 1); a missing file, one it cannot parse and
    one with no host are exit 2 naming the file; host variables for zfsperf must be one line."""
    from zfsperf.fleetrun import engine
    with pytest.raises(InputError, match="no such inventory file"):
        engine.inventory(tmp_path / "nope.ini")
    bad = tmp_path / "bad.yml"
    bad.write_text("all:\n  hosts: [unclosed\n")
    with pytest.raises(InputError, match=f"{bad}: Ansible cannot read this inventory"):
        engine.inventory(bad)
    empty = tmp_path / "empty.ini"
    empty.write_text("[fleet]\n")
    with pytest.raises(InputError, match="names no host"):
        engine.inventory(empty)
    ok = tmp_path / "hosts.ini"
    ok.write_text("[a]\nh2 zfsperf_class=big\nh1\n[b]\nh3 ansible_port=2222\n")
    hosts = engine.inventory(ok)
    assert list(hosts) == ["h2", "h1", "h3"] and hosts["h2"]["zfsperf_class"] == "big"
    ok.write_text("h1 zfsperf_class=''\n")
    with pytest.raises(InputError, match="host h1: zfsperf_class must be one line of text"):
        engine.inventory(ok)


def test_each_host_s_outcome_is_read_from_the_callback_s_events(tmp_path):
    """The events the callback wrote (shape as in a real fleet run): a host whose run failed is
    failed at that task with its error's last lines; an unreachable one is unreachable; a host with
    no event was not run; a failure the playbook let pass (ignored) is not the host's outcome."""
    from zfsperf.fleetrun import engine
    ev = tmp_path / "run.events.jsonl"
    rows = [{"status": "ok", "host": "a", "task": "zfsperf found"},
            {"status": "ok", "host": "a", "task": "zfsperf run", "rc": 0, "stdout": "Results Summary"},
            {"status": "failed", "host": "b", "task": "zfsperf run", "rc": 1, "stderr": "x\nzfsperf: a case failed"},
            {"status": "failed", "host": "a", "task": "the results packed", "ignored": True, "rc": 2},
            {"status": "unreachable", "host": "c", "task": "zfsperf run", "msg": "Connection refused"},
            {"status": "stats", "host": "a", "ok": 3}]
    ev.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = engine.outcomes(ev, ["a", "b", "c", "d"])
    assert (out["a"].status, out["a"].rc, out["a"].stdout) == ("ok", 0, "Results Summary")
    assert (out["b"].status, out["b"].task, out["b"].why, out["b"].rc) == ("failed", "zfsperf run",
                                                                          "x zfsperf: a case failed", 1)
    assert (out["c"].status, out["c"].why) == ("unreachable", "Connection refused")
    assert out["d"].status == "not run"
    from zfsperf.fleetrun.run import _progress       # what a long fleet run says every minute
    assert _progress(ev, {"a": {}, "b": {}, "c": {}, "d": {}}) == "3 of 4 hosts' runs ended (1 unreachable)"


def test_a_cgroup_s_cpu_limit_is_part_of_the_machine_s_class(tmp_path, monkeypatch):
    """A host limited by its cgroup (a container, a slice, the fleet test's hosts) has fewer CPUs
    than it shows: runinfo reads the least quota along its cgroup path (v1 cfs quota over period,
    v2 cpu.max), and the class says it."""
    from zfsperf import runinfo
    from zfsperf.results.record import machine_label
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    (v1 / "a" / "b").mkdir(parents=True)
    (v1 / "a" / "cpu.cfs_quota_us").write_text("150000\n")
    (v1 / "a" / "cpu.cfs_period_us").write_text("100000\n")
    (v1 / "a" / "b" / "cpu.cfs_quota_us").write_text("-1\n")
    (v1 / "a" / "b" / "cpu.cfs_period_us").write_text("100000\n")
    (v2 / "s").mkdir(parents=True)
    (v2 / "s" / "cpu.max").write_text("50000 100000\n")
    (v2 / "cpu.max").write_text("max 100000\n")
    monkeypatch.setattr(runinfo, "CGROUP_ROOTS", {"v1": v1, "v2": v2})
    cg = tmp_path / "cgroup"
    cg.write_text("4:memory:/x\n1:cpu,cpuacct:/a/b\n")
    assert runinfo.cpu_limit(cg) == 1.5
    cg.write_text("0::/s\n")
    assert runinfo.cpu_limit(cg) == 0.5
    cg.write_text("0::/\n")
    assert runinfo.cpu_limit(cg) is None
    assert machine_label({"cpus": 2, "cpu_model": "EPYC", "cpu_limit": 0.5}, {}, {"implementation": "zfs-fuse"}) \
        .startswith("2 × EPYC limited to 0.5 CPUs, ")


def test_a_run_s_fleet_options_go_together(capsys):
    """run --fleet-id and --fleet-host (given by fleet run) go together: one alone is exit 2."""
    from zfsperf import cli
    assert cli.main(["run", "--fleet-id", "x", "--dry-run"]) == 2
    assert "--fleet-id and --fleet-host go together" in capsys.readouterr().err


def test_the_store_answers_fleet_wide_trends_host_by_host_then_combined(tmp_path, capsys):
    """Two fleet runs of the same three hosts in one store (issue 74, 3): between them the B side of
    the two 2-CPU hosts lost half and the 4-CPU host's did not; `fleet history` gives each host's
    own change, the fleet's combined one and each class's: the 2-CPU class WORSE by 50 %, the
    A side unchanged everywhere. A store made before fleets (schema 4) gains the columns."""
    from zfsperf import cli
    from zfsperf.history.store import Store
    from zfsperf.report.model import load_run
    store = str(tmp_path / "h.sqlite")
    for n, (fid, factors) in enumerate((("f1", {"a": 1.0, "b": 1.0, "c": 1.0}), ("f2", {"a": 0.5, "b": 0.5, "c": 1.0}))):
        for name, f in factors.items():
            d = host(tmp_path / fid, name, f, cpus=4 if name == "c" else 2)
            run = json.loads((d / "run.json").read_text())
            run["fleet"], run["start"] = {"id": fid, "host": name}, run["start"] + 3600 * n
            (d / "run.json").write_text(json.dumps(run))
            with Store.open(store) as st:
                assert st.add(load_run(d)) is not None
    assert cli.main(["fleet", "history", "--store", store, "--json"]) == 0
    steps = {s["case"]: s for s in json.loads(capsys.readouterr().out)}
    b, a = steps[B], steps["ab checksum=fletcher2"]
    assert (b["before"], b["after"], b["figure"]) == ("f1", "f2", "throughput")
    assert [(h["name"], round(h["change_pct"], 6)) for h in b["hosts"]] == [("a", -50.0), ("b", -50.0), ("c", 0.0)]
    small = next(c for c in b["classes"] if c["label"].startswith("2 × "))
    big = next(c for c in b["classes"] if c["label"].startswith("4 × "))
    assert small["verdict"] == "worse" and small["change_pct"] == pytest.approx(-50.0) and small["hosts"] == 2
    assert big["verdict"] == "not significant" and big["change_pct"] == pytest.approx(0.0, abs=1e-9)
    assert b["fleet"]["hosts"] == 3 and b["fleet"]["tau_pct"] > 5
    assert a["fleet"]["verdict"] == "not significant" and all(h["change_pct"] == pytest.approx(0.0, abs=1e-9) for h in a["hosts"])
    assert cli.main(["fleet", "history", "--store", store, "--case", B]) == 0
    out = capsys.readouterr().out
    assert f"{B}, throughput (MiB/s): fleet f1 → f2" in out and "class 2 × " in out and "worse" in out, out
    import sqlite3
    old = tmp_path / "old.sqlite"
    with Store.open(str(old)):
        pass
    con = sqlite3.connect(old)
    for col in ("fleet_id", "fleet_host", "machine_class"):
        con.execute(f"ALTER TABLE runs DROP COLUMN {col}")
    con.execute("UPDATE zfsperf_meta SET value = '4' WHERE key = 'schema'")
    con.commit()
    con.close()
    assert cli.main(["fleet", "history", "--store", str(old)]) == 0
    assert "0 fleet run(s) in the store" in capsys.readouterr().out
    cols = {r[1] for r in sqlite3.connect(old).execute("PRAGMA table_info(runs)")}
    assert {"fleet_id", "fleet_host", "machine_class"} <= cols


def test_a_fleet_host_s_run_is_stopped_by_its_pid_and_nothing_else(tmp_path, capsys):
    """`zfsperf fleet stop DIR` (the stop playbook's, on the host): the process whose pid and start
    time DIR/run.pid holds gets SIGINT and ends; a pidfile whose pid is another process now (its
    start time differs) signals nothing; no pidfile: nothing to do."""
    import subprocess
    import sys
    from zfsperf import cli
    from zfsperf.fleetrun import hoststop
    from zfsperf.guard import start_time
    mark = tmp_path / "got"
    code = ("import os, signal, sys, time\n"
            "def stop(*a):\n    open(sys.argv[1], 'w').write('SIGINT')\n    os._exit(7)\n"
            "signal.signal(signal.SIGINT, stop)\nprint('up', flush=True)\ntime.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code, str(mark)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "up\n"
    run = tmp_path / "run"
    run.mkdir()
    (run / hoststop.PIDFILE).write_text(json.dumps({"pid": p.pid, "start": start_time(p.pid)}))
    other = tmp_path / "other"
    other.mkdir()
    (other / hoststop.PIDFILE).write_text(json.dumps({"pid": p.pid, "start": "1"}))
    assert cli.main(["fleet", "stop", str(other), str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "its run (pid" in out and "has ended" in out and "no run there" in out and p.poll() is None, out
    assert cli.main(["fleet", "stop", str(run)]) == 0
    assert "interrupted and ended" in capsys.readouterr().out and mark.read_text() == "SIGINT"
    p.wait(10)
    me = tmp_path / "me.pid"
    hoststop.write_pidfile(me)
    assert json.loads(me.read_text()) == {"pid": __import__("os").getpid(), "start": start_time(__import__("os").getpid())}
