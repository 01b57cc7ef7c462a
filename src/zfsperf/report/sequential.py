"""--detect looks at its A/B verdicts after every block: the levels that keep α honest.

A run that stops as soon as a verdict is decided, and judges it at α = 0.05 each time it looks,
calls an A/A "changed" far more often than 5 % (looking 25 times at 0.05 does so about a third
of the time). --detect therefore spends α over its looks (Lan & DeMets, Biometrika 1983) with
the O'Brien-Fleming-type function α(t) = 2 − 2Φ(z_{1−α/2} / √t), t = blocks / max_iterations:
early looks are held to a very small level, so only a large change stops a run early, and little
of α is used before the end. The level of each look comes from the joint law of the looks'
statistics (Gaussian partial sums, independent increments), computed by a seeded Monte Carlo:
the same looks always give the same levels. Each look's sign-flip p is judged against its level.

A run that stops for another reason (the detectable change reached, max_iterations, the time
budget: none of them depends on the change's direction or size) makes that block the last look,
which spends what α is left. compare judges such a run at the level of its last look, which the
run records (run.json `detect.sequential`)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..results.stats import norm_cdf, norm_ppf, norm_sf
from .abstats import ALPHA

METHOD = "α spending over looks (Lan-DeMets, O'Brien-Fleming type)"
PATHS = 200_000
SEED = 20261126


def spent(t: float, alpha: float = ALPHA) -> float:
    """α used up to information time t (0 < t ≤ 1)."""
    if t >= 1:
        return alpha
    if t <= 0:
        return 0.0
    return float(2 - 2 * norm_cdf(norm_ppf(1 - alpha / 2) / math.sqrt(t)))


@lru_cache(maxsize=256)
def levels(looks: tuple[int, ...], n_max: int, final: bool, alpha: float = ALPHA) -> tuple[float, ...]:
    """The two-sided nominal level of each look (blocks counted at each, increasing); the last
    look spends all of alpha when final. A level of 0 means that look cannot stop the run."""
    if not looks or any(b <= a for a, b in zip(looks, looks[1:])) or looks[0] < 1:
        raise ValueError(f"looks must be increasing block counts, got {looks}")
    rng = np.random.default_rng(SEED)
    s = np.zeros(PATHS)
    alive = np.ones(PATHS, bool)
    crossed, prev, out = 0, 0, []
    for j, n in enumerate(looks):
        s += rng.standard_normal(PATHS) * math.sqrt(n - prev)
        prev = n
        z = np.abs(s) / math.sqrt(n)
        last = j == len(looks) - 1
        want = alpha if (final and last) else spent(min(n / n_max, 1.0), alpha)
        extra = int(round(want * PATHS)) - crossed
        live = z[alive]
        if extra <= 0 or live.size == 0:
            out.append(0.0)
            continue
        c = float(np.partition(live, live.size - extra)[live.size - extra]) if extra < live.size else 0.0
        hit = alive & (z >= c)
        crossed += int(hit.sum())
        alive &= ~hit
        out.append(float(min(alpha, 2 * norm_sf(c))))
    return tuple(out)


def level(blocks: int, first: int, n_max: int, final: bool, alpha: float = ALPHA) -> float:
    """The level of the look after `blocks` blocks, when the run looked after every block from
    `first` on."""
    if blocks < first:
        return 0.0
    return levels(tuple(range(first, blocks + 1)), max(n_max, blocks), final, alpha)[-1]
