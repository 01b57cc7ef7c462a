"""One background sampler per case: every source the target has, one JSON line per interval.

series/<case>.jsonl, one object per sample:
  {"t": <s since the case started>, "metrics": {<name>: <number or null>}, "info": {...}}
`metrics` are the normalised figures the steady-state vote uses (the SDC 2020 talk's percentages); `info` holds raw
context that does not vote (ARC bytes for the cache gate, the last txg, sampler cost).

Sources: ARC/L2ARC kstats (only the fields used), `zpool iostat` as ONE long-running process
(`-Hp -y -l` on OpenZFS, the human form on zfs-fuse) read by a thread, the pool's txgs where the
target has them, the SPL taskqs that carry its I/O (`info`, no vote: metrics/taskq.py), and the
workload's own progress (a callable giving cumulative bytes and I/Os).
A source that fails is null for that sample and the run goes on ("do no harm").
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable

from .. import proc
from ..targets.base import Target
from . import arc, taskq
from .iostat import pool_metrics
from .iostat import parse_hp_row, parse_human_row

Progress = Callable[[], "dict[str, float] | None"]      # {"bytes": cumulative, "ios": cumulative}
L2ARC_WRITE_MAX_DEFAULT = 8 * 1024 * 1024             # zfs-fuse and OpenZFS default (bytes per feed)


class IostatReader:
    """A long-running `zpool iostat … POOL INTERVAL`; keeps the newest per-interval report."""

    def __init__(self, target: Target, pool: str, interval: int) -> None:
        self.target, self.pool, self.interval = target, pool, interval
        caps = target.capabilities()
        self.hp = "-Hp" in caps.iostat_forms
        self.latency = self.hp and "-l" in caps.iostat_forms
        argv = ["zpool", "iostat"]
        if self.hp:
            argv += ["-Hp", "-y"] + (["-l"] if self.latency else [])
        argv += [pool, str(interval)]
        self.argv = argv
        self._latest: dict[str, float | None] | None = None
        self._seq = 0
        self._lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.error: str | None = None
        self.cpu: float | None = None            # the process's CPU seconds, read when it is stopped

    def start(self) -> None:
        try:
            self.proc = self.target.popen(self.argv, stderr=subprocess.DEVNULL)
        except OSError as e:
            self.error = str(e)
            return
        threading.Thread(target=self._read, name="zpool-iostat", daemon=True).start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        first = not self.hp                  # without -y the first report is the since-import average
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace")
            try:
                row = (parse_hp_row(line, self.pool, ["-l"] if self.latency else [], "zpool iostat")
                       if self.hp else parse_human_row(line, self.pool))
            except ValueError as e:
                self.error = str(e)          # kept for the record; one bad line does not end sampling
                continue
            if row is None:
                continue
            if first:
                first = False
                continue
            with self._lock:
                self._latest, self._seq = row, self._seq + 1

    def take(self, last_seq: int) -> tuple[int, dict[str, float | None] | None]:
        """The newest report if one arrived since last_seq."""
        with self._lock:
            return (self._seq, self._latest) if self._seq != last_seq else (last_seq, None)

    def cpu_seconds(self) -> float | None:
        if self.proc is not None and self.proc.poll() is None:
            return proc.cpu_seconds(self.proc.pid)
        return self.cpu

    def stop(self) -> None:
        if self.proc is not None:
            self.cpu = self.cpu_seconds()
            proc.stop_pid(self.proc.pid, group=True)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if self.proc.stdout:
                self.proc.stdout.close()


class Sampler:
    def __init__(self, target: Target, pool: str, path: Path, *, interval: float = 1.0,
                 progress: Progress | None = None, l2_capacity: int | None = None,
                 l2_write_max: float | None = None, pool_source: bool = True) -> None:
        self.target, self.pool, self.path = target, pool, Path(path)
        self.interval = float(interval)
        self.progress = progress
        self.l2_capacity = l2_capacity
        self.l2_write_max = l2_write_max
        self.samples: list[dict[str, Any]] = []
        self.iostat = IostatReader(target, pool, max(1, round(self.interval))) if pool_source else None
        self.has_txgs = target.capabilities().txgs
        self.has_taskqs: bool | None = None      # unknown until the first sample asks
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._file: IO[str] | None = None
        self._t0 = 0.0
        self._prev_arc: dict[str, float] | None = None
        self._prev_prog: dict[str, float] | None = None
        self._prev_t = 0.0
        self._iostat_seq = 0
        self.definitions: dict[str, str] = {}     # how a derived metric was computed on this target
        self.cpu_per_sample: list[float] = []      # the sampler thread's own CPU time per sample (s)
        self.lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "a", encoding="utf-8")
        if self.l2_write_max is None and self.l2_capacity:
            self.l2_write_max = self._l2_write_max()
        self._t0 = time.monotonic()
        if self.iostat is not None:
            self.iostat.start()
        self._thread = threading.Thread(target=self._loop, name="zfsperf-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Idempotent, and safe on a sampler that was never (or only half) started."""
        self._stop.set()
        if self._thread is not None and self._thread.ident is not None:
            self._thread.join(timeout=10)
        if self.iostat is not None:
            self.iostat.stop()
        if self._file is not None:
            self._file.close()
            self._file = None

    def elapsed(self) -> float:
        return time.monotonic() - self._t0

    def _append(self, s: dict[str, Any]) -> None:
        with self.lock:                  # one writer at a time: samples and markers keep their order
            self.samples.append(s)
            if self._file is not None:
                self._file.write(json.dumps(s) + "\n")
                self._file.flush()

    def mark(self, event: str, **info: Any) -> None:
        """A marker line in the series (no metrics): "workload end" when the measured work
        returned, "decided" with the number of samples a gate's verdict was taken on. A verdict
        re-decided from the file later uses the same samples (steady.series.decision_samples)."""
        self._append({"t": round(self.elapsed(), 3), "metrics": {}, "info": {"event": event, **info}})

    def snapshot(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.samples)

    def _loop(self) -> None:
        k = 1
        while not self._stop.wait(max(0.0, self._t0 + k * self.interval - time.monotonic())):
            c0 = time.thread_time()
            try:
                s = self.sample()
            except Exception as e:  # noqa: BLE001 - do no harm: a broken source never stops a run
                s = {"t": round(self.elapsed(), 3), "metrics": {}, "info": {"error": f"{type(e).__name__}: {e}"}}
            cost = time.thread_time() - c0
            self.cpu_per_sample.append(cost)
            s.setdefault("info", {})["sampler_cpu_ms"] = round(cost * 1000, 3)
            self._append(s)
            k = max(k + 1, int(self.elapsed() / self.interval) + 1)    # never queue up missed ticks

    # ------------------------------------------------------------------ one sample
    def sample(self) -> dict[str, Any]:
        now = time.monotonic()
        dt = now - self._prev_t if self._prev_t else self.interval
        metrics: dict[str, float | None] = {}
        info: dict[str, Any] = {}
        # ARC / L2ARC
        cur = self._safe(lambda: self.target.kstat_fields("arcstats", arc.FIELDS))
        if cur:
            metrics.update(arc.level_metrics(cur))
            metrics.update(arc.interval_metrics(self._prev_arc, cur, dt, l2_capacity=self.l2_capacity,
                                                l2_write_max=self.l2_write_max))
            self.definitions.setdefault("arc_hit_ratio", arc.hit_ratio_definition(cur))
            seen = arc.accesses(self._prev_arc, cur) if self._prev_arc is not None else None
            if seen is not None:
                info["arc_accesses"] = seen
            info["arc_bytes"] = cur.get("size")
            info["arc_c_max"] = cur.get("c_max")
            if self.l2_capacity:
                info["l2_bytes"], info["l2_capacity"] = cur.get("l2_size"), self.l2_capacity
        else:
            metrics.update({"arc_size_frac": None, "arc_hit_ratio": None})
        self._prev_arc = cur or None
        # pool: the newest report of the long-running zpool iostat
        if self.iostat is not None:
            self._iostat_seq, rep = self.iostat.take(self._iostat_seq)
            pm = pool_metrics(rep, self.interval) if rep else \
                dict.fromkeys(("pool_kops", "pool_mibs") + (("pool_lat_ms",) if self.iostat.latency else ()))
            metrics.update(pm)
        # txgs (OpenZFS): the newest committed txg, for context
        if self.has_txgs:
            txg = self._safe(lambda: self.target.txg(self.pool))
            if txg is not None:
                info["txg"] = txg
        # the SPL taskqs that carry ZFS's I/O (OpenZFS 2.2+ on Linux): context, no vote
        if self.has_taskqs is not False:
            tq = self._safe(self.target.taskqs)
            if tq is None and self.has_taskqs is None:
                self.has_taskqs = False          # this target publishes none: never asked again
            elif tq is not None:
                self.has_taskqs = True
                info["taskq"] = taskq.sample(tq)
        # the workload's own progress
        if self.progress is not None:
            prog = self._safe(self.progress)
            mibs = iops = None
            if prog and self._prev_prog and dt > 0:
                mibs = (prog.get("bytes", 0) - self._prev_prog.get("bytes", 0)) / dt / 1048576.0
                iops = (prog.get("ios", 0) - self._prev_prog.get("ios", 0)) / dt
            metrics["workload_mibs"], metrics["workload_iops"] = mibs, iops
            self._prev_prog = prog or self._prev_prog
        self._prev_t = now
        return {"t": round(now - self._t0, 3), "metrics": metrics, "info": info}

    @staticmethod
    def _safe(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception:  # noqa: BLE001 - recorded as missing for this sample
            return None

    def _l2_write_max(self) -> float:
        try:
            return float(self.target.get_tunable("l2arc_write_max"))
        except Exception:  # noqa: BLE001 - zfs-fuse: compiled-in default
            return float(L2ARC_WRITE_MAX_DEFAULT)

    def unreadable(self) -> list[str]:
        """Metrics that were null in every sample of the case (a source that never answered: a
        format that did not parse, a kstat that is not there). Needs 3 samples: rates start null."""
        with self.lock:
            samples = list(self.samples)
        if len(samples) < 3:
            return []
        names = sorted({n for s in samples for n in s.get("metrics", {})})
        return [n for n in names if all(s.get("metrics", {}).get(n) is None for s in samples)]

    def overhead(self) -> dict[str, Any]:
        n = len(self.cpu_per_sample)
        out: dict[str, Any] = {"samples": n, "definitions": dict(self.definitions),
                               "sampler_cpu_ms_per_sample": round(1000 * sum(self.cpu_per_sample) / n, 3) if n else None}
        if self.iostat is not None and n:
            cpu = self.iostat.cpu_seconds()
            out["iostat_cpu_ms_per_sample"] = round(1000 * cpu / n, 3) if cpu is not None else None
        return out


