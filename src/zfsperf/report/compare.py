"""`zfsperf compare BASE NEW`: the same cases in two results directories, figure by figure.

Per figure: old → new medians, change %, a distribution-free 95 % confidence interval for the
ratio new/old (the Mann-Whitney test inverted on log values: Bauer 1972 / Hodges-Lehmann; shown
only where the sample sizes allow a 95 % interval at all, never a bootstrap that undercovers at
n = 2-3), a Mann-Whitney U test (no normality assumed; benchstat's choice; exact permutation
p-value for small samples, ties included) and a verdict: better, worse, or not significant (`~`)
— knowing which way is better from the unit (MiB/s, IOPS up; µs, s down). With too few
iterations for the test to ever reach the significance level, it says so instead of guessing.
A geometric-mean row per figure summarises all matched cases.

A case that PASSed in BASE and has FAIL/KILLED iterations in NEW is a failure of its own: shown,
and it fails `--fail-on-regression` whatever its figures say.
"""

from __future__ import annotations

import math
from functools import lru_cache
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats as sps

from ..workloads import figure_direction
from ..workloads.base import unit_direction
from .model import RunData
from ..results.record import Status

ALPHA = 0.05
EXACT_LIMIT = 13_000      # tied samples: exact permutation p while C(n1+n2, n1) is at most this (8 vs 8)
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
class StatusChange:
    """A case that passed in BASE and did not (all or some iterations) in NEW."""
    case: str
    old: dict[str, int]          # status -> iterations
    new: dict[str, int]
    error: str

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "old": self.old, "new": self.new, "error": self.error}

    @staticmethod
    def text(counts: dict[str, int]) -> str:
        return ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"


@dataclass
class Comparison:
    base: RunData
    new: RunData
    changes: list[FigureChange] = field(default_factory=list)
    geomeans: dict[str, float] = field(default_factory=dict)     # figure -> geometric mean of new/old ratios
    unmatched: list[str] = field(default_factory=list)
    failures: list[StatusChange] = field(default_factory=list)

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


@lru_cache(maxsize=512)
def _u_cdf(n1: int, n2: int) -> np.ndarray:
    """P(U <= u) for u = 0 … n1·n2 under the null hypothesis, no ties (exact counts)."""
    # f[m][n] = counts of U over the arrangements of m and n values; f(m,n,u) = f(m-1,n,u-n) + f(m,n-1,u)
    prev = [np.ones(1)] + [None] * n2          # m = 0: U is 0 in the one arrangement
    for n in range(1, n2 + 1):
        prev[n] = np.ones(1)
    for m in range(1, n1 + 1):
        cur: list = [np.ones(1)] + [None] * n2
        for n in range(1, n2 + 1):
            a = np.concatenate([np.zeros(n), prev[n]])       # f(m-1, n, u-n)
            b = cur[n - 1]
            size = m * n + 1
            out = np.zeros(size)
            out[:len(a)] += a[:size]
            out[:len(b)] += b[:size]
            cur[n] = out
        prev = cur
    counts = prev[n2]
    return np.cumsum(counts) / counts.sum()


