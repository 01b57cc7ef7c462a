"""The A/A′ rebuild floor: how far two builds of one source differ, and what it does to build verdicts.

Compiling the same source twice (guest ab --a SRC --b SRC --rebuild: the second in a build tree of
its own) changes nothing in the code and can still move a figure: the module's layout (string
tables, function addresses and their alignment, the paths compiled in) is new. Such an A/A′ is the
smallest difference a build A/B can honestly call a change. Its floor for a figure is the larger
end of the A/A′ interval in absolute value, in per cent ("builds of one source differ by up to X %
here"): what the two builds could differ by, given what was measured.

Floors are kept per (test, figure, accelerator) in one JSON file (the build cache's
rebuild-floors.json): the machine, emulated or not, and the workload decide them, not the source.
Every later build verdict of that test and figure states its floor, and a decided change (better
or worse) that the floor holds is "within noise" instead, its note saying why.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..units import ChangeVerdict
from .compare import Comparison, beyond_floor


def key(test: str, figure: str, accelerator: str | None) -> str:
    return f"{test}|{figure}|{accelerator or 'native'}"


def load(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def measured(cmp: Comparison, tests: dict[str, str], accelerator: str | None, run: str) -> dict[str, dict[str, Any]]:
    """The floors an A/A′ comparison measured: for each judged figure with an interval, the larger
    end of it (tests: each compared case's label -> its test's name)."""
    out = {}
    for ch in cmp.changes:
        if ch.ci_pct is None or ch.verdict == ChangeVerdict.NONE or ch.case not in tests:
            continue
        floor = max(abs(ch.ci_pct[0]), abs(ch.ci_pct[1]))
        out[key(tests[ch.case], ch.figure, accelerator)] = {
            "floor_pct": round(floor, 3), "change_pct": round(ch.change_pct, 3),
            "ci_pct": [round(x, 3) for x in ch.ci_pct], "verdict": str(ch.verdict), "run": run,
            "time": time.time()}
    return out


def save(path: Path, floors: dict[str, dict[str, Any]]) -> None:
    """Add (or replace) floors in the file."""
    old = load(path)
    old.update(floors)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(old, indent=1, sort_keys=True))


def apply(cmp: Comparison, floors: dict[str, dict[str, Any]], tests: dict[str, str],
          accelerator: str | None) -> list[str]:
    """State each build verdict's floor in its note, and call a decided change within it "within
    noise". Returns one line per (test, figure) floor used, for the output above the table."""
    said: list[str] = []
    for ch in cmp.changes:
        f = floors.get(key(tests.get(ch.case, ""), ch.figure, accelerator))
        if f is None:
            continue
        floor = float(f["floor_pct"])
        line = (f"builds of one source differ by up to {floor:.1f} % here ({tests[ch.case]}, {ch.figure}: "
                f"an A/A′ rebuild, {f['run']})")
        if line not in said:
            said.append(line)
        if ch.verdict in (ChangeVerdict.BETTER, ChangeVerdict.WORSE) and not beyond_floor(ch.change_pct, floor):
            ch.verdict = ChangeVerdict.WITHIN_NOISE
            ch.note = (f"{ch.change_pct:+.1f} % is within the rebuild floor: {line}"
                       + (f"; {ch.note}" if ch.note else ""))
        else:
            ch.note = line + (f"; {ch.note}" if ch.note else "")
        if ch.detectable_pct is not None:
            ch.detectable_pct = max(ch.detectable_pct, floor)
    return said
