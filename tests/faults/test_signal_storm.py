"""SIGINT/SIGTERM at many points of a real run: whatever the run is doing when
the signal lands (opening the target, making a corpus, creating a pool, setting a tunable, starting
the sampler, mid-workload, tearing down, writing results), it ends with exit 3, every tunable
restored, its pools and vdev files gone, no process of its own left and no traceback."""

import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from helpers import DEFAULT_BATCH, children
from helpers import lab_pools
from helpers import write_runfile
from zfsperf import proc

RUNFILE = """
[defaults]
iterations = 1
timeout = "5m"
[defaults.pool]
vdevs = 1
vdev_size = "192M"
[[test]]
name = "recv"
workload = "receive"
corpus = { kind = "random", size = "8M", seed = 41 }
threads = 2
tunables = { zfs_recv_write_batch_size = "128K" }
[[test]]
name = "fio"
workload = "fio"
rw = "randrw"
bs = "4k"
size = "8M"
runtime = 2
tunables = { zfs_vdev_async_write_max_active = 3 }
"""


def _start(rf, params, out):
    p = subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "--params-dir", str(params),
                          "-o", str(out / "res"), "-d", str(out / "vd")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = threading.Event()
    lines: list[str] = []
    errs: list[str] = []

    def read():
        for ln in p.stdout:
            lines.append(ln)
            if ln.startswith("Starting ZFS target"):
                started.set()
    t = threading.Thread(target=read, daemon=True)
    t.start()
    # stderr read as it comes too: a pipe nobody reads would stop the run at its 64 KiB
    p.errs, p.err_reader = errs, threading.Thread(target=lambda: errs.extend(p.stderr), daemon=True)
    p.err_reader.start()
    return p, started, lines, t


def _stuck(p, out, seen: set[int], lines: list[str], what: str) -> str:
    """A run still going long after its signal: what it was doing (its live processes, the end of
    its case logs), then it is killed with -9 -- its guard cleans up after it -- so that the tests
    after this one are not refused by its one-run lock."""
    live = [f"{c} {' '.join(proc.pid_cmdline(c))}" for c in sorted(seen) if proc.pid_alive(c)]
    logs = "".join(f"==== {f.name}\n{f.read_text(errors='replace')[-1500:]}" for f in sorted(out.rglob("*.log")))
    p.kill()
    p.wait(timeout=60)
    return f"still running 240 s after its signal; live: {live}\n{what}{''.join(lines)[-1500:]}\n{logs}"


def _watch_children(p, seen: set[int], until: float) -> None:
    while time.monotonic() < until and p.poll() is None:
        seen.update(pid for pid, _cmd in children(p.pid))
        time.sleep(0.02)


@pytest.mark.parametrize("trials", [14, pytest.param(40, marks=pytest.mark.slow)])
def test_signals_at_random_points_always_clean(tmp_path, params, lab, trials):
    """One signal at a random moment in each of `trials` equal slices of an undisturbed run's span
    (stratified: a few trials still land in every phase, from opening the target to writing results)."""
    before = lab_pools(lab)          # another test's pool still busy is not this one's
    rf = write_runfile(tmp_path, RUNFILE)
    # how long an undisturbed run takes (from the moment its signal handlers are in place)
    p, started, lines, reader = _start(rf, params, tmp_path / "calib")
    assert started.wait(60), "".join(lines)
    t0 = time.monotonic()
    p.wait(timeout=300)
    span = time.monotonic() - t0
    reader.join(5)
    p.err_reader.join(5)
    assert p.returncode == 0, "".join(lines) + "".join(p.errs)

    rng = random.Random(20261122)
    signalled, late = [], []
    for i in range(trials):
        sig = signal.SIGINT if i % 2 == 0 else signal.SIGTERM
        delay = rng.uniform(i * 0.95 * span / trials, (i + 1) * 0.95 * span / trials)
        for attempt in range(3):
            out = tmp_path / f"t{i}.{attempt}"
            p, started, lines, reader = _start(rf, params, out)
            assert started.wait(60), "".join(lines)
            seen: set[int] = set()
            _watch_children(p, seen, time.monotonic() + delay)
            if p.poll() is not None:
                # finished before its signal (this run was quicker than the calibration one): not a
                # trial of the signal path; the same moment, earlier in a fresh run
                late.append(f"{i}: exited before {delay:.2f} s")
                reader.join(5)
                p.err_reader.join(5)
                delay /= 2
                continue
            p.send_signal(sig)
            _watch_children(p, seen, time.monotonic() + 120)
            try:
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                pytest.fail(_stuck(p, out, seen, lines, f"trial {i}: {sig.name} after {delay:.2f} s\n"))
            reader.join(5)
            p.err_reader.join(5)
            err = "".join(p.errs)
            what = f"trial {i}: {sig.name} after {delay:.2f} s\n" + "".join(lines) + err
            # whatever the moment, the run leaves nothing behind
            assert "Traceback" not in err, what
            assert (params / "zfs_recv_write_batch_size").read_text().strip() == DEFAULT_BATCH, what
            assert (params / "zfs_vdev_async_write_max_active").read_text().strip() == "10", what
            assert lab_pools(lab) <= before, what
            assert [f for f in (out / "vd").rglob("*") if f.is_file()] == [], what
            assert [c for c in seen if proc.pid_alive(c)] == [], what
            # it had run every case and printed its whole summary: the signal came after the end
            # (while the interpreter was exiting, Python's own default handler may be back: killed
            # by it, -sig). Not a trial of the signal path either: earlier, in a fresh run
            if (p.returncode in (0, -sig) and "Log directory:" in "".join(lines)
                    and "Interrupted:" not in "".join(lines)):
                late.append(f"{i}: after the end at {delay:.2f} s")
                delay /= 2
                continue
            assert p.returncode == 3, what
            assert "Interrupted:" in "".join(lines), what
            signalled.append(delay)
            break
    # a run quicker than the calibration one may miss a late moment three times over; never most
    assert len(signalled) >= trials - max(2, trials // 10), (span, late)
