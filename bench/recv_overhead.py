#!/usr/bin/env python3
"""zfsperf's receive throughput vs a plain `zfs receive < file` of the same stream (goal >= 0.98).

Fair by construction: one zfs-fuse lab, one pre-filled pool, one stream; both
receive into a parent with mountpoint=none (so neither mounts through FUSE), zfsperf's with its
sampler running as in a real case; in every round the order of the two is drawn at random, so
drift and cache warmth hit both alike. Prints both medians, their ratio, and the 95 % CI of the
ratio (distribution-free, the one `zfsperf compare` shows).
Usage: bench/recv_overhead.py [--size 256M] [--rounds 15] [--seed 1]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from zfsperf import proc
from zfsperf.zfsfuse.daemon import Lab
from zfsperf.metrics.sampler import Sampler
from zfsperf.pool import PoolManager, PoolSpec
from zfsperf.report.abstats import ratio_ci
from zfsperf.zfsfuse.target import ZfsFuseTarget
from zfsperf.units import MIB
from zfsperf.workloads import corpus as corpus_mod
from zfsperf.workloads.base import CaseContext
from zfsperf.workloads.receive import ReceiveWorkload


def plain(target: ZfsFuseTarget, pool: str, path: str, length: int) -> float:
    """Exactly what a user would type, into an unmounted parent like zfsperf's."""
    target.run(["zfs", "create", "-o", "mountpoint=none", f"{pool}/plain"])
    t0 = time.monotonic()
    with open(path, "rb") as f:
        rc = subprocess.run(target.wrap(["zfs", "receive", f"{pool}/plain/s0"]), stdin=f).returncode
    dt = time.monotonic() - t0
    if rc != 0:
        raise SystemExit("plain zfs receive failed")
    target.run(["zfs", "destroy", "-r", f"{pool}/plain"])
    return length / MIB / dt


def ours(target: ZfsFuseTarget, pool, c, spec: dict, work: Path, i: int) -> float:
    ctx = CaseContext(target=target, pool=pool, fields={"corpus": spec, "threads": 1}, log=proc.NULL_LOG,
                      deadline=time.monotonic() + 600, prepared={corpus_mod.describe_spec(spec): c})
    s = Sampler(target, pool.name, work / f"series{i}.jsonl", interval=1.0, progress=ctx.current_progress)
    s.start()
    try:
        figs = ReceiveWorkload().run(ctx)
    finally:
        s.stop()
    target.run(["zfs", "destroy", "-r", f"{pool.name}/rcv"])
    return figs["throughput"]["value"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="256M")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="zfsperf-bench-", dir="/var/tmp"))
    lab = Lab.start(Path(f"/run/zfsperf/bench-{os.getpid()}"), owner="lab")
    target = ZfsFuseTarget(lab)
    a: list[float] = []
    b: list[float] = []
    try:
        c = corpus_mod.make(target, "random", args.size, seed=1, vdev_dir=work / "corpus")
        pools = PoolManager(target, work / "vd", run_id="bench")
        pool = pools.create(PoolSpec(layout="stripe", vdevs=2, vdev_size=max(1024 * MIB, 4 * c.stream.length),
                                     prefill=True), fs_properties={"primarycache": "none"})
        spec = {"kind": "random", "size": args.size}
        for r in range(args.rounds + 1):                     # round 0 is a warm-up, discarded
            first_plain = rng.random() < 0.5
            if first_plain:
                p = plain(target, pool.name, c.stream.path, c.stream.length)
                o = ours(target, pool, c, spec, work, r)
            else:
                o = ours(target, pool, c, spec, work, r)
                p = plain(target, pool.name, c.stream.path, c.stream.length)
            if r:
                a.append(p)
                b.append(o)
        pools.destroy(pool)
        pools.cleanup_files()
    finally:
        lab.stop()
        subprocess.run(["rm", "-rf", str(work)])
    pm, om = statistics.median(a), statistics.median(b)
    ci = ratio_ci(np.array(a), np.array(b))
    print(f"stream: {c.describe()}, {c.stream.length / MIB:.1f} MiB, {c.stream.writes} WRITE records; "
          f"{args.rounds} rounds after one warm-up, order drawn at random each round (seed {args.seed})")
    print(f"plain `zfs receive < file`:     median {pm:8.1f} MiB/s  (min {min(a):.1f}, max {max(a):.1f})")
    print(f"zfsperf receive + its sampler:  median {om:8.1f} MiB/s  (min {min(b):.1f}, max {max(b):.1f})")
    cis = f"{1 + ci[0] / 100:.3f} … {1 + ci[1] / 100:.3f}" if ci else "n/a"
    print(f"ratio zfsperf/plain: {om / pm:.3f}, 95 % CI {cis}  (goal >= 0.98)")


if __name__ == "__main__":
    main()
