"""`zfsperf compare`'s body (cli.py parses; this runs it): BASE NEW, BASE... --vs NEW..., or one
run's own cases; the rendering per format; the gate's lines on stderr."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .errors import InputError, did_you_mean, shown
from .history.store import Store
from .report import compare, export, summary
from .report.export.compare import gate as compare_gate, json as compare_json, markdown as compare_md
from .report.export.compare import terminal as compare_terminal
from .report.pairing import ab_pairs
from .workloads import DURATIONS
from .report.model import load_run
from .report.setup import KEYS


def run(args: argparse.Namespace) -> int:
    """`zfsperf compare`: its arguments checked, the runs loaded, compared in the design they allow,
    rendered in the format asked for, and --fail-on-regression's gate with its lines."""
    if args.fail_on_regression is not None and not args.fail_on_regression >= 0:
        raise InputError("--fail-on-regression takes a percentage >= 0", field="--fail-on-regression")
    if args.gate_figure in DURATIONS:
        raise InputError(f"{args.gate_figure} is a duration the runfile bounds, not a measure of speed: "
                         "it is never gated", field="--gate-figure")
    floor = compare.DRIFT_FLOOR_PCT if args.drift_floor is None else args.drift_floor
    if args.margin is not None and not 0 < args.margin < 100:
        raise InputError(f"--margin takes a percentage between 0 and 100, got {args.margin:g}", field="--margin")
    if args.vs:
        bases, news = [load_run(d) for d in args.dirs], [load_run(d) for d in args.vs]
    elif len(args.dirs) == 2:
        bases, news = [load_run(args.dirs[0])], [load_run(args.dirs[1])]
    elif len(args.dirs) == 1:
        bases = news = [load_run(args.dirs[0])]
    else:
        raise InputError("give BASE NEW, or BASE... --vs NEW..., or one run", field="dirs")
    if args.cases and (len(args.dirs) != 1 or args.vs):
        raise InputError("--cases compares the cases of one run", field="--cases")
    runs = [*bases, *news] if bases is not news else bases
    same = {(r.identity) for r in runs}
    if bases is not news and len(same) < len(runs):
        raise InputError("a run is compared with itself (or a copy of it: the same results): give two different "
                         "runs, or one run alone to compare its own cases", field="dirs")
    if bases is news:
        pairs = ab_pairs(bases[0], args.cases)
        cmp = compare.compare_within(bases[0], pairs, args.noise, args.margin)
        _rebuild_floors(cmp, bases[0], pairs)
    else:
        cmp = compare.compare_runs(bases, news, args.noise, history=_noise_history(args, bases + news),
                                   drift_floor_pct=floor,
                                   margin_pct=compare.MARGIN_PCT if args.margin is None else args.margin)
    base, new = cmp.base, cmp.new
    figures = [f.strip() for f in args.figures.split(",")] if args.figures else None
    if figures:
        have = {c.figure for c in cmp.changes}
        unknown = [f for f in figures if f not in have]
        if unknown:
            raise InputError(f"no compared case has the figure {shown(unknown[0])}{did_you_mean(unknown[0], have)} (they have: "
                             f"{', '.join(sorted(have)) or 'none'})", field="--figures")
    if args.format == "md":
        print(compare_md.markdown(cmp, figures), end="")
    elif args.json or args.format == "json":
        print(json.dumps(compare_json.as_json(cmp, figures), indent=1))
    else:
        from .ui import Console
        compare_terminal.render(cmp, Console().rich, figures)
    if args.html:
        runs = [base, new] if base is not new else [base]
        export.EXPORTERS["html"].write(export.Exported.of(runs, [summary.build(r) for r in runs], cmp),
                                          Path(args.html))
    if not cmp.changes and not cmp.failures:
        print("zfsperf: no case matches between the two directories", file=sys.stderr)
        return 2
    return _gate(args, cmp) if args.fail_on_regression is not None else 0


def _rebuild_floors(cmp: Any, run: Any, pairs: list[Any]) -> None:
    """A build A/B's verdicts held to the rebuild floors kept so far (or, of an A/A′ of one source
    built twice, the floors it measured), each floor said once in the comparison's context."""
    if not run.run.builds:
        return
    from .buildab import build_floors
    for line in build_floors(run, cmp, pairs):
        if not any(ch.note and line in ch.note for ch in cmp.changes) and line not in cmp.context:
            cmp.context.append(line)


def _allowed_setup_changes(value: str | None) -> set[str]:
    """--allow-setup-change: bare for every kind, or KEY,KEY,... (report/setup.py KEYS)."""
    if value is None:
        return set()
    if value == "all":
        return set(KEYS)
    keys = {k.strip() for k in value.split(",") if k.strip()}
    unknown = sorted(keys - set(KEYS))
    if unknown:
        raise InputError(f"unknown set-up {shown(unknown[0])} (expected {', '.join(KEYS)} or nothing for all)",
                         field="--allow-setup-change")
    return keys


def _noise_history(args: argparse.Namespace, runs: list):
    """(run, case, figure) -> medians of identical settings from runs made before the earliest
    compared run, from the history store (the compared runs and their copies left out), or None
    when there is no store to read."""
    if args.no_history:
        return None
    # only a store that was asked for: --store, or the store the compared runs were added to (their
    # run.json history_store), never the machine's default found lying about
    url = args.store or next((r.run.history_store for r in runs if r.run.history_store
                              and not r.run.history_store.startswith("postgres")), None)
    if not url:
        return None
    if not args.store and not Path(url).is_file():
        return None
    store = Store.open(url, create=False)
    cache: dict = {}

    def earlier(run, case: str, figure: str) -> list[float]:
        key = (str(run.path), case, figure)
        if key not in cache:
            cache[key] = store.same_settings_medians(run, case, figure, compared=runs)
        return cache[key]
    earlier.store_url = store.url            # type: ignore[attr-defined] - named in compare's design line
    return earlier


def _gate(args: argparse.Namespace, cmp: Any) -> int:
    """--fail-on-regression: refused across a changed set-up (exit 2); else each regression and
    what the gate cannot see, on stderr; 1 when a case got worse or stopped passing."""
    refused = compare_gate.refused_lines(cmp, _allowed_setup_changes(args.allow_setup_change))
    for line in refused:
        print(line, file=sys.stderr)
    if refused:
        return 2
    gate = cmp.gate(args.fail_on_regression, args.gate_figure)
    if args.gate_figure and not gate.judged:
        raise InputError(f"no case has the figure {shown(args.gate_figure)} to gate on", field="--gate-figure")
    for line in compare_gate.lines(cmp, gate, args.fail_on_regression):
        print(line, file=sys.stderr)
    if gate.regressions or cmp.failures:
        return 1
    if gate.cannot_fail:                  # a pass that no change could have turned into a failure
        print(compare_gate.cannot_fail_line(gate), file=sys.stderr)
        return 2
    return 0