def ratio_ci(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free CI for new/old as a percentage change: the Mann-Whitney test inverted on
    log values (pairwise differences log b_j - log a_i, order statistics k and n1·n2 + 1 - k).
    None when the sizes cannot give `level` (2 vs 2 at 95 %) or a value is not positive."""
    n1, n2 = len(a), len(b)
    if n1 < 1 or n2 < 1 or np.any(a <= 0) or np.any(b <= 0):
        return None
    d = np.sort((np.log(b)[:, None] - np.log(a)[None, :]).ravel())
    tail = (1 - level) / 2
    if n1 * n2 <= 2500:
        cdf = _u_cdf(min(n1, n2), max(n1, n2))
        ok = np.nonzero(cdf <= tail)[0]          # P(U <= k-1) <= tail  <=>  k-1 in ok
        if len(ok) == 0:
            return None
        k = int(ok[-1]) + 1
    else:
        mu, sd = n1 * n2 / 2, math.sqrt(n1 * n2 * (n1 + n2 + 1) / 12)
        k = max(1, int(math.floor(mu - sps.norm.ppf(1 - tail) * sd)))
    lo, hi = d[k - 1], d[n1 * n2 - k]
    return (float(np.expm1(lo) * 100), float(np.expm1(hi) * 100))


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value, exact for small samples: without ties scipy's exact null
    distribution; with ties an exact permutation test over every arrangement (midranks), where the
    normal approximation is far off ([1,1,1,1] vs [2,2,2,2]: exact 0.029, approximation 0.013);
    the tie-corrected normal approximation only beyond EXACT_LIMIT arrangements (n ≥ 9 a side)."""
    tied = len(np.unique(np.concatenate([a, b]))) < len(a) + len(b)
    if not tied and len(a) + len(b) <= 100:
        return float(sps.mannwhitneyu(a, b, alternative="two-sided", method="exact").pvalue)
    if tied and math.comb(len(a) + len(b), len(a)) <= EXACT_LIMIT:
        res = sps.permutation_test((a, b), lambda x, y, axis: sps.mannwhitneyu(x, y, axis=axis,
                                                                             method="asymptotic").statistic,
                                   permutation_type="independent", alternative="two-sided",
                                   n_resamples=np.inf, vectorized=True)
        return float(min(1.0, res.pvalue))
    return float(sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)


def compare_values(case: str, figure: str, unit: str, old: list[float], new: list[float],
                   noise_pct: float = NOISE_PCT, way: int | None = None) -> FigureChange:
    """way: +1 higher is better, -1 lower, 0 not judged (default: by the unit)."""
    a, b = np.asarray(old, float), np.asarray(new, float)
    om, nm = float(np.median(a)), float(np.median(b))
    change = (nm / om - 1) * 100 if om else math.nan
    way = unit_direction(unit) if way is None else way
    ci = ratio_ci(a, b)
    if min_p(len(a), len(b)) >= ALPHA:
        need = needed_per_side()
        return FigureChange(case, figure, unit, old, new, om, nm, change, ci, None, "too few iterations",
                            f"{len(a)} vs {len(b)} iterations: no test can reach p < {ALPHA} and no 95 % "
                            f"interval exists (need ≥ {need} per side)")
    if np.all(a == a[0]) and np.all(b == b[0]) and a[0] == b[0]:
        p = 1.0
    else:
        p = mann_whitney_p(a, b)
    if way == 0:
        verdict = "no verdict"
    elif p >= ALPHA:
        verdict = "not significant"
    elif abs(change) < noise_pct:
        verdict = "within noise"
    else:
        verdict = "better" if (nm - om) * way > 0 else "worse"
    return FigureChange(case, figure, unit, old, new, om, nm, change, ci, p, verdict)


def compare(base: RunData, new: RunData, noise_pct: float = NOISE_PCT) -> Comparison:
    cmp = Comparison(base, new)
    ratios: dict[str, list[float]] = {}
    for key, bc in base.cases.items():
        nc = new.cases.get(key)
        if nc is None:
            cmp.unmatched.append(f"{bc.case} (only in {base.label})")
            continue
        bad = {s: n for s, n in nc.statuses().items() if s in (Status.FAIL, Status.KILLED)}
        if bad and bc.passed:
            err = next((r.get("error") for r in nc.records if r["status"] in bad and r.get("error")), "") or ""
            cmp.failures.append(StatusChange(bc.case, bc.statuses(), nc.statuses(), err.splitlines()[0][:200]
                                             if err else ""))
        for name in bc.figure_names():
            old, newv = bc.values(name), nc.values(name)
            if not old or not newv:
                continue
            ch = compare_values(bc.case, name, bc.unit(name), old, newv, noise_pct,
                                figure_direction(bc.workload, name, bc.unit(name)))
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
    for f in cmp.failures:
        t.add_row(f.case, "(status)", StatusChange.text(f.old), StatusChange.text(f.new), "", "", "",
                  "FAILED" + (f": {f.error}" if f.error else ""))
    console.print(t)
    notes = sorted({ch.note for ch in cmp.changes if ch.note})
    for n in notes:
        console.print(f"Note: {n}", highlight=False)
    for u in cmp.unmatched:
        console.print(f"Unmatched: {u}", highlight=False)
