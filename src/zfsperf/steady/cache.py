"""The cache gate of the SDC 2020 steady-state talk: steady also needs the caches warm."""

from __future__ import annotations

from typing import Any

CACHE_SHARE = 0.85       # of the active data set in cache ...
CACHE_FULL = 0.80        # ... unless the ARC (and L2ARC) are this full


def cache_ok(sample: dict[str, Any], active_bytes: int) -> bool | None:
    """≥ 85 % of the active data set is in ARC (+L2ARC), or the caches are ≥ 80 % full, on one
    sample's info. None when the sample does not say (unreadable: passes)."""
    info = sample.get("info") or {}
    arc_b, c_max = info.get("arc_bytes"), info.get("arc_c_max")
    if not isinstance(arc_b, (int, float)) or not isinstance(c_max, (int, float)) or c_max <= 0:
        return None
    l2_b = info.get("l2_bytes") if isinstance(info.get("l2_bytes"), (int, float)) else 0
    if arc_b + l2_b >= CACHE_SHARE * active_bytes:
        return True
    l2_cap = info.get("l2_capacity")
    l2_full = not isinstance(l2_cap, (int, float)) or l2_cap <= 0 or l2_b >= CACHE_FULL * l2_cap
    return arc_b >= CACHE_FULL * c_max and l2_full
