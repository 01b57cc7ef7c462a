#!/usr/bin/env python3
"""What `zfsperf run --profile` costs the receive headline, and what its differential view says of
an A/A, on the embedded zfs-fuse.

cost   One zfs-fuse lab, one pre-filled pool (2 x 2 GiB, primarycache=none), one 64 MiB
       incompressible stream received in rounds of --seconds (threads 1), each round with perf
       record running over the machine as --profile runs it, or without, in ABBA groups (the
       turns design: drift over seconds falls on both alike). Printed: the paired ratio
       profiled / not with compare's sign-flip interval, and perf record's own CPU (its share of
       one CPU: the kernel's sampling interrupts are not in it, the ratio is the whole cost).
       Between separate runs the cost cannot be seen: run-to-run drift here reaches 24 %.
A/A    One `zfsperf run --profile` of an A/A in turns (a user property ZFS ignores, arm=a|b; the
       same stream, rounds for 4 s an iteration), --windows x 6 iterations, cut into disjoint
       windows of 6 iterations: in each, the differential view of the two arms (profilediff, max-T
       adjusted at 5 %) and the functions it called changed (goal: none in 95 % of windows).

Usage: bench/profile_cost.py [--groups 10] [--seconds 3] [--windows 4] [--keep DIR]
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

import numpy as np

from zfsperf import proc
from zfsperf.metrics.profile import Profiler
from zfsperf.pool import PoolManager, PoolSpec
from zfsperf.report import abstats, profilediff
from zfsperf.report.model import load_run
from zfsperf.units import MIB
from zfsperf.workloads import corpus as corpus_mod
from zfsperf.workloads.base import CaseContext
from zfsperf.workloads.receive import ReceiveWorkload
from zfsperf.workloads.turns import ORDER
from zfsperf.zfsfuse.daemon import Lab
from zfsperf.zfsfuse.target import ZfsFuseTarget

RUNFILE = """
[defaults]
iterations = {iterations}
warmup = 1
timeout = "30m"
[defaults.pool]
layout = "stripe"
vdevs = 2
vdev_size = "2G"
prefill = true
[defaults.dataset]
primarycache = "none"
[defaults.steady]
mode = "off"
[[test]]
name = "aa"
workload = "receive"
corpus = {{ kind = "random", size = "64M" }}
threads = 1
duration = "4s"
duet = "turns"
dataset = {{ "zfsperf:arm" = ["a", "b"] }}
"""


def cost(groups: int, seconds: float, work: Path) -> None:
    lab = Lab.start(Path(f"/run/zfsperf/bench-{os.getpid()}"), owner="lab")
    target = ZfsFuseTarget(lab)
    spec = {"kind": "random", "size": "64M"}
    plain: list[float] = []
    profiled: list[float] = []
    perf_cpu: list[float] = []
    t0 = time.monotonic()
    try:
        c = corpus_mod.make(target, "random", "64M", seed=1, vdev_dir=work / "corpus")
        pools = PoolManager(target, work / "vd", run_id="bench")
        pool = pools.create(PoolSpec(layout="stripe", vdevs=2, vdev_size=2048 * MIB, prefill=True),
                            fs_properties={"primarycache": "none"})

        def one(with_perf: bool, k: int) -> float:
            ctx = CaseContext(target=target, pool=pool, fields={"corpus": spec, "threads": 1, "duration": f"{seconds}s"},
                              log=proc.NULL_LOG, deadline=time.monotonic() + 600,
                              prepared={corpus_mod.describe_spec(spec): c})
            pr = Profiler(target, work / f"r{k}.perf.data", proc.NULL_LOG) if with_perf else None
            if pr is not None:
                pr.start(ctx.procs)
            try:
                figs = ReceiveWorkload().run(ctx)
            finally:
                if pr is not None:
                    own = pr.measure_own_cpu()
                    if own is not None:
                        perf_cpu.append(own)
                    pr.discard()
            names = target.run(["zfs", "list", "-H", "-o", "name", "-d", "1", pool.name]).stdout.split()
            for n in names:
                if n.startswith(f"{pool.name}/rcv"):
                    target.run(["zfs", "destroy", "-r", n])
            return figs["throughput"]["value"]
        one(False, -1)                                          # a warm-up round, discarded
        for g in range(groups):
            order = ORDER if g % 2 == 0 else tuple(1 - x for x in ORDER)
            got: dict[int, list[float]] = {0: [], 1: []}
            for k, side in enumerate(order):
                got[side].append(one(side == 1, g * 4 + k))
            plain.append(float(np.mean(got[0])))
            profiled.append(float(np.mean(got[1])))
        pools.destroy(pool)
        pools.cleanup_files()
    finally:
        lab.stop()
    est = abstats.paired(plain, profiled)
    assert est is not None
    lo, hi = est.ci if est.ci else (float("nan"), float("nan"))
    print(f"cost: {groups} ABBA groups of {seconds:g} s receive rounds, 64 MiB stream: not profiled median "
          f"{np.median(plain):.1f} MiB/s, profiled {np.median(profiled):.1f} MiB/s")
    print(f"cost: profiled / not {est.ratio:.4f} ({(est.ratio - 1) * 100:+.2f} %), 95 % interval "
          f"{(lo - 1) * 100:+.2f} … {(hi - 1) * 100:+.2f} %, p {est.p:.3f} (sign-flip, {est.n}); "
          f"could see ≥ {est.detectable_pct:.1f} %")
    print(f"cost: perf record's own CPU: median {np.median(perf_cpu):.2f} % of one CPU (max {max(perf_cpu):.2f} %)")
    print(f"cost: machine time {(time.monotonic() - t0) / 60:.1f} min")


def aa(windows: int, root: Path) -> None:
    rf = root / "aa.toml"
    rf.write_text(RUNFILE.format(iterations=6 * windows))
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-o", str(root / "aa"),
                          "--no-history", "-q", "--no-html", "--profile"], capture_output=True, text=True)
    if res.returncode != 0:
        sys.exit(f"the A/A run failed: {res.stdout}\n{res.stderr}")
    d = Path(res.stdout.rstrip().splitlines()[-1].split("\t")[-1])
    run = load_run(d)
    a, b = list(run.cases.values())
    ai, bi = profilediff.iterations_of(d, a), profilediff.iterations_of(d, b)
    alarms = 0
    for w in range(windows):
        its = range(6 * w + 1, 6 * w + 7)
        diff = profilediff.diff(f"window {w + 1}", {i: ai[i] for i in its if i in ai},
                                {i: bi[i] for i in its if i in bi}, paired=True)
        called = [f"{r.name} {r.change:+.1f} pt (p {r.p:.3f})" for r in diff.changed()]
        alarms += bool(called)
        top = diff.rows[0] if diff.rows else None
        print(f"A/A window {w + 1}: {diff.a_samples} vs {diff.b_samples} samples, {diff.tested} functions tested; "
              f"largest change {top.name if top else '-'} {top.change if top else 0:+.1f} pt; "
              f"called changed: {', '.join(called) or 'none'}")
    cpu = [r.detail["profile"].get("perf_cpu_pct") for r in run.records if r.detail.get("profile")]
    print(f"A/A: {alarms} of {windows} windows called a function changed; run {d} took "
          f"{(time.monotonic() - t0) / 60:.1f} min; perf record's own CPU median "
          f"{np.median([c for c in cpu if c is not None]):.2f} % of one CPU")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--groups", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--skip-aa", action="store_true")
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="zfsperf-profile-cost-", dir="/var/tmp"))
    root.mkdir(parents=True, exist_ok=True)
    if not args.skip_cost:
        cost(args.groups, args.seconds, root / "cost")
    if not args.skip_aa:
        aa(args.windows, root)
    print(json.dumps({"kept": str(root)}))


if __name__ == "__main__":
    main()
