#!/usr/bin/env python3
"""A module tunable taking turns in the OpenZFS guest: how often an A/A is called, and what change
the design sees with 80 % power, in what machine time (issue 37, item 5).

One `zfsperf guest run -- run` of a receive test of a small-records stream in `duet = "turns"`
over an A/A sweep of a runtime tunable: `zfs_recv_write_batch_size = ["1M", "1048576"]`, one value
written two ways. Before every round the tunable is written and read back, exactly as for a real
A/B (128K against 1M), so the A/A pays every cost a tunable A/B pays (since 9bc253c: before it, two
values equal once normalised wrote nothing between rounds, and the first A/A of 2026-11-27 in
docs/benchmarks.md ran that way; the second has the writes). The run's iterations are cut
into disjoint windows of --block iterations (independent comparisons); each window is judged
with compare's paired test (the exact sign-flip test on the iterations' A/B ratios), as is and
with one arm scaled by 1 + d, as bench/power.py does for the zfs-fuse designs. Under TCG the
figures are relative CPU-bound differences, not speeds.

With --values 128K,1M it is the real A/B instead (the receive-batching PR's question): compare's
own verdict on the whole run, and how many disjoint windows called it.

Usage: bench/tunable_turns.py [--iterations 120] [--block 6] [--size 8M] [--duration 4s]
                              [--values 1M,1048576] [--keep DIR] [--reuse]
Needs the guest's build cached (`zfsperf guest up` once); it boots and stops the guest itself
when none is running.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from power import ALPHA, arms_and_windows, paired, report, three_way, whole  # noqa: E402
from zfsperf.report import abstats  # noqa: E402
from zfsperf.units import parse_size  # noqa: E402

RUNFILE = """
[defaults]
iterations = {iterations}
timeout = "20m"
[defaults.pool]
vdevs = 1
vdev_size = "1G"
[defaults.dataset]
primarycache = "none"
[[test]]
name = "recv-aa"
workload = "receive"
corpus = {{ kind = "small-records", size = "{size}" }}
threads = 1
duration = "{duration}"
duet = "turns"
steady = {{ mode = "off" }}
tunables = {{ zfs_recv_write_batch_size = ["{a}", "{b}"] }}
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=120)
    ap.add_argument("--block", type=int, default=6, help="iterations (pairs) per comparison window")
    ap.add_argument("--size", default="8M", help="the small-records stream")
    ap.add_argument("--duration", default="4s", help="receive rounds per iteration last this long")
    ap.add_argument("--values", default="1M,1048576",
                    help="zfs_recv_write_batch_size's two values, A,B (default: one value written two ways, an A/A)")
    ap.add_argument("--keep", help="keep the results here (default: a temporary directory)")
    ap.add_argument("--reuse", action="store_true", help="with --keep: judge the run kept there again")
    args = ap.parse_args()
    va, vb = args.values.split(",")
    aa = parse_size(va) == parse_size(vb)          # one value, written two ways
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zfsperf-tunable-turns-"))
    out.mkdir(parents=True, exist_ok=True)
    kept = out / "aa" / "current"
    if args.reuse and (kept / "results.jsonl").exists():
        seconds = float((out / "seconds").read_text())
    else:
        rf = out / "aa.toml"
        rf.write_text(RUNFILE.format(iterations=args.iterations, size=args.size, duration=args.duration, a=va, b=vb))
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "guest", "run", "--", "run", "-q", "-r", str(rf),
                              "-o", str(out / "aa"), "--no-history"], capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if res.returncode != 0:
            raise SystemExit(f"the measuring run failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
        (out / "seconds").write_text(f"{seconds:.1f}")
    d = kept.resolve()
    a, b, windows = arms_and_windows(d, args.block, args.block)          # step = block: disjoint windows
    print(f"OpenZFS guest, receive of a {args.size} small-records stream in turns, rounds for {args.duration} an "
          f"iteration, zfs_recv_write_batch_size {va} against {vb}"
          f"{' (one value, written two ways)' if aa else ''}: {len(a)} "
          f"iterations, {len(windows)} disjoint windows of {args.block}; results in {d}")
    per_window = seconds * args.block / max(1, len(a))
    if aa:
        report(f"tunable turns, {args.block} iterations", windows, paired, per_window * len(windows))
        three_way(windows)
        whole(a, b)
    else:                                 # a real A/B: how many windows of --block iterations call it
        ests = [abstats.paired(list(x), list(y)) for x, y in windows]
        called = [e for e in ests if e is not None and e.p is not None and e.p < ALPHA]
        up = sum(1 for e in called if e.ratio > 1)
        print(f"  windows of {args.block} iterations that call it: {len(called)} of {len(ests)} "
              f"({up} B faster, {len(called) - up} B slower)", flush=True)
        whole(a, b)
        res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "compare", str(d)], capture_output=True, text=True)
        print("zfsperf compare (the whole run):")
        print("\n".join(f"  {ln}" for ln in res.stdout.splitlines() if "throughput" in ln or "turns" in ln))
    print(f"machine time: {seconds / 60:.1f} min in all, {per_window / 60:.1f} min a window of {args.block}")


if __name__ == "__main__":
    main()
