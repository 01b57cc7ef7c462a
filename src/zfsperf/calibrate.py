"""`zfsperf calibrate`: this machine's run-to-run noise, so that two separate runs can be judged.

One run a side says nothing about how far two runs of identical settings land apart: that is the
machine's, the target's and the workload's, never a constant. calibrate makes N identical runs of a
runfile (or, with --from-store, reads the runs the history store already holds) and adds them to
the store, keyed by what makes runs identical there (host, ZFS implementation and version, runfile
text, -D defines); compare then judges a later BASE NEW of those settings against that noise (the
history design: the runs' successive-difference sd, its degrees of freedom, a heavy-tailed null)
and says so on its first line. For each case's headline it prints what two separate runs can see
with 80 % power.
"""

from __future__ import annotations

import argparse
import math
from typing import Callable

import numpy as np

from .errors import InputError
from .history.store import Store, default_url
from .report import abstats
from .report.model import load_run
from .workloads import headline


def noise_table(store: Store, run_dirs: list[str]) -> list[dict]:
    """Per case of the newest run: its headline's run-to-run spread over the store's runs of identical
    settings (the newest run's included) and what two separate runs of it can see."""
    newest = load_run(run_dirs[-1])
    rows = []
    for cd in newest.cases.values():
        fig = headline(cd.workload)
        if not fig or not cd.values(fig):
            continue
        earlier = store.same_settings_medians(newest, cd.case, fig, compared=[])
        meds = earlier + [float(np.median(cd.values(fig)))]
        est = abstats.between_run_sd(meds)
        sd, df = est if est is not None else (None, None)
        seen = abstats.separate_runs_detectable(sd, len(meds), df) if sd is not None and df is not None else None
        rows.append({"case": cd.case, "figure": fig, "unit": cd.unit(fig), "runs": len(meds),
                     "sd_pct": None if sd is None else math.expm1(sd) * 100, "df": df, "separate_runs_see_pct": seen})
    return rows


def run(args: argparse.Namespace, run_once: Callable[[list[str]], tuple[int, str | None]]) -> int:
    """run_once(argv) runs `zfsperf run ARGV` and returns its exit status and results directory."""
    if args.runs < abstats.MIN_HISTORY_RUNS and not args.from_store:
        raise InputError(f"--runs takes a whole number >= {abstats.MIN_HISTORY_RUNS} (the history design needs "
                         f"{abstats.MIN_HISTORY_RUNS} earlier runs of identical settings)", field="--runs")
    url = args.store or default_url()
    argv = ["-r", args.runfile, *sum((["-D", d] for d in args.define), []), "--store", url, "-o", args.outdir,
            *(["-I", str(args.iterations)] if args.iterations else []), *(["-s", args.vdev_size] if args.vdev_size else []),
            *(["--target", args.target] if args.target else [])]
    dirs: list[str] = []
    if args.from_store:
        if not args.dirs:
            raise InputError("--from-store needs one results directory of the settings to calibrate", field="dirs")
        dirs = list(args.dirs)
    else:
        for i in range(args.runs):
            print(f"calibrate: run {i + 1} of {args.runs}", flush=True)
            code, d = run_once(argv)
            if code != 0 or d is None:
                print(f"calibrate: run {i + 1} ended with exit status {code}: nothing is calibrated from it")
                return code or 1
            dirs.append(d)
    with Store.open(url, create=False) as store:
        rows = noise_table(store, dirs)
    print(f"run-to-run noise of identical settings in {store.url}: compare BASE NEW of these settings is judged "
          f"against it (the history design) when BASE has at least {abstats.MIN_HISTORY_RUNS} of these runs "
          "before it: a later run, or the last of these against another; compare says which on its first line")
    for r in rows:
        sd = "-" if r["sd_pct"] is None else f"{r['sd_pct']:.2f} %"
        seen = ("needs ≥ %d runs" % abstats.MIN_HISTORY_RUNS if r["separate_runs_see_pct"] is None
                else f"≥ {r['separate_runs_see_pct']:.1f} %")
        print(f"  {r['case']} / {r['figure']}: {r['runs']} runs, a run's sd {sd}, two separate runs see {seen}")
    return 0
