"""What differs between the set-ups of the runs compared: the facts run.json records that decide a
number besides the change under test (host, kernel, ZFS, target, runfile and -D defines, the
zfsperf commit, the tunables before the run, what the machine check found).

compare names every difference in each output format; its gate refuses to judge across one unless
told which may differ (`--allow-setup-change KEY,...`), so that a new kernel or a busy machine is
never reported as a ZFS regression. A run compared with itself (the same identity: a copy of one
run) is named too."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable

from .. import machine
from .model import RunData

KEYS = ("host", "kernel", "zfs", "target", "runfile", "defines", "zfsperf", "tunables", "machine")


@dataclass(frozen=True)
class SetupChange:
    key: str            # one of KEYS
    text: str           # "kernel: 6.1.0-18-amd64 → 6.1.0-21-amd64"

    def as_dict(self) -> dict[str, str]:
        return {"key": self.key, "text": self.text}


def _sha(text: str | None) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest()[:12] if text else None


def _zfsperf(r: RunData) -> str | None:
    sw = r.run.software or {}
    if sw.get("commit"):
        return sw["commit"][:12] + (" (with local changes)" if sw.get("dirty") else "")
    return r.run.zfsperf_version


def _machine(r: RunData) -> str | None:
    """The machine as a set-up fact: busy (by the kinds of load found) or quiet, then its set-up
    notes (governor, turbo, THP, tunables). A load below the busy bar (a load average, an idle
    zfs-fuse) is no set-up, and a load's figures are never compared: two back-to-back runs differ
    in them always (the gate refused two identical runs over `load average 8.31`, issue 83)."""
    before = (r.run.machine or {}).get("before") or {}
    if not before:
        return None
    finds = before.get("findings") or []
    busy = sorted({machine.condition_kind(w) or w for f in finds if f.get("level") == machine.BUSY
                   for w in [f.get("what", "?")]})
    notes = sorted(f.get("what", "?") for f in finds
                   if f.get("level") != machine.BUSY and machine.condition_kind(f.get("what", "?")) is None)
    return ("busy: " + "; ".join(busy) if busy else "quiet") + ("; notes: " + "; ".join(notes) if notes else "")


FACTS: dict[str, Callable[[RunData], Any]] = {
    "host": lambda r: r.run.host,
    "kernel": lambda r: r.run.kernel,
    "zfs": lambda r: " ".join(str(x) for x in (r.run.target.get("implementation"), r.run.target.get("zfs_version"))
                              if x) or None,
    "target": lambda r: r.run.target.get("accelerator") or "native",
    "runfile": lambda r: _sha(r.run.runfile.get("text")),
    "defines": lambda r: json.dumps(r.run.selection.get("defines") or {}, sort_keys=True),
    "zfsperf": _zfsperf,
    "tunables": lambda r: (r.run.tunables or {}).get("before") or {},
    "machine": _machine,
}


def _describe(key: str, a: Any, b: Any) -> str:
    if key == "tunables":
        names = sorted(n for n in set(a) | set(b) if a.get(n) != b.get(n))
        shown = ", ".join(f"{n} {a.get(n, '-')} → {b.get(n, '-')}" for n in names[:6])
        return f"tunables before the run: {shown}" + (f" (+{len(names) - 6} more)" if len(names) > 6 else "")
    if key == "runfile":
        return f"runfile text: sha256 {a or '-'} → {b or '-'}"
    return f"{key}: {a if a is not None else '?'} → {b if b is not None else '?'}"


def differences(bases: list[RunData], news: list[RunData]) -> list[SetupChange]:
    """Each fact that is not the same on both sides (one line per fact; with several runs a side,
    the first run whose fact differs from BASE's first run)."""
    out = []
    b0 = bases[0]
    for key, fact in FACTS.items():
        a = fact(b0)
        for r in [*bases[1:], *news]:
            b = fact(r)
            if a is None or b is None or a == b:
                continue
            out.append(SetupChange(key, _describe(key, a, b)))
            break
    return out


def same_run(bases: list[RunData], news: list[RunData]) -> list[str]:
    """Warnings for a run compared with itself (one directory twice, or a copy of it)."""
    ids = {r.identity: r for r in bases}
    out = []
    for r in news:
        twin = ids.get(r.identity)
        if twin is not None and twin is not r:
            out.append(f"{r.path} is the same run as {twin.path} (one run, or a copy of it): a comparison of a "
                       "run with itself measures nothing")
    return out
