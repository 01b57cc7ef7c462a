"""The A/A′ rebuild floor: how far two builds of one source differ, and what it does to build verdicts.

Compiling the same source twice (guest ab --a SRC --b SRC --rebuild: the second in a build tree of
its own) changes nothing in the code and can still move a figure: the module's layout (string
tables, function addresses and their alignment, the paths compiled in) is new. Such an A/A′ is the
smallest difference a build A/B can honestly call a change. Its floor for a figure is the larger
end of the A/A′ interval in absolute value, in per cent ("builds of one source differ by up to X %
here"): what the two builds could differ by, given what was measured.

Floors are kept per (test, figure, accelerator, definition) in one JSON file (the build cache's
rebuild-floors.json): the machine, emulated or not, and the workload decide them, not the source.
The definition is the test's digest (runfile.TestSpec.definition: workload, fields, pool, dataset,
tunables), so a test of the same name that measures something else (another stream size, another
pool) never inherits a floor it did not measure; such a floor is set aside and said so. Floors kept
before the definition was part of the key (three-part keys) are set aside the same way. Every later
build verdict of that test, definition and figure states its floor with the A/A′'s pairs and
interval, and a decided change (better or worse) that the floor holds is "within noise" instead, its
note saying why and giving the A/B's own verdict beside the floor's. A floor measured on fewer
pairs than the A/B it would guard (or whose pairs were not recorded: kept before they were) is
stated as not precise enough to bound it, and the A/B keeps its own verdict.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from ..units import ChangeVerdict
from .comparison import Comparison
from .designs import beyond_floor
from .export.compare.text import verdict_text


def key(test: str, figure: str, accelerator: str | None, definition: str) -> str:
    return f"{test}|{figure}|{accelerator or 'native'}|{definition}"


def load(path: Path) -> dict[str, dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def measured(cmp: Comparison, tests: dict[str, str], definitions: dict[str, str], accelerator: str | None,
             run: str) -> dict[str, dict[str, Any]]:
    """The floors an A/A′ comparison measured: for each judged figure with an interval, the larger
    end of it (tests: each compared case's label -> its test's name; definitions: each test's name
    -> its definition digest)."""
    out = {}
    for ch in cmp.changes:
        if ch.ci_pct is None or ch.verdict == ChangeVerdict.NONE or ch.case not in tests:
            continue
        floor = max(abs(ch.ci_pct[0]), abs(ch.ci_pct[1]))
        test = tests[ch.case]
        out[key(test, ch.figure, accelerator, definitions[test])] = {
            "floor_pct": round(floor, 3), "change_pct": round(ch.change_pct, 3),
            "ci_pct": [round(x, 3) for x in ch.ci_pct], "verdict": str(ch.verdict), "run": run,
            "pairs": ch.pairs, "time": time.time()}
    return out


def save(path: Path, floors: dict[str, dict[str, Any]]) -> None:
    """Add (or replace) floors in the file."""
    old = load(path)
    old.update(floors)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(old, indent=1, sort_keys=True))


def apply(cmp: Comparison, floors: dict[str, dict[str, Any]], tests: dict[str, str], definitions: dict[str, str],
          accelerator: str | None) -> list[str]:
    """State each build verdict's floor in its note, and call a decided change within it "within
    noise". Returns one line per (test, figure) floor used or set aside, for the output above the
    table."""
    said: list[str] = []
    for ch in cmp.changes:
        test = tests.get(ch.case, "")
        f = floors.get(key(test, ch.figure, accelerator, definitions.get(test, "")))
        if f is None:
            other = _other_definition(floors, test, ch.figure, accelerator)
            if other is not None:
                line = (f"no rebuild floor for this definition of {test} ({ch.figure}): the one kept "
                        f"({other['run']}) was measured of another definition of the test, and is not used")
                if line not in said:
                    said.append(line)
            continue
        floor = float(f["floor_pct"])
        n = f.get("pairs")
        ci = f.get("ci_pct")
        of = (f"{n} pairs" if n else "pairs not recorded") + (f", {ci[0]:+.1f} … {ci[1]:+.1f} %" if ci else "")
        line = (f"builds of one source differ by up to {floor:.1f} % here ({tests[ch.case]}, {ch.figure}: "
                f"an A/A′ rebuild of {of}, {f['run']})")
        precise = n is not None and (ch.pairs is None or n >= ch.pairs)
        if not precise:
            line += (f"; measured on fewer pairs than this A/B's {ch.pairs}" if n is not None and ch.pairs
                     else "; its pairs were not recorded") + ": not precise enough to bound it"
        if line not in said:
            said.append(line)
        own = verdict_text(ch)
        if ch.verdict in (ChangeVerdict.BETTER, ChangeVerdict.WORSE) and not beyond_floor(ch.change_pct, floor) \
                and precise:
            ch.verdict = ChangeVerdict.WITHIN_NOISE
            ch.note = (f"{ch.change_pct:+.1f} % is within the rebuild floor (the A/B's own verdict: {own}): {line}"
                       + (f"; {ch.note}" if ch.note else ""))
        elif ch.verdict in (ChangeVerdict.BETTER, ChangeVerdict.WORSE) and not beyond_floor(ch.change_pct, floor):
            ch.note = (f"{ch.change_pct:+.1f} % lies within the rebuild floor, which is not precise enough to hold "
                       f"it: the A/B's own verdict stands: {line}" + (f"; {ch.note}" if ch.note else ""))
        else:
            ch.note = line + (f"; {ch.note}" if ch.note else "")
        if ch.detectable_pct is not None:
            ch.detectable_pct = max(ch.detectable_pct, floor)
    return said


def _other_definition(floors: dict[str, dict[str, Any]], test: str, figure: str,
                      accelerator: str | None) -> dict[str, Any] | None:
    """The newest floor kept for this test, figure and accelerator under another definition (or
    under none: a floor kept before definitions were part of the key), if any."""
    head = f"{test}|{figure}|{accelerator or 'native'}"
    found = [f for k, f in floors.items() if k == head or k.startswith(head + "|")]
    return max(found, key=lambda f: f.get("time", 0)) if found else None
