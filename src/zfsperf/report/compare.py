"""`zfsperf compare BASE NEW`: the same cases in two results directories, figure by figure.

Per figure: old → new medians, change %, a bootstrap 95 % confidence interval for the change of the
median, a Mann-Whitney U test (no normality assumed; benchstat's choice) and a verdict: better,
worse, or not significant (`~`) — knowing which way is better from the unit (MiB/s, IOPS up;
µs, s down). With too few iterations for the test to ever reach the significance level, it says
so instead of guessing. A geometric-mean row per figure summarises all matched cases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from .model import RunData, direction

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
NOISE_PCT = 1.0          # significant changes smaller than this are "within noise"


@dataclass
class FigureChange:
    case: str
    figure: str
    unit: str
    old: list[float]
    new: list[float]
    old_median: float
    new_median: float
    change_pct: float
    ci_pct: tuple[float, float] | None
    p: float | None
    verdict: str    # "better" | "worse" | "not significant" | "within noise" | "too few iterations" | "no verdict"
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("case", "figure", "unit", "old", "new", "old_median", "new_median",
                                                "change_pct", "ci_pct", "p", "verdict", "note")}


@dataclass
class Comparison:
    base: RunData
    new: RunData
    changes: list[FigureChange] = field(default_factory=list)
    geomeans: dict[str, float] = field(default_factory=dict)     # figure -> geometric mean of new/old ratios
    unmatched: list[str] = field(default_factory=list)

    def regressions(self, pct: float) -> list[FigureChange]:
        return [c for c in self.changes if c.verdict == "worse" and abs(c.change_pct) >= pct]


def min_p(n1: int, n2: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney test can give for these sample sizes."""
    return 2.0 / math.comb(n1 + n2, n1) if n1 and n2 else 1.0


def needed_per_side(alpha: float = ALPHA) -> int:
    n = 2
    while min_p(n, n) >= alpha:
        n += 1
    return n


def _ci(a: np.ndarray, b: np.ndarray) -> tuple[float, float] | None:
    if len(a) < 2 or len(b) < 2 or np.median(a) == 0:
        return None
    res = sps.bootstrap((a, b), lambda x, y, axis=-1: (np.median(y, axis=axis) / np.median(x, axis=axis) - 1) * 100,
                        n_resamples=BOOTSTRAP_RESAMPLES, method="percentile", vectorized=True,
                        random_state=np.random.default_rng(0))
    lo, hi = res.confidence_interval
    return (float(lo), float(hi))


def compare_values(case: str, figure: str, unit: str, old: list[float], new: list[float],
                   noise_pct: float = NOISE_PCT) -> FigureChange:
    a, b = np.asarray(old, float), np.asarray(new, float)
    om, nm = float(np.median(a)), float(np.median(b))
    change = (nm / om - 1) * 100 if om else math.nan
    way = direction(figure, unit)
    if min_p(len(a), len(b)) >= ALPHA:
        need = needed_per_side()
        return FigureChange(case, figure, unit, old, new, om, nm, change, _ci(a, b), None, "too few iterations",
                            f"{len(a)} vs {len(b)} iterations: no test can reach p < {ALPHA} (need ≥ {need} per side)")
    if np.all(a == a[0]) and np.all(b == b[0]) and a[0] == b[0]:
        p = 1.0
    else:
        p = float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)
    if way == 0:
        verdict = "no verdict"
    elif p >= ALPHA:
        verdict = "not significant"
    elif abs(change) < noise_pct:
        verdict = "within noise"
    else:
        verdict = "better" if (nm - om) * way > 0 else "worse"
    return FigureChange(case, figure, unit, old, new, om, nm, change, _ci(a, b), p, verdict)


def compare(base: RunData, new: RunData, noise_pct: float = NOISE_PCT) -> Comparison:
    cmp = Comparison(base, new)
    ratios: dict[str, list[float]] = {}
    for key, bc in base.cases.items():
        nc = new.cases.get(key)
        if nc is None:
            cmp.unmatched.append(f"{bc.case} (only in {base.label})")
            continue
        for name in bc.figure_names():
            old, newv = bc.values(name), nc.values(name)
            if not old or not newv:
                continue
            ch = compare_values(bc.case, name, bc.unit(name), old, newv, noise_pct)
            cmp.changes.append(ch)
            if ch.old_median > 0 and ch.new_median > 0:
                ratios.setdefault(name, []).append(ch.new_median / ch.old_median)
    for key, nc in new.cases.items():
        if key not in base.cases:
            cmp.unmatched.append(f"{nc.case} (only in {new.label})")
    # a geometric-mean row per figure once more than one case contributes to it
    cmp.geomeans = {k: float(np.exp(np.mean(np.log(v)))) for k, v in ratios.items() if len(v) > 1}
    return cmp


SYMBOL = {"better": "better", "worse": "WORSE", "not significant": "~ (not significant)",
          "within noise": "~ (within noise)",
          "too few iterations": "? too few iterations", "no verdict": "(not judged)"}


def render(cmp: Comparison, console: Any, figures: list[str] | None = None) -> None:
    from rich.table import Table
    from ..units import format_figure
    console.print(f"base: {cmp.base.describe()}", highlight=False)
    console.print(f"new:  {cmp.new.describe()}", highlight=False)
    t = Table(title=f"{cmp.base.label} → {cmp.new.label} (medians; Mann-Whitney U, α = {ALPHA})",
              title_justify="left")
    for c in ("case", "figure", "old", "new", "change", "95% CI", "p", "verdict"):
        t.add_column(c, justify="left" if c in ("case", "figure", "verdict") else "right")
    for ch in cmp.changes:
        if figures and ch.figure not in figures:
            continue
        ci = "-" if ch.ci_pct is None else f"{ch.ci_pct[0]:+.1f} … {ch.ci_pct[1]:+.1f} %"
        t.add_row(ch.case, ch.figure, format_figure(ch.old_median, ch.unit), format_figure(ch.new_median, ch.unit),
                  f"{ch.change_pct:+.1f} %", ci, "-" if ch.p is None else f"{ch.p:.3f}",
                  SYMBOL[ch.verdict] + (f" (n={len(ch.old)}+{len(ch.new)})" if ch.p is not None else ""))
    for name, g in cmp.geomeans.items():
        if figures and name not in figures:
            continue
        t.add_row("(geomean)", name, "", "", f"{(g - 1) * 100:+.1f} %", "", "", "")
    console.print(t)
    notes = sorted({ch.note for ch in cmp.changes if ch.note})
    for n in notes:
        console.print(f"Note: {n}", highlight=False)
    for u in cmp.unmatched:
        console.print(f"Unmatched: {u}", highlight=False)
