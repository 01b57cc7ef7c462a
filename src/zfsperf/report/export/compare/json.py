"""compare --format json: the comparison as one object (its keys are read by CI recipes)."""

from __future__ import annotations

from typing import Any

from ...comparison import Comparison
from ...designs import DESIGNS
from .text import emulated, notes


def as_json(cmp: Comparison, figures: list[str] | None) -> dict[str, Any]:
    """The comparison's changes, failures, set-up differences and notes, with the designs in words."""
    return {"base": [str(r.path) for r in cmp.bases], "new": [str(r.path) for r in cmp.news],
            "designs": {d: DESIGNS[d] for d in sorted({c.design for c in cmp.changes})},
            "changes": [c.as_dict() for c in cmp.changes], "geomeans": cmp.geomeans,
            "failures": [f.as_dict() for f in cmp.failures], "unmatched": cmp.unmatched,
            "findings": cmp.findings, "warnings": cmp.warnings, "emulated": emulated(cmp),
            "setup_changes": [c.as_dict() for c in cmp.setup],
            "profiles": [d.as_dict() for d in cmp.profiles],
            "classes": [c.as_dict() for c in cmp.classes],
            "history_store": cmp.history_store,
            "notes": notes(cmp, figures)}
