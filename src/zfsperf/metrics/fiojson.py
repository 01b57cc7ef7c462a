"""fio's JSON output (anchors.md §3.2, §3.4): the `jobs` form, the client/server `client_stats`
form, json+ latency bins, and the stream of objects `--status-interval` prints.

Per I/O class (read, write, trim, sync) zfsperf keeps: I/Os, bytes, runtime, IOPS, MiB/s, and the
completion latency (`clat_ns`; for sync, `lat_ns`): mean, stddev, percentiles, max and, with json+,
the bins (ns -> count). Several job entries (numjobs without group_reporting, or several hosts)
merge exactly: counts and bins add, means weight by N, variances pool. Percentiles merge only
through bins: entries without them (plain json) leave the merged percentiles unknown, never the
first entry's.

fio older than 3.18 prints no latency sample count `N` (a merged mean would silently be the first
job's), and fio 2.x reports bandwidth in KiB/s: such output is refused with a clear error rather
than read wrongly. `unified_rw_reporting=mixed` output (one "mixed" class) is read as the class
"mixed"; with `unified_rw_reporting=both` fio prints read/write/trim AND their sum as "mixed": the
totals then come from the directions only (`TOTAL_CLASSES`), never both.

Which latency: fio fills `clat_ns` (completion) and `lat_ns` (total: submission + completion); its
percentiles and json+ bins go to `clat_ns` by default and to `lat_ns` with `lat_percentiles=1,
clat_percentiles=0`. zfsperf reads the one that has them (completion when both do) and records
which in `ClassStats.lat_kind`; sync's latency is always `lat_ns`.
"""

from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError

CLASSES = ("read", "write", "trim", "sync", "mixed")
DIRECTIONS = ("read", "write", "trim")
LAT_KINDS = {"clat_ns": "completion", "lat_ns": "total"}
MIN_FIO = (3, 18)           # the first fio whose JSON carries N in clat_ns/lat_ns
PERCENTILES = ("50.000000", "90.000000", "99.000000", "99.900000")
AGGREGATE_HOST = "All clients"


def split_objects(text: str, source: str = "fio output") -> list[dict[str, Any]]:
    """Every top-level JSON object in text (status-interval output is one object per interval;
    fio may print plain-text notes between them, which are skipped)."""
    dec = json.JSONDecoder()
    out, i, n = [], 0, len(text)
    while i < n:
        j = text.find("{", i)
        if j < 0:
            break
        try:
            obj, end = dec.raw_decode(text, j)
        except ValueError:
            i = text.find("\n{", j + 1)
            if i < 0:
                break
            continue
        if isinstance(obj, dict):
            out.append(obj)
        i = end
    return out


def parse(text: str, source: str = "fio output") -> dict[str, Any]:
    """The final (last) fio result object in text; InputError if there is none."""
    objs = [o for o in split_objects(text, source) if "jobs" in o or "client_stats" in o]
    if not objs:
        raise InputError("no fio JSON result (expected an object with \"jobs\" or \"client_stats\")",
                         file=source)
    return objs[-1]


@dataclass
class ClassStats:
    ios: int = 0
    bytes: int = 0
    runtime_ms: float = 0.0
    lat_n: int = 0
    lat_mean_ns: float = 0.0
    lat_var_ns2: float = 0.0
    lat_max_ns: float = 0.0
    percentiles_ns: dict[str, float] = field(default_factory=dict)
    bins: dict[int, int] = field(default_factory=dict)      # ns -> count (json+)
    iops_reported: float = 0.0
    bw_reported: float = 0.0                                  # bytes/s as fio computed them
    lat_kind: str = ""          # "completion" (clat_ns) or "total" (lat_ns): see the module doc

    def merge(self, o: "ClassStats") -> None:
        if self.lat_kind and o.lat_kind and self.lat_kind != o.lat_kind:
            raise InputError(f"jobs report different latencies ({self.lat_kind} and {o.lat_kind}): they do not "
                             "merge; give every job the same lat_percentiles/clat_percentiles",
                             field="lat_percentiles")
        self.lat_kind = self.lat_kind or o.lat_kind
        a_has, b_has = self.lat_n > 0, o.lat_n > 0
        both_bins = bool(self.bins) and bool(o.bins)
        n = self.lat_n + o.lat_n
        if n:
            mean = (self.lat_mean_ns * self.lat_n + o.lat_mean_ns * o.lat_n) / n
            ss = sum(m.lat_n * (m.lat_var_ns2 + (m.lat_mean_ns - mean) ** 2) for m in (self, o))
            self.lat_mean_ns, self.lat_var_ns2 = mean, ss / n
        self.lat_n = n
        self.ios += o.ios
        self.bytes += o.bytes
        self.runtime_ms = max(self.runtime_ms, o.runtime_ms)
        self.lat_max_ns = max(self.lat_max_ns, o.lat_max_ns)
        for k, v in o.bins.items():
            self.bins[k] = self.bins.get(k, 0) + v
        self.iops_reported += o.iops_reported
        self.bw_reported += o.bw_reported
        if not b_has:
            pass                                          # nothing measured there: ours stand
        elif not a_has:
            self.percentiles_ns = dict(o.percentiles_ns)
        elif both_bins:
            self.percentiles_ns = percentiles_from_bins(self.bins)
        else:
            self.percentiles_ns = {}      # percentiles of two sample sets do not merge without bins

    @property
    def iops(self) -> float:
        return self.iops_reported

    @property
    def mibs(self) -> float:
        return self.bw_reported / 1048576.0


