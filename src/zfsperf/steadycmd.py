"""`zfsperf steady`'s body (cliargs.py parses; this runs it): a recorded series decided again with
the options given, or every verdict of a results directory decided again as the run decided it."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .errors import InputError


def run(args: argparse.Namespace) -> int:
    """`zfsperf steady SERIES|RESULTS`."""
    from . import steady
    given = Path(args.series)
    if given.is_dir() or given.name == "run.json":
        return _steady_again(given if given.is_dir() else given.parent, args.json)
    samples = steady.read_series(args.series)
    if args.interval:
        samples = steady.resample(samples, args.interval)
    c = steady.Criteria(window=args.window or steady.Criteria().window, range=args.range, slope=args.slope,
                        quorum=args.quorum, method=args.method, tolerance=args.tolerance, scale=args.window is None)
    v = steady.decide(samples, c, headline=args.headline)
    c = v.criteria                            # the window it was judged with (scaled to the series)
    if args.json:
        print(json.dumps(v.as_dict(), indent=1))
        return 0
    where = f"steady from sample {v.onset} (first steady at sample {v.first_steady_index})" if v.steady \
        else v.outcome + (f": {v.note}" if v.note else "")
    if c.method == "snia":
        print(f"{args.series}: {v.samples} samples, snia, window {c.window}, R {c.range:g}, S {c.slope:g}, "
              f"quorum {c.quorum:.0%}: {where}")
        print(f"{'metric':<28} {'mean':>14} {'range':>12} {'excursion':>12}  verdict")
        for name, m in sorted(v.metrics.items()):
            if not m.readable:
                print(f"{name:<28} {'-':>14} {'-':>12} {'-':>12}  unreadable (counts as steady)")
                continue
            verdict = "zero (no evidence)" if m.zero else "steady" if m.steady else \
                (("range" if not m.range_ok else "") + (" slope" if not m.slope_ok else "") + " too large").strip()
            print(f"{name:<28} {m.mean:>14.6g} {m.range:>12.6g} {m.excursion:>12.6g}  {verdict}")
        return 0
    print(f"{args.series}: {v.samples} samples, changepoint, shortest steady segment {c.window}, tolerance "
          f"{c.tolerance:.0%}, quorum {c.quorum:.0%}, headline {v.headline or '-'}: {where}")
    print(f"{'metric':<28} {'level':>14} {'class':<16} {'onset':>6}  change points (sample)")
    for name, m in sorted(v.metrics.items()):
        level = "-" if m.mean != m.mean else f"{m.mean:.6g}"
        mark = " (headline)" if name == v.headline else ""
        onset = "-" if m.onset is None else str(m.onset)
        cps = ", ".join(str(i + 1) for i in m.changepoints) or "-"
        back = "" if m.returns is None else f" (a wandering level: crossed its mean {m.returns} times)"
        print(f"{name:<28} {level:>14} {m.kind or '':<16} {onset:>6}  {cps}{mark}{back}")
    return 0


def _steady_again(d: Path, as_json: bool) -> int:
    """`zfsperf steady RESULTS`: every recorded verdict decided again from what the run recorded
    (each iteration's series at its recorded time scale and criteria; each case's iterations by
    its rounds rule) beside the verdict the run recorded. Exit 0 when every one is reproduced."""
    from . import steady
    from .report.model import load_run
    from .steady.rounds import case_verdicts
    from .workloads import WORKLOADS
    run = load_run(d)
    rows = []
    for r in run.records:
        if r.steady is None or not r.series:
            continue
        try:
            raw = steady.read_series(str(run.path / r.series))
        except (OSError, InputError) as e:
            rows.append({"what": f"{r.case} iteration {r.iteration}", "recorded": r.steady.steady, "again": None,
                         "same": False, "note": str(e)})
            continue
        v, _judged = steady.redecide(raw, r.steady)
        same = v.steady == r.steady.steady and (v.onset == r.steady.onset or not v.steady)
        rows.append({"what": f"{r.case} iteration {r.iteration}", "recorded": r.steady.steady, "again": v.steady,
                     "same": same, "note": f"onset {r.steady.onset} / {v.onset}" if not same else ""})
    today = case_verdicts(run.records, {k: w.headline for k, w in WORKLOADS.items()})
    for case, stored in run.run.verdicts.items():
        again = today.get(case) or {}
        same = again.get("steady") == stored.get("steady") and again.get("why") == stored.get("why")
        rows.append({"what": f"{case} (across iterations)", "recorded": stored.get("steady"),
                     "again": again.get("steady"), "same": same,
                     "note": "" if same else f"recorded: {stored.get('why')}; today: {again.get('why')}"})
    if as_json:
        print(json.dumps(rows, indent=1))
    else:
        word = {True: "steady", False: "not steady", None: "unjudged"}
        for row in rows:
            print(f"{row['what']:<48} recorded {word.get(row['recorded'], '?'):<10} again "
                  f"{word.get(row['again'], '?'):<10} {'same' if row['same'] else 'DIFFERENT'}"
                  + (f"  ({row['note']})" if row["note"] else ""))
        if not run.run.verdicts:
            print(f"{d}: no case verdicts were recorded (a run made before zfsperf stored them)")
    return 0 if all(row["same"] for row in rows) else 1
