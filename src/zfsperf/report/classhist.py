"""Per-class latency histograms, A against B (issue 42, item 4): each I/O class both sides recorded
(fio's read/write bins; `zpool iostat -w`'s sync/async read/write, scrub, trim), side by side, with
the p99 change and its interval. Context for a verdict, never a verdict: compare judges the figures.

The histograms are power-of-two buckets (DTrace's quantize), so a p99 read from them is interpolated
inside its bucket (linearly, by count): an estimate good to the bucket's shape, not to the
microsecond. fio's own p99 figures, judged in compare's table, are exact.

The interval inverts a permutation test on whole iterations: the statistic is the log ratio of the
two sides' p99s, each read from its side's merged histogram; under "no change" the sides' labels
are exchangeable, within each iteration where the design paired the sides (a sign flip per
iteration, as compare's paired test) and across all iterations where it did not. The interval is
the statistic ± the label-swapped statistics' (1 - α) quantile of their size, so that it leaves out
0 exactly when the permutation test rejects at α (a multiplicative shift of B's latencies moves the
statistic and not its spread). Where no assignment of labels can reach α (under 6 paired
iterations), there is no interval. (Until 2026-11-27 it was the percentile interval of a bootstrap
over iterations, which on the starvation mix's A/A left out 0 in 13-15 % of windows of 6 and 9 % of
windows of 30: too narrow.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .abstats import ALPHA, sign_vectors
from .model import CaseData
from .summary import merged_histograms

LABEL_SWAPS = 4096             # every relabelling up to this many, else this many seeded random ones
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
    if not items:
        return float("nan")
    return float(quantiles(np.array([b for b, _c in items], float), np.array([[c for _b, c in items]], float), q)[0])


def quantiles(buckets: np.ndarray, counts: np.ndarray, q: float = Q) -> np.ndarray:
    """The q-quantile of each row of counts over the power-of-two buckets (ascending), interpolated
    linearly inside its bucket (bucket 0 spans 0-1, bucket b spans b-2b); NaN for an empty row."""
    cum = np.cumsum(counts, axis=1)
    total = cum[:, -1]
    target = q * total
    k = np.argmax(cum >= target[:, None], axis=1)            # the first bucket that reaches the target
    rows = np.arange(len(counts))
    c = counts[rows, k]
    seen = cum[rows, k] - c
    lo = buckets[k]
    width = np.where(lo == 0, 1.0, lo)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = lo + width * np.where(c > 0, (target - seen) / c, 1.0)
    return np.where(total > 0, out, np.nan)


def _iteration_counts(case: CaseData, cls: str) -> dict[int, dict[int, int]]:
    out = {}
    for r in case.passed:
        h = (r.histograms or {}).get(cls)
        if h and h.get("buckets"):
            out[r.iteration] = {int(b): int(c) for b, c in h["buckets"]}
    return out


def _interval(a: dict[int, dict[int, int]], b: dict[int, dict[int, int]], paired: bool,
              alpha: float = ALPHA) -> tuple[float, float] | None:
    """The (1 - alpha) interval of the p99 change in %, from the label-swap test (module doc)."""
    common = sorted(set(a) & set(b))
    parts = [a[i] for i in common] + [b[i] for i in common] if paired else [*a.values(), *b.values()]
    if paired:
        n = len(common)
        if n < 2 or 2.0 / 2 ** min(n, 62) > alpha:
            return None
        if 2 ** n <= LABEL_SWAPS:
            s = (sign_vectors(n) < 0).astype(float)       # 1: iteration i's labels swapped; row 0 none
        else:
            s = np.random.default_rng(20261127).integers(0, 2, size=(LABEL_SWAPS, n)).astype(float)
            s[0] = 0
        wa = np.hstack([1 - s, s])                        # each relabelling's weight on every part, side A
    else:
        na, nb = len(a), len(b)
        if min(na, nb) < 2 or 2.0 / math.comb(na + nb, na) > alpha:
            return None
        rng = np.random.default_rng(20261127)
        wa = np.zeros((LABEL_SWAPS, na + nb))
        wa[0, :na] = 1                                    # the first row: the observed labels
        for r in range(1, LABEL_SWAPS):
            wa[r, rng.permutation(na + nb)[:na]] = 1
    buckets = np.array(sorted({k for p in parts for k in p}), float)
    counts = np.array([[p.get(int(k), 0) for k in buckets] for p in parts], float)
    with np.errstate(invalid="ignore", divide="ignore"):
        stat = np.log(quantiles(buckets, (1 - wa) @ counts)) - np.log(quantiles(buckets, wa @ counts))
    null = np.abs(stat[np.isfinite(stat)])
    if not np.isfinite(stat[0]) or len(null) < 2:
        return None
    # reject at alpha exactly when |stat| exceeds the k-th largest of the relabelled sizes
    k = math.ceil(alpha * len(null))
    c = float(np.sort(null)[::-1][k - 1])
    return float(np.expm1(stat[0] - c) * 100), float(np.expm1(stat[0] + c) * 100)


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