def in_sequence(runs: list[dict[str, ClassStats]]) -> dict[str, ClassStats]:
    """The classes of fio runs made one after another (a side's turns) as one: I/Os, bytes and
    runtime added (so IOPS and bandwidth are over the runs' timed parts), latency moments pooled,
    the json+ bins added and the percentiles read from them (none when a run had no bins: the
    percentiles of separate runs do not merge without them)."""
    out: dict[str, ClassStats] = {}
    for classes in runs:
        for cls, st in classes.items():
            acc = out.setdefault(cls, ClassStats())
            runtime = acc.runtime_ms + st.runtime_ms
            had_bins = bool(acc.bins) or acc.lat_n == 0
            acc.merge(st)                           # moments, bins, ios, bytes, max, kind
            acc.runtime_ms = runtime
            if st.lat_n and not (had_bins and st.bins):
                acc.percentiles_ns = {}
            seconds = runtime / 1000
            acc.iops_reported = acc.ios / seconds if seconds > 0 else 0.0
            acc.bw_reported = acc.bytes / seconds if seconds > 0 else 0.0
    return out


def percentiles_from_bins(bins: dict[int, int]) -> dict[str, float]:
    total = sum(bins.values())
    out: dict[str, float] = {}
    if not total:
        return out
    keys = sorted(bins)
    for p in PERCENTILES:
        want = float(p) / 100 * total
        acc = 0
        for k in keys:
            acc += bins[k]
            if acc >= want:
                out[p] = float(k)
                break
    return out


