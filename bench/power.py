#!/usr/bin/env python3
"""How much `zfsperf compare` can be trusted at the default iteration count, from real runs.

Runs the default suite's receive case (threads=1 unless --threads) for many iterations on the
embedded zfs-fuse, in one real `zfsperf run`, then cuts the sequence into consecutive blocks of
the default iteration count (5): blocks taken at different times carry the machine's real drift.
- A/A false-alarm rate: every pair of blocks compared as BASE vs NEW with compare's own test;
  the share called significant (an honest compare says ~5 % or less at alpha 0.05).
- Power: NEW's values scaled by (1 + d); the smallest d for which compare calls at least 80 % of
  the block pairs significant is the smallest change it reliably sees (goal <= 3 % here).
- The same two figures for an interleaved A/B (`zfsperf run --interleave`): in every window of
  2 x block consecutive iterations, the even ones are BASE and the odd ones NEW, so drift over the
  run falls on both sides alike.
Usage: bench/power.py [--iterations 40] [--threads 1] [--block 5] [--results DIR]
  (--results re-analyses an earlier run's directory instead of running)
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from zfsperf.report.compare import ALPHA, compare_values
from zfsperf.runfile import resolve_path


def measure(iterations: int, threads: int, out: Path) -> Path:
    text = resolve_path("quick")[1]
    text = text.replace("threads = [1, 2, 4]", f"threads = {threads}").replace("iterations = 5",
                                                                              f"iterations = {iterations}")
    rf = out / "power.toml"
    rf.write_text(text)
    res = subprocess.run([sys.executable, "-m", "zfsperf.cli", "run", "-r", str(rf), "-o", str(out / "res")],
                         text=True)
    if res.returncode != 0:
        raise SystemExit("the measuring run failed")
    return (out / "res" / "current").resolve()


def values(d: Path) -> list[float]:
    out = []
    for line in (d / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r["status"] == "PASS" and r["iteration"] >= 1:
            out.append(r["figures"]["throughput"]["value"])
    return out


def significant(a: np.ndarray, b: np.ndarray) -> bool:
    ch = compare_values("c", "throughput", "MiB/s", list(a), list(b))
    return ch.p is not None and ch.p < ALPHA


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--block", type=int, default=5)
    ap.add_argument("--results")
    args = ap.parse_args()
    d = Path(args.results) if args.results else measure(args.iterations, args.threads,
                                                        Path(tempfile.mkdtemp(prefix="zfsperf-power-")))
    v = np.array(values(d))
    blocks = [v[i:i + args.block] for i in range(0, len(v) - args.block + 1, args.block)]
    pairs = list(itertools.combinations(range(len(blocks)), 2))
    cv = 100 * v.std(ddof=1) / v.mean()
    print(f"{len(v)} real iterations of receive threads={args.threads} on zfs-fuse ({d}): mean {v.mean():.1f} MiB/s, "
          f"CV {cv:.1f} %; {len(blocks)} blocks of {args.block}, {len(pairs)} block pairs")
    consecutive = [(blocks[i], blocks[j]) for i, j in pairs]
    b2 = 2 * args.block
    interleaved = [(v[s:s + b2:2], v[s + 1:s + b2:2]) for s in range(0, len(v) - b2 + 1)]
    for title, comps in (("consecutive runs (A then B)", consecutive),
                         (f"interleaved A/B ({len(interleaved)} overlapping windows of {b2})", interleaved)):
        fa = sum(significant(a, b) for a, b in comps)
        print(f"{title}: A/A false alarms {fa} of {len(comps)} ({100 * fa / len(comps):.0f} %) at alpha {ALPHA}")
        found = None
        for pct in [0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50]:
            hits = sum(significant(a, b * (1 + pct / 100)) for a, b in comps)
            hits += sum(significant(b, a * (1 + pct / 100)) for a, b in comps)
            power = hits / (2 * len(comps))
            print(f"  change +{pct:>4g} %: called significant in {100 * power:3.0f} %")
            if power >= 0.8 and found is None:
                found = pct
        print(f"  smallest change called significant with >= 80 % power at {args.block} iterations a side: "
              + (f"{found:g} %" if found is not None else "more than 50 %") + " (goal <= 3 %)")

if __name__ == "__main__":
    main()
