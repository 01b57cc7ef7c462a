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
