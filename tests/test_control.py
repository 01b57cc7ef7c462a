"""Signals to a command that is not a run (control.stop_on_signals): a fleet, a guest command."""

import signal
import subprocess
import sys
import time

CHILD = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)       # as a script's background job inherits it
from zfsperf import control
with control.stop_on_signals():
    print("ready", flush=True)
    time.sleep(60)
print("slept on", flush=True)
"""


def test_ctrl_c_ends_a_command_that_inherited_sigint_ignored():
    """A fleet started in the background of a script inherits SIGINT ignored, and Python leaves
    it so: `kill -INT` to it did nothing and the fleet ran to its end (make test of 2026-12-07,
    started with `&`). Like a run, the command takes Ctrl-C itself: KeyboardInterrupt, at once."""
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
        assert time.monotonic() - t0 < 10 and p.returncode != 0, (out, err)
        assert "KeyboardInterrupt: SIGINT" in err and "slept on" not in out, (out, err)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
