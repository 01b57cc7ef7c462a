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

With --design blocks the same A/A runs in interleaved blocks instead (`ab = true`: each block one
case a value in an order drawn from the run's seed, each case on a fresh pool, the tunable written
before the pool and restored after it; paired by block), the design a tunable gets without turns.

With --values 128K,1M it is the real A/B instead (the receive-batching PR's question): compare's
own verdict on the whole run, and how many disjoint windows called it.

With --workload starvation it is the starvation mix instead (the built-in `starvation-tuned` test
in turns, at the sizes the README's guest runs use: the reader 16 MiB, the gzip-9 writer 32 MiB,
3 s a side, 2 vdevs of 256 MiB) over an A/A of `zfs_vdev_async_write_max_active = [10, "10B"]`
(ten, spelled two ways, written and read back before every turn), judged on the reader's loaded
p99, the p99 ratio and the writer. A run of that mix takes about 40 s an iteration, so it is
measured in chunks: each `--chunk NAME` is one run kept under --keep DIR, cut into its own
disjoint windows, and the windows of every chunk kept there are judged together.

Usage: bench/tunable_turns.py [--workload receive|starvation] [--design turns|blocks] [--iterations 120] [--block 6]
                              [--size 8M] [--duration 4s] [--values 1M,1048576] [--keep DIR]
                              [--chunk NAME] [--reuse]
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
import numpy as np  # noqa: E402
from power import arms_and_windows, by_arm, paired, report, three_way, verdict, whole  # noqa: E402
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
{design}
steady = {{ mode = "off" }}
tunables = {{ zfs_recv_write_batch_size = ["{a}", "{b}"] }}
"""
# how the two values alternate: turns within one pool, or (--design blocks) interleaved blocks, each
# case on a fresh pool with its value written before the pool and restored after it
DESIGNS = {"turns": 'duet = "turns"', "blocks": "ab = true"}

# the built-in starvation-tuned test (runfiles/starvation.toml) at the guest runs' sizes
STARVATION = """
[defaults]
iterations = {iterations}
timeout = "20m"
[defaults.pool]
vdevs = 2
vdev_size = "256M"
[[test]]
name = "starvation-aa"
workload = "mixed"
runtime = "3s"
reader = {{ rw = "randread", bs = "128k", size = "16M" }}
writer = {{ rw = "write", bs = "1M", size = "32M", compress_percentage = 66 }}
writer_dataset = {{ compression = "gzip-9" }}
tunables = {{ zfs_vdev_async_write_max_active = [{a}, "{b}"] }}
duet = "turns"
"""
STARVATION_FIGURES = ("reader_loaded_p99", "read_p99_ratio", "writer_iops")


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
    ap.add_argument("--workload", choices=("receive", "starvation"), default="receive")
    ap.add_argument("--design", choices=tuple(DESIGNS), default="turns",
                    help="--workload receive: the values take turns, or alternate in interleaved blocks")
    ap.add_argument("--chunk", help="--workload starvation: run one more chunk of --iterations, kept as "
                                    "--keep DIR/NAME (without it: judge the chunks kept there)")
    args = ap.parse_args()
    if args.workload == "starvation":
        if not args.keep:
            ap.error("--workload starvation needs --keep DIR (its chunks are kept and judged together)")
        starvation(Path(args.keep), args.chunk, args.iterations, args.block)
        return
    va, vb = args.values.split(",")
    aa = parse_size(va) == parse_size(vb)          # one value, written two ways
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zfsperf-tunable-turns-"))
    out.mkdir(parents=True, exist_ok=True)
    kept = out / "aa" / "current"
    if args.reuse and (kept / "results.jsonl").exists():
        seconds = float((out / "seconds").read_text())
    else:
        rf = out / "aa.toml"
        rf.write_text(RUNFILE.format(iterations=args.iterations, size=args.size, duration=args.duration, a=va, b=vb,
                                     design=DESIGNS[args.design]))
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "guest", "run", "--", "run", "-q", "-r", str(rf),
                              "-o", str(out / "aa"), "--no-history"], capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if res.returncode != 0:
            raise SystemExit(f"the measuring run failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
        (out / "seconds").write_text(f"{seconds:.1f}")
    d = kept.resolve()
    a, b, windows = arms_and_windows(d, args.block, args.block)          # step = block: disjoint windows
    unit = "iterations" if args.design == "turns" else "blocks"
    print(f"OpenZFS guest, receive of a {args.size} small-records stream "
          f"{'in turns' if args.design == 'turns' else 'in interleaved blocks'}, rounds for {args.duration} "
          f"{'an iteration' if args.design == 'turns' else 'a case'}, zfs_recv_write_batch_size {va} against {vb}"
          f"{' (one value, written two ways)' if aa else ''}: {len(a)} "
          f"{unit}, {len(windows)} disjoint windows of {args.block}; results in {d}")
    per_window = seconds * args.block / max(1, len(a))
    if aa:
        report(f"tunable {args.design}, {args.block} {unit}", windows, paired, per_window * len(windows))
        three_way(windows)
        whole(a, b)
    else:                                 # a real A/B: how many windows of --block iterations call it
        calls = [v for v in (verdict(x, y) for x, y in windows) if v in ("better", "worse")]
        up = calls.count("better")
        print(f"  windows of {args.block} iterations that call it: {len(calls)} of {len(windows)} "
              f"({up} B faster, {len(calls) - up} B slower)", flush=True)
        whole(a, b)
        res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "compare", str(d)], capture_output=True, text=True)
        print("zfsperf compare (the whole run):")
        print("\n".join(f"  {ln}" for ln in res.stdout.splitlines() if "throughput" in ln or "turns" in ln))
    print(f"machine time: {seconds / 60:.1f} min in all, {per_window / 60:.1f} min a window of {args.block}")


def starvation(out: Path, chunk: str | None, iterations: int, block: int) -> None:
    """Run one more chunk of the starvation A/A (when named), then judge the disjoint windows of
    every chunk kept in out together, figure by figure."""
    out.mkdir(parents=True, exist_ok=True)
    if chunk:
        if (out / chunk / "current" / "results.jsonl").exists():
            raise SystemExit(f"{out / chunk} exists: name another chunk")
        rf = out / f"{chunk}.toml"
        rf.write_text(STARVATION.format(iterations=iterations, a=10, b="10B"))
        t0 = time.monotonic()
        res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "guest", "run", "--", "run", "-q", "-r", str(rf),
                              "-o", str(out / chunk), "--no-history"], capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if res.returncode != 0:
            raise SystemExit(f"the measuring run failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
        (out / f"{chunk}.seconds").write_text(f"{seconds:.1f}")
    chunks = sorted(p.parent.parent for p in out.glob("*/current/results.jsonl"))
    if not chunks:
        raise SystemExit(f"no chunk kept in {out}: run one with --chunk NAME")
    seconds = sum(float((out / f"{c.name}.seconds").read_text()) for c in chunks)
    print(f"OpenZFS guest, the starvation mix in turns (reader 16 MiB, gzip-9 writer 32 MiB, 3 s a side), "
          f"zfs_vdev_async_write_max_active 10 against \"10B\" (one value, written two ways): "
          f"{len(chunks)} chunks ({', '.join(c.name for c in chunks)}) in {out}", flush=True)
    pairs = 0
    for figure in STARVATION_FIGURES:
        a_all: list[float] = []
        b_all: list[float] = []
        windows: list[tuple[np.ndarray, np.ndarray]] = []
        for c in chunks:
            arms = [v for _k, v in sorted(by_arm((c / "current").resolve(), figure).items())]
            its = sorted(set(arms[0]) & set(arms[1]))
            a = np.array([arms[0][i] for i in its])
            b = np.array([arms[1][i] for i in its])
            a_all += list(a)
            b_all += list(b)
            windows += [(a[k:k + block], b[k:k + block]) for k in range(0, len(a) - block + 1, block)]
        pairs = len(a_all)
        report(f"{figure}, {block} iterations", windows, paired, seconds * block * len(windows) / max(1, pairs))
        three_way(windows)
        whole(np.array(a_all), np.array(b_all))
    print(f"machine time: {seconds / 60:.1f} min in all for {pairs} iterations, "
          f"{seconds * block / max(1, pairs) / 60:.1f} min a window of {block}", flush=True)


if __name__ == "__main__":
    main()
