"""File workloads with fio (seeds 003 and 004): zfsperf writes the job file, runs fio with
`--output-format=json+ --status-interval=1`, keeps fio's JSON in fio/<case>.json and turns it into
figures per I/O class, seed-003 class rows and quantize histograms.

Local runs start fio on the target (inside the embedded zfs-fuse's namespace, where the pool is
mounted). With `clients = ["host[:port]", …]` zfsperf runs `fio --client=…` against `fio --server`
processes on those hosts (which must see the pool at the same path) and reports per host and in
aggregate.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from .. import guard, proc
from ..errors import InputError, shown
from ..metrics import fiojson
from ..metrics.cpucost import CPU_FIGURE_UNITS
from ..metrics.iostat import PoolLatency
from ..metrics.quantize import quantize
from ..results.directory import fio_json_path, log_path
from ..sshlink import again_while_refused, ssh_failed_to_start
from ..targets.base import Target
from ..units import parse_duration, parse_size
from .base import CaseContext, Figures, WorkloadFailed, figure, slice_figures, work_ended
from . import latsearch
from .turns import take_turns

RW = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim", "trimwrite")
ENGINES = ("psync", "sync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap")
CLASS_NAMES = {"read": "Read", "write": "Write", "trim": "Delete", "sync": "Flush", "mixed": "Mixed"}   # the starvation study's words
STATUS_INTERVAL = 1

# runfile field -> (types, sweepable)
FIO_FIELDS: dict[str, tuple[Any, bool]] = {
    "rw": (str, True), "bs": ((str, int), True), "bssplit": (str, True), "rwmixread": (int, True),
    "numjobs": (int, True), "iodepth": (int, True), "ioengine": (str, True), "direct": (bool, True),
    "size": ((str, int), True), "runtime": ((str, int, float), True), "time_based": (bool, False),
    "ramp_time": ((str, int, float), True), "randseed": (int, False), "compress_percentage": (int, True),
    "compress_chunk": ((str, int), True), "sync": ((bool, str), True), "fsync": (int, True),
    "nrfiles": (int, True), "clients": (list, False), "random_distribution": (str, True),
    "slice": ((str, int, float), False), "settle": ((str, int, float), False),
    # a latency-target search (latsearch.py): the highest rate_iops whose latency_percentile of
    # latency_class stays at most latency_target, in latency_steps bisection steps of `runtime` each
    "latency_target": ((str, int, float), True), "latency_percentile": ((int, float), False),
    "latency_class": (str, False), "latency_steps": (int, False),
}
SYNC_MODES = ("sync", "dsync")       # fio's sync=: every write with O_SYNC, or with O_DSYNC
SLICE = 1.0          # seconds of one side's turn in duet = "turns" (fio's runtime takes whole seconds)


def validate_job(test: dict[str, Any], where: Callable[[str], dict], prefix: str = "") -> None:
    """Checks beyond types for the fio fields of a test (or of a mixed test's reader/writer)."""
    def each(k: str) -> list[Any]:
        v = test.get(k)
        return [] if v is None else (v if isinstance(v, list) and k != "clients" else [v])

    for v in each("rw"):
        if v not in RW:
            raise InputError(f"expected one of {', '.join(RW)}, got {shown(v)}", **where(prefix + "rw"))
    for k in ("bs", "size", "compress_chunk"):
        for v in each(k):
            try:
                if parse_size(v) <= 0:
                    raise ValueError("must be positive")
            except ValueError as e:
                raise InputError(f"{k}: {e}", **where(prefix + k)) from None
    for k in ("runtime", "ramp_time", "slice", "settle"):
        for v in each(k):
            try:
                parse_duration(v)
            except ValueError as e:
                raise InputError(f"{k}: {e}", **where(prefix + k)) from None
    for k, lo, hi in (("rwmixread", 0, 100), ("compress_percentage", 0, 100), ("numjobs", 1, 256),
                      ("iodepth", 1, 4096), ("fsync", 0, 1 << 20), ("nrfiles", 1, 10000)):
        for v in each(k):
            if not lo <= v <= hi:
                raise InputError(f"{k} must be between {lo} and {hi}, got {v}", **where(prefix + k))
    for v in each("sync"):
        if isinstance(v, str) and v not in SYNC_MODES:
            raise InputError(f"expected true, false or one of {', '.join(repr(m) for m in SYNC_MODES)}, got {shown(v)}",
                             **where(prefix + "sync"))
    for v in each("ioengine"):
        if v not in ENGINES:
            raise InputError(f"expected one of {', '.join(ENGINES)}, got {shown(v)}", **where(prefix + "ioengine"))
    for v in each("random_distribution"):
        kind, _, arg = str(v).partition(":")
        if kind not in ("random", "zipf", "pareto", "normal", "zoned", "zoned_abs") or any(c in v for c in "\n\r=[]"):
            raise InputError(f"not a fio random_distribution: {shown(v)}", **where(prefix + "random_distribution"))
    for v in each("bssplit"):
        if not v or any(c in v for c in "\n\r=[]"):
            raise InputError(f"not a fio bssplit: {shown(v)}", **where(prefix + "bssplit"))
    for v in each("latency_target"):
        try:
            latsearch.parse_target(v)
        except ValueError as e:
            raise InputError(f"latency_target: {e}", **where(prefix + "latency_target")) from None
    for v in each("latency_percentile"):
        if v not in latsearch.PERCENTILES:
            raise InputError(f"latency_percentile takes {', '.join(f'{k:g}' for k in latsearch.PERCENTILES)} "
                             f"(the percentiles fio's figures carry), got {shown(v)}", **where(prefix + "latency_percentile"))
    for v in each("latency_class"):
        if v not in ("read", "write", "trim"):
            raise InputError(f"latency_class takes read, write or trim, got {shown(v)}", **where(prefix + "latency_class"))
    for v in each("latency_steps"):
        if not 1 <= v <= latsearch.MAX_STEPS:
            raise InputError(f"latency_steps must be between 1 and {latsearch.MAX_STEPS}, got {v}",
                             **where(prefix + "latency_steps"))
    if "latency_target" not in test:
        for k in ("latency_percentile", "latency_class", "latency_steps"):
            if k in test:
                raise InputError(f"{k} belongs to a latency-target search: give latency_target too", **where(prefix + k))
    elif test.get("clients"):
        raise InputError("a latency-target search runs one job set on the target: not with clients",
                         **where(prefix + "latency_target"))
    for h in test.get("clients", []) or []:
        host, _, port = str(h).rpartition(":") if ":" in str(h) else (str(h), "", "")
        if not isinstance(h, str) or not host or host.startswith("-") or any(c.isspace() for c in h) or \
                (port and not port.isdigit()):
            raise InputError(f"clients: expected \"host\" or \"host:port\", got {shown(h)}", **where(prefix + "clients"))


def latency_class(rw: str) -> str:
    """The class a latency-target search judges when latency_class is not given: a job's reads
    (beside writes too: rw, randrw), else its trims, else its writes."""
    return "read" if "read" in rw or rw in ("rw", "randrw") else "trim" if rw in ("trim", "randtrim") else "write"


def turn_lengths(fields: dict[str, Any], slice_default: float, settle_default: int) -> tuple[float, int]:
    """A turn's `slice` and `settle` in whole seconds (fio's runtime and ramp_time take whole
    seconds; a slice is at least 1 s)."""
    return (float(max(1, round(parse_duration(fields.get("slice", slice_default))))),
            int(round(parse_duration(fields.get("settle", settle_default)))))


def job_lines(p: dict[str, Any], runtime: float | None) -> list[str]:
    """fio job options (key=value lines) for one job from validated params."""
    out = []
    out.append(f"rw={p.get('rw', 'randread')}")
    if "bssplit" in p:
        out.append(f"bssplit={p['bssplit']}")
    else:
        out.append(f"bs={parse_size(p.get('bs', '4k'))}")
    if "rwmixread" in p:
        out.append(f"rwmixread={p['rwmixread']}")
    out.append(f"size={parse_size(p.get('size', '128M'))}")
    out.append(f"ioengine={p.get('ioengine', 'psync')}")
    out.append(f"iodepth={p.get('iodepth', 1)}")
    out.append(f"direct={1 if p.get('direct') else 0}")
    out.append(f"numjobs={p.get('numjobs', 1)}")
    if "nrfiles" in p:
        out.append(f"nrfiles={p['nrfiles']}")
    if p.get("time_based", True):
        out.append("time_based=1")
    if runtime is not None:
        out.append(f"runtime={max(1, int(round(runtime)))}")
    if "ramp_time" in p:
        out.append(f"ramp_time={int(parse_duration(p['ramp_time']))}")
    if "random_distribution" in p:
        out.append(f"random_distribution={p['random_distribution']}")
    out.append(f"randseed={p.get('randseed', 1)}")
    out.append("randrepeat=1")
    if "compress_percentage" in p:
        out.append(f"buffer_compress_percentage={p['compress_percentage']}")
        out.append(f"buffer_compress_chunk={parse_size(p.get('compress_chunk', '4k'))}")
        out.append("refill_buffers=1")
    if p.get("sync"):                     # true or "sync": O_SYNC; "dsync": O_DSYNC
        out.append(f"sync={'dsync' if p['sync'] == 'dsync' else 'sync'}")
    if p.get("fsync"):
        out.append(f"fsync={p['fsync']}")
    return out


# every figure a fio case reports, as (a name pattern, its unit): the classes' own, the totals, the
# load hosts' count and the pool's waits (OpenZFS `zpool iostat -l`); a job's prefix is any name_
_CLASS = r"(.+_)?(read|write|trim)"
FIGURE_UNITS = ((_CLASS + "_iops", "IOPS"), (_CLASS + "_bw", "MiB/s"), (r"(.+_)?sync_ops", "ops"),
                (r"(.+_)?(read|write|trim|sync)_lat_(mean|stddev|max|p50|p90|p99|p99\.9)", "us"),
                ("iops", "IOPS"), ("bw", "MiB/s"), ("hosts", "hosts"), ("pool_.+", "us"),
                ("latency_target_iops", "IOPS"), *CPU_FIGURE_UNITS)


def stats_figures(classes: dict[str, fiojson.ClassStats], prefix: str = "") -> Figures:
    """Per class: IOPS, MiB/s and latency (mean, stddev, p50/p90/p99/p99.9, max) in µs."""
    figs: Figures = {}
    tot_iops = tot_bw = 0.0
    summed = fiojson.total_classes(classes)        # never "mixed" beside the directions it repeats
    for cls in fiojson.CLASSES:
        st = classes.get(cls)
        if st is None or st.ios == 0:
            continue
        k = f"{prefix}{cls}"
        if cls != "sync":
            figs[f"{k}_iops"] = figure(st.iops, "IOPS")
            figs[f"{k}_bw"] = figure(st.mibs, "MiB/s")
            if cls in summed:
                tot_iops += st.iops
                tot_bw += st.mibs
        else:
            figs[f"{k}_ops"] = figure(st.ios, "ops")
        if st.lat_n:
            figs[f"{k}_lat_mean"] = figure(st.lat_mean_ns / 1000, "us")
            figs[f"{k}_lat_stddev"] = figure(st.lat_var_ns2 ** 0.5 / 1000, "us")
            for p, name in zip(fiojson.PERCENTILES, ("p50", "p90", "p99", "p99.9")):
                if p in st.percentiles_ns:
                    figs[f"{k}_lat_{name}"] = figure(st.percentiles_ns[p] / 1000, "us")
            figs[f"{k}_lat_max"] = figure(st.lat_max_ns / 1000, "us")
    if not prefix:
        figs["iops"] = figure(tot_iops, "IOPS")
        figs["bw"] = figure(tot_bw, "MiB/s")
    return figs


def histograms(classes: dict[str, fiojson.ClassStats]) -> dict[str, Any]:
    """Quantize histograms (µs) per class from json+ bins, stored as data with the record."""
    out = {}
    for cls in fiojson.CLASSES:
        st = classes.get(cls)
        if st is not None and st.bins:
            title = CLASS_NAMES[cls] + (" total" if st.lat_kind == "total" else "")   # completion: plain
            out[cls] = {"title": title, "unit": "us",
                        "buckets": quantize(st.bins.items(), 1000.0), "count": sum(st.bins.values()),
                        "ios": st.ios, "latency": st.lat_kind}
    return out


def pool_figures(pl: dict[str, Any]) -> Figures:
    """The pool side of the measured interval (OpenZFS `zpool iostat -l`): average waits in µs."""
    return {f"pool_{k}": figure(v / 1000, "us") for k, v in (pl.get("average_wait_ns") or {}).items()
            if v is not None}


def pool_histograms(pl: dict[str, Any]) -> dict[str, Any]:
    """`zpool iostat -w` deltas as quantize histograms in µs (a row's label is its bucket's end,
    2^(j+1)−1 ns; its lower bound 2^j ns is what is bucketed)."""
    out = {}
    for col, rows in (pl.get("histograms") or {}).items():
        buckets = quantize((((end + 1) / 2, n) for end, n in rows), 1000.0)
        out[f"pool_{col}"] = {"title": f"Pool {col.replace('_', ' ')}", "unit": "us", "buckets": buckets,
                              "count": sum(n for _e, n in rows)}
    return out


def class_table(classes: dict[str, fiojson.ClassStats]) -> list[dict[str, Any]]:
    """Seed 003's table: class | avg latency | stddev | iops | throughput."""
    rows = []
    for cls in ("write", "trim", "read", "sync"):
        st = classes.get(cls)
        if st is None or st.ios == 0:
            continue
        rows.append({"class": CLASS_NAMES[cls], "latency": st.lat_kind, "avg_latency_us": st.lat_mean_ns / 1000,
                     "stddev_us": st.lat_var_ns2 ** 0.5 / 1000, "iops": st.iops,
                     "throughput_kib_s": st.bw_reported / 1024})
    return rows


class FioRun:
    """One fio process: status-interval objects feed the progress, the last object is the result."""

    def __init__(self, ctx: CaseContext, jobfiles: list[Path], clients: list[str]) -> None:
        self.ctx = ctx
        self.argv = ["fio", "--output-format=json+", f"--status-interval={STATUS_INTERVAL}"]
        if clients:        # each --client takes the job file(s) after it (fio's client syntax)
            for h, jf in zip(clients, jobfiles):
                host, _, port = h.partition(":")
                self.argv += [f"--client={host},{port or 8765}", str(jf)]
        else:
            self.argv.append(str(jobfiles[0]))
        self.clients = clients
        self.text: list[str] = []
        self.latest: dict[str, float] | None = None
        self._lock = threading.Lock()

    def progress(self) -> dict[str, float] | None:
        with self._lock:
            return dict(self.latest) if self.latest else None

    def _reader(self, stream) -> None:
        buf: list[str] = []
        for raw in stream:
            line = raw.decode(errors="replace")
            self.text.append(line)
            buf.append(line)
            if line.rstrip("\n") == "}":                 # the end of one top-level object
                objs = fiojson.split_objects("".join(buf))
                buf = []
                if objs:
                    with self._lock:
                        self.latest = fiojson.progress(objs[-1])

    def run(self) -> tuple[str, str, int]:
        """Run fio once; on a remote target a quick exit 255 with no output is ssh's own failure
        (a loaded guest refusing a session: fio never started), retried like any ssh command."""
        remote = self.ctx.target.capabilities().remote and not self.clients

        def once() -> tuple[str, str, int, float]:
            t0 = time.monotonic()
            out, err, rc = self._run_once()
            return out, err, rc, time.monotonic() - t0

        def refused(r: tuple[str, str, int, float]) -> bool:
            return remote and not r[0].strip() and ssh_failed_to_start(r[2], r[3], limit=5)

        def retrying(delay: float) -> bool:
            if self.ctx.procs.cancelled:
                return False
            self.ctx.log.write(f"# ssh failed to start fio (exit 255): retried in {delay} s")
            self.text = []
            return True

        out, err, rc, _s = again_while_refused(once(), once, refused, before=retrying)
        return out, err, rc

    def _run_once(self) -> tuple[str, str, int]:
        ctx = self.ctx
        runner = ctx.target if not self.clients else None
        if runner is not None:
            # SIGPIPE ignored: a zfsperf killed with -9 must not take fio with it before the guard's
            # SIGTERM, which fio passes on to its job processes (each in a session of its own)
            p = ctx.procs.add(runner.popen(self.argv, ignore_sigpipe=True))
        else:
            guard.ready()
            p = ctx.procs.add(subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                               env=proc.c_locale_env(), restore_signals=False,
                                               stderr=subprocess.PIPE, start_new_session=True))
            guard.watch(p)
        reader = threading.Thread(target=self._reader, args=(p.stdout,), daemon=True)
        reader.start()
        err_chunks: list[bytes] = []
        err_t = threading.Thread(target=lambda: err_chunks.append(p.stderr.read()), daemon=True)
        err_t.start()
        signalled = False
        while p.poll() is None:
            if ctx.remaining() <= 0:
                raise ctx.overdue("fio")
            if ctx.stopping() and not signalled:
                p.send_signal(2)                          # SIGINT: fio ends its jobs and prints results
                signalled = True
            time.sleep(0.2)
        # stopped by a signal: over a shared ssh connection the pipes close only when the remote
        # command ends, so do not wait for them
        grace = 0.5 if ctx.procs.cancelled else 10
        reader.join(grace)
        err_t.join(grace)
        return "".join(self.text), b"".join(err_chunks).decode(errors="replace"), p.returncode