def _num(d: dict, key: str, where: str) -> float:
    v = d.get(key, 0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise InputError(f"{where}.{key} is not a number: {v!r}", field=f"{where}.{key}")
    return float(v)


def latency_key(d: dict[str, Any], cls: str) -> str | None:
    """The latency object to read for a class: the one holding percentiles or bins (completion
    first), else completion's means, else total's."""
    if cls == "sync":
        return "lat_ns" if isinstance(d.get("lat_ns"), dict) else None
    present = [k for k in ("clat_ns", "lat_ns") if isinstance(d.get(k), dict)]
    for k in present:
        if d[k].get("percentile") or d[k].get("bins"):
            return k
    return present[0] if present else None


def total_classes(classes: dict[str, "ClassStats"]) -> list[str]:
    """The classes whose I/Os add up to the job's total: the directions, or "mixed" alone when fio
    printed only that (unified_rw_reporting=mixed); with =both, "mixed" repeats the directions."""
    dirs = [c for c in DIRECTIONS if c in classes and classes[c].ios]
    return dirs or (["mixed"] if "mixed" in classes else [])


def class_stats(entry: dict[str, Any], cls: str, where: str = "job") -> ClassStats | None:
    d = entry.get(cls)
    if not isinstance(d, dict):
        return None
    ios = int(_num(d, "total_ios", f"{where}.{cls}"))
    key = latency_key(d, cls)
    lat = d.get(key) if key else None
    if not isinstance(lat, dict):
        lat = {}
    if ios and lat and "N" not in lat:
        raise InputError(f"{where}.{cls}: the latency has no sample count N (fio older than 3.18?): "
                         "means could not be merged right; use fio >= 3.18", field=f"{where}.{cls}.clat_ns.N")
    st = ClassStats(ios=ios, bytes=int(_num(d, "io_bytes", f"{where}.{cls}")) if cls != "sync" else 0,
                    runtime_ms=_num(d, "runtime", f"{where}.{cls}") if cls != "sync" else 0.0,
                    lat_n=int(_num(lat, "N", f"{where}.{cls}.lat")),
                    lat_mean_ns=_num(lat, "mean", f"{where}.{cls}.lat"),
                    lat_var_ns2=_num(lat, "stddev", f"{where}.{cls}.lat") ** 2,
                    lat_max_ns=_num(lat, "max", f"{where}.{cls}.lat"),
                    iops_reported=_num(d, "iops", f"{where}.{cls}") if cls != "sync" else 0.0,
                    bw_reported=_num(d, "bw_bytes", f"{where}.{cls}") if cls != "sync" else 0.0,
                    lat_kind=LAT_KINDS[key] if key and lat else "")
    pct = lat.get("percentile")
    if isinstance(pct, dict):
        st.percentiles_ns = {k: float(v) for k, v in pct.items() if isinstance(v, (int, float))}
    bins = lat.get("bins")
    if isinstance(bins, dict):
        try:
            st.bins = {int(k): int(v) for k, v in bins.items()}
        except (TypeError, ValueError):
            raise InputError(f"{where}.{cls}: latency bins must map ns to counts", field=f"{where}.{cls}.bins") \
                from None
        if st.bins:
            st.percentiles_ns.update(percentiles_from_bins(st.bins))
    return st


@dataclass
class FioResult:
    """Aggregate per class, plus per host in client/server mode."""
    classes: dict[str, ClassStats]
    hosts: dict[str, dict[str, ClassStats]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)     # jobs that ended with an error
    version: str | None = None
    fio_aggregate: dict[str, ClassStats] = field(default_factory=dict)   # fio's own "All clients" entry


def _merge_entries(entries: list[dict[str, Any]], where: str) -> tuple[dict[str, ClassStats], list[str]]:
    classes: dict[str, ClassStats] = {}
    errors = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise InputError(f"{where}[{i}] is not an object", field=where)
        if e.get("error"):
            errors.append(f"{e.get('jobname', '?')}: error {e.get('error')}")
        for cls in CLASSES:
            st = class_stats(e, cls, f"{where}[{i}]")
            if st is None:
                continue
            if cls in classes:
                classes[cls].merge(st)
            else:
                classes[cls] = st
    return classes, errors


def fio_version(obj: dict[str, Any]) -> tuple[int, int] | None:
    """(major, minor) of "fio version": "fio-3.33", a git-describe build "fio-3.6-31-g4386"
    (31 commits after 3.6: still 3.6) or "fio-3.36-rc1"; None when absent or unreadable."""
    v = obj.get("fio version")
    if not isinstance(v, str):
        return None
    m = re.match(r"\s*(?:fio-)?(\d+)(?:\.(\d+))?", v)
    if not m:
        return None
    return int(m.group(1)), int(m.group(2) or 0)


def result(obj: dict[str, Any], jobname: str | None = None) -> FioResult:
    """A fio result object in either form as a FioResult (only the jobs called jobname, if given)."""
    ver = fio_version(obj)
    if ver is not None and ver < MIN_FIO:
        raise InputError(f"fio JSON from {obj.get('fio version')}: zfsperf reads fio >= "
                         f"{MIN_FIO[0]}.{MIN_FIO[1]} (older JSON has no latency sample counts, and fio 2.x "
                         "reports bandwidth in KiB/s); upgrade fio on every host", field="fio version")
    res = _result(obj, jobname)
    if not res.classes and not res.errors:
        raise InputError("fio JSON holds no I/O class zfsperf reads (read, write, trim, sync, mixed)",
                         field="jobs")
    return res


def _result(obj: dict[str, Any], jobname: str | None) -> FioResult:
    if "client_stats" in obj:
        stats = obj["client_stats"]
        if not isinstance(stats, list):
            raise InputError("client_stats must be a list", field="client_stats")
        by_host: dict[str, list[dict]] = {}
        fio_agg: list[dict] = []
        for e in stats:
            if isinstance(e, dict) and e.get("jobname") == AGGREGATE_HOST:
                fio_agg.append(e)        # fio's own aggregate: kept to check zfsperf's sum against
                continue
            host = str(e.get("hostname", "?")) if isinstance(e, dict) else "?"
            if isinstance(e, dict) and isinstance(e.get("port"), int):
                host += f":{e['port']}"  # several servers on one host differ by port
            by_host.setdefault(host, []).append(e)
        hosts = {}
        errors: list[str] = []
        for h, entries in by_host.items():
            hosts[h], errs = _merge_entries(entries, f"client_stats[{h}]")
            errors += [f"{h}: {x}" for x in errs]
        total: dict[str, ClassStats] = {}
        for h in hosts.values():
            for cls, st in h.items():
                if cls in total:
                    total[cls].merge(st)
                else:
                    total[cls] = copy.deepcopy(st)
        agg = _merge_entries(fio_agg, "client_stats[All clients]")[0] if fio_agg else {}
        return FioResult(total, hosts, errors, obj.get("fio version"), agg)
    jobs = obj.get("jobs")
    if not isinstance(jobs, list):
        raise InputError("fio JSON has neither \"jobs\" nor \"client_stats\"", field="jobs")
    if jobname is not None:
        jobs = [j for j in jobs if isinstance(j, dict) and j.get("jobname") == jobname]
        if not jobs:
            raise InputError(f"fio JSON has no job named {jobname!r}", field="jobs")
    classes, errors = _merge_entries(jobs, "jobs")
    return FioResult(classes, {}, errors, obj.get("fio version"))


def progress(obj: dict[str, Any]) -> dict[str, float]:
    """Cumulative bytes and I/Os in a (status-interval) result object, over all classes and hosts."""
    entries = obj.get("jobs") or [e for e in obj.get("client_stats", []) if e.get("jobname") != AGGREGATE_HOST]
    b = ios = 0.0
    for e in entries:
        classes = [c for c in DIRECTIONS if isinstance(e.get(c), dict)] or ["mixed"]
        for cls in classes:
            d = e.get(cls) or {}
            b += float(d.get("io_bytes", 0) or 0)
            ios += float(d.get("total_ios", 0) or 0)
    return {"bytes": b, "ios": ios}
