"""The starvation mix (the 2015 compression-starvation study): a writer into a dataset with its own properties (e.g. gzip-9)
and a reader on another dataset, run together. The reader runs first alone, then under the writer,
each for `runtime`; zfsperf reports the reader's figures and histogram both ways and the ratio.

Taking turns (`duet = "turns"`: a module tunable's two values, or a dataset property of the two
sides' datasets), each turn is the same pair of phases, shorter: the reader alone for `slice`
seconds, then the mix for `settle` + `slice` seconds, of which the first `settle` (fio's
ramp_time) are left out, so that the writer's dirty data and the throttle it meets build up again
after the switch before a read is counted. A side's figures come from its turns' merged fio bins;
each turn's throughput is kept too (compare judges throughput on turn pairs, as fio's on slice pairs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..errors import InputError, shown
from ..metrics import fiojson
from ..pool import check_property
from ..targets.base import Target
from ..units import parse_duration, parse_size
from . import fio
from .base import CaseContext, Figures, WorkloadFailed, figure, slice_figures
from .turns import take_turns

JOB_KEYS = {k for k in fio.FIO_FIELDS if k not in ("clients", "runtime", "time_based", "slice", "settle")
            and not k.startswith("latency_")}


class MixedWorkload:
    name = "mixed"
    headline = "read_p99_ratio"            # the figure a case is summarised and judged by
    series_headline = "workload_mibs"   # its live counterpart in the sampled series (steady veto)
    bandwidth_figure: str | None = None   # cross-checked against zpool iostat (None: two phases, no one figure)
    summary_figures = ["reader_alone_p99", "reader_loaded_p99", "read_p99_ratio", "reader_loaded_iops", "writer_bw"]
    directions = {"read_p99_ratio": -1, "read_mean_ratio": -1, "writer_bw": 1, "writer_iops": 1}
    figure_units = (("reader_(alone|loaded)_iops", "IOPS"), ("reader_(alone|loaded)_bw", "MiB/s"),
                    ("reader_(alone|loaded)_(mean|p99)", "us"), ("writer_iops", "IOPS"), ("writer_bw", "MiB/s"),
                    ("writer_lat_mean", "us"), ("read_(p99|mean)_ratio", "x"))
    fields: dict[str, tuple[Any, bool]] = {
        "reader": (dict, False), "writer": (dict, False),
        "reader_dataset": (dict, False), "writer_dataset": (dict, False),
        "runtime": ((str, int, float), True),
        "slice": ((str, int, float), False), "settle": ((str, int, float), False),
    }
    duet_modes = ("turns",)                  # its reader and writer already share one pool: never "together"
    turns_across_guests = False          # its turns assume one pool (not yet for build turns)
    turns_share_files = True             # its turns keep the reader's and writer's files: tunable turns share them
    pool_counts_at_end = True            # its files stay to the case's end

    def validate(self, test: dict[str, Any], where: Callable[[str], dict]) -> None:
        for role in ("reader", "writer"):
            job = test.get(role)
            if not isinstance(job, dict):
                raise InputError(f"a mixed test needs a {role} table, e.g. {role} = {{ rw = \"randread\", "
                                 "bs = \"4k\", size = \"256M\" }", **where(role))
            for k, v in job.items():
                if k not in JOB_KEYS:
                    raise InputError(f"unknown {role} field {shown(k)} (expected one of {', '.join(sorted(JOB_KEYS))})",
                                     **where(role))
                if isinstance(v, list) or not isinstance(v, fio.FIO_FIELDS[k][0]):
                    raise InputError(f"{role}.{k}: expected a single value, got {shown(v)}", **where(role))
            fio.validate_job(job, lambda _k, r=role: where(r))
        for key in ("reader_dataset", "writer_dataset"):
            for k, v in (test.get(key) or {}).items():
                try:
                    check_property(k, str(v))
                except InputError as e:
                    raise InputError(e.message, **where(key)) from None
        rts = test.get("runtime", 10)
        for v in rts if isinstance(rts, list) else [rts]:
            try:
                if parse_duration(v) < 1:
                    raise ValueError("must be at least 1 s")
            except ValueError as e:
                raise InputError(f"runtime: {e}", **where("runtime")) from None
        for key, least in (("slice", 1), ("settle", 0)):
            if key in test:
                try:
                    if parse_duration(test[key]) < least:
                        raise ValueError(f"must be at least {least} s")
                except ValueError as e:
                    raise InputError(f"{key}: {e}", **where(key)) from None

    def prepare(self, test: dict[str, Any], target: Target, vdev_dir: Path,
                progress: Callable[[str], None] | None) -> None:
        return None

    def cycle(self, ctx: CaseContext, figures: Figures) -> tuple[float | None, str]:
        return 1.0, "fio's status interval (1 s)"

    def asked_seconds(self, fields: dict[str, Any]) -> float | None:
        return 2 * parse_duration(fields.get("runtime", 10))     # the reader alone, then under the writer

    def kept_bytes(self, fields: dict[str, Any]) -> int | None:
        return None                      # its files are rewritten in place, or the iteration is timed

    def active_bytes(self, fields: dict[str, Any], prepared: Any) -> int | None:
        return sum(parse_size(fields[r].get("size", "128M")) * int(fields[r].get("numjobs", 1))
                   for r in ("reader", "writer"))

    def run(self, ctx: CaseContext) -> Figures:
        p = ctx.fields
        runtime = ctx.measure_seconds or parse_duration(p.get("runtime", 10))
        if ctx.phase == "precondition":
            runtime = max(1.0, ctx.remaining() - 5)
        mix = _Mix(ctx)
        if ctx.phase == "precondition":        # the loaded mix until the runner says steady
            fio.run_jobfile(ctx, [mix.jobfile(("reader", "writer"), runtime)], [])
            return {}
        alone_res, alone_raw = fio.run_jobfile(ctx, [mix.jobfile(("reader",), runtime)], [], tag=".alone")
        loaded_raw = fio.run_jobfile(ctx, [mix.jobfile(("reader", "writer"), runtime)], [], tag=".loaded")[1]
        fio.save_json(ctx, alone_raw, ".alone")
        fio.save_json(ctx, loaded_raw, ".loaded")
        loaded_obj = fiojson.parse(loaded_raw)
        return _figures(ctx, alone_res.classes, fiojson.result(loaded_obj, "reader").classes,
                        fiojson.result(loaded_obj, "writer").classes)

    def run_turns(self, ctxs: list[CaseContext]) -> list[Figures]:
        """The two sides taking turns (turns.py's ABBA order, the tunable written before each turn
        by its hook): a turn is the reader alone for `slice` seconds, then the mix for `settle` +
        `slice` seconds with the first `settle` left out (fio's ramp_time), on that side's reader and
        writer datasets (over a module tunable one set for both sides), for `runtime` seconds in
        all (at least one ABBA group). Each phase's JSON is kept
        (fio/<case>.i<iteration>.s<k>.alone.json, .loaded.json); a side's figures are over its own
        turns, percentiles from the merged bins (fiojson.in_sequence)."""
        p = ctxs[0].fields
        total = parse_duration(p.get("runtime", 10))
        slice_s, settle_s = fio.turn_lengths(p, SLICE, SETTLE)
        mixes = {id(c): _Mix(c) for c in ctxs}
        count = {id(c): 0 for c in ctxs}
        Turn = tuple[dict[str, fiojson.ClassStats], dict[str, fiojson.ClassStats], dict[str, fiojson.ClassStats]]

        def one(c: CaseContext) -> Turn:
            count[id(c)] += 1
            tag, mix = f".s{count[id(c)]}", mixes[id(c)]
            alone, alone_raw = fio.run_jobfile(c, [mix.jobfile(("reader",), slice_s)], [], tag=tag + ".alone")
            loaded_raw = fio.run_jobfile(c, [mix.jobfile(("reader", "writer"), slice_s, settle_s)], [],
                                         tag=tag + ".loaded")[1]
            fio.save_json(c, alone_raw, tag + ".alone")
            fio.save_json(c, loaded_raw, tag + ".loaded")
            obj = fiojson.parse(loaded_raw)
            return alone.classes, fiojson.result(obj, "reader").classes, fiojson.result(obj, "writer").classes

        turns = take_turns(ctxs, one, duration=total)
        out = []
        for c, runs in zip(ctxs, turns):
            figs = _figures(c, *(fiojson.in_sequence([r[k] for r in runs]) for k in range(3)))
            c.extra["slices"] = {"count": len(runs), "seconds": slice_s, "settle_seconds": settle_s,
                                 "read_p99_ratio": [_p99_ratio(r[0], r[1]) for r in runs],
                                 # each turn's throughput (the reader's alone and loaded, the
                                 # writer's): compare pairs a side's k-th turn with the other's k-th
                                 "figures": [slice_figures(_phase_figures(*r)) for r in runs]}
            out.append(figs)
        return out


SLICE = 2.0       # seconds of each phase of a turn (the reader alone, the mix)
SETTLE = 1        # seconds of the mix run before a read is counted in a turn, after the switch


class _Mix:
    """The reader's and the writer's datasets on one side (created on first use, with the test's
    reader_dataset and writer_dataset properties) and their fio job sections."""

    def __init__(self, ctx: CaseContext) -> None:
        self.fields = ctx.fields
        self.dirs = {}
        for role in ("reader", "writer"):
            ds = f"{ctx.pool.root}/{role}"
            if ctx.target.run(["zfs", "list", "-H", "-o", "name", ds]).returncode != 0:
                ctx.pool.dataset(role, {k: str(v) for k, v in (self.fields.get(f"{role}_dataset") or {}).items()})
            self.dirs[role] = f"{ctx.pool.mountpoint}/{role}"

    def jobfile(self, roles: tuple[str, ...], runtime: float, settle: int = 0) -> str:
        lines: list[str] = []
        for role in roles:
            job = {"time_based": True, **self.fields[role]}
            if settle:
                job["ramp_time"] = settle
            lines += [f"[{role}]", f"directory={self.dirs[role]}", *fio.job_lines(job, runtime), ""]
        return "\n".join(lines)


def _p99_ratio(alone: dict[str, fiojson.ClassStats], loaded: dict[str, fiojson.ClassStats]) -> float | None:
    a, b = alone.get("read"), loaded.get("read")
    if a is None or b is None or "99.000000" not in a.percentiles_ns or "99.000000" not in b.percentiles_ns \
            or not a.percentiles_ns["99.000000"]:
        return None
    return round(b.percentiles_ns["99.000000"] / a.percentiles_ns["99.000000"], 4)


def _phase_figures(alone: dict[str, fiojson.ClassStats], reader: dict[str, fiojson.ClassStats],
                   writer: dict[str, fiojson.ClassStats]) -> Figures:
    """The reader's figures alone and under the writer, and the writer's (of a whole side, or of
    one turn), each class that did I/O."""
    figs: Figures = {}
    for label, classes in (("alone", alone), ("loaded", reader)):
        st = classes.get("read")
        if st is None or not st.ios:
            continue
        figs[f"reader_{label}_iops"] = figure(st.iops, "IOPS")
        figs[f"reader_{label}_bw"] = figure(st.mibs, "MiB/s")
        figs[f"reader_{label}_mean"] = figure(st.lat_mean_ns / 1000, "us")
        if "99.000000" in st.percentiles_ns:
            figs[f"reader_{label}_p99"] = figure(st.percentiles_ns["99.000000"] / 1000, "us")
    w = writer.get("write")
    if w is not None and w.ios:
        figs["writer_iops"] = figure(w.iops, "IOPS")
        figs["writer_bw"] = figure(w.mibs, "MiB/s")
        figs["writer_lat_mean"] = figure(w.lat_mean_ns / 1000, "us")
    return figs


def _figures(ctx: CaseContext, alone: dict[str, fiojson.ClassStats], reader: dict[str, fiojson.ClassStats],
             writer: dict[str, fiojson.ClassStats]) -> Figures:
    """The reader's figures alone and under the writer, the writer's, and the ratios; the
    histograms and class table into ctx.extra."""
    if not alone.get("read") or not alone["read"].ios or not reader.get("read") or not reader["read"].ios:
        raise WorkloadFailed("the reader did no reads (its rw must read: read, randread, rw, randrw)")
    figs = _phase_figures(alone, reader, writer)
    if "reader_alone_p99" in figs and "reader_loaded_p99" in figs and figs["reader_alone_p99"]["value"] > 0:
        figs["read_p99_ratio"] = figure(figs["reader_loaded_p99"]["value"] / figs["reader_alone_p99"]["value"], "x")
    if figs["reader_alone_mean"]["value"] > 0:
        figs["read_mean_ratio"] = figure(figs["reader_loaded_mean"]["value"] / figs["reader_alone_mean"]["value"],
                                         "x")
    hist = {}
    for key, title, classes, cls in (("read_alone", "Read (reader alone)", alone, "read"),
                                     ("read_loaded", "Read (under the writer)", reader, "read"),
                                     ("write", "Write (writer)", writer, "write")):
        h = fio.histograms({cls: classes[cls]} if cls in classes else {})
        if cls in h:
            hist[key] = {**h[cls], "title": title}
    ctx.extra["histograms"] = hist
    both = {**reader, **{k: v for k, v in writer.items() if k != "read"}}
    ctx.extra["class_table"] = fio.class_table(both)
    return figs
