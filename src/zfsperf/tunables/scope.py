"""When a written tunable takes effect: its apply scope.

A module parameter written at run time does not always change what the next operation does:
- runtime: the next operation reads it (most of them: zfs_vdev_async_write_max_active, ...);
- pool: only pools created or imported after the write use it (zfs.4: "Set value only applies to
  pools imported/created after that": spa_num_allocators, zio_taskq_*);
- load: read only once the module is loaded (sysfs mode 0444, ZMOD_RD in the source; or zfs.4
  "only enforced at module load time").

A sweep that writes a pool-scope value and reuses a pool, or writes a load-scope one at all,
would be a silent A/A: a pool-scope value gets a fresh pool, a load-scope one the module loaded
again with it (tunables/modswitch.py; only in zfsperf's own guest, where no pool but its own exists). The scope is read from the real system where it can be (the parameter
file's mode bits on the target), and from what the captured releases say (known/scopes.tsv:
their zfs.4, and the mode bits of the OpenZFS 2.3.2 guest's /sys/module/zfs/parameters) where it
cannot (before a target is open; FreeBSD's sysctls). Never from a hand list."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import lru_cache

from .registry import KNOWN_DIR

SCOPES_FILE = KNOWN_DIR / "scopes.tsv"


class Scope(enum.StrEnum):
    RUNTIME = "runtime"
    POOL = "pool"
    LOAD = "load"


# what each scope means for a sweep, said where a scope is refused or recorded
MEANING = {Scope.RUNTIME: "takes effect on the next operation",
           Scope.POOL: "applies only to pools created or imported after it is written",
           Scope.LOAD: "is read only when the zfs module loads"}


@dataclass(frozen=True)
class Documented:
    scope: Scope
    source: str            # where it was read: "zfs.4 of 2.3.2: ..." or "sysfs mode 444 on 2.3.2"

    @property
    def from_manual(self) -> bool:
        return self.source.startswith("zfs.4")


@lru_cache(maxsize=1)
def documented() -> dict[str, Documented]:
    """known/scopes.tsv: name -> its scope where a captured release says it is not runtime. Where
    releases differ (a parameter read-only in one), the manual's word wins over mode bits, and
    load over pool."""
    out: dict[str, Documented] = {}
    rank = {Scope.LOAD: 2, Scope.POOL: 1, Scope.RUNTIME: 0}
    for line in SCOPES_FILE.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, scope, source = line.split("\t", 2)
        d = Documented(Scope(scope), source)
        old = out.get(name)
        if old is None or (d.from_manual, rank[d.scope]) > (old.from_manual, rank[old.scope]):
            out[name] = d
    return out


def scope_of(name: str, mode: int | None = None) -> tuple[Scope, str]:
    """The scope of a tunable and why, given its parameter file's permission bits on the target
    when they are known (None: not open yet, or FreeBSD). A parameter no one may write is load
    scope whatever a manual says; the manual's pool and load scopes hold for a writable one;
    mode bits captured from another release stand in only when the live ones are unknown."""
    if mode is not None and not mode & 0o222:
        return Scope.LOAD, f"its file has mode {mode & 0o777:o} on the target"
    doc = documented().get(name)
    if doc is not None and (doc.from_manual or mode is None):
        return doc.scope, doc.source
    if mode is not None:
        return Scope.RUNTIME, f"mode {mode & 0o777:o} on the target"
    return Scope.RUNTIME, "no captured release says otherwise"


def refused(name: str, scope: Scope, why: str, *, turns: bool, reload: bool = False) -> str | None:
    """Why a run cannot write this tunable (turns: between the rounds of one pool; reload: the
    target's zfs module may be reloaded with it, zfsperf's own guest), said the same way by the
    runfile check, the runner and on the target; None when it can."""
    if scope is Scope.LOAD and turns:
        return (f"{name} {MEANING[scope]} ({why}): each value needs the module loaded again, so it cannot "
                "take turns between rounds (sweep it in interleaved blocks: --interleave)")
    if scope is Scope.LOAD and not reload:
        return (f"{name} {MEANING[scope]} ({why}): a run can set it only where zfsperf may reload the zfs "
                f"module with it, in its own OpenZFS guest (--target guest); elsewhere load the module with "
                f"it (modprobe zfs {name}=VALUE) and compare whole runs")
    if turns and scope is not Scope.RUNTIME:
        return (f"{name} {MEANING[scope]} ({why}): written between rounds on one pool it would change nothing, "
                "so it cannot take turns (sweep it in interleaved blocks: --interleave, each case on a fresh pool)")
    return None
