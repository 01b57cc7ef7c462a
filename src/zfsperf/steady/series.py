"""Series files (series/<case>.i<N>.jsonl) in and out of the shape the detectors read."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError


def matrix(samples: list[dict[str, Any]]) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(times, metric names, values[sample, metric]) with NaN where a metric was not read."""
    names = sorted({k for s in samples for k in (s.get("metrics") or {})})
    t = np.array([float(s["t"]) for s in samples], dtype=float)
    y = np.full((len(samples), len(names)), np.nan)
    for i, s in enumerate(samples):
        for j, n in enumerate(names):
            v = (s.get("metrics") or {}).get(n)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                y[i, j] = float(v)
    return t, names, y


def is_marker(s: dict[str, Any]) -> bool:
    return bool((s.get("info") or {}).get("event"))


def decision_samples(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The samples a verdict is taken on: a gate's ("decided", with its count), else those before
    the "workload end" marker (a workload winding down is not its steady state), else all;
    markers themselves never count."""
    real = [s for s in samples if not is_marker(s)]
    for s in samples:
        info = s.get("info") or {}
        if info.get("event") == "decided" and isinstance(info.get("samples"), int):
            return real[:info["samples"]]
    out = []
    for s in samples:
        if (s.get("info") or {}).get("event") == "workload end":
            return out
        if not is_marker(s):
            out.append(s)
    return out


def read_series(path: str) -> list[dict[str, Any]]:
    """series/<case>.jsonl: one {"t": seconds, "metrics": {name: number|null}} per line."""
    out = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as e:
        raise InputError(f"cannot read series: {e.strerror}", file=path) from None
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            if i == len(lines) and out:
                break                     # torn last line of a killed run
            raise InputError(f"not JSON: {e}", file=path, line=i) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("t"), (int, float)) or \
                not isinstance(obj.get("metrics"), dict):
            raise InputError('not a series sample: expected {"t": seconds, "metrics": {...}}', file=path, line=i,
                             field="t" if not isinstance(obj, dict) or "t" not in obj else "metrics")
        out.append(obj)
    if not out:
        raise InputError("no samples: not a zfsperf series file (series/<case>.i<N>.jsonl)", file=path)
    return out


def resample(samples: list[dict[str, Any]], interval: float) -> list[dict[str, Any]]:
    """One sample per interval seconds, each metric's mean over its interval (re-decide a 0.4 s
    series at 1 s, or a 1 s series at the SDC 2020 talk's 15 s). Keeping one raw sample per
    interval instead made metrics read less often than the sampler samples (zpool iostat reports
    once a second) "unreadable" whenever the kept samples were the ones without them."""
    from .timescale import bin_means        # timescale builds on this module
    return bin_means(decision_samples(samples), interval)