class FioWorkload:
    name = "fio"
    headline = "iops"            # the figure a case is summarised and judged by
    series_headline = "workload_iops"   # its live counterpart in the sampled series (steady veto)
    bandwidth_figure: str | None = "bw"   # cross-checked against zpool iostat
    summary_figures = ["iops", "bw", "read_lat_p99", "write_lat_p99", "sync_lat_p99"]   # `zfsperf report`: every one
    # one job set on each dataset at once, or the two taking turns in slices (run_turns)
    duet_modes = ("together", "turns")
    turns_across_guests = False          # its turns assume one pool (not yet for build turns)
    turns_share_files = True             # its slices keep their files: tunable turns share them
    pool_counts_at_end = True            # its files stay to the case's end
    directions = {"iops": 1, "bw": 1, "hosts": 0, "sync_ops": 0, "latency_target_iops": 1}
    figure_units = FIGURE_UNITS
    fields = FIO_FIELDS

    def validate(self, test: dict[str, Any], where: Callable[[str], dict]) -> None:
        validate_job(test, where)

    def prepare(self, test: dict[str, Any], target: Target, vdev_dir: Path,
                progress: Callable[[str], None] | None) -> None:
        return None

    def cycle(self, ctx: CaseContext, figures: Figures) -> tuple[float | None, str]:
        """fio reports its counts once per status interval: finer samples see its steps."""
        return float(STATUS_INTERVAL), f"fio's status interval ({STATUS_INTERVAL} s)"

    def asked_seconds(self, fields: dict[str, Any]) -> float | None:
        """runtime (10 s unless set) and its ramp_time: a time-based job runs them whole, one that is
        not runs at most that long."""
        steps = 1 + int(fields.get("latency_steps", latsearch.DEFAULT_STEPS)) if "latency_target" in fields else 1
        return (parse_duration(fields.get("runtime", 10)) + parse_duration(fields.get("ramp_time", 0))) * steps

    def kept_bytes(self, fields: dict[str, Any]) -> int | None:
        return None                      # its files are rewritten in place, or the iteration is timed

    def active_bytes(self, fields: dict[str, Any], prepared: Any) -> int | None:
        return parse_size(fields.get("size", "128M")) * int(fields.get("numjobs", 1))

    def run(self, ctx: CaseContext) -> Figures:
        p = ctx.fields
        runtime = parse_duration(p.get("runtime", 10))
        if ctx.phase == "precondition":
            runtime = max(1.0, ctx.remaining() - 5)        # until the runner says steady (SIGINT)
        elif ctx.measure_seconds:
            runtime = ctx.measure_seconds
        clients = list(p.get("clients", []) or [])
        if "latency_target" in p and ctx.phase == "measure":
            return self._latency_search(ctx, p, runtime)
        texts = []
        for i in range(max(1, len(clients))):       # one directory per load host
            directory = f"{ctx.pool.mountpoint}/fio" + (f"/h{i}" if clients else "")
            ctx.target.run(["mkdir", "-p", directory])
            texts.append(job_text(directory, job_lines(p, runtime)))
        pool_lat = PoolLatency(ctx.target, ctx.pool.name, runtime) if ctx.phase == "measure" else None
        if pool_lat is not None:
            pool_lat.start()
        try:
            res, raw = run_jobfile(ctx, texts, clients)
            work_ended(ctx)
        except BaseException:
            if pool_lat is not None:
                pool_lat.abandon()
            raise
        if pool_lat is not None:
            if ctx.procs.cancelled:                # stopped by a signal or a timeout: no interval was measured
                pool_lat.abandon()
            else:
                ctx.extra["pool_latency"] = pool_lat.finish()
        if ctx.phase == "precondition":
            return {}
        save_json(ctx, raw)
        class_extras(ctx, res.classes)
        ctx.extra["work"] = work_of([res.classes])
        written = res.classes["write"].bytes if "write" in res.classes else 0
        read = res.classes["read"].bytes if "read" in res.classes else 0
        if written or read:              # what exact counts are per (metrics/counts.py)
            ctx.extra["counts"] = {"logical_bytes": float(written), "read_bytes": float(read)}
        figs = stats_figures(res.classes)
        figs.update(pool_figures(ctx.extra.get("pool_latency") or {}))
        ctx.extra["histograms"].update(pool_histograms(ctx.extra.get("pool_latency") or {}))
        if res.hosts:
            ctx.extra["hosts"] = {h: stats_figures(c) for h, c in res.hosts.items()}
            ctx.extra["fio_all_clients"] = stats_figures(res.fio_aggregate)
            figs["hosts"] = figure(len(res.hosts), "hosts")
        return figs

    def _latency_search(self, ctx: CaseContext, p: dict[str, Any], runtime: float) -> Figures:
        """One iteration of a latency-target search (latsearch.py): the job unthrottled, then at
        bisected rates; the full load's figures, and the highest rate that held the target."""
        directory = f"{ctx.pool.mountpoint}/fio"
        ctx.target.run(["mkdir", "-p", directory])
        rw = str(p.get("rw", "randread"))
        klass = p.get("latency_class") or latency_class(rw)
        pct = float(p.get("latency_percentile", 99))
        name = f"{klass}_lat_{latsearch.PERCENTILES[pct]}"
        jobs = int(p.get("numjobs", 1))
        runs: list[fiojson.FioResult] = []

        def step(rate: float | None) -> tuple[float, float]:
            lines = job_lines(p, runtime)
            if rate is not None:                  # fio's rate_iops is each job's
                lines.append(f"rate_iops={max(1, int(round(rate / jobs)))}")
            t0 = time.monotonic()
            res, raw = run_jobfile(ctx, [job_text(directory, lines)], [], tag=f".t{len(runs)}")
            if rate is None:                      # the full load: the series its steady verdict judges
                ctx.series_span = (t0, time.monotonic())
            save_json(ctx, raw, f".t{len(runs)}")
            runs.append(res)
            figs = stats_figures(res.classes)
            if name not in figs:
                raise WorkloadFailed(f"latency_target: fio reported no {name} (a {rw} job has no {klass} I/O)")
            ctx.log.write(f"# latency search: {'unthrottled' if rate is None else f'rate_iops {rate:,.0f}'}: "
                          f"{figs['iops']['value']:,.0f} IOPS, {name} {figs[name]['value']:,.0f} us")
            return figs["iops"]["value"], figs[name]["value"]
        found = latsearch.search(step, latsearch.parse_target(p["latency_target"]), pct, klass,
                                 int(p.get("latency_steps", latsearch.DEFAULT_STEPS)))
        work_ended(ctx)
        ctx.log.write(f"# latency search: {found.sentence()}")
        full = runs[0]                             # the unthrottled run: the case's usual figures
        ctx.extra["latency_search"] = found.as_dict()
        class_extras(ctx, full.classes)
        ctx.extra["work"] = work_of([r.classes for r in runs])
        figs = stats_figures(full.classes)
        figs["latency_target_iops"] = figure(found.low, "IOPS")
        return figs

    def run_turns(self, ctxs: list[CaseContext]) -> list[Figures]:
        """Two sides (a dataset each on one pool; over a module tunable one dataset for both)
        taking turns in slices: one fio run of `slice` seconds (default 1) on A's files, then on
        B's, in ABBA groups (turns.py) for `runtime` seconds in all; with `settle` (default 0), each
        slice first runs that many seconds uncounted (fio's ramp_time). Files are laid out by the
        first slice on them, before fio's clock. A side's figures are over its own slices: I/Os and bytes over their timed seconds, latency
        percentiles from their merged json+ bins (fiojson.in_sequence), so p99 is the p99 of every
        I/O of that side, not an average of slices' p99s. Each slice's JSON is kept
        (fio/<case>.i<iteration>.s<k>.json)."""
        p = ctxs[0].fields
        total = parse_duration(p.get("runtime", 10))
        slice_s, settle_s = turn_lengths(p, SLICE, 0)
        texts = {}
        for c in ctxs:
            directory = f"{c.pool.mountpoint}/fio"
            c.target.run(["mkdir", "-p", directory])
            job = {**c.fields, "ramp_time": settle_s} if settle_s else c.fields
            texts[id(c)] = job_text(directory, job_lines(job, slice_s))
        count = {id(c): 0 for c in ctxs}

        def one(c: CaseContext) -> dict[str, fiojson.ClassStats]:
            count[id(c)] += 1
            tag = f".s{count[id(c)]}"
            res, raw = run_jobfile(c, [texts[id(c)]], [], tag=tag)
            save_json(c, raw, tag)
            return res.classes
        slices = take_turns(ctxs, one, duration=total)
        out = []
        for c, runs in zip(ctxs, slices):
            merged = fiojson.in_sequence(runs)
            class_extras(c, merged)
            c.extra["work"] = work_of(runs)             # its turns' work: the CPU figures' denominators
            c.extra["slices"] = {"count": len(runs), "seconds": slice_s, "settle_seconds": settle_s,
                                 # each slice's throughput figures (its total IOPS among them):
                                 # compare pairs a side's k-th slice with the other side's k-th
                                 "figures": [slice_figures(stats_figures(r)) for r in runs]}
            out.append(stats_figures(merged))
        return out


