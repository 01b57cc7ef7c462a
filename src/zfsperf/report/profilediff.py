"""Where the CPU went, A against B: the differential view of two sides' profiles (`run --profile`).

A function's share is the share of a side's samples whose stack holds it (inclusive: its callees
count), per iteration; beside it, its self share (the samples it is the innermost frame of, over a
side's iterations together), which tells the function that burns the CPU from its callers, whose
inclusive share rises with it (taskq_thread above gzip's deflate). The change is B's mean share minus A's, in percentage points: paired by
iteration when the design paired the sides (turns, duets, interleaved blocks), else side against
side. Its interval comes from resampling whole iterations (a seeded bootstrap, RESAMPLES draws): a
difference made of noise between iterations is wide and crosses zero.

Which changes are called is a family-wise decision: every function that holds at least MIN_SHARE
points on either side is tested, and the p-values are adjusted for testing them all by Westfall and
Young's max-T permutation method (the exact permutation the design allows: the signs of the paired
differences flipped iteration by iteration, or the iterations' sides relabelled; the largest
studentized change over all functions in each). It needs no normality of the shares and keeps the
family's false alarms at ALPHA, so that an A/A, which tests dozens of functions, calls none in 20.
Like compare's sign-flip verdicts it needs 6 paired iterations (4 a side unpaired) before anything can
be called. A function is called changed when its adjusted p is under ALPHA and its interval excludes
zero; the interval itself is 95 % for that function alone. Context for a verdict, never a verdict:
it says why.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..metrics.profile import functions, leaves, named_share, read_folded
from .abstats import ALPHA
from .model import CaseData

MIN_SHARE = 1.0                 # points: a function below it on both sides is not tested
MAX_TESTED = 60                 # the largest functions tested (adjusted together)
MIN_PAIRS, MIN_EACH = 6, 4      # 2/2^6 and 2/C(8,4): the fewest with which p < 0.05 is possible
RESAMPLES = 4000                # bootstrap draws, and the most permutations (beyond: seeded random ones)
SHOWN = 15                      # rows of the table in a report


@dataclass
class FunctionChange:
    name: str
    a_share: float                          # % of A's samples (mean over iterations)
    b_share: float
    change: float                           # points, B - A
    ci: tuple[float, float] | None          # 95 % from resampling iterations
    p: float | None                         # adjusted for every function tested (max-T permutation)
    changed: bool = False
    self_shares: tuple[float, float] = (0.0, 0.0)   # % of each side's samples in the function itself

    def as_dict(self) -> dict[str, Any]:
        return {"function": self.name, "a_pct": round(self.a_share, 2), "b_pct": round(self.b_share, 2),
                "change_points": round(self.change, 2),
                "ci_points": None if self.ci is None else [round(self.ci[0], 2), round(self.ci[1], 2)],
                "p_adjusted": None if self.p is None else round(self.p, 5), "changed": self.changed,
                "self_pct": [round(self.self_shares[0], 2), round(self.self_shares[1], 2)]}


@dataclass
class ProfileDiff:
    label: str                              # "A → B"
    a_samples: int
    b_samples: int
    iterations: tuple[int, int]             # each side's profiled iterations
    paired: bool
    tested: int
    rows: list[FunctionChange]              # by the size of the change, largest first
    scope: str = ""
    named: tuple[float, float] = (0.0, 0.0)  # the share of frames perf named, each side
    note: str = ""
    a_folded: Counter[str] = field(default_factory=Counter)
    b_folded: Counter[str] = field(default_factory=Counter)

    def changed(self) -> list[FunctionChange]:
        return [r for r in self.rows if r.changed]

    def summary_line(self) -> str:
        top = self.changed()[:3]
        called = ("; ".join(f"{r.name} {r.a_share:.1f} → {r.b_share:.1f} % ({r.change:+.1f} points)" for r in top)
                  if top else "no function's share changed significantly")
        return (f"{self.label}: profiles {self.a_samples} vs {self.b_samples} samples over "
                f"{self.iterations[0]} vs {self.iterations[1]} iterations ({self.tested} functions tested, "
                f"max-T adjusted): {called}" + (f" [{self.note}]" if self.note else ""))

    def table(self, n: int = SHOWN) -> tuple[list[str], list[list[str]]]:
        head = ["function", "A share", "B share", "change", "95 % interval", "p (adj.)", "verdict", "self A → B"]
        rows = [[r.name, f"{r.a_share:.1f} %", f"{r.b_share:.1f} %", f"{r.change:+.1f} pt",
                 "-" if r.ci is None else f"{r.ci[0]:+.1f} … {r.ci[1]:+.1f}",
                 "-" if r.p is None else f"{r.p:.3f}", "changed" if r.changed else "~",
                 f"{r.self_shares[0]:.1f} → {r.self_shares[1]:.1f} %"]
                for r in self.rows[:n]]
        return head, rows

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "samples": [self.a_samples, self.b_samples],
                "iterations": list(self.iterations), "paired": self.paired, "tested": self.tested,
                "scope": self.scope, "named": list(self.named), "note": self.note,
                "functions": [r.as_dict() for r in self.rows[:SHOWN]]}


def iterations_of(run_path: Path, case: CaseData) -> dict[int, Counter[str]]:
    """A side's folded stacks per iteration, from what its records name."""
    out = {}
    for r in case.passed:
        prof = r.detail.get("profile") or {}
        rel = prof.get("folded")
        if rel and (run_path / rel).is_file():
            out[r.iteration] = read_folded(run_path / rel)
    return out


