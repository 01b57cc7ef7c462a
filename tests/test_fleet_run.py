"""`zfsperf fleet run` for real (issue 74, 1 and 4): hosts on this machine (tests/fleethosts.py: each
an sshd in a mount namespace of its own, with its own /run/zfsperf and vdev directory and so its own
zfs-fuse, in a cpu cgroup of its own whose limit is its machine class), driven by the real Ansible
over ssh, writing to the real PostgreSQL store the history tests start. What a fleet's verdicts
say of a real change (A/A not called, a CPU-bound change found on the CPU-limited class) is a
measured figure: bench/fleet.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleethosts import ab_runfile, fleet_host, inventory
from helpers import pg_cluster, readme_command

ZFSPERF = [str(Path(sys.executable).parent / "zfsperf")]

RUNFILE = ab_runfile(3, 'compression = ["off", "gzip-9"]')


@pytest.fixture(scope="module")
def pg_url():
    """The store every host adds its run to: a real PostgreSQL server of the test's own."""
    with pg_cluster() as c:
        yield c.url("postgres", "zfsperf")


@pytest.fixture
def fleet_hosts():
    """fleethosts.fleet_host, for a test whose hosts run zfs-fuse (tests/conftest.py: a daemon's lane)."""
    return fleet_host


def fleet_dir(out: Path) -> Path:
    (d,) = out.glob("fleet-*")
    return d


def fleet_procs(hosts) -> list[str]:
    """Command lines of zfsperf's fleet runs still alive in the hosts."""
    left = []
    for h in hosts:
        for pid in h.pids():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "--fleet-id" in cmd:
                left.append(f"{h.name}: {cmd}")
    return left