def job_text(directory: str, lines: list[str]) -> str:
    """A job file: one job of these options in `directory`, its jobs reported as one group."""
    return "\n".join(["[global]", f"directory={directory}", "group_reporting=1", *lines, "", "[zfsperf]", ""])


def class_extras(ctx: CaseContext, classes: dict[str, fiojson.ClassStats]) -> None:
    """What a record keeps of its I/O classes beside the figures: histograms, the class table and
    which latency each class reported."""
    ctx.extra["histograms"] = histograms(classes)
    ctx.extra["class_table"] = class_table(classes)
    ctx.extra["latency_kind"] = {c: st.lat_kind for c, st in classes.items() if st.lat_kind}


def work_of(runs: list[dict[str, fiojson.ClassStats]]) -> dict[str, float]:
    """The work fio runs did (the CPU figures' denominators): bytes, and I/Os but flushes."""
    return {"bytes": float(sum(st.bytes for r in runs for st in r.values())),
            "ops": float(sum(st.ios for r in runs for c, st in r.items() if c != "sync"))}


def run_jobfile(ctx: CaseContext, texts: list[str], clients: list[str], tag: str = ""
                ) -> tuple[fiojson.FioResult, str]:
    """Write the job file(s) into the case's logs, run fio, and check that it did real work."""
    assert ctx.workdir is not None
    name = f"{ctx.case_id}.i{ctx.iteration}{tag}" + (f".r{ctx.round}" if ctx.phase == "precondition" else "")
    jobfiles = []
    for i, text in enumerate(texts):
        jobfile = log_path(ctx.workdir, f"{name}.fio" if len(texts) == 1 else f"{name}.h{i}.fio")
        jobfile.parent.mkdir(parents=True, exist_ok=True)
        jobfile.write_text(text)
        jobfiles.append(jobfile)
    if not clients:                        # fio runs on the target: it reads the job file there
        jobfiles = [Path(ctx.target.stage_file(str(j))) for j in jobfiles]
    run = FioRun(ctx, jobfiles, clients)
    ctx.set_progress(run.progress)
    try:
        out, err, rc = run.run()
    finally:
        ctx.end_progress()
    ctx.log.write(f"$ {' '.join(run.argv)}\n# exit {rc}" + (f"\n  ! {err.strip()[-2000:]}" if err.strip() else ""))
    if rc != 0 and not (ctx.stopping() and rc in (0, 1, 130)):
        raise WorkloadFailed(f"fio exit {rc}: {_fio_error(err, out)}")
    try:
        obj = fiojson.parse(out, str(jobfiles[0]))
        res = fiojson.result(obj)
    except InputError as e:
        raise WorkloadFailed(f"fio printed no usable JSON ({e}); stderr: {err.strip()[-500:]}") from None
    if res.errors:
        raise WorkloadFailed("fio job error: " + "; ".join(res.errors) + (f" ({_fio_error(err, out)})"))
    if not any(st.ios for st in res.classes.values()):
        raise WorkloadFailed("fio completed no I/O")
    return res, out


def save_json(ctx: CaseContext, raw: str, tag: str = "") -> None:
    """fio's final JSON as fio/<case>.i<iteration>.json (the last object of the output)."""
    assert ctx.workdir is not None
    objs = fiojson.split_objects(raw)
    path = fio_json_path(ctx.workdir, f"{ctx.case_id}.i{ctx.iteration}{tag}")
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(objs[-1], indent=1) if objs else raw)


def _fio_error(err: str, out: str) -> str:
    lines = [ln.strip() for ln in (err + "\n" + out).splitlines()
             if ln.strip().startswith("fio:") or "error" in ln.lower() or "No space" in ln]
    text = "; ".join(dict.fromkeys(lines))[-600:] or err.strip()[-600:] or "no message"
    if "No space left on device" in text or "ENOSPC" in text or "err=28" in text:
        text = "ENOSPC (the pool is full): " + text
    return text

