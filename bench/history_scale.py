#!/usr/bin/env python3
"""How fast is the history store? Import N results directories (default 10,000) into a fresh
SQLite store and analyse every series for change points, timed separately; goal: both
together ≤ 5 s on this machine. The directories are written first (untimed): each a run.json and a
results.jsonl of one receive case with 3 iterations and 5 figures, throughput stepping down 20 %
at 60 % of the history, so the analysis has one change point to find in each series.
Usage: bench/history_scale.py [--runs 10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from zfsperf.history import analysis
from zfsperf.history.store import Store
from zfsperf.report.model import load_run


def make(root: Path, n: int) -> list[Path]:
    rng = np.random.default_rng(5)
    dirs = []
    t0 = 1.7e9
    for i in range(n):
        d = root / f"{i:06d}"
        (d / "logs").mkdir(parents=True)
        level = 500.0 if i < 0.6 * n else 400.0
        info = {"format": 2, "zfsperf_version": "0.1.0", "host": "bench", "kernel": "6.1", "start": t0 + 60 * i,
                "target": {"implementation": "zfs-fuse", "zfs_version": "zfs-fuse 0.7.0"},
                "runfile": {"source": "quick", "text": "x"}, "selection": {"defines": {}},
                "tunables": {"before": {}, "after": {}}}
        (d / "run.json").write_text(json.dumps(info))
        lines = []
        for it in (1, 2, 3):
            v = level * (1 + rng.normal(0, 0.05))
            figs = {"throughput": {"value": v, "unit": "MiB/s"}, "blocks": {"value": v * 8, "unit": "blocks/s"},
                    "per_stream": {"value": v, "unit": "MiB/s"}, "receive_time": {"value": 256 / v, "unit": "s"},
                    "bytes": {"value": 268435456, "unit": "B"}}
            lines.append(json.dumps({"test": "receive", "case": "receive threads=1", "params": {"threads": 1},
                                     "iteration": it, "workload": "receive", "status": "PASS", "figures": figs,
                                     "error": None, "duration": 1.0}))
        (d / "results.jsonl").write_text("\n".join(lines) + "\n")
        dirs.append(d)
    return dirs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--keep")
    args = ap.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zfsperf-history-bench-"))
    try:
        t = time.perf_counter()
        dirs = make(root / "runs", args.runs)
        print(f"wrote {len(dirs)} results directories in {time.perf_counter() - t:.1f} s (untimed)")
        t0 = time.perf_counter()
        with Store.open(str(root / "h.sqlite")) as store:
            for d in dirs:
                store.add(load_run(d))
        t1 = time.perf_counter()
        with Store.open(str(root / "h.sqlite")) as store:
            series = [analysis.analyse(s) for s in analysis.load_series(store)]
        t2 = time.perf_counter()
        cps = {f"{s.case}/{s.figure}": [(c.index, round(c.change_pct, 1)) for c in s.change_points] for s in series}
        print(f"import: {t1 - t0:.2f} s ({args.runs / (t1 - t0):,.0f} runs/s)")
        print(f"analyse: {t2 - t1:.2f} s for {len(series)} series of {args.runs} runs (E-Divisive in windows of "
              f"{analysis.WINDOW})")
        print(f"total: {t2 - t0:.2f} s (goal <= 5 s) -> {'met' if t2 - t0 <= 5 else 'MISSED'}")
        print(f"change points found (true one at run {int(0.6 * args.runs)}): {cps}")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
