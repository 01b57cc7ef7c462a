#!/usr/bin/env python3
"""zfsperf's receive throughput vs a plain `zfs receive < file` of the same stream (goal >= 0.98).

One zfs-fuse lab, one pre-filled pool, one stream; the two are interleaved round by round so that
drift on a noisy machine hits both alike. Prints both medians and their ratio.
Usage: bench/recv_overhead.py [--size 256M] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from zfsperf import proc
from zfsperf.lab import Lab
from zfsperf.pool import PoolManager, PoolSpec
from zfsperf.target.zfsfuse import ZfsFuseTarget
from zfsperf.units import MIB
from zfsperf.workloads import corpus as corpus_mod
from zfsperf.workloads.base import CaseContext
from zfsperf.workloads.receive import ReceiveWorkload


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="256M")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zfsperf-bench-", dir="/var/tmp"))
    lab = Lab.start(Path(f"/run/zfsperf/bench-{os.getpid()}"), owner="lab")
    target = ZfsFuseTarget(lab)
    try:
        c = corpus_mod.make(target, "random", args.size, seed=1, vdev_dir=work / "corpus")
        pools = PoolManager(target, work / "vd", run_id="bench")
        pool = pools.create(PoolSpec(layout="stripe", vdevs=2, vdev_size=max(1024 * MIB, 4 * c.stream.length),
                                     prefill=True), fs_properties={"primarycache": "none"})
        spec = {"kind": "random", "size": args.size}
        plain, ours = [], []
        for r in range(args.rounds + 1):                     # round 0 is a warm-up, discarded
            # plain: exactly what a user would type
            t0 = time.monotonic()
            with open(c.stream.path, "rb") as f:
                rc = subprocess.run(target.wrap(["zfs", "receive", f"{pool.name}/plain"]), stdin=f).returncode
            dt = time.monotonic() - t0
            assert rc == 0
            target.run(["zfs", "destroy", "-r", f"{pool.name}/plain"])
            ctx = CaseContext(target=target, pool=pool, params={"corpus": spec, "threads": 1}, log=proc.NULL_LOG,
                              deadline=time.monotonic() + 600,
                              prepared={corpus_mod.describe_spec(spec): c})
            figs = ReceiveWorkload().run(ctx)
            target.run(["zfs", "destroy", "-r", f"{pool.name}/rcv"])
            if r:
                plain.append(c.stream.length / MIB / dt)
                ours.append(figs["throughput"]["value"])
        pools.destroy(pool)
        pools.cleanup_files()
    finally:
        lab.stop()
        subprocess.run(["rm", "-rf", str(work)])
    p, o = statistics.median(plain), statistics.median(ours)
    print(f"stream: {c.describe()}, {c.stream.length / MIB:.1f} MiB, {c.stream.writes} WRITE records; "
          f"{args.rounds} interleaved rounds after one warm-up")
    print(f"plain `zfs receive < file`: median {p:8.1f} MiB/s  (min {min(plain):.1f}, max {max(plain):.1f})")
    print(f"zfsperf receive workload:   median {o:8.1f} MiB/s  (min {min(ours):.1f}, max {max(ours):.1f})")
    print(f"ratio zfsperf/plain: {o / p:.3f}  (goal >= 0.98)")


if __name__ == "__main__":
    main()
