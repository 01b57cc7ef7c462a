"""Per-class latency histograms, A against B (issue 42, item 4): each I/O class both sides recorded
(fio's read/write bins; `zpool iostat -w`'s sync/async read/write, scrub, trim), side by side, with
the p99 change and its interval. Context for a verdict, never a verdict: compare judges the figures.

The histograms are power-of-two buckets (DTrace's quantize), so a p99 read from them is interpolated
inside its bucket (linearly, by count): an estimate good to the bucket's shape, not to the
microsecond. fio's own p99 figures, judged in compare's table, are exact. The interval comes from
resampling whole iterations (paired where the design paired the sides), each side's histogram
merged again from the drawn iterations; none with fewer than MIN_ITERATIONS a side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .model import CaseData
from .summary import merged_histograms

MIN_ITERATIONS = 3
RESAMPLES = 2000
Q = 0.99


@dataclass
class ClassChange:
    label: str                          # "A → B"
    cls: str                            # the record's key: "read", "sync_write" ...
    title: str
    unit: str
    a: list[list[int]]                  # each side's histogram over its iterations (quantize rows)
    b: list[list[int]]
    a_p99: float
    b_p99: float
    ci_pct: tuple[float, float] | None  # 95 % interval of the p99 change, %

    @property
    def change_pct(self) -> float:
        return (self.b_p99 / self.a_p99 - 1) * 100 if self.a_p99 > 0 else float("nan")

    def line(self) -> str:
        ci = "" if self.ci_pct is None else f" [{self.ci_pct[0]:+.1f} … {self.ci_pct[1]:+.1f} %]"
        return (f"{self.label}: {self.title} p99 {self.a_p99:.4g} → {self.b_p99:.4g} {self.unit} "
                f"({self.change_pct:+.1f} %{ci}; from the histograms' power-of-two buckets)")

    def side_by_side(self) -> str:
        """The two histograms in one text block: each bucket's share of A's and of B's I/Os."""
        rows = {b: [0, 0] for b, _c in self.a + self.b}
        for k, hist in enumerate((self.a, self.b)):
            for b, c in hist:
                rows[b][k] += c
        ta, tb = sum(c for _b, c in self.a) or 1, sum(c for _b, c in self.b) or 1
        out = [f"  {self.title} latency ({self.unit}): A | B, % of each side's I/Os",
               "%14s  %-22s %s" % ("value", "A", "B")]
        for b in sorted(rows):
            pa, pb = 100 * rows[b][0] / ta, 100 * rows[b][1] / tb
            out.append("%14d  %-16s%5.1f %-16s%5.1f" % (b, "@" * round(pa * 16 / 100), pa, "@" * round(pb * 16 / 100), pb))
        return "\n".join(out)

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "class": self.cls, "unit": self.unit, "a_p99": round(self.a_p99, 3),
                "b_p99": round(self.b_p99, 3), "change_pct": round(self.change_pct, 2),
                "ci_pct": None if self.ci_pct is None else [round(x, 2) for x in self.ci_pct], "a": self.a, "b": self.b}


def quantile(rows: list[list[int]] | dict[int, int], q: float = Q) -> float:
    """The q-quantile of a power-of-two histogram, interpolated linearly inside its bucket."""
    items = sorted(rows.items()) if isinstance(rows, dict) else sorted((b, c) for b, c in rows)
    total = sum(c for _b, c in items)
    if total <= 0:
        return float("nan")
    target, seen = q * total, 0.0
    for b, c in items:
        if c and seen + c >= target:
            lo, width = (0.0, 1.0) if b == 0 else (float(b), float(b))
            return lo + width * (target - seen) / c
        seen += c
    b = items[-1][0]
    return float(2 * b if b else 1)


def _iteration_counts(case: CaseData, cls: str) -> dict[int, dict[int, int]]:
    out = {}
    for r in case.passed:
        h = (r.histograms or {}).get(cls)
        if h and h.get("buckets"):
            out[r.iteration] = {int(b): int(c) for b, c in h["buckets"]}
    return out


def _merge(parts: list[dict[int, int]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for p in parts:
        for b, c in p.items():
            out[b] = out.get(b, 0) + c
    return out


def _interval(a: dict[int, dict[int, int]], b: dict[int, dict[int, int]], paired: bool) -> tuple[float, float] | None:
    if min(len(a), len(b)) < MIN_ITERATIONS:
        return None
    rng = np.random.default_rng(0)
    common = sorted(set(a) & set(b)) if paired else []
    ratios = []
    for _ in range(RESAMPLES):
        if paired and len(common) >= MIN_ITERATIONS:
            pick = rng.choice(common, len(common))
            pa, pb = [a[i] for i in pick], [b[i] for i in pick]
        else:
            ka, kb = list(a), list(b)
            pa = [a[i] for i in rng.choice(ka, len(ka))]
            pb = [b[i] for i in rng.choice(kb, len(kb))]
        qa, qb = quantile(_merge(pa)), quantile(_merge(pb))
        if qa > 0:
            ratios.append(qb / qa)
    if not ratios:
        return None
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return (float(lo) - 1) * 100, (float(hi) - 1) * 100


def changes(a: CaseData, b: CaseData, label: str, *, paired: bool) -> list[ClassChange]:
    """Each I/O class both cases recorded a histogram of, A against B."""
    ha, hb = merged_histograms(a), merged_histograms(b)
    out = []
    for cls in [k for k in ha if k in hb]:
        ia, ib = _iteration_counts(a, cls), _iteration_counts(b, cls)
        qa, qb = quantile(ha[cls]["buckets"]), quantile(hb[cls]["buckets"])
        if not (qa > 0 and qb > 0):
            continue
        out.append(ClassChange(label, cls, ha[cls].get("title", cls), ha[cls].get("unit", "us"),
                               ha[cls]["buckets"], hb[cls]["buckets"], qa, qb, _interval(ia, ib, paired)))
    return out
