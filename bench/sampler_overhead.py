#!/usr/bin/env python3
"""The sampler's cost per sample with every source on (goal ≤ 2 ms of CPU per sample).

A zfs-fuse lab with a pool that has a cache device (so the L2ARC fields are read too), a write load
from dd, and a sampler at a short interval reading ARC/L2ARC kstats, the long-running
`zpool iostat`, and a workload-progress source. Prints the sampler thread's CPU time per sample
(thread_time, median and p90), the `zpool iostat` process's CPU per sample, and the zfs-fuse
daemon's own CPU for serving the sampler's /zfs-kstat reads (each read is a FUSE request the
daemon answers): measured with no load, in alternating equal spans with and without a sampler,
as the daemon's extra CPU per sample. The total is the sum of the three.
Usage: bench/sampler_overhead.py [--samples 100] [--interval 0.2] [--spans 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from zfsperf.zfsfuse.daemon import Lab
from zfsperf.metrics.sampler import Sampler
from zfsperf.pool import PoolManager, PoolSpec
from zfsperf.zfsfuse.target import ZfsFuseTarget


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--spans", type=int, default=3, help="idle/sampled span pairs for the daemon's share")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zfsperf-bench-", dir="/var/tmp"))
    lab = Lab.start(Path(f"/run/zfsperf/bench-{os.getpid()}"), owner="lab")
    target = ZfsFuseTarget(lab)
    pools = PoolManager(target, work / "vd", run_id="bench")
    pool = pools.create(PoolSpec(vdevs=1, vdev_size=512 << 20, cache_vdevs=1, cache_size=128 << 20))
    daemon_ms = daemon_share(lab, target, pool, work, args)
    load = subprocess.Popen(target.wrap(["sh", "-c", f"while :; do dd if=/dev/zero of={pool.mountpoint}/f "
                                         "bs=1M count=64 conv=fsync status=none; done"]), start_new_session=True)
    t0 = time.monotonic()
    try:
        s = Sampler(target, pool.name, work / "series.jsonl", interval=args.interval,
                    progress=lambda: {"bytes": (time.monotonic() - t0) * 1e8, "ios": (time.monotonic() - t0) * 1e3},
                    l2_capacity=pool.l2_capacity)
        s.start()
        while len(s.snapshot()) < args.samples:
            time.sleep(args.interval)
        iostat_cpu = s.iostat.cpu_seconds() if s.iostat else None
        n = len(s.snapshot())
        s.stop()
        ms = sorted(x * 1000 for x in s.cpu_per_sample)
        present = sorted(k for k, v in s.snapshot()[-1]["metrics"].items())
        print(f"zfs-fuse, {n} samples at {args.interval} s, sources: arcstats ({len(present)} metrics: "
              f"{', '.join(present)}), zpool iostat, workload progress")
        print(f"sampler CPU per sample: median {statistics.median(ms):.3f} ms, p90 {ms[int(0.9 * len(ms))]:.3f} ms, "
              f"max {ms[-1]:.3f} ms (goal <= 2 ms)")
        if iostat_cpu is not None:
            print(f"zpool iostat process CPU per sample: {1000 * iostat_cpu / n:.3f} ms "
                  f"(one process for the whole case, one report per {max(1, round(args.interval))} s)")
        print(f"zfs-fuse daemon CPU serving the sampler: {daemon_ms:.3f} ms per sample "
              f"(daemon CPU with a sampler minus without, {args.spans} x 2 spans, no load)")
        total = statistics.median(ms) + (1000 * iostat_cpu / n if iostat_cpu is not None else 0) + daemon_ms
        print(f"total CPU per sample (sampler median + zpool iostat + daemon): {total:.3f} ms (goal <= 2 ms)")
    finally:
        os.killpg(load.pid, 15)
        load.wait()
        pools.destroy(pool, attempts=60)      # the killed dd's last fsync may keep it busy a while
        pools.cleanup_files()
        lab.stop()
        subprocess.run(["rm", "-rf", str(work)], check=False)


def daemon_share(lab: Lab, target: ZfsFuseTarget, pool, work: Path, args) -> float:
    """The daemon's extra CPU per sample while a sampler reads /zfs-kstat: alternating spans of
    equal length without and with a sampler, no load, so that the difference is the sampler's."""
    pid = lab.state.daemon_pid
    span = args.samples * args.interval / args.spans
    idle = sampled = 0.0
    samples = 0
    for i in range(args.spans):
        c0 = cpu_seconds(pid)
        time.sleep(span)
        idle += cpu_seconds(pid) - c0
        s = Sampler(target, pool.name, work / f"share{i}.jsonl", interval=args.interval,
                    l2_capacity=pool.l2_capacity)
        c0 = cpu_seconds(pid)
        s.start()
        time.sleep(span)
        s.stop()
        sampled += cpu_seconds(pid) - c0
        samples += len(s.snapshot())
    return 1000 * max(0.0, sampled - idle) / max(1, samples)


def cpu_seconds(pid: int) -> float:
    from zfsperf.proc import cpu_seconds as cpu
    v = cpu(pid)
    if v is None:
        raise SystemExit(f"the zfs-fuse daemon (pid {pid}) is gone")
    return v


if __name__ == "__main__":
    main()
