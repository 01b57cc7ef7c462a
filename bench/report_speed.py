#!/usr/bin/env python3
"""Reading and summarising 1,000 stored runs (goal ≤ 2 s).

Writes N results directories shaped like real ones (run.json and results.jsonl with receive and
fio records: figures, steady verdicts, histograms, class tables), then times `load_run` +
`summary.build` over all of them, and the CSV/JSON renderers, in this process.
Usage: bench/report_speed.py [--runs 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from zfsperf.report import summary
from zfsperf.report.export import Exported, csv as csv_export, json as json_export
from zfsperf.report.model import load_run


def fake_run(d: Path, rng: random.Random) -> None:
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"zfsperf_version": "0.1.0", "target": {
        "implementation": "zfs-fuse", "zfs_version": "zfs-fuse 0.7.0"}, "runfile": {"source": "quick"}}))
    lines = []
    for threads in (1, 2, 4):
        for it in (1, 2, 3):
            tp = rng.gauss(600, 20)
            lines.append({"test": "receive", "case": f"receive threads={threads}", "params": {"threads": threads},
                          "iteration": it, "workload": "receive", "status": "PASS", "figures": {
                              "throughput": {"value": tp, "unit": "MiB/s"},
                              "blocks": {"value": tp * 8, "unit": "blocks/s"},
                              "receive_time": {"value": 0.4, "unit": "s"}},
                          "steady": {"mode": "record", "steady": True, "time_to_steady": 3.0, "failed": []}})
    for it in (1, 2, 3):
        lines.append({"test": "fio", "case": "fio", "params": {}, "iteration": it, "workload": "fio", "status": "PASS",
                      "figures": {"iops": {"value": rng.gauss(9000, 300), "unit": "IOPS"},
                                  "read_lat_p99": {"value": rng.gauss(120, 5), "unit": "us"}},
                      "histograms": {"read": {"title": "Read", "unit": "us",
                                              "buckets": [[8, 0], [16, 300], [32, 900], [64, 40], [128, 0]]}},
                      "class_table": [{"class": "Read", "avg_latency_us": 30.0, "stddev_us": 9.0, "iops": 9000.0,
                                       "throughput_kib_s": 36000.0}]})
    (d / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--keep", help="write the runs here and keep them")
    args = ap.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zfsperf-report-speed-"))
    rng = random.Random(1)
    dirs = [base / f"run{i:05d}" for i in range(args.runs)]
    for d in dirs:
        if not d.exists():
            fake_run(d, rng)
    t0 = time.perf_counter()
    reports = [summary.build(load_run(d)) for d in dirs]
    t1 = time.perf_counter()
    csv_export.render_reports(reports)
    json_export.render(Exported([], reports))
    t2 = time.perf_counter()
    records = sum(sum(sum(c["statuses"].values()) for c in r["cases"]) for r in reports)
    print(f"{args.runs} runs, {records} results: read + summarised in {t1 - t0:.2f} s (goal <= 2 s); "
          f"CSV + JSON rendered in {t2 - t1:.2f} s")
    if not args.keep:
        shutil.rmtree(base)


if __name__ == "__main__":
    main()
