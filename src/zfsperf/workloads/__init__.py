"""Workloads behind one table: name -> an object with fields, validate, prepare and run."""

from __future__ import annotations

from .base import Workload
from .fio import FioWorkload
from .mixed import MixedWorkload
from .receive import ReceiveWorkload

WORKLOADS: dict[str, Workload] = {
    "receive": ReceiveWorkload(),
    "fio": FioWorkload(),
    "mixed": MixedWorkload(),
}
