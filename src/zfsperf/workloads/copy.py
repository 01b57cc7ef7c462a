"""Copying files from one dataset to another with the target's `cp`: where the pool has block
cloning (OpenZFS 2.2+, `zfs_bclone_enabled`), `cp --reflink=auto` (coreutils' default since 9.0)
clones the source's blocks instead of writing them again; elsewhere it copies them. Within one
dataset a FICLONE clones; across two the kernel refuses FICLONE (two filesystems) and only a `cp`
that falls back to copy_file_range (coreutils 9; not BusyBox's) gets OpenZFS's clone. The copy's speed, and above all the case's exact counts (block cloning's savings and
the bytes written to the vdevs, per byte: metrics/counts.py), show a clone that silently became a
full copy (openzfs/zfs #19088, 2.3.9) in one iteration.

Each iteration, on its fresh pool: fio writes `files` files of `size` into the dataset `src`
(end_fsync), the pool is synced (a block of an open txg is not cloned: `zpool sync` on kernel
OpenZFS, `sync -f` elsewhere), then, timed, one `cp --reflink=MODE` copies them into the dataset
`dst` (`across = false`: into a directory of `src`, the same dataset) and `sync -f` puts the copy on
stable storage. A precondition round copies again over the last round's copy (removed first).
Figures: throughput (the source's bytes copied a second, MiB/s) and copy_time (s). Its exact
counts are per byte the round wrote (the source, on a pool's first round, and one copy of it); the
pool-wide ones (the bytes cloning saved) are read at the case's end.

zfsperf writes no I/O loop of its own: fio writes, cp copies."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ..errors import InputError, shown
from ..targets.base import Target
from ..units import parse_size
from . import fio
from .base import CaseContext, Figures, WorkloadFailed, figure, work_ended

REFLINK = ("auto", "always", "never")      # cp --reflink=WHEN


class CopyWorkload:
    name = "copy"
    headline = "throughput"
    series_headline = "workload_mibs"
    bandwidth_figure: str | None = None   # a clone writes no data: the pool's bandwidth is no second measure
    summary_figures = ["throughput", "copy_time"]
    directions = {"throughput": 1, "copy_time": -1}
    figure_units = (("throughput", "MiB/s"), ("copy_time", "s"))
    fields: dict[str, tuple[Any, bool]] = {
        "size": ((str, int), True), "files": (int, True), "bs": ((str, int), True),
        "reflink": (str, True), "across": (bool, True),
    }
    duet_modes: tuple[str, ...] = ()
    turns_across_guests = False
    turns_share_files = False
    pool_counts_at_end = True            # the source and its copy stay to the case's end

    def validate(self, test: dict[str, Any], where: Callable[[str], dict]) -> None:
        def each(k: str) -> list[Any]:
            v = test.get(k)
            return [] if v is None else (v if isinstance(v, list) else [v])
        for k in ("size", "bs"):
            for v in each(k):
                try:
                    if parse_size(v) <= 0:
                        raise ValueError("must be positive")
                except ValueError as e:
                    raise InputError(f"{k}: {e}", **where(k)) from None
        for v in each("files"):
            if not 1 <= v <= 10000:
                raise InputError(f"files: expected 1 to 10000, got {shown(v)}", **where("files"))
        for v in each("reflink"):
            if v not in REFLINK:
                raise InputError(f"reflink: expected one of {', '.join(REFLINK)} (cp --reflink), got {shown(v)}",
                                 **where("reflink"))

    def prepare(self, test: dict[str, Any], target: Target, vdev_dir: Path,
                progress: Callable[[str], None] | None) -> None:
        return None

    def cycle(self, ctx: CaseContext, figures: Figures) -> tuple[float | None, str]:
        return None, "one copy of every file"

    def asked_seconds(self, fields: dict[str, Any]) -> float | None:
        return None

    def kept_bytes(self, fields: dict[str, Any]) -> int | None:
        return 2 * self.active_bytes(fields, None)       # the source and a full copy of it, at most

    def active_bytes(self, fields: dict[str, Any], prepared: Any) -> int:
        return parse_size(fields.get("size", "64M")) * int(fields.get("files", 4))

    def run(self, ctx: CaseContext) -> Figures:
        p = ctx.fields
        size, n = parse_size(p.get("size", "64M")), int(p.get("files", 4))
        for name in ("src", "dst") if p.get("across", True) else ("src",):      # made on the pool's first round
            if ctx.target.run(["zfs", "list", "-H", "-o", "name", f"{ctx.pool.root}/{name}"]).returncode != 0:
                ctx.pool.dataset(name)
        src_dir = f"{ctx.pool.mountpoint}/src"
        dst_dir = f"{ctx.pool.mountpoint}/dst" if p.get("across", True) else f"{src_dir}/copy"
        names = [f"f{i}" for i in range(n)]
        wrote = 0
        if ctx.target.run(["test", "-f", f"{src_dir}/{names[-1]}"]).returncode != 0:   # once a pool
            job = ["[src]", f"directory={src_dir}", "rw=write", f"bs={parse_size(p.get('bs', '1M'))}",
                   f"filesize={size}", f"size={size * n}", f"nrfiles={n}", "filename_format=f$filenum",
                   "file_service_type=sequential", "ioengine=psync", "end_fsync=1", ""]
            fio.run_jobfile(ctx, ["\n".join(job)], [], tag=".source")
            ctx.end_progress()
            wrote = size * n
        _sync(ctx)
        ctx.target.run(["mkdir", "-p", "--", dst_dir], log=ctx.log)
        ctx.target.run(["rm", "-f", "--", *[f"{dst_dir}/{x}" for x in names]], log=ctx.log)   # a last round's copy
        argv = ["cp", f"--reflink={p.get('reflink', 'auto')}", "--", *[f"{src_dir}/{x}" for x in names], dst_dir]
        t0 = time.monotonic()
        res, what = ctx.target.run(argv, log=ctx.log, timeout=max(1.0, ctx.remaining())), argv[:2]
        if res.returncode == 0:
            what = ["sync", "-f", dst_dir]
            res = ctx.target.run(what, log=ctx.log, timeout=max(1.0, ctx.remaining()))
        seconds = time.monotonic() - t0
        work_ended(ctx)
        if res.returncode != 0:
            raise WorkloadFailed(f"{' '.join(what)} failed: {res.error_text()}")
        if ctx.phase == "precondition":
            return {}
        copied = size * n
        # the work of the round: the source written (on a pool's first round) and copied; what the
        # exact counts are per
        ctx.extra["work"] = {"bytes": float(wrote + copied)}
        ctx.extra["counts"] = {"logical_bytes": float(wrote + copied)}
        return {"throughput": figure(copied / 2 ** 20 / max(seconds, 1e-6), "MiB/s"),
                "copy_time": figure(seconds, "s")}


def _sync(ctx: CaseContext) -> None:
    """The source on disk before it is copied: a block of a txg still open is copied, not cloned."""
    if ctx.target.capabilities().txgs:                 # kernel OpenZFS: its `zpool sync`
        ctx.target.run(["zpool", "sync", ctx.pool.name], log=ctx.log, timeout=300)
    else:
        ctx.target.run(["sync", "-f", f"{ctx.pool.mountpoint}/src"], log=ctx.log, timeout=300)
