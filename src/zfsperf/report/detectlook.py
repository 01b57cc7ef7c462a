"""One look of `run --detect` at an interleaved run's blocks so far: whether the blocks stop, why,
at which level, and what each A/B pair's headline reached. The runner asks after every block from
the MIN_BLOCKS-th (runner.Runner._detected); bench/calibration.py asks the same on simulated runs, so
that the stopping rule it calibrates is the runner's own, not a formula beside it.

The run stops when every pair is decided (better, worse, or the same within ±target: the change asked
for, not a wider default margin) at this look's spent level (report/sequential.py), or when another
reason ends it: every pair's detectable change reached, max_iterations, the time budget. None of
those depends on the change itself, so that look becomes the last and spends the α left."""

from __future__ import annotations

from typing import Any

from ..results.record import StopReason
from ..units import ChangeVerdict
from ..workloads import headline
from . import sequential
from .abstats import ALPHA, MIN_BLOCKS, signflip_detectable
from .compare import compare_within
from .model import RunData
from .pairing import ab_pairs

DECIDED = (ChangeVerdict.BETTER, ChangeVerdict.WORSE, ChangeVerdict.SAME)


def look(run: RunData, target: float, blocks: int, n_max: int, *, at_cap: bool = False,
         over_budget: bool = False) -> tuple[StopReason | None, dict[str, Any]]:
    """(why the blocks stop, None: they go on; what they reached, as run.json's `detect` holds it).
    at_cap: every case has run its max_iterations; over_budget: the time budget is spent."""
    pairs = ab_pairs(run)

    def headlines(alpha: float) -> dict[str, Any]:
        changes = {(c.case, c.figure): c for c in compare_within(run, pairs, margin_pct=target, alpha=alpha).changes}
        return {f"{a.case} → {b.case} {headline(a.workload)}":
                changes.get((f"{a.case} → {b.case}", headline(a.workload))) for a, b in pairs}
    why: StopReason | None = None
    alpha: float | None = None
    if blocks >= MIN_BLOCKS and pairs:
        interim = sequential.level(blocks, MIN_BLOCKS, n_max, final=False)
        if interim > 0 and all(ch is not None and ch.verdict in DECIDED for ch in headlines(interim).values()):
            why, alpha = StopReason.DECIDED, interim
    final = sequential.level(blocks, MIN_BLOCKS, n_max, final=True) if blocks >= MIN_BLOCKS else ALPHA
    # the change each pair sees with 80 % power at a 90 % upper bound of its pairs' spread, so that
    # a stop is not a lucky low sample sd (abstats.SPREAD_BOUND)
    achieved = {k: None if ch is None or ch.pair_sd is None or ch.pairs is None
                else signflip_detectable(ch.pair_sd, ch.pairs, final or ALPHA)
                for k, ch in headlines(final or ALPHA).items()}
    worst = max((v for v in achieved.values() if v is not None), default=None)
    if why is None:                   # a stop that does not depend on the change: the last look
        if blocks >= MIN_BLOCKS and achieved and all(v is not None and v <= target for v in achieved.values()):
            why = StopReason.DETECTABLE
        elif at_cap:
            why = StopReason.MAX_ITERATIONS
        elif over_budget:
            why = StopReason.BUDGET
        elif not achieved and blocks >= MIN_BLOCKS:
            why = StopReason.NO_PAIR
        alpha = final if why is not None else None
    detected: dict[str, Any] = {"target_pct": target, "blocks": blocks, "stopped_by": why,
                                "worst_pct": None if worst is None else round(worst, 3),
                                "achieved_pct": {k: None if v is None else round(v, 3) for k, v in achieved.items()}}
    if alpha is not None and blocks >= MIN_BLOCKS:
        detected["sequential"] = {"method": sequential.METHOD, "looks": blocks - MIN_BLOCKS + 1,
                                  "first_look": MIN_BLOCKS, "max_blocks": n_max, "alpha": float(alpha)}    # unrounded: compare judges at it
    return why, detected