def started(h, proc: subprocess.Popen, timeout: float = 240) -> None:
    """Wait until host h's zfsperf run of the fleet runs (its first iteration has begun)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"fleet run ended ({proc.returncode}) before {h.name}'s run began:\n"
                                 + (proc.communicate()[0] or "")[-4000:])
        if fleet_procs([h]) and list(h.vdevs.rglob("*")):
            return
        time.sleep(0.3)
    raise AssertionError(f"{h.name}'s run did not start")


def test_a_fleet_runs_on_every_host_and_a_host_killed_mid_run_is_named(tmp_path, pg_url, fleet_hosts):
    """Three hosts, one limited to half a CPU (its class derived from its cgroup), one with its
    class given in the inventory, one killed once its run is under way: the other two hosts' runs
    come back under the fleet's directory with the fleet's id and their inventory names in
    run.json and in the shared store; the killed host is named with why (exit 1, never dropped);
    `fleet compare` of the fleet's directory gives each host's own paired verdict and lists the
    killed one; no zfsperf process of the fleet is left on any host."""
    rf = tmp_path / "ab.toml"
    rf.write_text(RUNFILE)
    with fleet_hosts("h1", tmp_path / "h1") as h1, fleet_hosts("h2", tmp_path / "h2", cpus=0.5) as h2, \
            fleet_hosts("h3", tmp_path / "h3") as h3:
        inventory(tmp_path / "hosts.ini", [h1.inventory_line(zfsperf_class="rack-a"), h2.inventory_line(),
                                           h3.inventory_line()])
        out = tmp_path / "zfsperf-results"         # the default, relative: from the directory the files are in
        p = subprocess.Popen(ZFSPERF + ["fleet", "run", "-i", "hosts.ini", "-r", "ab.toml", "--seed", "5",
                                        "--store", pg_url, "--no-html"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started(h3, p)
        # Ansible's files for the running task are in each host's run directory, which the run's end
        # removes (they were in ~/.ansible/tmp and /tmp, and a task a timeout, a hangup or a host's
        # death ended left them there: 7 payload directories after one session's fleet tests)
        payloads = list(Path("/tmp").glob("zfsperf-fleet-*/ansible/ansible_*_payload_*"))
        assert payloads, sorted(Path("/tmp").glob("ansible_*_payload_*"))
        time.sleep(2)
        h3.kill()
        text, _ = p.communicate(timeout=600)
        assert p.returncode == 1, text
        assert fleet_procs([h1, h2, h3]) == [], "a host's run outlived the fleet"
    rec = json.loads((fleet_dir(out) / "fleet.json").read_text())
    # the dead host's fleet directory is all that is left of the fleet on this machine (as on a dead
    # machine's disk): the others' were removed by their playbook; removed here, as the test's own
    left = list(Path("/tmp").glob(f"zfsperf-fleet-{rec['fleet_id']}-*"))
    for d in left:
        shutil.rmtree(d)
    assert len(left) == 1, left
    assert list(rec["hosts"]) == ["h1", "h2", "h3"] and rec["arguments"][:2] == ["--seed", "5"]
    dead = rec["hosts"]["h3"]
    assert dead["status"] in ("unreachable", "failed") and dead["why"] and dead["task"] == "zfsperf run", dead
    assert "h3" in text and dead["status"] in text
    runs = {}
    for name in ("h1", "h2"):
        e = rec["hosts"][name]
        assert e["status"] == "ok", (name, e, text)
        run = json.loads((fleet_dir(out) / e["dir"] / "run.json").read_text())
        assert run["fleet"] == {"id": rec["fleet_id"], "host": name}
        assert run["selection"]["seed"] == 5
        runs[name] = run
    assert runs["h1"]["machine_class"] == {"label": "rack-a", "given": True}
    assert runs["h2"]["hardware"]["cpu_limit"] == 0.5
    assert "limited to 0.5 CPUs" in runs["h2"]["machine_class"]["label"] and not runs["h2"]["machine_class"]["given"]
    import psycopg
    with psycopg.connect(pg_url) as c:
        stored = c.execute("SELECT path FROM runs WHERE path LIKE %s", (f"%zfsperf-fleet-{rec['fleet_id']}-%",)).fetchall()
    assert len(stored) == 2, stored
    hist = subprocess.run(ZFSPERF + ["fleet", "history", "--store", pg_url], capture_output=True, text=True)
    assert hist.returncode == 0 and "1 fleet run(s) in the store: a trend needs two" in hist.stdout, hist
    cmp = subprocess.run(ZFSPERF + ["fleet", "compare", str(fleet_dir(out)), "--json"], capture_output=True, text=True)
    assert cmp.returncode == 0, cmp.stderr
    fc = json.loads(cmp.stdout)
    by = {h["name"]: h for h in fc["hosts"]}
    assert set(by) == {"h1", "h2", "h3"} and by["h3"]["change"] is None and by["h3"]["why"].startswith(dead["status"])
    for name in ("h1", "h2"):
        ch = by[name]["change"]
        assert ch is not None and ch["pairs"] == 3 and ch["case"].startswith("recv"), by[name]
    assert by["h1"]["class"] == "rack-a" and "limited to 0.5 CPUs" in by["h2"]["class"]
    assert fc["fleet"]["hosts"] == 2 and {c["label"] for c in fc["classes"]} == {"rack-a", by["h2"]["class"]}


def test_every_host_is_checked_before_any_runs(tmp_path, pg_url, fleet_hosts):
    """An unknown host, a host without ZFS and a store the hosts cannot reach: exit 2 naming each
    host and why, and no host ran anything; `--dry-run` on good hosts: exit 0, nothing written (no fleet directory, no pool, nothing in any vdev
    directory, the store untouched)."""
    rf = tmp_path / "ab.toml"
    rf.write_text(RUNFILE)
    with fleet_hosts("ok1", tmp_path / "ok1") as ok1, fleet_hosts("nozfs", tmp_path / "nozfs", zfs=False) as nozfs:
        inv = inventory(tmp_path / "hosts.ini", [ok1.inventory_line(), nozfs.inventory_line(),
                                                  "ghost ansible_host=nosuchhost.invalid ansible_user=root"])
        out = tmp_path / "out"
        r = subprocess.run(ZFSPERF + ["fleet", "run", "-i", str(inv), "-r", str(rf), "-o", str(out)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 2, r.stdout + r.stderr
        err = r.stderr
        assert "host ghost: unreachable" in err and "nosuchhost.invalid" in err, err
        assert "host nozfs: failed at 'zfsperf check'" in err and "zfs-fuse is not installed" in err, err
        assert "host ok1" not in err, err
        assert not out.exists() and not list(ok1.vdevs.iterdir()) and not list(nozfs.vdevs.iterdir())
        inv = inventory(tmp_path / "hosts2.ini", [ok1.inventory_line()])
        r = subprocess.run(ZFSPERF + ["fleet", "run", "-i", str(inv), "-r", str(rf), "-o", str(out), "--dry-run"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and "every host checked (ok1); --dry-run: nothing run or written" in r.stdout, r
        assert not out.exists() and not list(ok1.vdevs.iterdir())
        r = subprocess.run(ZFSPERF + ["fleet", "run", "-i", str(inv), "-r", str(rf), "-o", str(out),
                                      "--store", "postgresql://127.0.0.1:9/nowhere"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 2 and "host ok1: failed at 'zfsperf check'" in r.stderr, r.stdout + r.stderr
        assert not out.exists() and not list(ok1.vdevs.iterdir())
        assert fleet_procs([ok1, nozfs]) == []


def test_an_interrupted_fleet_stops_every_host_s_run(tmp_path, fleet_hosts):
    """The README's `zfsperf fleet run -i hosts.ini -r ab.toml`; Ctrl-C to it while the hosts run: each host's zfsperf run is interrupted as Ctrl-C
    interrupts it (its pool gone, its vdev files removed), the fleet's directories on the hosts
    removed, fleet.json says interrupted, and no process of the fleet is left."""
    (tmp_path / "ab.toml").write_text(ab_runfile(20, 'compression = ["off", "gzip-9"]'))
    with fleet_hosts("a", tmp_path / "a") as a, fleet_hosts("b", tmp_path / "b") as b:
        inventory(tmp_path / "hosts.ini", [a.inventory_line(), b.inventory_line()])
        out = tmp_path / "zfsperf-results"
        # the README's line, verbatim, from the directory its files are in (each host's store its own)
        p = subprocess.Popen(ZFSPERF + readme_command("zfsperf fleet run"), cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        started(a, p)
        started(b, p)
        os.kill(p.pid, signal.SIGINT)
        text, _ = p.communicate(timeout=300)
        assert p.returncode == 3, text           # zfsperf's exit status for an interrupt
        assert fleet_procs([a, b]) == [], text
        for h in (a, b):
            assert [f for f in h.vdevs.rglob("*") if f.is_file()] == [], (h.name, text)
    rec = json.loads((fleet_dir(out) / "fleet.json").read_text())
    assert rec["interrupted"] is True
    assert not list(Path("/tmp").glob(f"zfsperf-fleet-{rec['fleet_id']}-*")), "a host's fleet directory was left"


def test_two_zfsperf_processes_make_one_corpus_at_once(tmp_path, fleet_hosts):
    """Found by the fleet's hosts on one machine: two zfsperf processes in mount namespaces of their
    own (as a fleet's hosts here, or two test lanes) making the same cached corpus at once wrote one
    .partial file, and one failed ("No such file or directory: ....zfs.partial"). One makes it at a
    time: while a maker holds the corpus's lock (this test, as a third process would) both wait and
    say so; then one makes it, the other takes it from the cache: both succeed, with one stream."""
    import fcntl
    from zfsperf.units import MIB
    from zfsperf.workloads import corpus
    cache = tmp_path / "cache"
    (cache / "corpus").mkdir(parents=True)
    Path("/run/zfsperf").mkdir(parents=True, exist_ok=True)
    env = os.environ | {"ZFSPERF_CACHE": str(cache)}
    lock = open(cache / "corpus" / f"zfs-fuse-v{corpus.FORMAT_VERSION}-compressible-{8 * MIB}-s3.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    procs = []
    for i in (1, 2):
        vdevs = tmp_path / f"vdevs{i}"
        vdevs.mkdir()
        procs.append(subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
             'mount -t tmpfs -o mode=755 zfsperf-t /run/zfsperf && exec "$@"', "sh",
             *ZFSPERF, "corpus", "make", "--kind", "compressible", "--size", "8M", "--seed", "3", "-d", str(vdevs)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    time.sleep(8)
    waited = [p.poll() for p in procs]
    streams = list((cache / "corpus").glob("*.zfs*"))
    fcntl.flock(lock, fcntl.LOCK_UN)
    lock.close()
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert waited == [None, None] and streams == [], (waited, streams, outs)
    assert [p.returncode for p in procs] == [0, 0], outs
    assert all("waiting for another zfsperf process making the same corpus" in o for o in outs), outs
    streams = sorted(p.name for p in (cache / "corpus").glob("*.zfs"))
    assert len(streams) == 1 and not list((cache / "corpus").glob("*.partial*")), streams


def test_a_run_past_its_timeout_is_failed_and_ended(tmp_path, fleet_hosts):
    """`fleet run --timeout S`: a host whose run outlives it is failed at 'zfsperf run' (exit 1) and
    its run is ended as Ctrl-C ends it, its fleet directory removed: nothing of the fleet is left
    on the host."""
    (tmp_path / "ab.toml").write_text(ab_runfile(20, 'compression = ["off", "gzip-9"]'))
    with fleet_hosts("slow", tmp_path / "slow") as h:
        inventory(tmp_path / "hosts.ini", [h.inventory_line()])
        r = subprocess.run(ZFSPERF + ["fleet", "run", "-i", "hosts.ini", "-r", "ab.toml", "--no-history",
                                      "--timeout", "15"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert r.returncode == 1, r.stdout + r.stderr
        assert fleet_procs([h]) == [], r.stdout
        assert [f for f in h.vdevs.rglob("*") if f.is_file()] == [], r.stdout
    rec = json.loads((fleet_dir(tmp_path / "zfsperf-results") / "fleet.json").read_text())
    e = rec["hosts"]["slow"]
    assert e["status"] == "failed" and e["task"] == "zfsperf run", e
    assert not list(Path("/tmp").glob(f"zfsperf-fleet-{rec['fleet_id']}-*"))
