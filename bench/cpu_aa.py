#!/usr/bin/env python3
"""CPU figures against speed in one A/A (issue 73, 1): the spread of each and what compare sees with it.

Real `zfsperf run`s on the embedded zfs-fuse, the A/A sweep (a user property ZFS ignores, arm = a|b)
taking turns (`duet = "turns"`), so each iteration is a pair and each side's CPU figures are its
own turns' (workloads/turns.py):

  receive  the default suite's receive case (threads=1 unless --threads: a 256 MiB stream, rounds
           back to back for 4 s, pre-filled vdevs, primarycache=none)
  fio      4k random reads of 16 MiB in 1 s slices for 4 s (power.py's fio A/A)

For each workload and figure -- its speed (throughput, or iops), cpu_s_per_gib, zfs_cpu_s_per_gib,
cpu_ms_per_kop -- the sd of a pair's log ratio, the A/A false alarms over windows of --block pairs
(--step apart; compare's paired verdict), the change called with 80 % power when one arm is scaled
(power.py's method), and all pairs as one comparison. A CPU figure that spreads less than the speed
sees a smaller change in the same machine time: the point of measuring CPU per unit of work.
Usage: bench/cpu_aa.py [--iterations 40] [--block 6] [--step 3] [--threads 1] [--keep DIR] [--reuse]
                       [--workloads receive,fio]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import power  # noqa: E402
from power import FIO_AA, arms_and_windows, paired, report, runfile, whole  # noqa: E402

FIGURES = {"receive": ("throughput", "cpu_s_per_gib", "zfs_cpu_s_per_gib", "cpu_ms_per_kop"),
           "fio": ("iops", "cpu_s_per_gib", "zfs_cpu_s_per_gib", "cpu_ms_per_kop")}
AA = '"zfsperf:arm" = ["a", "b"]'           # power.py's A/A sweep: a user property ZFS ignores


def text_of(workload: str, iterations: int, threads: int) -> str:
    if workload == "fio":
        return FIO_AA.format(iterations=iterations)
    return runfile(threads, iterations, AA, duet='"turns"')


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=40, help="iterations (pairs) of each A/A run")
    ap.add_argument("--block", type=int, default=6, help="pairs per comparison window")
    ap.add_argument("--step", type=int, default=3, help="windows start this many pairs apart")
    ap.add_argument("--threads", type=int, default=1, help="the receive case's streams")
    ap.add_argument("--workloads", default="receive,fio", help="of receive, fio")
    ap.add_argument("--keep", help="keep the runs here (default: a temporary directory)")
    ap.add_argument("--reuse", action="store_true", help="with --keep: judge the kept runs again")
    args = ap.parse_args()
    power.REUSE = args.reuse
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zfsperf-cpu-aa-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"A/A in turns, {args.iterations} iterations a workload, windows of {args.block} pairs {args.step} "
          f"apart; runs in {out}", flush=True)
    results: dict[str, dict] = {}
    for wl in args.workloads.split(","):
        if wl not in FIGURES:
            raise SystemExit(f"--workloads: unknown {wl} (receive, fio)")
        d, seconds = power.run(out, f"{wl}-aa", text_of(wl, args.iterations, args.threads))
        print(f"\n{wl}: {seconds / 60:.1f} min", flush=True)
        for fig in FIGURES[wl]:
            a, b, comps = arms_and_windows(d, args.block, args.step, fig)
            res = report(f"  {fig} ({len(a)} pairs)", comps, paired, seconds)
            res["whole"] = whole(a, b)
            results[f"{wl}/{fig}"] = res
    (out / "cpu_aa.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
