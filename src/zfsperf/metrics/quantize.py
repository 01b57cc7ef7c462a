"""DTrace quantize-style power-of-two histograms (anchors.md §6.1; the compression-starvation study's histograms).

    value  ------------- Distribution ------------- count
      256 |                                         0
      512 |@@@                                      2

Rows are power-of-two bucket lower bounds; the bar is round(count·40/total) `@` in 40 columns;
leading and trailing zero buckets are trimmed to one zero row at each end.
"""

from __future__ import annotations

import math
from typing import Iterable

HEADER = "\n%16s %41s %-9s" % ("value", "------------- Distribution -------------", "count")


def bucket(value: float) -> int:
    """The power-of-two bucket (lower bound) of a non-negative value; 0 for values below 1."""
    if value < 1:
        return 0
    return 1 << int(math.floor(math.log2(value)))


def quantize(values_counts: Iterable[tuple[float, int]], scale: float = 1.0) -> list[list[int]]:
    """[[bucket, count], …] over a contiguous power-of-two range, from (value, count) pairs whose
    values are divided by scale first (fio bins are ns: scale 1000 gives µs). The range runs from
    one zero row below the first non-empty bucket to one zero row above the last."""
    counts: dict[int, int] = {}
    for v, c in values_counts:
        if c:
            b = bucket(v / scale)
            counts[b] = counts.get(b, 0) + int(c)
    if not counts:
        return []
    lo, hi = min(counts), max(counts)
    rows = []
    b = lo // 2 if lo > 1 else (0 if lo == 1 else None)
    if b is not None:
        rows.append([b, 0])
    b = lo
    while True:
        rows.append([b, counts.get(b, 0)])
        if b == hi:
            break
        b = 1 if b == 0 else b * 2
    rows.append([hi * 2 if hi else 1, 0])
    return rows


def render(rows: list[list[int]], title: str | None = None) -> str:
    """The histogram as DTrace prints it (with an optional title line above, as the starvation study printed them)."""
    total = sum(c for _b, c in rows)
    lines = [f"  {title}"] if title else []
    lines.append(HEADER.lstrip("\n"))
    for b, c in rows:
        depth = int(round(c * 40 / total)) if total else 0
        lines.append("%16d |%s%s %-9d" % (b, "@" * depth, " " * (40 - depth), c))
    return "\n".join(lines)


def render_histograms(histograms: dict | None) -> str:
    """A record's histograms, one per I/O class, titled like the starvation study's (latency in µs)."""
    parts = []
    for _cls, h in (histograms or {}).items():
        if h.get("buckets"):
            parts.append(render(h["buckets"], f"{h.get('title', _cls)} latency ({h.get('unit', 'us')})"))
    return "\n\n".join(parts)
