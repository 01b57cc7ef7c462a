"""A comparison as text, the same in every format (terminal, Markdown, HTML, JSON's notes): its
rows (table_rows, verdict_text), the lines above them (what was compared by which design,
which set-up differs, which history) and the notes under them."""

from __future__ import annotations

import re

from ....metrics import counts
from ....workloads import headline
from ....workloads.base import SLICE_UNITS
from ....units import ChangeVerdict
from ... import abstats
from ...abstats import ALPHA, needed_per_side
from ...comparison import Comparison, FigureChange, StatusChange
from ...designs import BUILD_TURNS, CENTERS, DESIGN_WORDS, DESIGNS, SETTLED, Design, floor_span


SYMBOL = {ChangeVerdict.BETTER: "better", ChangeVerdict.WORSE: "WORSE", ChangeVerdict.SAME: "= same",
          ChangeVerdict.NOT_SIGNIFICANT: "~ (not significant)", ChangeVerdict.WITHIN_NOISE: "~ (within noise)",
          ChangeVerdict.UNKNOWN_DRIFT: "~ (cannot be judged between separate runs)",
          ChangeVerdict.TOO_FEW: "? too few iterations", ChangeVerdict.NONE: "(not judged)",
          ChangeVerdict.NOT_ALTERNATED: "(sweep point: not an A/B)"}


def verdict_text(ch: FigureChange) -> str:
    """The verdict as people read it: a significant change with its interval, anything else with
    the change this data could have seen."""
    text = SYMBOL[ch.verdict]
    if ch.verdict.decided and ch.ci_pct is not None:
        small = f", smaller than ±{ch.margin_pct:.3g} %" if ch.margin_pct is not None else ""
        return f"{text} ({ch.ci_pct[0]:+.1f} … {ch.ci_pct[1]:+.1f} %){small}"
    if ch.verdict == ChangeVerdict.SAME and ch.ci_pct is not None and ch.margin_pct is not None:
        return f"{text} within ±{ch.margin_pct:.3g} % ({ch.ci_pct[0]:+.1f} … {ch.ci_pct[1]:+.1f} %)"
    if ch.verdict == ChangeVerdict.TOO_FEW:
        pairs = ch.design in (Design.PAIRED, Design.DUET, Design.TURNS)
        return f"{text} (p < {ALPHA:g} needs ≥ {abstats.MIN_BLOCKS if pairs else needed_per_side()} " \
               f"{'pairs' if pairs else 'iterations a side'})"
    if ch.verdict in (ChangeVerdict.NONE, ChangeVerdict.NOT_ALTERNATED):
        return text
    if ch.detectable_pct is not None:
        return f"{text} (could see ≥ {ch.detectable_pct:.1f} %)"
    if ch.floor_pct is not None:
        return f"{text} (separate runs: only beyond {floor_span(ch.floor_pct)} judged)"
    if ch.p is not None and ch.verdict == ChangeVerdict.NOT_SIGNIFICANT and _no_spread(ch):
        return f"{text} (no spread measured)"
    return text


def _no_spread(ch: FigureChange) -> bool:
    """Every iteration of both sides the same (or every pair's ratio): no power can be stated."""
    return len(set(ch.old)) <= 1 and len(set(ch.new)) <= 1 or (
        len(ch.old) == len(ch.new) and len({round(b / a, 12) for a, b in zip(ch.old, ch.new) if a > 0}) <= 1)


COLUMNS = ("case", "figure", "design", "old", "new", "change", "95% CI", "p", "verdict")


def design_lines(cmp: Comparison) -> list[str]:
    """What was compared with what, and by which test: said above every comparison table."""
    out = []
    designs = sorted({ch.design for ch in cmp.changes}, key=list(DESIGNS).index)
    for d in designs:
        tests = sorted({ch.test for ch in cmp.changes if ch.design == d})
        # more than one design: each line names its figures, so that no two lines read as one claim
        which = "" if len(designs) == 1 else f" ({', '.join(dict.fromkeys(ch.figure for ch in cmp.changes if ch.design == d))})"
        if d is Design.TURNS and cmp.base.run.selection.get("build_turns"):
            settled = any(r.detail.get("settle_turns") for r in cmp.base.records)
            text = BUILD_TURNS.format(settled=SETTLED if settled else "")
        elif d is Design.HISTORY:
            text = ("one run a side, judged against earlier runs of identical settings: their run-to-run spread "
                    "(successive differences, with the degrees of freedom its efficiency gives), judged against the "
                    "heavier of Student's t and a null for heavy-tailed (t₃) run medians")
        else:
            text = DESIGNS[d]
        if d is Design.RUNS and cmp.one_side_then_the_other:
            text += (" — one side's runs were all made before the other's: a drift of the machine between them is read "
                     "as the change (alternate the runs, A B A B, or measure both in one interleaved run)")
        out.append(f"design{which}: {text}; test: {_tests_text(tests)}; α = {ALPHA}")
    return out


def _tests_text(tests: list[str]) -> str:
    """The tests of one design, each method once with the counts it ran on ("sign-flip … (exact),
    12 slice pairs of 6 iterations (IOPS and MiB/s) and 6 pairs (the other figures)"), not the
    method repeated for each count."""
    counts: dict[str, list[str]] = {}
    for t in tests:
        m = re.fullmatch(r"(.+), (\d.*)", t)
        method, n = (m.group(1), m.group(2)) if m else (t, "")
        counts.setdefault(method, [])
        if n:
            counts[method].append(n)
    parts = []
    for method, ns in counts.items():
        if len(ns) > 1 and any("slice pairs" in n for n in ns):
            ns = [f"{n} ({' and '.join(SLICE_UNITS)})" if "slice pairs" in n else f"{n} (the other figures)"
                  for n in ns]
        parts.append(f"{method}, {' and '.join(ns)}" if ns else method)
    return ", ".join(parts)


