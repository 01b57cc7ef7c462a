"""The tunables journal after a crash: what it restores, and what it knows no longer exists."""

import json
import os
import subprocess

from zfsperf.sshlink import Ssh
from zfsperf.tunables import BackendSpec, Journal, replay
from zfsperf.tunables.journal import machine_gone

PARAMS = "/sys/module/zfs/parameters"


def test_a_change_made_in_a_guest_that_has_stopped_since_is_forgotten_not_retried(tmp_path):
    """Build turns killed with -9 left the twin guest's pinned selectors in the journal, and the
    guard stopped the twin's QEMU: no later start could reach it, and each said "could not restore"
    for ever. A change made over ssh in a guest names the guest's QEMU process; once that process
    has ended (or its pid is another process's), the entry is forgotten, said why, and nothing is
    tried over ssh (the url here reaches nothing: trying it would say "could not restore")."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone = {"url": "ssh://root@127.0.0.1:1", "options": [], "machine": {"pid": dead.pid, "start": 1}}
    j = tmp_path / "tunables.journal"
    j.write_text(json.dumps([{"backend": BackendSpec("files", PARAMS, ssh=gone).as_dict(), "name": "zfs_fletcher_4_impl",
                              "old": "fastest", "new": "superscalar", "pid": 2 ** 22 + 7, "time": 0}]))
    assert replay(Journal(j)) == [
        f"forgot zfs_fletcher_4_impl = fastest (left at superscalar by zfsperf pid {2 ** 22 + 7}, {PARAMS} on "
        f"ssh://root@127.0.0.1:1): the guest it was set in (QEMU pid {dead.pid}) has stopped since, and a guest "
        "starts with its module's defaults"]
    assert not j.exists()
    # a machine whose process lives keeps its entries; one whose pid now names a later process does not
    live = Ssh("ssh://root@127.0.0.1:1", [], machine_pid=os.getpid()).spec()
    assert live["machine"]["pid"] == os.getpid() and machine_gone(BackendSpec("files", PARAMS, ssh=live)) is None
    later = {**live, "machine": {"pid": os.getpid(), "start": live["machine"]["start"] - 1}}
    assert machine_gone(BackendSpec("files", PARAMS, ssh=later))
    # a link to a host that is not a process here (a real remote machine) is never judged gone
    assert "machine" not in Ssh("ssh://root@h:22", []).spec()
    assert machine_gone(BackendSpec("files", PARAMS, ssh=Ssh("ssh://root@h:22", []).spec())) is None


def test_check_and_lab_status_name_a_build_module_and_a_tunable_a_dead_zfsperf_left(tmp_path, monkeypatch):
    """Issue 72, 2: a zfsperf killed mid build A/B leaves a build's module loaded (its journal entry
    says so); the next run puts it back before anything else, and until then `zfsperf check` and
    `zfsperf lab status` name it, with the tunable it left changed, where a user looks first.
    Before, neither said anything of it."""
    import contextlib
    import io
    from zfsperf import cli
    from zfsperf.tunables.backend import BUILD_ENTRY, OWN_BUILD
    monkeypatch.setenv("ZFSPERF_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("ZFSPERF_LAB", str(tmp_path / "lab"))
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "tunables.journal").write_text(json.dumps([
        {"backend": {"kind": "module", "path": "/sys/module/zfs/parameters"}, "name": BUILD_ENTRY,
         "old": OWN_BUILD, "new": "a build of the run (a, b)", "pid": dead.pid, "time": 0},
        {"backend": {"kind": "files", "path": "/sys/module/zfs/parameters"}, "name": "zfs_txg_timeout",
         "old": "5", "new": "1", "pid": dead.pid, "time": 0}]))
    for argv in (["check", "--window", "0.2"], ["lab", "status"]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            cli.main(argv)
        text = " ".join(out.getvalue().split())
        assert (f"left behind: a build's zfs module loaded in place of the machine's own (a build of the run "
                f"(a, b)) by zfsperf pid {dead.pid}") in text, (argv, text)
        assert f"left behind: zfs_txg_timeout at 1 (it was 5) by zfsperf pid {dead.pid}" in text, (argv, text)
        assert "the next zfsperf run puts it back before anything else" in text, (argv, text)