def _meta(case: CaseData, key: str) -> Any:
    return next(((r.detail.get("profile") or {}).get(key) for r in case.passed
                 if (r.detail.get("profile") or {}).get(key) is not None), None)


def _studentized(d: np.ndarray) -> np.ndarray:
    """|mean| / its standard error, per column (a column without spread: a huge value)."""
    n = d.shape[-2]
    mean = d.mean(axis=-2)
    sd = d.std(axis=-2, ddof=1)
    return np.abs(mean) / (sd / np.sqrt(n) + 1e-9)


def _welch_split(member: np.ndarray, x: np.ndarray, na: int) -> np.ndarray:
    """Welch's |t| per column of x (iterations x functions) for each split of its rows: member's
    row k marks the na rows that are side A in split k (permutations x functions)."""
    nb = x.shape[0] - na
    rest = 1.0 - member
    sa, sb = member @ x, rest @ x
    qa, qb = member @ (x * x), rest @ (x * x)
    ma, mb = sa / na, sb / nb
    va, vb = (qa - na * ma * ma) / (na - 1), (qb - nb * mb * mb) / (nb - 1)
    se = np.sqrt(np.maximum(va, 0.0) / na + np.maximum(vb, 0.0) / nb)
    return np.abs(mb - ma) / (se + 1e-9)


def maxt_p(a: np.ndarray, b: np.ndarray, paired: bool, rng: np.random.Generator) -> np.ndarray:
    """Westfall-Young single-step max-T adjusted p-values, one per column (function) of the
    iterations x functions share matrices a and b. Every sign vector (paired) or relabelling
    (unpaired) when there are at most RESAMPLES of them, else that many seeded ones with the
    identity among them."""
    if paired:
        d = b - a
        n = d.shape[0]
        if 2 ** n <= RESAMPLES:
            signs = 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
        else:
            signs = np.vstack([np.ones(n, int), rng.choice([-1, 1], size=(RESAMPLES - 1, n))])
        # each sign vector's mean per function; a sign flip leaves the sum of squares alone, so the
        # spread needs no third dimension (permutations x iterations x functions)
        mean = signs @ d / n                                              # permutations x functions
        var = np.maximum((np.square(d).sum(axis=0) - n * mean * mean) / (n - 1), 0.0)
        stats = np.abs(mean) / (np.sqrt(var / n) + 1e-9)
        observed = _studentized(d)
    else:
        x = np.vstack([a, b])
        n, na = x.shape[0], a.shape[0]
        if math.comb(n, na) <= RESAMPLES:
            groups = [list(c) for c in itertools.combinations(range(n), na)]
        else:
            groups = [list(range(na))] + [list(rng.permutation(n)[:na]) for _ in range(RESAMPLES - 1)]
        member = np.zeros((len(groups), n))
        for k, g in enumerate(groups):
            member[k, g] = 1.0
        stats = _welch_split(member, x, na)
        observed = stats[0]                    # groups[0] is the sides as they ran
    top = stats.max(axis=1)
    return (top[:, None] >= observed[None, :] * (1 - 1e-9)).mean(axis=0)


