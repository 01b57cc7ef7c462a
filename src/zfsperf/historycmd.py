"""`zfsperf history`'s body: the history store's commands and each series' change points (cli.py
parses; this runs it)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import InputError
from .history import analysis
from .history.store import Store, unfit
from .report import fit
from .report.export import html
from .report.model import load_run
from .units import EMULATED


def run(args: argparse.Namespace) -> int:
    """`zfsperf history`: import, accept, remove, runs, or each series' change points (and the gate on them)."""
    if args.action in ("import", "accept", "remove", "runs") or args.dirs:
        return _store_action(args)
    if args.min_segment < 1:
        raise InputError("--min-segment takes a whole number >= 1", field="--min-segment")
    if args.fail_on_change is not None and not args.fail_on_change >= 0:
        raise InputError("--fail-on-change takes a percentage >= 0", field="--fail-on-change")
    with Store.open(args.store, create=False) as store:
        accepted = store.accepted()
        series = [analysis.analyse(s, min_change=args.min_change, min_segment=args.min_segment, accepted=accepted)
                  for s in analysis.load_series(store, args.case, args.figure)]
    if not series:
        print(f"zfsperf: no runs in {store.url}" + (" for that case/figure" if args.case or args.figure else ""),
              file=sys.stderr)
        return 2
    need = 2 * args.min_segment          # a change point has --min-segment runs on each side
    if args.fail_on_change is not None:
        short = [s for s in series if len(s.points) < need]
        if len(short) == len(series):
            raise InputError(f"a change point needs at least {need} runs of a series ({args.min_segment} on each "
                             f"side, --min-segment); the most here is {max(len(s.points) for s in series)}: the "
                             "gate could not fail, so it does not pretend to judge", field="--fail-on-change")
        for s in short:
            print(f"warning: {s.case} / {s.figure}: {len(s.points)} runs, fewer than the {need} a change point "
                  "needs: the gate cannot fail on it", file=sys.stderr)
    if args.json:
        print(json.dumps({"store": store.url, "series": [s.as_dict() for s in series]}, indent=1))
    else:
        import shutil
        from .ui import width
        cols = width(sys.stdout) or shutil.get_terminal_size().columns

        def say(line: str) -> None:                    # history's lines, fitted to the width
            print(fit.wrap(line, cols, "    "))
        for s in series:
            last = s.points[-1]
            tcg = sum(p.run.accelerator == "tcg" for p in s.points)
            say(f"{s.case} / {s.figure}: {len(s.points)} runs, latest {last.value:.4g} {s.unit} "
                  f"({last.run.name}), {len(s.change_points)} change point(s)"
                  + (f"  {EMULATED}" + (f" ({tcg} of {len(s.points)} runs)" if tcg < len(s.points) else "")
                     if tcg else ""))
            for c in s.change_points:
                say(f"  at run {c.index + 1} ({c.run}): {c.before:.4g} -> {c.after:.4g} {s.unit} "
                      f"{c.change_pct:+.1f} %  p {c.p:.4f}  {c.verdict}"
                      + (f"  [{'; '.join(c.what_changed)}]" if c.what_changed else "")
                      + (f"  accepted: {c.accepted}" if c.accepted else ""))
            if s.outliers:
                say(f"  outlier run(s), not a change: {', '.join(s.points[i].run.name for i in s.outliers)}")
    if args.html:
        out = Path(args.html)
        out.write_text(html.history_document(series, store.url), encoding="utf-8")
        print(f"HTML: {out}", file=sys.stderr)
    if args.fail_on_change is not None:
        bad = analysis.fail_on_change(series, args.fail_on_change, args.recent)
        for s, c in bad:
            print(f"change: {s.case} {s.figure} {c.change_pct:+.1f} % at {c.run} (p {c.p:.4f})", file=sys.stderr)
        return 1 if bad else 0
    return 0


def _store_action(args: argparse.Namespace) -> int:
    """history import, accept, remove and runs: the store's rows added, marked, removed, listed."""
    if args.action == "import":
        if not args.dirs:
            raise InputError("history import takes one or more results directories", field="dirs")
        runs = [load_run(d) for d in args.dirs]          # every directory read before anything is written
        for r in runs:
            if unfit(r):
                print(f"{r.path}: not added: {unfit(r)}")
        runs = [r for r in runs if not unfit(r)]
        with Store.open(args.store) as store:
            added = sum(store.add(r) is not None for r in runs)
        print(f"{store.url}: {added} run(s) added, {len(runs) - added} already there")
        return 0
    if args.action == "accept":
        if len(args.dirs) != 1 or not (args.reason or "").strip():
            raise InputError("history accept takes one RUN and --reason TEXT", field="accept")
        with Store.open(args.store, create=False) as store:
            name = store.accept(args.dirs[0], args.reason.strip(), args.case, args.figure)
        print(f"{store.url}: a change at {name} is accepted"
              + (f" for {args.case or 'every case'} / {args.figure or 'every figure'}") + f": {args.reason.strip()}")
        return 0
    if args.action == "remove":
        if len(args.dirs) != 1:
            raise InputError("history remove takes one RUN (its id from `history runs`, name or directory)",
                             field="remove")
        with Store.open(args.store, create=False) as store:
            row = store.remove(args.dirs[0])
        print(f"{store.url}: run {row.id} ({row.path}, {row.host}) removed")
        return 0
    if args.dirs:
        raise InputError("history takes directories only with `import`, `accept` and `remove`", field="dirs")
    if args.action == "runs":
        with Store.open(args.store, create=False) as store:
            rows = list(store.runs().values())
        if args.json:
            print(json.dumps([{"id": r.id, "name": r.name, "path": r.path, "host": r.host, "started": r.started,
                               "identity": r.identity} for r in rows], indent=1))
            return 0
        import datetime as _dt
        print("id\tstarted (UTC)\thost\tpath")
        for r in rows:
            when = _dt.datetime.fromtimestamp(r.started, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S") \
                if r.started else "?"
            print(f"{r.id}\t{when}\t{r.host}\t{r.path}")
        return 0
    raise AssertionError(args.action)
