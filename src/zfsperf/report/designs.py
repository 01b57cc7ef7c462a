"""compare's designs, once: what was compared with what (`Design`, its value in JSON), each in
words (DESIGNS, DESIGN_WORDS), which may say "same" (SAME_DESIGNS), what a row's old and new
columns hold (CENTERS), and the drift floor that separate runs are judged beyond."""

from __future__ import annotations

import math
from enum import StrEnum


class Design(StrEnum):
    """What was compared with what (its value is what JSON carries; DESIGNS says it in words)."""
    ITERATIONS = "iterations"           # one run a side, iterations compared
    HISTORY = "history"                 # one run a side, against the history store's run-to-run noise
    RUNS = "runs"                       # several runs a side, the run as the unit
    PAIRED = "paired"                   # one run, interleaved blocks
    DUET = "duet"                       # one run, both sides at once on one pool
    TURNS = "turns"                     # one run, both sides on one pool taking turns (ABBA)
    UNPAIRED = "unpaired"               # one run, not interleaved


# designs whose interval holds every variance the question has: only they can say "same" (one run a
# side without history cannot: the drift between runs is unknown; unpaired cases carry drift)
SAME_DESIGNS = frozenset({Design.PAIRED, Design.DUET, Design.TURNS, Design.RUNS, Design.HISTORY})


DESIGNS = {
    Design.ITERATIONS: "one run a side, iterations compared; run-to-run drift unknown (changes below the drift "
                  "floor are not called)",
    Design.HISTORY: "one run a side, judged against the run-to-run noise of identical settings in the history store "
                    "(their successive differences)",
    Design.RUNS: "several runs a side, the run as the unit (between-run variance)",
    Design.PAIRED: "one run, interleaved blocks: within-block ratios (drift cancels)",
    Design.DUET: "one run, both sides at once on one pool (duet): within-iteration ratios (noise hits both alike)",
    Design.TURNS: "one run, both sides on one pool taking turns round by round (ABBA): within-iteration ratios "
             "(what drifts over seconds hits both alike; each turn pays its own costs, a receive round "
             "its own txg sync)",
    Design.UNPAIRED: "one run, not interleaved: its cases are sweep points, not an A/B (consecutive cases carry "
                     "drift, so no change is judged): each point's ratio to the first, its interval from the "
                     "iterations; run the points in blocks (--interleave, ab = true) or in turns to judge them",
}


# what the design column says, short
DESIGN_WORDS = {Design.ITERATIONS: "runs (iterations)", Design.HISTORY: "history", Design.RUNS: "runs",
                Design.PAIRED: "blocks", Design.DUET: "duet", Design.TURNS: "turns", Design.UNPAIRED: "sweep"}


# turns whose sides are two builds (guest ab --turns): the same statistics, a different machine
BUILD_TURNS = ("one run, each build in a guest of its own taking turns round by round (ABBA), the other guest "
               "paused; the builds change guests in ABBA order over the iterations (a guest loads another build "
               "every other iteration){settled}: within-iteration ratios (what drifts over seconds hits both alike)")


SETTLED = ", and each side's first turn (after the fresh pools) is run and left out"


# what a row's old and new columns hold (FigureChange.center), said in the table's title
CENTERS = {"median": "medians", "pairs": "geometric means of the pairs",
           "runs": "geometric means of run medians"}


# One run a side and no history: a change is judged only beyond the run-to-run drift seen between
# separate runs of identical settings. Measured on zfs-fuse on a 2-core machine (docs/benchmarks.md):
# consecutive default runs differed by up to +33.3 % (threads=4: 586.5 → 781.7 MiB/s) while each
# run's own iterations varied 5-13 %. The floor is a factor of 1.75 either way (−42.9 % … +75 %):
# above every such A/A difference, and an A/A false alarm rate of at most 5 % up to a 20 % run-to-run
# spread (two runs' log ratio has sd √2·0.2; ln 1.75 is 1.98 of it; bench/calibration.py, designs
# "separate N %"). A factor of 1.5 called 5.7 % of A/As at a 15 % spread and 15.8 % at 20 %. A 50 %
# drop (a factor of 2) is beyond it.
DRIFT_FLOOR_PCT = 75.0


DRIFT_FLOOR_SOURCE = ("the default floor, uncalibrated: consecutive runs of identical settings on one zfs-fuse "
                      "machine differed by up to +33 %, and the floor holds A/A false alarms to 5 % up to a 20 % "
                      "run-to-run spread, docs/benchmarks.md; `zfsperf calibrate` measures this "
                      "machine's run-to-run noise, after which compare judges these settings on it")


def floor_span(floor_pct: float) -> str:
    """A floor of a factor (1 + floor_pct/100) either way, as the changes it spans: "−42.9 … +75 %"."""
    return f"−{(1 - 1 / (1 + floor_pct / 100)) * 100:.1f} … +{floor_pct:.3g} %"


def beyond_floor(change_pct: float, floor_pct: float) -> bool:
    """A change of change_pct % is outside a factor of (1 + floor_pct/100) either way."""
    ratio = 1 + change_pct / 100
    if ratio <= 0:
        return True
    return abs(math.log(ratio)) >= math.log1p(floor_pct / 100) - 1e-12
