"""N concurrent `zfs receive` streams of one sendfile (MultiReceive's MiB/s and TXGs/s; blocks/s, the figure of merit of openzfs/zfs#10099).

Each receive gets the sendfile as its stdin file: nothing is copied through Python (on zfs-fuse
the daemon reads the passed descriptor directly). Timing runs from the first start to the last
exit; a receive ends with a sync task, so the data is committed. Every receive must exit 0 and its
snapshot must exist afterwards, or the case is FAIL with zfs's own message.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, NamedTuple

from ..errors import InputError, shown
from ..safepaths import check_place
from ..sshlink import again_while_refused, ssh_failed_to_start
from ..targets.base import Target
from ..units import MIB, parse_duration, parse_size
from ..metrics import counts, crosscheck
from ..metrics.cpucost import CPU_FIGURE_UNITS
from ..metrics.crosscheck import CrossCheck
from . import corpus as corpus_mod
from .sendstream import StreamError, check_header
from .base import CaseContext, Figures, WorkloadFailed, figure, work_ended
from .turns import ORDER, take_turns


def _fd_pos(pid: int, fd: int = 0) -> int | None:
    """Bytes consumed so far from a process's stdin (shared offset of the file description)."""
    try:
        with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii") as f:
            for line in f:
                if line.startswith("pos:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


@dataclass
class Round:
    nbytes: int                          # received in the round (stream length × threads)
    writes: int                          # WRITE records received
    elapsed: float                       # first start to last exit (s)
    streams: list[tuple[str, float]]     # (dataset, seconds from its own start to its own exit)
    stream_bytes: int
    txgs: int | None                     # txgs committed during the round (OpenZFS), else None
    write_bytes: int = 0                 # logical bytes of the WRITE records received (all streams)
    file_bytes: int | None = None        # of them, files' contents (None: a stream of a cache made before)
    pool_bytes: float | None = None      # logical bytes the pool took for them: allocated × compressratio
    compressratio: float = 1.0           # of the received datasets (zfs prints it to 2 decimals)
    allocated: float | None = None       # the space the received data took (exact, zfs get -Hp): the
                                         # fresh parent's usedbychildren; an incremental's Δused
    sharing: dict[str, float] | None = None   # the first measured round's: the pool's dedup ratio and cloning after it


class ReceiveWorkload:
    name = "receive"
    headline = "throughput"            # the figure a case is summarised and judged by
    series_headline = "workload_mibs"   # its live counterpart in the sampled series (steady veto)
    bandwidth_figure: str | None = "throughput"   # cross-checked against zpool iostat
    summary_figures = ["throughput", "per_stream", "receive_time"]   # `zfsperf report` shows every one
    duet_modes = ("together", "turns")   # both sides at once, or round by round (run_turns)
    turns_across_guests = True           # run_turns reads each side's own pool (build turns)
    turns_share_files = False            # each round receives into fresh datasets, named per side
    pool_counts_at_end = False           # a round reads the pool-wide counts before it destroys its datasets
    directions = {"throughput": 1, "per_stream": 1, "blocks": 1, "bytes": 0, "txgs": 0, "receive_time": -1}
    figure_units = (("throughput", "MiB/s"), ("per_stream", "MiB/s"), ("blocks", "blocks/s"), ("bytes", "B"),
                    ("txgs", "TXGs/s"), ("receive_time", "s"), *CPU_FIGURE_UNITS)
    fields: dict[str, tuple[Any, bool]] = {
        "corpus": (dict, True),
        "threads": (int, True),
        "force": (bool, False),          # zfs receive -F
        "duration": ((str, int, float), False),   # measure: receive rounds back to back this long
        "io_size": ((str, int), False),  # measure: whole rounds back to back until this much is received
    }

    def validate(self, test: dict[str, Any], where: Callable[[str], dict]) -> None:
        if "corpus" not in test:
            raise InputError("a receive test needs a corpus: { kind = ..., size = ... } or { file = ... }",
                             **where("corpus"))
        specs = test["corpus"] if isinstance(test["corpus"], list) else [test["corpus"]]
        for spec in specs:
            if not isinstance(spec, dict):
                raise InputError("corpus must be a table", **where("corpus"))
            unknown = set(spec) - {"kind", "size", "seed", "file"}
            if unknown:
                raise InputError(f"unknown corpus field {shown(sorted(unknown)[0])} (expected kind, size, seed "
                                 "or file)", **where("corpus"))
            if "file" in spec:
                _check_sendfile(spec, where)
                continue
            if spec.get("kind") not in corpus_mod.KINDS:
                raise InputError(f"corpus.kind must be one of {', '.join(corpus_mod.KINDS)}, got "
                                 f"{shown(spec.get('kind'))}", **where("corpus"))
            try:
                size = parse_size(spec.get("size", "256M"))
            except ValueError as e:
                raise InputError(f"corpus.size: {e}", **where("corpus")) from None
            if size < MIB:
                raise InputError("corpus.size must be at least 1M", **where("corpus"))
            if "seed" in spec and (not isinstance(spec["seed"], int) or isinstance(spec["seed"], bool)):
                raise InputError("corpus.seed must be an integer", **where("corpus"))
        if "duration" in test:
            try:
                if parse_duration(test["duration"]) <= 0:
                    raise ValueError("must be positive")
            except ValueError as e:
                raise InputError(f"duration: {e}", **where("duration")) from None
        if "io_size" in test:
            if "duration" in test:
                raise InputError("io_size and duration do not go together: an iteration receives a fixed amount "
                                 "(the same work each time) or for a time", **where("io_size"))
            try:
                if parse_size(test["io_size"]) < MIB:
                    raise ValueError("must be at least 1M")
            except ValueError as e:
                raise InputError(f"io_size: {e}", **where("io_size")) from None
        threads = test.get("threads", 1)
        for t in threads if isinstance(threads, list) else [threads]:
            if not 1 <= t <= 64:
                raise InputError(f"threads must be between 1 and 64, got {t}", **where("threads"))

    def prepare(self, test: dict[str, Any], target: Target, vdev_dir: Path,
                progress: Callable[[str], None] | None) -> dict[str, corpus_mod.Corpus]:
        specs = test["corpus"] if isinstance(test["corpus"], list) else [test["corpus"]]
        out = {corpus_mod.describe_spec(s): corpus_mod.resolve(target, s, vdev_dir, progress) for s in specs}
        if target.receive_guard() is None:
            for c in out.values():
                if any(st is not None and st.compound for st in (c.stream, c.base)):
                    raise InputError(f"corpus {c.describe()}: a compound stream (zfs send -p or -R) carries its "
                                     f"source's properties, mountpoint and shares among them, and {target.impl} "
                                     "here has no zfs receive -u / -x to keep them off this host",
                                     field="corpus.file")
        for c in out.values():           # a remote target reads its own copy: no transport in the figures
            for st in (c.stream, c.base):
                if st is not None:
                    st.on_target = target.stage_stream(st.path)
        return out

    @staticmethod
    def _parent(ctx: CaseContext, corpus: "corpus_mod.Corpus", threads: int,
                force: list[str]) -> tuple[str, list[str]]:
        """A round's fresh parent dataset and its streams' names; an incremental corpus's base
        received into each first, untimed."""
        target = ctx.target
        parent = f"{ctx.pool.root}/rcv" + (str(ctx.round) if ctx.round else "")   # a fresh parent per round
        res = target.run(["zfs", "create", "-p", "-o", "mountpoint=none", parent])
        if not res.ok:
            raise WorkloadFailed(f"zfs create {parent}: {res.error_text()}")
        names = [f"{parent}/s{i}" for i in range(threads)]
        if corpus.base is not None:
            for name in names:
                r = target.run(["zfs", "receive", *force, name], stdin_file=corpus.base.on_target or corpus.base.path,
                               timeout=max(1.0, ctx.remaining()))
                if not r.ok:
                    raise WorkloadFailed(f"zfs receive of the base stream into {name} failed: {r.error_text()}")
        return parent, names

    def _round(self, ctx: CaseContext, *, keep: bool, txgs: bool = True) -> Round:
        """One round: every receive started together and waited for; keep=False destroys what it
        received afterwards (untimed), so that rounds can follow each other on one pool."""
        corpus: corpus_mod.Corpus = ctx.prepared[corpus_mod.describe_spec(ctx.fields["corpus"])]
        threads = int(ctx.fields.get("threads", 1))
        target, pool = ctx.target, ctx.pool
        # a stream's own mountpoint and shares never reach the host (zfs send -p / -R streams)
        force = (["-F"] if ctx.fields.get("force") else []) + (target.receive_guard() or [])
        parent, names = self._parent(ctx, corpus, threads, force)
        txgs = txgs and ctx.phase == "measure"            # zdb: not between back-to-back rounds
        txg0 = target.txg(pool.name) if txgs else None
        # an incremental's datasets hold its base before the timed receive: their space is read
        # before it too; a full stream's are new under a fresh parent (its usedbychildren, after)
        used0 = self._space(ctx, parent)[0] if ctx.phase == "measure" and corpus.base is not None else None
        stream = corpus.stream
        starts: list[float] = []
        procs = []
        t0 = time.monotonic()
        for name in names:
            argv = ["zfs", "receive", *force, name]
            p = ctx.procs.add(target.popen(argv, stdin_file=stream.on_target or stream.path))
            starts.append(time.monotonic())
            procs.append((name, argv, p))
        per_byte_writes = stream.writes / stream.length if stream.length else 0.0

        def progress() -> dict[str, float]:
            done = sum((_fd_pos(p.pid) or 0) if p.poll() is None else stream.length for _n, _a, p in procs)
            return {"bytes": float(done), "ios": done * per_byte_writes}
        ctx.set_progress(progress)
        stop_live = threading.Event()
        if ctx.live is not None and ctx.phase == "measure":
            threading.Thread(target=self._live, args=(ctx, procs, stream.length, t0, stop_live),
                             daemon=True).start()
        # every receive is waited for in its own thread, so each one's end is its own exit time
        # (waiting in turn would stamp a stream that ended early with a later stream's end)
        ends: list[float | None] = [None] * len(procs)
        outs: list[tuple[bytes, bytes] | BaseException | None] = [None] * len(procs)

        def wait(i: int, p: subprocess.Popen) -> None:
            try:
                outs[i] = p.communicate()
            except BaseException as e:  # noqa: BLE001 - re-raised in the workload's thread below
                outs[i] = e
            ends[i] = time.monotonic()
        waiters = [threading.Thread(target=wait, args=(i, p), daemon=True) for i, (_n, _a, p) in enumerate(procs)]
        errors: list[str] = []
        try:
            for w in waiters:
                w.start()
            for (name, argv, p), w in zip(procs, waiters):
                w.join(max(0.1, ctx.remaining()))
                if w.is_alive():                # only a timeout is KILLED
                    raise ctx.overdue(f"receive into {name}")
            for i, (name, argv, p) in enumerate(procs):
                out = outs[i]
                if isinstance(out, BaseException):
                    raise out
                text = ((out or (b"", b""))[1] or b"").decode(errors="replace").strip()
                ctx.log.write(f"$ {' '.join(target.wrap(target.tool_argv(argv)))} < {stream.on_target or stream.path}\n# exit {p.returncode}, "
                              f"{(ends[i] or t0) - t0:.3f} s" + (f"\n  ! {text}" if text else ""))
                rc = p.returncode
                if rc != 0:
                    rc, text, starts[i], ends[i] = again_while_refused(
                        (rc, text, starts[i], ends[i] or t0), partial(self._again, ctx, name, argv, stream),
                        lambda r, name=name: self._ssh_refused(ctx, name, r[0], r[3] - r[2], r[1]),
                        before=partial(self._retrying, ctx, name))
                if rc != 0:
                    errors.append(f"{name}: {text or f'exit status {rc}'}")
        finally:
            stop_live.set()
            ctx.end_progress()
        end_times = [e for e in ends if e is not None]
        elapsed = max(end_times) - t0
        if errors:
            raise WorkloadFailed("zfs receive failed: " + "; ".join(errors))
        if stream.problem:
            raise WorkloadFailed(f"zfs receive reported success on a stream zfsperf found broken: {stream.problem}")
        snaps, space = self._received(ctx, parent)
        self._verify(parent, threads, stream.snapshot, snaps)
        pool_bytes, ratio, allocated = None, 1.0, None
        if ctx.phase == "measure" and space.ratio is not None:
            grew = space.children if corpus.base is None else (
                space.used - used0 if space.used is not None and used0 is not None else None)
            if grew is not None:
                pool_bytes, ratio, allocated = grew * space.ratio, space.ratio, grew
        txg1 = target.txg(pool.name) if txgs else None
        if not keep:                           # keep the pool from filling over many rounds
            target.run(["zfs", "destroy", "-r", parent], timeout=max(1.0, ctx.remaining()))
        ctx.round += 1
        return Round(nbytes=stream.length * threads, writes=stream.writes * threads, elapsed=elapsed,
                     streams=[(n, e - st) for (n, _a, _p), st, e in zip(procs, starts, end_times)],
                     stream_bytes=stream.length,
                     txgs=(txg1 - txg0) if txg0 is not None and txg1 is not None else None,
                     write_bytes=stream.write_bytes * threads, pool_bytes=pool_bytes, compressratio=ratio,
                     allocated=allocated,
                     file_bytes=None if stream.file_bytes is None else stream.file_bytes * threads)

    def run(self, ctx: CaseContext) -> Figures:
        """A case (or a precondition round): one round, or with `duration` rounds back to back
        until that long has passed, so that a measurement outlasts what caches absorb and the
        sampler sees enough samples for a steady verdict. Figures are over all rounds' timed parts."""
        duration = parse_duration(ctx.fields["duration"]) if ctx.fields.get("duration") else 0.0
        count = self.rounds(ctx.fields, ctx.prepared)
        txg_rate: float | None = None
        if ctx.phase != "measure" or not (duration or count > 1):
            rounds = [self._round(ctx, keep=ctx.phase == "measure")]
            self._sharing(ctx, rounds[0])
            if rounds[0].txgs is not None:
                txg_rate = rounds[0].txgs / rounds[0].elapsed
        else:
            # back to back, nothing destroyed in between (a destroy between rounds would leave
            # idle gaps in the load and in the sampled series); ends early when the pool could
            # not hold one more round, and says so
            rounds = []
            txg0, t0 = ctx.target.txg(ctx.pool.name), time.monotonic()
            until = t0 + duration
            def more() -> bool:
                if count:
                    return len(rounds) < count and not ctx.procs.cancelled
                return time.monotonic() < until and ctx.remaining() > 0 and not ctx.procs.cancelled
            while not rounds or more():
                if rounds and self._available(ctx) < 1.25 * rounds[-1].nbytes * ctx.sharers:
                    asked = f" of {count}" if count else ""
                    ctx.extra["duration_note"] = (f"rounds ended after {len(rounds)}{asked}: the pool would not hold "
                                                  "another (make vdev_size larger)")
                    break
                rounds.append(self._round(ctx, keep=True, txgs=False))
                if len(rounds) == 1:
                    self._sharing(ctx, rounds[0])
            t1, txg1 = time.monotonic(), ctx.target.txg(ctx.pool.name)
            if txg0 is not None and txg1 is not None:      # over the rounds' whole span, gaps included
                txg_rate = (txg1 - txg0) / (t1 - t0)
        return self._figures(ctx, rounds, txg_rate)

    def run_turns(self, ctxs: list[CaseContext]) -> list[Figures]:
        """Two sides (a dataset each on one pool) taking turns, one round at a time (turns.py: ABBA
        groups for `duration`, at least one group): what one round pays -- its own txg sync
        included, since a receive ends with a sync task -- is its side's alone, while whatever
        drifts over seconds (the pool filling, the machine) hits both alike. ctxs[0] goes first.
        Returns each side's figures, over its own rounds."""
        duration = parse_duration(ctxs[0].fields["duration"]) if ctxs[0].fields.get("duration") else 0.0
        # one pool (a duet) or a pool each (build turns: two guests): each pool's own txgs and room
        own = ctxs if ctxs[0].target is not ctxs[1].target else ctxs[:1]
        txg0, t0 = [c.target.txg(c.pool.name) for c in own], time.monotonic()

        def room(rounds: list[list[Round]]) -> str | None:
            need = 1.25 * len(ORDER) * max(r[-1].nbytes for r in rounds)
            if all(self._available(c) >= need for c in own):
                return None
            return (f"turns ended after {sum(map(len, rounds))} rounds: the pool would not hold another group "
                    "(make vdev_size larger)")
        rounds = take_turns(ctxs, lambda c: self._round(c, keep=True, txgs=False), duration=duration, room=room,
                            settled=True, turns=self.rounds(ctxs[0].fields, ctxs[0].prepared))
        t1, txg1 = time.monotonic(), [c.target.txg(c.pool.name) for c in own]
        rates = [(b - a) / (t1 - t0) if a is not None and b is not None else None for a, b in zip(txg0, txg1)]
        return [self._figures(c, r, rates[min(i, len(rates) - 1)]) for i, (c, r) in enumerate(zip(ctxs, rounds))]

    def _figures(self, ctx: CaseContext, rounds: list[Round], txg_rate: float | None) -> Figures:
        """A case's figures over its rounds' timed parts (and, when measuring, its cross-checks and
        the per-stream times it keeps)."""
        elapsed = sum(r.elapsed for r in rounds)
        per_stream = [r.stream_bytes / MIB / sec for r in rounds for _n, sec in r.streams if sec > 0]
        work_ended(ctx)                         # before the checks below (zdb)
        if ctx.phase == "measure":
            if all(r.pool_bytes is not None for r in rounds):
                ctx.cross_checks.append(self._data_check(rounds))
            # once a case: the same stream into a fresh pool of the same layout each iteration,
            # and zdb costs a second (its teardown; see ZfsFuseTarget.txg) the case's time budget pays
            blocks = self._blocks_check(ctx, rounds[-1]) if ctx.iteration == 1 else None
            if blocks is not None:
                ctx.cross_checks.append(blocks)
            ctx.extra["streams"] = [{"round": i, "dataset": n, "seconds": round(sec, 4)}
                                    for i, r in enumerate(rounds) for n, sec in r.streams]
            ctx.extra["rounds"] = len(rounds)
            ctx.extra["work"] = {"bytes": float(sum(r.nbytes for r in rounds)), "ops": float(sum(r.writes for r in rounds))}
            exact = counts.of_receive([r.allocated for r in rounds], [r.write_bytes for r in rounds],
                                      [r.writes for r in rounds], rounds[0].sharing)
            if exact is not None:
                ctx.extra["counts"] = exact
        figs: Figures = {
            "throughput": figure(sum(r.nbytes for r in rounds) / MIB / elapsed, "MiB/s"),
            "per_stream": figure(sum(per_stream) / len(per_stream), "MiB/s"),
            "blocks": figure(sum(r.writes for r in rounds) / elapsed, "blocks/s"),
            "bytes": figure(sum(r.nbytes for r in rounds), "B"),
            # the seconds spent receiving: each round from its first start to its last exit, summed
            # (not the iteration's wall-clock: the gaps between rounds and the set-up are left out)
            "receive_time": figure(elapsed, "s"),
        }
        if txg_rate is not None:
            figs["txgs"] = figure(txg_rate, "TXGs/s")
        return figs

    @staticmethod
    def _sharing(ctx: CaseContext, first: Round) -> None:
        """The pool-wide exact counts (Target.pool_sharing) after a measured iteration's first round,
        while its data is all the pool holds (a fresh pool each iteration; later rounds pile up on it
        and would count the rounds, not the work: the same stream received into a deduplicating
        pool n times is a dedup ratio of n)."""
        if ctx.phase == "measure":
            first.sharing = ctx.target.pool_sharing(ctx.pool.name)

    @staticmethod
    def _space(ctx: CaseContext, dataset: str) -> tuple[float | None, float | None]:
        """(used bytes, compressratio) of a dataset and its children, exact (-p), from ZFS's own
        space accounting; (None, None) where unreadable."""
        res = ctx.target.run(["zfs", "get", "-Hp", "-o", "value", "used,compressratio", dataset])
        vals = res.stdout.split() if res.ok else []
        return _used_ratio(vals[0] if vals else None, vals[1] if len(vals) > 1 else None)

    @staticmethod
    def _received(ctx: CaseContext, parent: str) -> tuple[set[str], "Space"]:
        """After a round, in one command (under emulation each costs a third of a second, and a
        round ran three): the snapshots under parent (_verify's), and parent's space; an empty set
        and Nones where unreadable."""
        res = ctx.target.run(["zfs", "get", "-Hpr", "-o", "name,property,value", "used,usedbychildren,compressratio",
                              parent])
        snaps: set[str] = set()
        mine: dict[str, str] = {}
        for line in res.stdout.splitlines() if res.ok else []:
            f = line.split("\t")
            if len(f) != 3:
                continue
            if "@" in f[0]:
                snaps.add(f[0])
            elif f[0] == parent:
                mine[f[1]] = f[2]
        return snaps, Space(_number(mine.get("used")), _number(mine.get("usedbychildren")),
                            _number(mine.get("compressratio")))

    # bytes a received dataset takes beyond its data: dnodes, indirect blocks, directories and the
    # snapshot (measured on zfs-fuse: about +0.15 % for 128K records; bench/truth.py prints it)
    METADATA_MARGIN_PCT = 3.0

    def _data_check(self, rounds: list[Round]) -> CrossCheck:
        """The data a receive delivered, counted twice: the logical bytes of the WRITE records of
        files' contents (what zfsperf counts from the stream's headers) vs what ZFS's space
        accounting says the received datasets took (× compressratio, read with `zfs get -Hp` after
        the timed receives: the round's fresh parent's usedbychildren; an incremental's Δused, its
        base's space read before). Independent of zfsperf's clock; a receive that dropped or
        duplicated data, or a stream walker that miscounted, shows here. The stream's other WRITE
        records (directories, ZAPs, SA metadata: 36 KiB of a 1 MiB file's stream) are allowed
        above, never counted: ZFS compresses metadata whatever the dataset's compression, so they
        take less than their logical size (a 1 MiB stream was 0.9 % short of all its WRITEs)."""
        known = all(r.file_bytes is not None for r in rounds) and any(r.file_bytes for r in rounds)
        ours = float(sum((r.file_bytes or 0) if known else r.write_bytes for r in rounds))
        meta = float(sum(r.write_bytes for r in rounds)) - ours
        pool = float(sum(r.pool_bytes or 0 for r in rounds))
        compressed = any(r.compressratio != 1.0 for r in rounds)
        above = self.METADATA_MARGIN_PCT + (100.0 * meta / ours if ours else 0.0)
        margin = None if compressed else (round(above, 2) if pool >= ours else 0.5)
        what = "files' contents" if known else ("all records (a corpus cached before their kinds were counted, or "
                                                 "a stream of no file's or zvol's data)")
        how = (f"stream WRITE payload of {what} vs the space the received datasets took (zfs get -Hp: their "
               f"parent's usedbychildren, an incremental's Δused), which also holds their metadata (allowed: up to "
               f"{self.METADATA_MARGIN_PCT:g} % more, and the stream's other WRITE records, {meta / 1024:.0f} KiB)")
        if compressed:
            how = ("stream WRITE payload vs the space × compressratio of the received datasets (zfs get -Hp): not "
                   "judged, compressratio is logical/compressed size while used counts allocated space rounded "
                   "up to the sector size (ashift), so with compression this reads several % high")
        return CrossCheck("received data vs pool space", "bytes", ours / MIB, pool / MIB, "MiB", margin, how)

    def _blocks_check(self, ctx: CaseContext, last: Round) -> CrossCheck | None:
        """One received dataset of the last round, its blocks counted by zdb, against the WRITE
        records of the stream it received (taken after the timed part of a case's first iteration: it
        costs no throughput)."""
        if not last.streams:
            return None
        dataset = last.streams[0][0]
        res = ctx.target.run([*ctx.target.zdb_argv(dataset), "-dddd", dataset], timeout=120)
        if not res.ok:
            return None
        judged = (ctx.fields.get("corpus") or {}).get("kind", "file") != "file"
        return crosscheck.stream_blocks(last.writes // len(last.streams), crosscheck.zdb_blocks(res.stdout), judged)

    @staticmethod
    def _available(ctx: CaseContext) -> float:
        res = ctx.target.run(["zfs", "get", "-Hp", "-o", "value", "available", ctx.pool.name])
        try:
            return float(res.stdout.strip()) if res.ok else 0.0
        except ValueError:
            return 0.0

    def cycle(self, ctx: CaseContext, figures: Figures) -> tuple[float | None, str]:
        """A round: every stream started together, waited for to the last."""
        rounds = int(ctx.extra.get("rounds") or 1)
        wall = (figures.get("receive_time") or figures.get("wall_time") or {}).get("value")
        if not wall:
            return None, "receive rounds (length unknown)"
        return wall / rounds, f"a receive round ({wall / rounds:.2f} s, {rounds} rounds)"

    @staticmethod
    def rounds(fields: dict[str, Any], prepared: Any) -> int:
        """With io_size, the whole rounds a measured iteration receives (each round: every thread's
        stream once), from the corpus's nominal size, so that the plan and the run agree; a
        sendfile's from its stream once prepared. 0 without io_size (one round, or for a time)."""
        if not fields.get("io_size"):
            return 0
        spec, threads = fields["corpus"], int(fields.get("threads", 1))
        if "file" in spec:
            if prepared is None:
                return 0
            size = prepared[corpus_mod.describe_spec(spec)].stream.length
        else:
            size = parse_size(spec.get("size", "256M"))
        return max(1, -(-parse_size(fields["io_size"]) // (threads * size)))

    def asked_seconds(self, fields: dict[str, Any]) -> float | None:
        return parse_duration(fields["duration"]) if fields.get("duration") else None

    def kept_bytes(self, fields: dict[str, Any]) -> int | None:
        """With io_size, every round's streams stay on the pool to the iteration's end (and an
        incremental's base, once per stream); with duration, how many rounds depends on speed."""
        count = self.rounds(fields, None)
        if not count:
            return None
        size = parse_size(fields["corpus"].get("size", "256M"))
        if fields["corpus"].get("kind") == "incremental":     # the base, a quarter rewritten, an eighth new
            size = size * 11 // 8
        return int(fields.get("threads", 1)) * count * size

    def active_bytes(self, fields: dict[str, Any], prepared: Any) -> int | None:
        """The streams' bytes × threads; before the corpus is made (prepared None), its size as the
        runfile gives it (a sendfile's size on disk)."""
        threads = int(fields.get("threads", 1)) * max(1, self.rounds(fields, prepared))   # rounds stay on the pool
        if prepared is None:
            spec = fields["corpus"]
            if "file" in spec:
                path = Path(str(spec["file"]))
                return path.stat().st_size * threads if path.is_file() else None
            return parse_size(spec.get("size", "256M")) * threads
        corpus: corpus_mod.Corpus = prepared[corpus_mod.describe_spec(fields["corpus"])]
        return corpus.stream.length * threads

    @staticmethod
    def _ssh_refused(ctx: CaseContext, name: str, rc: int, elapsed: float, text: str) -> bool:
        """A remote receive that ssh failed to start (a quick 255, nothing said, no dataset made):
        the command never ran, so it may run again (a loaded guest refuses a shared-connection
        session now and then while many are open)."""
        return (ctx.target.capabilities().remote and not text and ssh_failed_to_start(rc, elapsed)
                and not ctx.target.run(["zfs", "list", "-H", "-o", "name", name]).ok)

    @staticmethod
    def _retrying(ctx: CaseContext, name: str, delay: float) -> bool:
        if ctx.procs.cancelled:
            return False
        ctx.log.write(f"# ssh failed to start the receive into {name} (exit 255, nothing ran): again in {delay} s")
        return True

    def _again(self, ctx: CaseContext, name: str, argv: list[str],
               stream: corpus_mod.Stream) -> tuple[int, str, float, float]:
        """The receive into name run once more (ssh failed to start it before): its exit status, what
        it said, and its own start and end."""
        start = time.monotonic()
        p = ctx.procs.add(ctx.target.popen(argv, stdin_file=stream.on_target or stream.path))
        try:
            _out, err = p.communicate(timeout=max(1.0, ctx.remaining()))
        except subprocess.TimeoutExpired:
            raise ctx.overdue(f"receive into {name}") from None
        end = time.monotonic()
        ctx.log.write(f"# the receive into {name} again: exit {p.returncode}, {end - start:.3f} s")
        return p.returncode, (err or b"").decode(errors="replace").strip(), start, end

    @staticmethod
    def _verify(parent: str, threads: int, snapshot: str, snaps: set[str]) -> None:
        """Every receive must have left its dataset and THE snapshot its stream creates (for an
        incremental, @inc: the base's @base proves nothing): a receive that 'succeeded' without
        it is a failure (the receive-batching PR's follow-up bug). A stream whose snapshot name is
        unknown (headers unreadable) needs some snapshot. snaps: the snapshots under parent."""
        if snapshot:
            missing = [f"{parent}/s{i}@{snapshot}" for i in range(threads) if f"{parent}/s{i}@{snapshot}" not in snaps]
        else:
            got = {s.split("@")[0] for s in snaps}
            missing = [f"{parent}/s{i}" for i in range(threads) if f"{parent}/s{i}" not in got]
        if missing:
            raise WorkloadFailed(f"receive reported success but left no snapshot {', '.join(missing)}")

    def _live(self, ctx: CaseContext, procs, length: int, t0: float, stop: threading.Event) -> None:
        last_total, last_t = 0, t0
        while not stop.wait(1.0):
            total = 0
            for _name, _argv, p in procs:
                pos = _fd_pos(p.pid) if p.poll() is None else length
                total += pos if pos is not None else 0
            now = time.monotonic()
            rate = (total - last_total) / MIB / max(1e-6, now - last_t)
            if ctx.live:
                ctx.live(f"{rate:.1f} MiB/s now, {total / MIB:.0f} of {length * len(procs) / MIB:.0f} MiB")
            last_total, last_t = total, now


class Space(NamedTuple):
    """A round's parent dataset after its receives, as `zfs get -Hp` reads it (None: unreadable)."""
    used: float | None              # bytes: the parent and everything under it
    children: float | None          # bytes: usedbychildren, the received datasets alone
    ratio: float | None             # compressratio


def _number(value: str | None) -> float | None:
    """A `zfs get -Hp` value as a number (a compressratio "1.52x" on zfs-fuse); None where it is
    missing or unreadable."""
    try:
        return float(value.rstrip("x")) if value is not None else None
    except ValueError:
        return None


def _used_ratio(used: str | None, ratio: str | None) -> tuple[float | None, float | None]:
    """(used bytes, compressratio) from `zfs get -Hp`'s values; (None, None) where either is
    missing or unreadable."""
    u, r = _number(used), _number(ratio)
    return (u, r) if u is not None and r is not None else (None, None)


def _check_sendfile(spec: dict[str, Any], where: Callable[[str], dict]) -> None:
    """corpus = { file = PATH }: a sendfile of the user's own, checked before anything starts: its
    place, that it is a file, that it can be read and is a send stream."""
    if set(spec) - {"file"}:
        raise InputError("corpus.file stands alone (no kind/size/seed with it)", **where("corpus"))
    if not isinstance(spec["file"], str) or not spec["file"]:
        raise InputError("corpus.file must be a path", **where("corpus"))
    path = spec["file"]                      # checked before anything starts
    try:
        check_place(path, "corpus.file", "sendfile")
    except InputError as e:
        raise InputError(f"corpus.file: {e.message}", **where("corpus")) from None
    if not os.path.isfile(path):
        what = "is not a file" if os.path.exists(path) else "does not exist"
        raise InputError(f"corpus.file: sendfile {path} {what}", **where("corpus"))
    try:
        check_header(path)
    except OSError as e:
        raise InputError(f"corpus.file: sendfile {path} cannot be read: {e.strerror}",
                         **where("corpus")) from None
    except StreamError as e:
        raise InputError(f"corpus.file: {e}", **where("corpus")) from None