def _intervals(a: np.ndarray, b: np.ndarray, paired: bool, rng: np.random.Generator) -> list[tuple[float, float]]:
    """The bootstrap 95 % interval of each column's change of mean (iterations x functions): one
    draw of the iterations for every function at once (a function's interval is its column's)."""
    if paired:
        d = b - a
        means = d[rng.integers(0, len(d), (RESAMPLES, len(d)))].mean(axis=1)       # draws x functions
    else:
        means = (b[rng.integers(0, len(b), (RESAMPLES, len(b)))].mean(axis=1)
                 - a[rng.integers(0, len(a), (RESAMPLES, len(a)))].mean(axis=1))
    lo, hi = np.percentile(means, [2.5, 97.5], axis=0)
    return [(float(x), float(y)) for x, y in zip(lo, hi)]


def diff(label: str, a_iters: dict[int, Counter[str]], b_iters: dict[int, Counter[str]], *,
         paired: bool) -> ProfileDiff:
    """The functions whose share changed from A's iterations to B's (paired: by iteration number)."""
    if paired:                                    # the iterations both sides have samples of
        common = sorted(i for i in set(a_iters) & set(b_iters) if sum(a_iters[i].values()) and sum(b_iters[i].values()))
        a_iters, b_iters = {i: a_iters[i] for i in common}, {i: b_iters[i] for i in common}
    a_list = [c for c in a_iters.values() if sum(c.values())]
    b_list = [c for c in b_iters.values() if sum(c.values())]
    a_all, b_all = sum(a_list, Counter()), sum(b_list, Counter())
    out = ProfileDiff(label, sum(a_all.values()), sum(b_all.values()), (len(a_list), len(b_list)), paired, 0, [],
                      a_folded=a_all, b_folded=b_all)
    if not a_list or not b_list:
        out.note = "a side has no profile"
        return out

    def shares(cs: list[Counter[str]]) -> list[dict[str, float]]:
        return [{f: 100.0 * n / sum(c.values()) for f, n in functions(c).items()} for c in cs]
    sa, sb = shares(a_list), shares(b_list)
    fa, fb = functions(a_all), functions(b_all)
    ta, tb = sum(a_all.values()), sum(b_all.values())
    la, lb = leaves(a_all), leaves(b_all)
    size = {f: max(100.0 * fa.get(f, 0) / ta, 100.0 * fb.get(f, 0) / tb) for f in set(fa) | set(fb)}
    candidates = sorted((f for f, s in size.items() if s >= MIN_SHARE), key=lambda f: -size[f])[:MAX_TESTED]
    rng = np.random.default_rng(0)
    need = MIN_PAIRS if paired else MIN_EACH
    enough = min(len(a_list), len(b_list)) >= need
    a_m = np.array([[s.get(f, 0.0) for f in candidates] for s in sa]).reshape(len(sa), len(candidates))
    b_m = np.array([[s.get(f, 0.0) for f in candidates] for s in sb]).reshape(len(sb), len(candidates))
    ps = maxt_p(a_m, b_m, paired, rng) if enough and candidates else None
    cis = _intervals(a_m, b_m, paired, rng) if enough and candidates else [None] * len(candidates)
    rows = []
    for k, f in enumerate(candidates):
        a, b, ci = a_m[:, k], b_m[:, k], cis[k]
        p = None if ps is None else float(ps[k])
        rows.append(FunctionChange(f, float(a.mean()), float(b.mean()), float(b.mean() - a.mean()), ci, p,
                                   changed=p is not None and p < ALPHA and ci is not None and (ci[0] > 0 or ci[1] < 0),
                                   self_shares=(100.0 * la.get(f, 0) / ta, 100.0 * lb.get(f, 0) / tb)))
    if not enough:
        out.note = (f"fewer than {need} profiled iterations {'paired' if paired else 'a side'}: "
                    "shares shown, no change called")
    out.rows = sorted(rows, key=lambda r: -abs(r.change))
    out.tested = len(rows)
    return out


def of_cases(run_a: Path, a: CaseData, run_b: Path, b: CaseData, label: str, *, paired: bool) -> ProfileDiff | None:
    """The differential view of two cases' profiles (None: neither side was profiled). Sides that
    ran at the same time on one pool (a duet) share one profile and are not told apart."""
    ai, bi = iterations_of(run_a, a), iterations_of(run_b, b)
    if not ai and not bi:
        return None
    if _meta(a, "shared") or _meta(b, "shared"):
        out = ProfileDiff(label, 0, 0, (len(ai), len(bi)), paired, 0, [])
        out.note = "the sides ran at the same time on one pool: one profile for both, not told apart"
        return out
    out = diff(label, ai, bi, paired=paired)
    out.scope = _meta(a, "scope") or _meta(b, "scope") or ""
    out.named = (named_share(out.a_folded), named_share(out.b_folded))
    return out
