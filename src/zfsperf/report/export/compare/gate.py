"""The CI gate's lines (compare --fail-on-regression, on stderr): what it judges, each regression,
and what it cannot see; and the lines that refuse it across a changed set-up."""

from __future__ import annotations

from ....units import ChangeVerdict
from ...comparison import Comparison, Gate, StatusChange


def refused_lines(cmp: Comparison, allowed: set[str]) -> list[str]:
    """Each set-up difference the gate may not judge across, and why it does not (empty: none)."""
    refused = [c for c in cmp.setup if c.key not in allowed]
    if not refused:
        return []
    return [f"zfsperf: set-up differs: {c.text}" for c in refused] + [
        "zfsperf: the gate does not judge across a changed set-up: a difference there is not the change under "
        "test (--allow-setup-change " + ",".join(sorted({c.key for c in refused})) + " if it is)"]


def lines(cmp: Comparison, gate: Gate, pct: float) -> list[str]:
    """What the gate judged, every regression (a figure worse by pct % or more, a case that stopped
    passing), and the cases it could not judge (too few iterations, a change within the drift floor)."""
    out = [f"gate: {gate.describe()}"]
    if gate.blind:
        out.append(f"warning: the gate cannot fail on {len(gate.blind)} of {len(gate.judged)} cases: with "
                   f"{len(gate.blind[0].old)} vs {len(gate.blind[0].new)} iterations the rank test's smallest p is "
                   f"above Holm's first threshold ({gate.alpha:g}/{len(gate.judged)}); run ≥ {gate.needed} "
                   "iterations a side (-I), several runs a side (--vs) or keep a history")
    out += [f"regression: {c.case} {c.figure} {c.change_pct:+.1f} % (p = {c.p:.3f})" for c in gate.regressions]
    out += [f"regression: {f.case} {StatusChange.text(f.old)} -> {StatusChange.text(f.new)}"   # a case that
            + (f": {f.error}" if f.error else "") for f in cmp.failures]                     # stopped passing
    unjudged = sorted({c.case for c in gate.judged if c.verdict == ChangeVerdict.TOO_FEW})
    if unjudged:
        out.append(f"warning: too few iterations to judge {', '.join(unjudged)}: the gate cannot see a "
                   "regression there")
    drift = sorted({c.case for c in gate.judged if c.verdict == ChangeVerdict.UNKNOWN_DRIFT
                    and abs(c.change_pct) >= pct})
    if drift:
        out.append(f"warning: {', '.join(drift)}: a change that cannot be judged between separate runs does not "
                   "fail the gate; compare several runs a side (--vs) or keep a history to judge it")
    return out


def cannot_fail_line(gate: Gate) -> str:
    """Why no figure can fail the gate, by verdict (exit 2: a gate that cannot fail is no gate)."""
    counts: dict[str, int] = {}
    blind = {id(c) for c in gate.blind}
    for c in gate.judged:
        why = "too few iterations for Holm's first threshold" if id(c) in blind else str(c.verdict)
        counts[why] = counts.get(why, 0) + 1
    said = ", ".join(f"{n} comparison{'s' if n > 1 else ''} {why}" for why, n in counts.items()) or "no comparison"
    return (f"zfsperf: the gate cannot fail on any figure here: {said}. Gate an A/B: an interleaved run "
            "(--interleave, ≥ 6 blocks), a duet, several runs a side (--vs) or a history")
