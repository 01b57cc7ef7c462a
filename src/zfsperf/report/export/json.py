"""The per-case report as JSON (`--format json`): the structure report/summary.py builds."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from . import Exported

NAME, FILENAME = "json", "report.json"


def render(x: "Exported") -> str:
    return json.dumps([r.to_json() for r in x.reports], indent=1, default=str) + "\n"
