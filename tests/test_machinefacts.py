"""The CPU and memory of a machine from its own /proc texts (zfsperf.machinefacts): read here from
this machine's real /proc/cpuinfo and /proc/meminfo, as an ssh target reads a remote machine's."""

import os
import platform
from pathlib import Path

from zfsperf.machinefacts import cpu_model, cpus, facts, memory_bytes, mount_of, rotational_kind
from zfsperf.runinfo import hardware


def test_this_machines_own_proc_gives_what_run_json_records_of_it():
    cpuinfo, meminfo = Path("/proc/cpuinfo").read_text(), Path("/proc/meminfo").read_text()
    cmdline = Path("/proc/cmdline").read_text()
    got = facts(cpuinfo, meminfo, platform.release(), cmdline)
    assert got["cpus"] == os.cpu_count() and got["kernel"] == platform.release()
    hw = hardware()
    assert (got["cpu_model"], got["memory_bytes"]) == (hw["cpu_model"], hw["memory_bytes"])
    assert got["kernel_cmdline"] == hw["kernel_cmdline"] == cmdline.strip() != ""
    assert got["memory_bytes"] > 2 ** 28 and got["cpu_model"]


def test_what_a_proc_without_the_fields_gives_is_none_not_a_guess():
    """A /proc that names no model, no CPU or no MemTotal (a FreeBSD host has no /proc/cpuinfo at
    all: its ssh target records no machine): each figure absent, none made up."""
    assert (cpu_model(""), cpus(""), memory_bytes("")) == (None, None, None)
    assert memory_bytes("MemTotal:\n") is None


def test_the_mount_under_a_path_is_the_one_findmnt_names(tmp_path):
    """The filesystem under the vdev files from a mount table's text (an ssh target's arrives over
    ssh): this machine's real /proc/self/mountinfo against util-linux's findmnt, for a directory and
    for the root; a path no line holds gives None."""
    import subprocess
    mountinfo = Path("/proc/self/mountinfo").read_text()
    for path in (str(tmp_path), "/"):
        fm = subprocess.run(["findmnt", "-n", "-o", "TARGET,FSTYPE,SOURCE", "-T", path],
                            capture_output=True, text=True, check=True).stdout.split()
        got = mount_of(os.path.realpath(path), mountinfo)
        assert got is not None and [got["mount"], got["fstype"], got["device"]] == fm[:3], (path, got, fm)
    assert mount_of("/anything", "") is None


def test_a_disks_kind_is_what_its_rotational_flag_and_name_say():
    assert rotational_kind("1\n", "sda") == "rotational"
    assert rotational_kind("0\n", "nvme0n1") == "nvme" and rotational_kind("0", "vda") == "ssd"
    assert rotational_kind("", "sda") is None
