"""The starvation mix (the 2015 compression-starvation study): a writer into a dataset with its own properties (e.g. gzip-9)
and a reader on another dataset, run together. The reader runs first alone, then under the writer,
each for `runtime`; zfsperf reports the reader's figures and histogram both ways and the ratio.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ..errors import InputError, shown
from ..metrics import fiojson
from ..pool import check_property_name, check_property_value
from ..targets.base import Target
from ..units import parse_duration, parse_size
from . import fio
from .base import CaseContext, Figures, WorkloadFailed, figure

JOB_KEYS = {k for k in fio.FIO_FIELDS if k not in ("clients", "runtime", "time_based")}


class MixedWorkload:
    name = "mixed"
    headline = "read_p99_ratio"            # the figure a case is summarised and judged by
    series_headline = "workload_mibs"   # its live counterpart in the sampled series (steady veto)
    bandwidth_figure: str | None = None   # cross-checked against zpool iostat (None: two phases, no one figure)
    summary_figures = ["reader_alone_p99", "reader_loaded_p99", "read_p99_ratio", "reader_loaded_iops", "writer_bw"]
    duet_modes: tuple[str, ...] = ()     # its reader and writer already share one pool
    directions = {"read_p99_ratio": -1, "read_mean_ratio": -1, "writer_bw": 1, "writer_iops": 1}
    fields: dict[str, tuple[Any, bool]] = {
        "reader": (dict, False), "writer": (dict, False),
        "reader_dataset": (dict, False), "writer_dataset": (dict, False),
        "runtime": ((str, int, float), True),
    }

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
                    check_property_name(k)
                    check_property_value(str(v))
                except InputError as e:
                    raise InputError(e.message, **where(key)) from None
        rts = test.get("runtime", 10)
        for v in rts if isinstance(rts, list) else [rts]:
            try:
                if parse_duration(v) < 1:
                    raise ValueError("must be at least 1 s")
            except ValueError as e:
                raise InputError(f"runtime: {e}", **where("runtime")) from None

    def prepare(self, test: dict[str, Any], target: Target, vdev_dir: Path,
                progress: Callable[[str], None] | None) -> None:
        return None

    def cycle(self, ctx: CaseContext, figures: Figures) -> tuple[float | None, str]:
        return 1.0, "fio's status interval (1 s)"

    def active_bytes(self, fields: dict[str, Any], prepared: Any) -> int | None:
        return sum(parse_size(fields[r].get("size", "128M")) * int(fields[r].get("numjobs", 1))
                   for r in ("reader", "writer"))

    def run(self, ctx: CaseContext) -> Figures:
        p = ctx.fields
        runtime = ctx.measure_seconds or parse_duration(p.get("runtime", 10))
        if ctx.phase == "precondition":
            runtime = max(1.0, ctx.remaining() - 5)
        dirs = {}
        for role in ("reader", "writer"):
            ds = f"{ctx.pool.root}/{role}"
            if ctx.target.run(["zfs", "list", "-H", "-o", "name", ds]).returncode != 0:
                ctx.pool.dataset(role, {k: str(v) for k, v in (p.get(f"{role}_dataset") or {}).items()})
            dirs[role] = f"{ctx.pool.mountpoint}/{role}"

        def section(role: str) -> list[str]:
            job = {"time_based": True, **p[role]}
            return [f"[{role}]", f"directory={dirs[role]}", *fio.job_lines(job, runtime), ""]

        if ctx.phase == "precondition":        # the loaded mix until the runner says steady
            fio.run_jobfile(ctx, ["\n".join(section("reader") + section("writer"))], [])
            return {}
        alone_res, alone_raw = fio.run_jobfile(ctx, ["\n".join(section("reader"))], [], tag=".alone")
        loaded_raw = fio.run_jobfile(ctx, ["\n".join(section("reader") + section("writer"))], [], tag=".loaded")[1]
        fio.save_json(ctx, alone_raw, ".alone")
        fio.save_json(ctx, loaded_raw, ".loaded")
        loaded_obj = fiojson.parse(loaded_raw)
        reader = fiojson.result(loaded_obj, "reader").classes
        writer = fiojson.result(loaded_obj, "writer").classes
        alone = alone_res.classes
        if not alone.get("read") or not alone["read"].ios or not reader.get("read") or not reader["read"].ios:
            raise WorkloadFailed("the reader did no reads (its rw must read: read, randread, rw, randrw)")

        figs: Figures = {}
        for label, classes in (("alone", alone), ("loaded", reader)):
            st = classes["read"]
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
