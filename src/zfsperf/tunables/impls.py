"""The implementations the zfs module picks when it loads, read and pinned for a run.

When OpenZFS loads it times each implementation of some of its algorithms and uses the fastest
(`fastest`, the default of their selector parameters): fletcher4 (/proc/spl/kstat/zfs/
fletcher_4_bench, the "fastest" row: native, byteswap), sha256, sha512 and blake3 (chksum_bench,
2.2 on: the fastest at 256 KiB, as zfs_chksum.c chooses) and each raidz parity operation
(vdev_raidz_bench, the "fastest" row: one pick per operation). On a busy or emulated machine two
loads of one build can pick differently (seen in the guest under TCG: one load of 176 picked
scalar fletcher4 where the others picked superscalar), and a build A/B, or a load-scope sweep,
would then compare picks, not code: every receive computes fletcher4 over each block it writes.

So a run that loads the module again (ModuleSwitch) reads each load's picks, and pins every load
of the run, in both guests of build turns, to the picks of its first load: the selector
parameter written (zfs_fletcher_4_impl = superscalar) and read back. Not pinned: a selector the
run's tests set themselves (their value rules; `fastest` leaves the module's own pick), one the
loaded build does not offer (logged), and raidz, whose picks are per operation while its selector
takes one name (recorded, and a load whose raidz picks differ from the first's is logged).
The selectors read back as their chosen name (`chosen`), so a sweep can set them as tunables."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

from .. import proc
from ..errors import TargetError


class Params(Protocol):
    """The module's parameters as ImplPin reads and writes them (backend.FileTunables)."""
    spec: Any

    def has(self, name: str) -> bool: ...
    def get(self, name: str) -> str: ...
    def raw(self, name: str) -> str: ...
    def set(self, name: str, value: str) -> None: ...


class Journaled(Protocol):
    """Where a write is recorded before it is made (journal.Journal)."""
    def record(self, backend: Any, name: str, old: str, new: str) -> None: ...


KSTAT = "/proc/spl/kstat/zfs"
# algorithm -> its selector parameter (the ones ImplPin pins)
SELECTORS = {"fletcher4": "zfs_fletcher_4_impl", "sha256": "zfs_sha256_impl", "sha512": "zfs_sha512_impl",
             "blake3": "zfs_blake3_impl"}
_SELECTOR = re.compile(r"^(?:[\w-]+ +)*\[([\w-]+)\](?: +[\w-]+)*$")


def chosen(value: str) -> str:
    """A selector parameter's value as its chosen name ("cycle [fastest] generic x64" -> "fastest",
    "fastest scalar [superscalar] sse2" -> "superscalar"); any other value as it is."""
    m = _SELECTOR.match(value.strip())
    return m.group(1) if m else value


def chosen_all(values: dict[str, Any]) -> dict[str, Any]:
    """Tunables (name -> value) with each selector as its chosen name: run.json and history stores
    written before 2026-11-28 hold them as the module printed them ("[fastest] scalar ...")."""
    return {k: chosen(v) if isinstance(v, str) else v for k, v in values.items()}


def offered(value: str) -> list[str]:
    """The names a selector parameter's raw value lists (the chosen one without its brackets)."""
    return [w.strip("[]") for w in value.split()] if _SELECTOR.match(value.strip()) else []