def history_line(cmp: Comparison) -> list[str]:
    """The first line of a comparison judged on history: which store, how many runs."""
    ns = sorted({ch.test.rsplit(", ", 1)[-1] for ch in cmp.changes if ch.design is Design.HISTORY})
    short = sorted({ch.earlier_runs for ch in cmp.changes if ch.earlier_runs is not None
                    and ch.earlier_runs < abstats.MIN_HISTORY_RUNS})
    if not ns and short:            # asked for, and too short: said, never silently another design
        return [f"not judged on history: {' / '.join(map(str, short))} earlier run(s) of identical settings before "
                f"BASE in {cmp.history_store or 'the history store'} (the history design needs "
                f"{abstats.MIN_HISTORY_RUNS}; a run after these is judged on them)"]
    if not ns:
        return []
    return [f"judged on history: {' / '.join(ns)} from {cmp.history_store or 'the history store'}"]


def emulated(cmp: Comparison) -> bool:
    """Some figure compared was taken under QEMU TCG."""
    return any(r.accelerator == "tcg" for r in [*(cmp.bases or [cmp.base]), *(cmp.news or [cmp.new])])


def title(cmp: Comparison) -> str:
    from ....units import EMULATED
    label = f"  {EMULATED}" if emulated(cmp) else ""
    centers = "; ".join(dict.fromkeys(CENTERS[ch.center] for ch in cmp.changes)) or "medians"
    what = f"(old, new: {centers}; change: new / old)"
    if len(cmp.bases) > 1 or len(cmp.news) > 1:
        return f"{len(cmp.bases)} run(s) → {len(cmp.news)} run(s) {what}{label}"
    if cmp.base is cmp.new:
        return f"inside {cmp.base.label} {what}{label}"
    return f"{cmp.base.label} → {cmp.new.label} {what}{label}"


def table_rows(cmp: Comparison, figures: list[str] | None = None) -> list[list[str]]:
    """The comparison's rows as text, the same in every output format (terminal, Markdown, HTML)."""
    from ....units import format_figure
    rows = []
    for ch in cmp.changes:
        if figures and ch.figure not in figures:
            continue
        ci = "-" if ch.ci_pct is None else f"{ch.ci_pct[0]:+.1f} … {ch.ci_pct[1]:+.1f} %"
        p = "-" if ch.p is None else f"{ch.p:.3f}" + ("ᴴ" if ch.exploratory else "")
        rows.append([ch.case, ch.figure, DESIGN_WORDS[ch.design], format_figure(ch.old_median, ch.unit),
                     format_figure(ch.new_median, ch.unit), f"{ch.change_pct:+.1f} %", ci, p, verdict_text(ch)])
    for name, g in cmp.geomeans.items():
        if not figures or name in figures:
            rows.append(["(geomean)", name, "", "", "", f"{(g - 1) * 100:+.1f} %", "", "", ""])
    for f in cmp.failures:
        rows.append([f.case, "(status)", "", StatusChange.text(f.old), StatusChange.text(f.new), "", "", "",
                     "FAILED" + (f": {f.error}" if f.error else "")])
    return rows


def setup_lines(cmp: Comparison) -> list[str]:
    """What differs between the two sides' set-ups, said above every comparison table."""
    return [f"set-up differs: {c.text}" for c in cmp.setup]


def by_chance(cmp: Comparison, figures: list[str] | None = None) -> str | None:
    """Figures other than a case's headline are exploratory (adjust_exploratory): the words say so,
    counting only the figures shown."""
    shown_ = [ch for ch in cmp.changes if ch.exploratory and (not figures or ch.figure in figures)]
    if not shown_:
        return None
    called = sum(ch.verdict.decided for ch in shown_)
    heads = sorted({headline(cmp.workload_of(ch.case)) for ch in shown_} - {""})
    return (f"{len(shown_)} figure(s) shown besides a case's headline are exploratory: their p (ᴴ) is Holm-adjusted "
            f"over the case's other figures ({called} still called), and neither they nor their calls fail the gate; "
            "a case's verdict, and the gate's, is its headline figure" + (f" ({', '.join(heads)})" if heads else ""))


def notes(cmp: Comparison, figures: list[str] | None = None) -> list[str]:
    tcg = (["Note: figures taken under QEMU TCG (software emulation): only relative, CPU-bound differences "
            "mean anything; none of them is a speed"] if emulated(cmp) else [])
    chance = by_chance(cmp, figures)
    found = [f"Finding: {f['case']}: {counts.sentence(f)}" for f in cmp.findings]
    return found + tcg + ([f"Note: {chance}"] if chance else []) + ([f"Note: {n}" for n in sorted({ch.note for ch in cmp.changes if ch.note})]
            + [f"Context (not judged): {c}" for c in cmp.context]
            + [f"Profile (not judged): {d.summary_line()}" for d in cmp.profiles]
            + [f"Latency histogram (not judged): {c.line()}" for c in cmp.classes]
            + [f"Warning: {w}" for w in cmp.warnings] + [f"Unmatched: {u}" for u in cmp.unmatched])
