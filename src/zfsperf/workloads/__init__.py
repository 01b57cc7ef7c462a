"""Workloads behind one table: name -> an object with fields, validate, prepare and run."""

from __future__ import annotations

from ..units import unit_direction
from .base import Workload
from .copy import CopyWorkload
from .fio import FioWorkload
from .mixed import MixedWorkload
from .receive import ReceiveWorkload

WORKLOADS: dict[str, Workload] = {
    "receive": ReceiveWorkload(),
    "fio": FioWorkload(),
    "mixed": MixedWorkload(),
    "copy": CopyWorkload(),
}


def figure_direction(workload: str, name: str, unit: str) -> int:
    """+1 higher is better, -1 lower is better, 0 not judged: what the workload says, else the unit."""
    wl = WORKLOADS.get(workload)
    if wl is not None and name in wl.directions:
        return wl.directions[name]
    return unit_direction(unit)


SUMMARY_FIGURES = {name: list(wl.summary_figures) for name, wl in WORKLOADS.items()}
# figures that are durations a runfile bounds (a receive iteration's `duration`): how long, not
# how fast; never gated, never warned on as outliers
DURATIONS = ("receive_time", "wall_time")     # wall_time: its name in runs made before 2026-11-25


def headline(workload: str) -> str:
    """The figure a case of this workload is summarised and judged by ("" for an unknown one)."""
    wl = WORKLOADS.get(workload)
    return wl.headline if wl is not None else ""
