"""The ssh target for real: an sshd on 127.0.0.1 (started and stopped by pid by this test, inside the
zfs-fuse lab's namespace so that its sessions reach the lab's daemon), a key made for the test, and
zfsperf creating, measuring and destroying its pool over ssh."""

import json
from pathlib import Path
import subprocess
import time

import pytest

from helpers import why
from sshd import sshd_running
from helpers import zfsperf
from helpers import last_dir, records, write_runfile
from zfsperf import proc, runinfo
from zfsperf.errors import InputError
from zfsperf.sshlink import Ssh, parse_url

@pytest.fixture(scope="module")
def sshd(lab, tmp_path_factory):
    with sshd_running(lab.prefix(), tmp_path_factory.mktemp("sshd")) as (url, _listener):
        yield url


def test_a_command_the_connection_refused_a_session_for_runs_once_one_is_free(tmp_path, monkeypatch):
    """The guest lane's ssh failures: a loaded guest now and then refuses a session on the shared
    connection, and ssh exits 255 at once (the command never ran). Here for real: an sshd that
    allows one session a connection, whose listener is gone once the shared connection is up (so
    ssh's fallback, a connection of its own, is refused too). A command started while the one
    session is busy is started again (sshlink's one retry policy, which receive, fio and the
    pool-latency reports share) and runs once the session is free; with none free for longer than
    the retries wait, it fails with ssh's 255."""
    from zfsperf import sshlink
    monkeypatch.setattr(sshlink, "RETRY_DELAYS", (0.2, 0.5, 1.0))      # the policy, shorter: 1.7 s in all
    RETRY_DELAYS = sshlink.RETRY_DELAYS
    with sshd_running([], tmp_path, "MaxSessions 1") as (url, listener):
        ssh = Ssh(url)
        try:
            assert ssh.run(["true"]).ok                      # the shared connection, open
            proc.stop_pid(listener.pid, proc=listener)       # no new connection from now on

            def hold(seconds: float) -> subprocess.Popen:    # the one session, busy for that long
                p = subprocess.Popen(ssh.wrap(["sleep", str(seconds)]), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
                time.sleep(0.4)
                assert p.poll() is None, "the held session ended at once"
                return p

            held = hold(1.5)
            t0 = time.monotonic()
            res = ssh.run(["echo", "ran"])
            assert res.ok and res.stdout == "ran\n", (res.returncode, res.stderr)
            assert time.monotonic() - t0 >= 0.5, "the second session was not refused: the test shows nothing"
            assert held.wait(10) == 0
            held = hold(sum(RETRY_DELAYS) + 3)
            res = ssh.run(["echo", "ran"])
            assert res.returncode == 255 and "refused" in res.stderr, (res.returncode, res.stderr)
            assert held.wait(20) == 0
        finally:
            ssh.close()


def test_the_retry_policy_tries_as_often_as_its_delays_and_stops_when_told(monkeypatch):
    """again_while_refused: no retry for a result ssh started; one per RETRY_DELAYS, each after its
    delay, while refused; none once before() says no (a cancelled case, an abandoned interval)."""
    from zfsperf import sshlink
    slept: list[float] = []
    monkeypatch.setattr(sshlink.time, "sleep", slept.append)
    tries: list[int] = []

    def attempt() -> int:
        tries.append(1)
        return 255
    assert sshlink.again_while_refused(0, attempt, lambda r: r == 255) == 0 and not tries
    assert sshlink.again_while_refused(255, attempt, lambda r: r == 255) == 255
    assert len(tries) == len(sshlink.RETRY_DELAYS) and slept == list(sshlink.RETRY_DELAYS)
    asked: list[float] = []
    tries.clear()
    assert sshlink.again_while_refused(255, attempt, lambda r: r == 255,
                                       before=lambda d: asked.append(d) or len(asked) < 2) == 255
    assert len(tries) == 1 and asked == list(sshlink.RETRY_DELAYS[:2])


def test_url_validation():
    assert parse_url("ssh://root@host.example:2222") == ("root", "host.example", 2222)
    assert parse_url("ssh://10.0.0.1") == (None, "10.0.0.1", 22)
    for bad in ("ssh://-oProxyCommand=x", "ssh://a b", "ssh://root@host;rm", "http://x", "ssh://h:99999"):
        with pytest.raises(InputError):
            parse_url(bad)


def test_argv_is_quoted_for_the_remote_shell(sshd, tmp_path):
    ssh = Ssh(sshd)
    canary = tmp_path / "pwned"
    hostile = [f"$(touch {canary})", f"; touch {canary}", "a b", "-n", "`id`", "'\""]
    res = ssh.run(["printf", "%s\\n", *hostile])
    assert res.ok, res.stderr
    assert res.stdout.splitlines() == hostile
    assert not canary.exists()


def _procs_with(arg: str) -> list[int]:
    """pids of this machine's processes with arg among their argv (the ssh target is this machine)."""
    out = []
    for d in Path("/proc").iterdir():
        try:
            if d.name.isdigit() and arg in (d / "cmdline").read_bytes().split(b"\0")[1:]:
                out.append(int(d.name))
        except OSError:
            continue
    return out


def test_a_long_running_remote_command_ends_with_its_session(sshd, tmp_path):
    """A remote `zpool iostat POOL 1` outlived its stopped ssh session for good once its pool was
    gone (it printed nothing more, so no SIGPIPE came) and held the zfs module: a remote command
    started by popen is tied to its session, and stopping the local ssh stops it. Its output, its
    exit status and a remote file as its stdin are as before."""
    from zfsperf.targets.ssh import open_ssh
    t = open_ssh(sshd)
    p = t.popen(["sleep", "3000.25"])
    deadline = time.monotonic() + 20
    while not _procs_with(b"3000.25") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _procs_with(b"3000.25"), "the remote command never started"
    proc.stop_pid(p.pid, group=True)
    deadline = time.monotonic() + 15
    while _procs_with(b"3000.25") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _procs_with(b"3000.25"), "the remote command outlived its session"
    assert t.popen(["sh", "-c", "echo out; echo err >&2; exit 7"]).communicate() == (b"out\n", b"err\n")
    assert t.popen(["sh", "-c", "exit 7"]).wait() == 7
    src = tmp_path / "in"
    src.write_bytes(b"line one\nline two\n")
    q = t.popen(["cat"], stdin_file=str(src))
    assert q.communicate()[0] == b"line one\nline two\n" and q.returncode == 0


def test_info_over_ssh(sshd):
    res = zfsperf("info", "--target", sshd, "--json")
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["implementation"] == "zfs-fuse" and info["transport"] == sshd


SSH_RUN = """
[defaults]
iterations = 1
[defaults.pool]
vdevs = 1
vdev_size = "256M"
[[test]]
name = "recv"
workload = "receive"
corpus = { kind = "random", size = "8M", seed = 11 }
threads = 2
[[test]]
name = "fio"
workload = "fio"
rw = "randread"
bs = "4k"
size = "16M"
runtime = 2
"""


def test_run_over_ssh_creates_measures_destroys(sshd, lab, tmp_path):
    vdevs = tmp_path / "vdevs"
    res = zfsperf("run", "--target", sshd, "-r", str(write_runfile(tmp_path, SSH_RUN)), "-o", str(tmp_path / "o"),
                  "-d", str(vdevs))
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    recv, fio = records(d)
    assert recv["status"] == fio["status"] == "PASS"
    assert recv["figures"]["bytes"]["value"] > 2 * 8 * 2 ** 20 * 0.9
    assert fio["figures"]["read_iops"]["value"] > 0 and fio["histograms"]["read"]["count"] > 0
    run = json.loads((d / "run.json").read_text())
    assert run["target"]["transport"] == sshd and run["target"]["implementation"] == "zfs-fuse"
    # the machine and the filesystem under the vdevs as the remote machine reads them (its own
    # /proc, mount table and /sys, over ssh): the ssh host is this machine, so they are its own
    assert run["target"]["machine"] == {k: run["hardware"][k] for k in ("cpu_model", "cpus", "memory_bytes",
                                                                        "kernel_cmdline")} | {
        "kernel": run["kernel"]}, run["target"]["machine"]
    assert run["storage"] == runinfo.storage(str(vdevs)) | {"read_on": "target"}, run["storage"]
    assert run["storage"]["fstype"] and run["storage"]["mount"]
    # created, measured, destroyed: no pool of that run is left, nor its vdev files
    pools = lab.run(["zpool", "list", "-H", "-o", "name"]).stdout.split()
    assert recv["pool"]["name"] not in pools and fio["pool"]["name"] not in pools
    assert not any(vdevs.rglob("vdev*"))
    log = (d / "logs").glob("*.log")
    assert any("ssh" in p.read_text() and "zpool create" in p.read_text() for p in log)


def test_remote_receive_reads_a_copy_on_the_remote_host(sshd, lab, tmp_path):
    """The sendfile is copied to the remote host once and zfs receive reads it
    there; nothing of the stream goes through ssh while a receive is timed."""
    vdevs = tmp_path / "vdevs"
    rf = write_runfile(tmp_path, SSH_RUN.split("[[test]]\nname = \"fio\"")[0])
    res = zfsperf("run", "--target", sshd, "-r", str(rf), "-o", str(tmp_path / "o"), "-d", str(vdevs))
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    (recv,) = records(d)
    assert recv["status"] == "PASS"
    text = "".join(p.read_text() for p in (d / "logs").glob("recv*.log"))
    receives = [ln for ln in text.splitlines() if "zfs receive" in ln and ln.startswith("$ ")]
    assert len(receives) == 2 and all("< /var/tmp/zfsperf-streams/" in ln for ln in receives), receives
    # the copy is on the remote machine (here the same machine, reached over ssh) at full size
    copied = [ln.split("< ")[-1] for ln in receives]
    assert all(Path(c).stat().st_size == recv["figures"]["bytes"]["value"] / 2 for c in copied)


def test_source_for_an_ssh_hosts_kernel_needs_its_headers_here(sshd, tmp_path):
    """`run --build` of source here against an ssh host (issue 72, 1): compiled here for the host's
    running kernel, which is read over ssh while the input is checked; without that kernel's headers
    here, exit 2 naming the kernel, before anything is made (no results directory). This sshd's
    host is this machine, whose own kernel has no headers installed here."""
    import os
    from helpers import meta_repo
    from zfsperf.buildsource import kernel_headers
    kv = os.uname().release
    if kernel_headers(kv) is not None:
        pytest.skip(f"this machine has its kernel's headers ({kv}): the refusal needs a kernel without")
    src = tmp_path / "zfs"
    meta_repo(src)
    rf = write_runfile(tmp_path, SSH_RUN)
    res = zfsperf("run", "--target", sshd, "-r", str(rf), "-o", str(tmp_path / "o"),
                  "--build", f"a={src}@HEAD", "--build", f"b={src}@HEAD")
    assert res.returncode == 2, why(res)
    assert f"compiled for the host's kernel {kv}, whose headers are not here" in res.stderr, res.stderr
    assert not (tmp_path / "o").exists()
    # a DIR that is no source here is the host's directory of modules: its check comes later, there
    res = zfsperf("run", "--target", sshd, "-r", str(rf), "-o", str(tmp_path / "o"), "--dry-run",
                  "--build", "a=/nowhere/a", "--build", "b=/nowhere/b")
    assert "headers" not in res.stderr, why(res)


def test_a_2_1_build_compiled_here_is_copied_to_an_ssh_host_whole(tmp_path, monkeypatch):
    """`run --build` of source for an ssh host copies the build's modules there: every one of them,
    not only spl.ko and zfs.ko (a 2.1 build's zfs.ko needs the seven between, loaded from the host's
    copy: without them it cannot load); a second copy sends none that are the same (sha256)."""
    from zfsperf import buildsource
    from zfsperf.buildref import BuildRef
    here = tmp_path / "src-21-6.1.0-57-amd64" / "modules"
    here.mkdir(parents=True)
    names = ["icp.ko", "spl.ko", "zavl.ko", "zcommon.ko", "zfs.ko", "zlua.ko", "znvpair.ko", "zunicode.ko", "zzstd.ko"]
    for n in names:
        (here / n).write_bytes(f"\x7fELF {n}".encode())
    monkeypatch.setattr(buildsource, "REMOTE_BUILDS", str(tmp_path / "remote"))
    (tmp_path / "sshd").mkdir()
    with sshd_running([], tmp_path / "sshd") as (url, _listener):
        said: list[str] = []
        b = BuildRef("old", "2.1", str(here))
        buildsource.stage_on_host(url, b, said.append)
        there = tmp_path / "remote" / "src-21-6.1.0-57-amd64"
        assert b.modules == str(there) and sorted(p.name for p in there.iterdir()) == names, said
        assert all((there / n).read_bytes() == (here / n).read_bytes() for n in names)
        again = BuildRef("old", "2.1", str(here))
        said.clear()
        buildsource.stage_on_host(url, again, said.append)
        assert said == [] and again.modules == str(there)