def _table(text: str) -> tuple[list[str], list[list[str]]]:
    """A kstat raw table: its header line (starting "implementation") and the rows after it."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        words = ln.split()
        if words and words[0] == "implementation":
            return words[1:], [r.split() for r in lines[i + 1:] if r.split()]
    return [], []


def fastest_row(text: str) -> dict[str, str]:
    """fletcher_4_bench or vdev_raidz_bench: the "fastest" row, column by column (fletcher4:
    native, byteswap; raidz: one column per parity operation)."""
    cols, rows = _table(text)
    row = next((r for r in rows if r[0] == "fastest"), None)
    return dict(zip(cols, row[1:])) if row else {}


def chksum_picks(text: str) -> dict[str, str]:
    """chksum_bench: for sha256, sha512 and blake3, the implementation fastest at 256 KiB (rows
    "sha256-x64"; figures in MiB/s); the first of equals, as zfs_chksum.c keeps the first max."""
    cols, rows = _table(text)
    if "256k" not in cols:
        return {}
    at = cols.index("256k") + 1
    best: dict[str, tuple[int, str]] = {}
    for r in rows:
        algo, _, impl = r[0].partition("-")
        if algo not in SELECTORS or not impl or len(r) <= at or not r[at].isdigit():
            continue
        if algo not in best or int(r[at]) > best[algo][0]:
            best[algo] = (int(r[at]), impl)
    return {a: impl for a, (_v, impl) in best.items()}


Run = Callable[..., proc.Completed]


def read_picks(run: Run) -> dict[str, Any]:
    """The picks of the module loaded now: {"fletcher4": .., "sha256": .., ..., "raidz": {op: impl}}
    (a kstat this version does not have is left out)."""
    picks: dict[str, Any] = {}
    for name in ("fletcher_4_bench", "chksum_bench", "vdev_raidz_bench"):
        res = run(["cat", f"{KSTAT}/{name}"])
        if not res.ok:
            continue
        if name == "fletcher_4_bench":
            f4 = fastest_row(res.stdout).get("native")
            if f4:
                picks["fletcher4"] = f4
        elif name == "chksum_bench":
            picks |= chksum_picks(res.stdout)
        else:
            rz = fastest_row(res.stdout)
            if rz:
                picks["raidz"] = rz
    return picks


@dataclass
class ImplPin:
    """The run's pins, shared by every module switch of the run (both guests of build turns):
    set from the run's first load, written after every load. `leave`: selectors the run's tests
    set themselves."""
    leave: set[str] = field(default_factory=set)
    pinned: dict[str, str] = field(default_factory=dict)          # selector parameter -> implementation
    first_raidz: dict[str, str] | None = None
    loads: list[dict[str, Any]] = field(default_factory=list)     # each load: where, its picks, what was written
    # called with as_dict() after every load (the runner stores it in run.json then, so that a run
    # killed with -9 leaves its pins for --resume)
    on_load: Callable[[dict[str, Any]], None] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def resumed(cls, recorded: dict[str, Any], leave: set[str]) -> "ImplPin":
        """The pins of a run being resumed (--resume), from its run.json `implementations`: every
        load of the resumed part is given the stored run's first load's picks, and the loads it
        recorded are kept. A run killed (kill -9) before its first load ended stored none: its
        resumed part pins to its own first load."""
        loads = list(recorded.get("loads") or [])
        return cls(leave=set(leave), pinned=dict(recorded.get("pinned") or {}) if loads else {},
                   first_raidz=(loads[0].get("picks") or {}).get("raidz") if loads else None, loads=loads)

    def after_load(self, run: Run, params: Params, where: str, log: proc.CommandLog | None = None,
                   journal: Journaled | None = None) -> dict[str, Any]:
        """Read this load's picks; the first load of the run sets the pins; write each pin that
        the loaded build offers (journaled first: a zfsperf killed with -9 leaves `fastest` to put
        back) and read it back (a pin that does not read back is an error). Returns what this
        load recorded."""
        picks = read_picks(run)
        if not self.loads:
            self.pinned = {SELECTORS[a]: impl for a, impl in picks.items()
                           if a in SELECTORS and SELECTORS[a] not in self.leave and params.has(SELECTORS[a])}
            self.first_raidz = picks.get("raidz")
        written, notes = {}, []
        for name, impl in self.pinned.items():
            if not params.has(name) or impl not in offered(params.raw(name)):
                notes.append(f"{name} {impl}: not offered by this build, left at its own pick")
                continue
            if journal is not None:
                journal.record(params.spec, name, params.get(name), impl)
            params.set(name, impl)
            now = params.get(name)
            if now != impl:
                raise TargetError(f"tunable {name} reads back {now} after writing {impl} (pinning the run's "
                                  "first load's pick)")
            written[name] = impl
        if self.first_raidz is not None and picks.get("raidz") not in (None, self.first_raidz):
            notes.append("raidz picks differ from the run's first load's (not pinned: its selector takes one "
                         "name, the picks are per operation)")
        rec = {"where": where, "picks": picks, "pinned": written} | ({"notes": notes} if notes else {})
        self.loads.append(rec)
        if self.on_load is not None:
            self.on_load(self.as_dict())
        if log:
            shown = ", ".join(f"{a} {p}" for a, p in picks.items() if a != "raidz") or "none readable"
            log.write(f"# implementations picked at load ({where}): {shown}"
                      + (f"; raidz {' '.join(f'{k}={v}' for k, v in picks['raidz'].items())}" if "raidz" in picks else "")
                      + (f"; pinned to the run's first load's: {', '.join(f'{k}={v}' for k, v in written.items())}"
                         if written else "; nothing pinned")
                      + (f"; {'; '.join(notes)}" if notes else ""))
        return rec

    def as_dict(self) -> dict[str, Any]:
        return {"pinned": dict(self.pinned), "left": sorted(self.leave & set(SELECTORS.values())),
                "loads": list(self.loads)}


def summary(recorded: dict[str, Any]) -> str | None:
    """One line for a verdict of a run that loaded the module again: what every load was pinned
    to, and how often the picks left alone differed from the first load's."""
    loads = recorded.get("loads") or []
    if not loads:
        return None
    pinned = recorded.get("pinned") or {}
    first = loads[0].get("picks") or {}
    moved = {a: sum(1 for ld in loads[1:] if (ld.get("picks") or {}).get(a) != first.get(a))
             for a in first if a == "raidz" or SELECTORS.get(a) not in pinned}

    def given(k: str, v: str) -> str:
        n = sum(1 for ld in loads if (ld.get("pinned") or {}).get(k) == v)
        return f"{k.removeprefix('zfs_').removesuffix('_impl')} {v}" + (
            f" (in {n} of {len(loads)}: the others' builds did not offer it)" if n < len(loads) else "")
    said = (f"each of the {len(loads)} module loads was given the first load's implementation picks: "
            + (", ".join(given(k, v) for k, v in pinned.items()) or "none pinned"))
    left = [f"{a} differed from the first load's in {n} of {len(loads) - 1}" for a, n in moved.items() if n]
    left += [f"{k} set by the tests" for k in recorded.get("left") or []]
    return said + (f" (not pinned: {'; '.join(left)})" if left else "")
