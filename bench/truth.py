#!/usr/bin/env python3
"""Measurement truth: does each headline agree with the same quantity measured independently?

Runs real cases on the embedded zfs-fuse (its own daemon, sparse files) through `zfsperf run`
and prints, for every cross-check zfsperf records, the deviation of the independent measure from
zfsperf's in each iteration, side by side:
  received data vs pool space    the stream's WRITE payload of files' data vs Δused of the received
                                 datasets (`zfs get -Hp`), compression off and (shown, not judged) lzjb
  workload vs pool bandwidth     fio's MiB/s vs `zpool iostat` read+write MiB/s over the samples
                                 fio moved data in (reads past the ARC: primarycache=none; writes)
  ARC hit ratio                  the sampler's access-weighted ratio vs arcstats counters at the
                                 case's start and end (percentage points)
Goal: within 2 % where no cache or compression intervenes.
Usage: bench/truth.py [-I 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

RUNFILE = """
[defaults]
iterations = {iterations}
warmup = 1
[defaults.pool]
layout = "stripe"
vdevs = 2
vdev_size = "2G"
prefill = true
[defaults.steady]
mode = "record"
interval = 0.5

[[test]]
name = "recv-random"
workload = "receive"
corpus = {{ kind = "random", size = "256M" }}
threads = [1, 4]
duration = "4s"
dataset = {{ primarycache = "none" }}

[[test]]
name = "recv-small-records"
workload = "receive"
corpus = {{ kind = "small-records", size = "64M" }}
duration = "4s"

[[test]]
name = "recv-lzjb"
workload = "receive"
corpus = {{ kind = "compressible", size = "128M" }}
duration = "4s"
dataset = {{ compression = "lzjb" }}

[[test]]
name = "fio-randread-uncached"
workload = "fio"
rw = "randread"
bs = "128k"
size = "256M"
runtime = 8
dataset = {{ primarycache = "none" }}

[[test]]
name = "fio-randread-metadata-cached"
workload = "fio"
rw = "randread"
bs = "128k"
size = "256M"
runtime = 8
dataset = {{ primarycache = "metadata" }}

[[test]]
name = "fio-seqwrite"
workload = "fio"
rw = "write"
bs = "128k"
size = "512M"
runtime = 8
"""

GOAL_PCT = 2.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-I", "--iterations", type=int, default=3)
    ap.add_argument("--keep", help="keep the results directory here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="zfsperf-truth-") as tmp:
        rf = Path(tmp) / "truth.toml"
        rf.write_text(RUNFILE.format(iterations=args.iterations))
        out = args.keep or str(Path(tmp) / "res")
        res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-o", out, "-q",
                              "--no-history"], capture_output=True, text=True, env=os.environ)
        if res.returncode != 0:
            print(res.stdout[-3000:], res.stderr[-3000:], file=sys.stderr)
            return 1
        d = Path(res.stdout.rstrip().splitlines()[-1].split("\t")[-1])
        rows: dict[tuple[str, str], list[dict]] = {}
        for line in (d / "results.jsonl").read_text().splitlines():
            r = json.loads(line)
            if r.get("iteration", 0) < 1:
                continue
            for c in r.get("cross_checks") or []:
                rows.setdefault((r["case"], c["name"]), []).append(c)
    print(f"cross-checks on zfs-fuse, {args.iterations} iterations a case (goal: within {GOAL_PCT:g} % where "
          "nothing stands between the two)\n")
    print(f"{'case':34} {'check':42} {'deviation per iteration':30} {'judged':>8}")
    for (case, name), cs in rows.items():
        unit = " pt" if cs[0]["unit"] == "%" else " %"
        devs = " ".join(f"{c['deviation_pct']:+.2f}" for c in cs) + unit
        judged = "no" if cs[0]["agrees"] is None else \
            f"{sum(bool(c['agrees']) for c in cs)}/{len(cs)} ok"
        print(f"{case:34} {name:42} {devs:30} {judged:>8}")
        if cs[0]["agrees"] is None:
            print(f"{'':34}   ({cs[0]['how'].split('not judged')[-1].strip(': ,')[:90]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
