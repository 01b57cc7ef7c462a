"""The CPU and memory of a machine from its own /proc texts (zfsperf.machinefacts): read here from
this machine's real /proc/cpuinfo and /proc/meminfo, as an ssh target reads a remote machine's."""

import os
import platform
from pathlib import Path

from zfsperf.machinefacts import cpu_model, cpus, facts, memory_bytes
from zfsperf.runinfo import hardware


def test_this_machines_own_proc_gives_what_run_json_records_of_it():
    cpuinfo, meminfo = Path("/proc/cpuinfo").read_text(), Path("/proc/meminfo").read_text()
    got = facts(cpuinfo, meminfo, platform.release())
    assert got["cpus"] == os.cpu_count() and got["kernel"] == platform.release()
    hw = hardware()
    assert (got["cpu_model"], got["memory_bytes"]) == (hw["cpu_model"], hw["memory_bytes"])
    assert got["memory_bytes"] > 2 ** 28 and got["cpu_model"]


def test_what_a_proc_without_the_fields_gives_is_none_not_a_guess():
    """A /proc that names no model, no CPU or no MemTotal (a FreeBSD host has no /proc/cpuinfo at
    all: its ssh target records no machine): each figure absent, none made up."""
    assert (cpu_model(""), cpus(""), memory_bytes("")) == (None, None, None)
    assert memory_bytes("MemTotal:\n") is None
