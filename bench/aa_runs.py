#!/usr/bin/env python3
"""Separate runs of identical settings, judged as `zfsperf compare BASE NEW` judges them.

Runs the default suite (`quick`: receive threads=1, 2, 4, each until steady or not, 5-12
iterations; 5 each before 2026-12-04) K times in a row on
the embedded zfs-fuse, then compares every pair of runs with the real CLI (`compare A B --json
--no-history`: one run a side, no history, so the iterations design and its drift floor decide),
and counts the verdicts on each case's headline that call identical settings better or WORSE, and
how many of the runs' case steady-state verdicts are steady (a measured figure, so judged here and
not in a test).
The first three runs' pairs are reported on their own too (the issue's "three consecutive default
runs"). Then the largest A/A difference seen, beside the floor, and a 50 % drop (NEW's records
scaled by 0.5, a copy) that must still be WORSE.

Usage: bench/aa_runs.py [--runs 6] [--keep DIR]      (about 2.3 min per run on 2 cores)
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zfsperf.report.designs import DRIFT_FLOOR_PCT


def zfsperf(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "zfsperf.cli", *args], capture_output=True, text=True)


def headline_changes(a: Path, b: Path) -> list[dict]:
    res = zfsperf("compare", str(a), str(b), "--json", "--no-history")
    if res.returncode not in (0, 1):
        raise SystemExit(f"compare {a} {b} failed: {res.stderr}")
    return [c for c in json.loads(res.stdout)["changes"] if c["figure"] == "throughput"]


def halved(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    lines = []
    for ln in (dst / "results.jsonl").read_text().splitlines():
        r = json.loads(ln)
        for f in (r.get("figures") or {}).values():
            if f.get("unit") == "MiB/s":
                f["value"] *= 0.5
        lines.append(json.dumps(r))
    (dst / "results.jsonl").write_text("\n".join(lines) + "\n")
    return dst


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--keep", help="keep the results here (default: a temporary directory)")
    args = ap.parse_args()
    out = Path(args.keep or tempfile.mkdtemp(prefix="zfsperf-aa-"))
    runs = []
    t0 = time.monotonic()
    for i in range(args.runs):
        res = zfsperf("run", "-q", "-o", str(out / f"run{i}"), "--no-history")
        if res.returncode != 0:
            raise SystemExit(f"run {i} failed:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
        runs.append((out / f"run{i}" / "current").resolve())
        print(f"run {i + 1} of {args.runs} done ({(time.monotonic() - t0) / 60:.1f} min)", flush=True)
    print(f"\n{args.runs} consecutive default runs (quick suite), {(time.monotonic() - t0) / 60:.1f} min of machine "
          f"time; every pair compared as `compare BASE NEW --no-history` (floor: a factor "
          f"{1 + DRIFT_FLOOR_PCT / 100:g})")
    largest = 0.0
    for label, pairs in (("first three runs", list(itertools.combinations(runs[:3], 2))),
                         (f"all {len(runs)} runs", list(itertools.combinations(runs, 2)))):
        calls, n = [], 0
        for a, b in pairs:
            for ch in headline_changes(a, b):
                n += 1
                largest = max(largest, abs(ch["change_pct"]))
                if ch["verdict"] in ("better", "worse"):
                    calls.append(f"{a.name} → {b.name} {ch['case']}: {ch['verdict']} {ch['change_pct']:+.1f} %")
        print(f"  {label}: {len(calls)} false verdicts of {n} case comparisons")
        for c in calls:
            print(f"    {c}")
    for a, b in itertools.combinations(runs, 2):
        for ch in headline_changes(a, b):
            print(f"  {a.name} → {b.name}  {ch['case']:<20} {ch['change_pct']:+6.1f} %  p "
                  f"{ch['p'] if ch['p'] is None else round(ch['p'], 3)}  {ch['verdict']}")
    print(f"  largest A/A difference: {largest:.1f} % (floor: -{(1 - 1 / (1 + DRIFT_FLOOR_PCT / 100)) * 100:.1f} "
          f"… +{DRIFT_FLOOR_PCT:g} %)")
    verdicts = [v for r in runs for v in json.loads((r / "run.json").read_text()).get("verdicts", {}).values()]
    steady = sum(1 for v in verdicts if v.get("steady"))
    print(f"  case steady-state verdicts: {steady} of {len(verdicts)} steady")
    for r in runs:
        for case, v in json.loads((r / "run.json").read_text()).get("verdicts", {}).items():
            if not v.get("steady"):
                print(f"    {r.name} {case}: {'not steady' if v.get('steady') is False else 'unjudged'}: {v.get('why')}")
    drop = halved(runs[-1], out / "halved")
    verdicts = [ch["verdict"] for ch in headline_changes(runs[0], drop)]
    print(f"  a 50 % drop (the last run's throughput halved) against the first run: {verdicts}")


if __name__ == "__main__":
    main()
