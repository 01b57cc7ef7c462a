#!/usr/bin/env python3
"""Soak: 16 concurrent receives plus the sampler, repeated for 10 minutes.

Runs `zfsperf run` on the embedded zfs-fuse with a receive case of 16 threads (sampler on, steady
verdict recorded) and as many iterations as fit in the duration, samples zfsperf's own RSS every
10 s from /proc, and prints RSS at the start and end, its growth, and whether every case was PASS.
Usage: bench/soak.py [--minutes 10] [--size 16M]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def rss_kib(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--size", default="16M")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zfsperf-soak-"))
    rf = work / "soak.toml"
    rf.write_text(f"""
[defaults]
iterations = 100000
timeout = "10m"
[defaults.pool]
vdevs = 2
vdev_size = "1G"
[[test]]
name = "soak"
workload = "receive"
corpus = {{ kind = "random", size = "{args.size}", seed = 61 }}
threads = 16
steady = {{ mode = "record", interval = 1 }}
""")
    env = {**os.environ, "ZFSPERF_LAB": f"/run/zfsperf/soak-{os.getpid()}"}
    p = subprocess.Popen([sys.executable, "-m", "zfsperf.cli", "run", "-q", "-r", str(rf), "-o", str(work / "o"),
                          "-d", str(work / "vd")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.monotonic()
    samples: list[tuple[float, int]] = []
    time.sleep(10)                                 # past the interpreter's start-up
    while time.monotonic() - t0 < args.minutes * 60 and p.poll() is None:
        r = rss_kib(p.pid)
        if r:
            samples.append((time.monotonic() - t0, r))
        time.sleep(10)
    p.send_signal(2)                               # SIGINT: finish, restore, summarise
    out, _ = p.communicate(timeout=600)
    d = Path(out.rstrip().splitlines()[-1].split("\t")[-1])
    recs = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines() if x.strip()]
    statuses = {s: sum(1 for r in recs if r["status"] == s) for s in {r["status"] for r in recs}}
    warm = [r for t, r in samples if t >= 60] or [r for _t, r in samples]
    print(f"soak: {len(recs)} cases of 16 concurrent receives in {args.minutes:g} min, statuses {statuses}")
    if samples:
        print(f"zfsperf RSS: start {samples[0][1] / 1024:.1f} MiB, after 1 min {warm[0] / 1024:.1f} MiB, "
              f"end {samples[-1][1] / 1024:.1f} MiB, max {max(r for _t, r in samples) / 1024:.1f} MiB "
              f"(growth after the first minute: {(samples[-1][1] - warm[0]) / 1024:+.1f} MiB)")
    return 0 if set(statuses) == {"PASS"} else 1


if __name__ == "__main__":
    sys.exit(main())
