"""What earlier zfsperf processes left behind, and what is done about it: the one owner.

Four kinds, each found by the module that knows it and handled here by one policy:
- **guard notes**: what the guard of a zfsperf that ended without its teardown did in its place
  (`/run/zfsperf/guard-PID.log`, guardian.py writes them): said once by the next run, then removed,
  with the records of a guard that was itself killed;
- **orphan labs**: zfs-fuse labs a run started whose zfsperf is gone (zfsfuse/orphans.py): a run
  refuses to measure beside one, `-x` tears it down, `zfsperf lab status` names it, and the guard
  tears down the labs its own zfsperf recorded the same way;
- **leftover pools**: pools carrying zfsperf's mark (pool.py), never one in KEEP: named before a
  run, destroyed by `-x`; `--resume` destroys only the interrupted run's own;
- **leftover vdev directories**: directories with a zfsperf manifest (pool.py): named, and emptied
  by `-x` of every file no process has open.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

from . import proc
from .errors import Refused, ZfsperfError
from .disks import keep_list
from .guard import GUARD_ROOT
from .pool import VdevDir, destroy_busy, leftover_pools, leftover_vdev_dirs
from .targets.base import Target
from .tunables import BackendSpec, Journal
from .tunables.backend import BUILD_ENTRY
from .zfsfuse.daemon import Lab
from .zfsfuse.orphans import describe, find_orphans, teardown

Say = Callable[[str], None]


def guard_notes() -> list[str]:
    """What guards of earlier zfsperf processes tore down after those ended without a teardown;
    read once: the notes are removed as they are returned. The records of a guard that was itself
    killed (its zfsperf gone, no guard process reading them) go too."""
    out = []
    for log in sorted(GUARD_ROOT.glob("guard-*.log")):
        try:
            out += log.read_text().splitlines()
            log.unlink()
        except OSError:
            continue
    live = {" ".join(proc.pid_cmdline(int(d))) for d in os.listdir("/proc") if d.isdigit()}
    for d in GUARD_ROOT.glob("guard-*"):
        owner = d.name.rsplit("-", 1)[-1]
        if d.is_dir() and owner.isdigit() and not proc.pid_alive(int(owner)) and \
                not any(f"zfsperf.{p} {d} " in cmd for cmd in live for p in ("guardian", "guard")):
            for f in d.iterdir():
                f.unlink(missing_ok=True)
            d.rmdir()
    return out


def before_a_run(cleanup: bool, say: Say) -> None:
    """Before a run opens its target: the guard notes said; orphan labs refused (their daemons
    perturb every number the run would take) or, with -x, torn down first (pools, then daemon,
    then vdev files: never a file under a live pool)."""
    for note in guard_notes():
        say(f"an earlier zfsperf ended without its teardown; its guard did it: {note}")
    orphans = find_orphans()
    if not orphans:
        return
    lines = [describe(lab) for lab in orphans]
    if not cleanup:
        raise Refused("refusing to measure beside daemons an earlier zfsperf left running:\n  "
                      + "\n  ".join(lines) + "\n(run again with -x to stop them first)")
    for lab, line in zip(orphans, lines):
        say(f"-x: {line}")
        teardown(lab, lambda text: say(f"-x: {text}"))


def on_the_target(target: Target, vdev_root: Path, say: Say, *, cleanup: bool,
                  resume_owner: str | None = None) -> None:
    """Once the target is open: leftover pools and vdev directories named (never touched), or
    removed with -x; on --resume, the interrupted run's own pools destroyed (its directory's name
    is the owner its pools are marked with)."""
    if cleanup or resume_owner is not None:
        remove_pools_and_files(target, vdev_root, say, only_owner=None if cleanup else resume_owner)
        return
    pools = [f"{n} (run {o})" for n, o in leftover_pools(target)]
    dirs = [str(d) for d in leftover_vdev_dirs(target, vdev_root)]
    if pools:
        say(f"leftover zfsperf pools: {', '.join(pools)} (remove with -x; KEEP=... keeps one)")
    if dirs:
        say(f"leftover zfsperf vdev files in: {', '.join(dirs)} (remove with -x)")


def remove_pools_and_files(target: Target, vdev_root: Path, say: Say, only_owner: str | None = None) -> None:
    """-x: remove pools and vdev files that earlier zfsperf runs marked as theirs (never KEEP).
    With only_owner (--resume), just the pools the interrupted run itself left."""
    keep = keep_list()
    for name, owner in leftover_pools(target):
        if only_owner is not None and owner != only_owner:
            continue
        if name in keep:
            say(f"-x: keeping {name} (in KEEP)")
            continue
        try:
            destroy_busy(target, name)
            say(f"-x: destroyed leftover zfsperf pool {name} (run {owner})")
        except ZfsperfError as e:
            say(f"-x: could not destroy {name}: {e}")
    if only_owner is not None:
        return
    for d in leftover_vdev_dirs(target, vdev_root):
        vd = VdevDir(target, d)
        removed = vd.remove_all(skip_open=True)
        if removed:
            say(f"-x: removed {len(removed)} leftover vdev files in {d}")
        kept = vd.listed()
        if kept:
            say(f"-x: kept {len(kept)} vdev files in {d}: still open (a live pool's vdevs)")


def journal_lines(journal: Journal | None = None) -> list[str]:
    """`zfsperf check` and `lab status`: what a zfsperf that ended without putting it back left
    changed (its tunables journal): a build's module loaded in place of the machine's own, a tunable
    at another value. The next `zfsperf run` puts each back before anything else."""
    out = []
    for e in (journal or Journal()).stale():
        try:
            where = BackendSpec.from_json(e["backend"]).describe()
        except Exception:  # noqa: BLE001 - an entry of an older journal: said without its place
            where = str(e.get("backend"))
        what = (f"a build's zfs module loaded in place of the machine's own ({e.get('new')})" if e.get("name") == BUILD_ENTRY
                else f"{e.get('name')} at {e.get('new')} (it was {e.get('old')})")
        out.append(f"left behind: {what} by zfsperf pid {e.get('pid')}, {where}: the next zfsperf run puts it "
                   "back before anything else")
    return out


def orphan_lines() -> list[str]:
    """`zfsperf lab status`: every orphan lab on this machine, named with how to stop it."""
    return [f"{describe(lab)} (`zfsperf run -x` stops it)" for lab in find_orphans()]


def tear_down_recorded(roots: list[str], owner: str, say: Say) -> None:
    """The guard's work for its zfsperf that ended: each lab it recorded and did not stop itself,
    torn down as -x tears down an orphan."""
    for root in roots:
        lab = Lab.find(Path(root))
        if lab is not None:
            say(f"zfsperf (pid {owner}) ended without stopping its zfs-fuse lab at {root}: tearing it down")
            try:
                teardown(lab, say)
            except Exception as e:  # noqa: BLE001 - go on with the rest
                say(f"teardown of {root} failed: {type(e).__name__}: {e}")
