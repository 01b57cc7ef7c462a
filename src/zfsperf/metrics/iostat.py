"""`zpool iostat` in the two forms targets print: human-scaled (zfs-fuse, any OpenZFS) and -Hp
(OpenZFS: tab-separated exact numbers). Default column groups only: capacity, operations, bandwidth.
The first report is the average since import; later ones are per-interval."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import Sequence

from ..errors import InputError
from ..sshlink import again_while_refused, ssh_failed_to_start
from ..units import parse_human

FIELDS = ("alloc", "free", "read_ops", "write_ops", "read_bw", "write_bw")
# -l adds, after the default six: total_wait, disk_wait, syncq_wait, asyncq_wait ({read,write} each),
# scrub, trim and (2.2+) rebuild. The first ones are at the same place in every version.
LATENCY_FIELDS = ("total_wait_read", "total_wait_write", "disk_wait_read", "disk_wait_write")
_L_COLUMNS = (*LATENCY_FIELDS, "syncq_wait_read", "syncq_wait_write", "asyncq_wait_read", "asyncq_wait_write",
              "scrub_wait", "trim_wait")
_Q_COLUMNS = tuple(f"{q}_{s}" for q in ("syncq_read", "syncq_write", "asyncq_read", "asyncq_write",
                                        "scrubq_read", "trimq_write") for s in ("pend", "activ"))
# what OpenZFS 2.2 added at the end of each group (anchors §4.1)
_L_REBUILD, _Q_REBUILD = ("rebuild_wait",), ("rebuildq_write_pend", "rebuildq_write_activ")


def hp_columns(flags: Sequence[str], nfields: int, source: str = "zpool iostat -Hp", line: int = 0
               ) -> tuple[str, ...]:
    """The names of a -Hp row's fields after the pool name, from the column groups zfsperf asked for
    (`-l`, `-q`: -H prints no header) and the row's width, which says whether this OpenZFS has the
    rebuild columns (2.2+). A width that fits neither is an error, never a guess."""
    lat, queue = "-l" in flags, "-q" in flags
    for rebuild in (False, True):
        cols = FIELDS + ((_L_COLUMNS + (_L_REBUILD if rebuild else ())) if lat else ()) \
            + ((_Q_COLUMNS + (_Q_REBUILD if rebuild else ())) if queue else ())
        if len(cols) + 1 == nfields:
            return cols
    groups = " ".join(["default", *(["-l"] if lat else []), *(["-q"] if queue else [])])
    widths = sorted({1 + len(FIELDS) + (len(_L_COLUMNS) + r if lat else 0) + (len(_Q_COLUMNS) + 2 * r if queue else 0)
                     for r in (0, 1)})
    raise InputError(f"a row of {nfields} tab-separated fields does not fit the columns asked for "
                     f"({groups}: {' or '.join(map(str, widths))} fields)", file=source, line=line or None)


def parse_human_row(line: str, pool: str, source: str = "zpool iostat", lineno: int = 0
                    ) -> dict[str, float | None] | None:
    """The pool's row of human output (`1.35K`, `6.30M`, `-`), or None for any other line (the
    column header, whose first word is `pool`, is not a row even for a pool named `pool`)."""
    parts = line.split()
    if not parts or parts[0] != pool or parts[1:3] == ["alloc", "free"]:
        return None
    if len(parts) < 7:
        raise InputError(f"expected 7 columns for {pool}, got {len(parts)}", file=source, line=lineno or None)
    try:
        return dict(zip(FIELDS, (parse_human(p) for p in parts[1:7])))
    except ValueError as e:
        raise InputError(str(e), file=source, line=lineno or None) from None


def parse_human_reports(text: str, pool: str, source: str = "zpool iostat") -> list[dict[str, float | None]]:
    """One dict per report: the pool's row of human output. No row for the pool is an error."""
    out = [r for i, line in enumerate(text.splitlines(), start=1)
           if (r := parse_human_row(line, pool, source, i)) is not None]
    if not out:
        raise InputError(f"no row for pool {pool!r}", file=source, line=1)
    return out


def parse_hp_row(line: str, pool: str, flags: Sequence[str] = (), source: str = "zpool iostat -Hp",
                 lineno: int = 0) -> dict[str, float | None] | None:
    """The pool's row of -Hp output (tab-separated, exact, `-` for none) read by the column groups
    asked for (flags), or None for another pool's or a vdev's row. A row of the pool separated by
    spaces (pasted, or piped through something that expands tabs) is an error, not skipped."""
    parts = line.rstrip("\n").split("\t")
    if parts[0] != pool:
        words = line.split()
        if len(parts) == 1 and words[:1] == [pool] and len(words) > 1:
            raise InputError(f"the row of {pool} is not tab-separated: -Hp output separates fields by single "
                             "tabs (were they turned into spaces?)", file=source, line=lineno or None)
        return None
    names = hp_columns(flags, len(parts), source, lineno)
    row: dict[str, float | None] = {}
    for name, p in zip(names, parts[1:]):
        try:
            row[name] = None if p.strip() == "-" else float(p)
        except ValueError:
            raise InputError(f"{name} is not a number: {p!r}", file=source, line=lineno or None) from None
    return row


def parse_hp_reports(text: str, pool: str, flags: Sequence[str] = (), source: str = "zpool iostat -Hp"
                     ) -> list[dict[str, float | None]]:
    """One dict per report: the pool's rows of -Hp output with the column groups in flags (e.g.
    ["-l"]). No row for the pool is an error."""
    out = [r for i, line in enumerate(text.splitlines(), start=1)
           if (r := parse_hp_row(line, pool, flags, source, i)) is not None]
    if not out:
        raise InputError(f"no row for pool {pool!r}", file=source, line=1)
    return out


def pool_metrics(report: dict[str, float | None], interval: float) -> dict[str, float | None]:
    """The talk's pool metrics from one per-interval report: kOPS, MiB/s and (with -l) the average
    op latency in ms, weighted by each direction's operations. Human/-Hp ops and bandwidth are
    already per second."""
    r_ops, w_ops = report.get("read_ops"), report.get("write_ops")
    r_bw, w_bw = report.get("read_bw"), report.get("write_bw")
    out: dict[str, float | None] = {
        "pool_kops": None if r_ops is None or w_ops is None else (r_ops + w_ops) / 1000.0,
        "pool_mibs": None if r_bw is None or w_bw is None else (r_bw + w_bw) / 1048576.0,
    }
    if "total_wait_read" in report:
        num = den = 0.0
        for ops, lat in ((r_ops, report.get("total_wait_read")), (w_ops, report.get("total_wait_write"))):
            if ops and lat is not None:
                num += ops * lat
                den += ops
        out["pool_lat_ms"] = num / den / 1e6 if den else None
    return out


# ---------------------------------------------------------------------------- -w (latency histograms)
def parse_latency_header(text: str, source: str = "zpool iostat -w") -> list[str]:
    """Column names of `zpool iostat -w POOL` from its two header lines: groups spanning two columns
    (total_wait, disk_wait, syncq_wait, asyncq_wait) over read/write, then single ones (scrub,
    trim, and from 2.2 rebuild)."""
    lines = text.splitlines()
    for i, line in enumerate(lines[:-1]):
        sub = lines[i + 1].split()
        if sub[:1] == ["latency"]:
            groups = line.split()[1:]
            names, g = [], 0
            rest = sub[1:]
            j = 0
            while j < len(rest):
                if rest[j] == "read" and j + 1 < len(rest) and rest[j + 1] == "write" and g < len(groups):
                    names += [f"{groups[g]}_read", f"{groups[g]}_write"]
                    g += 1
                    j += 2
                else:
                    names.append(rest[j])
                    j += 1
            return names
    raise InputError("no 'latency read write …' header line", file=source, line=1)


def parse_hp_histogram(text: str, columns: list[str], source: str = "zpool iostat -Hp -w",
                       pool: str | None = None) -> dict[str, list[tuple[int, int]]]:
    """`zpool iostat -Hp -w`: each section is a name line (the pool, then with -v each vdev by name,
    as zpool_main.c prints them: a blank line, the name, the rows) followed by rows `<bucket end in
    ns>\\t<count per column>`. Only the pool's own section counts (`pool`; without it the first
    section): a vdev's rows are already in the pool's, and adding them counted every I/O twice.
    Returns {column: [(bucket end ns, count), …]} summed over reports."""
    out: dict[str, dict[int, int]] = {c: {} for c in columns}
    section: str | None = None
    for i, line in enumerate(text.splitlines(), start=1):
        parts = line.split("\t")
        if len(parts) < 2:
            if line.strip():
                section = line.strip()
                if pool is None:
                    pool = section
            continue
        if not parts[0].strip().isdigit() or section != pool:
            continue
        if len(parts) - 1 != len(columns):
            raise InputError(f"expected {len(columns)} counts ({', '.join(columns)}), got {len(parts) - 1}",
                             file=source, line=i)
        label = int(parts[0])
        for c, v in zip(columns, parts[1:]):
            try:
                n = int(v)
            except ValueError:
                raise InputError(f"{c} count is not an integer: {v!r}", file=source, line=i) from None
            out[c][label] = out[c].get(label, 0) + n
    return {c: sorted(d.items()) for c, d in out.items()}


# ---------------------------------------------------------------------------- -r (request sizes)
# `zpool iostat -r`'s request classes, each an "ind" (individual) and an "agg" (aggregated) column,
# in the order zpool_main.c prints them; 2.2 added rebuild (2.1.11 prints 12 columns, 2.3.2 14)
RQ_CLASSES = ("sync_read", "sync_write", "async_read", "async_write", "scrub", "trim", "rebuild")


def parse_hp_request_counts(text: str, pool: str, source: str = "zpool iostat -Hp -r") -> dict[str, int]:
    """`zpool iostat -Hp -r POOL`: the I/Os issued to the pool's vdevs per request class since the
    pool was imported, individual and aggregated ones together, summed over the size buckets
    ({class: I/Os}; classes the version does not print are absent)."""
    width = 0
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) > 1 and parts[0].strip().isdigit():
            width = len(parts) - 1
            break
    if width % 2 or not 2 * (len(RQ_CLASSES) - 1) <= width <= 2 * len(RQ_CLASSES):
        raise InputError(f"expected {2 * (len(RQ_CLASSES) - 1)} or {2 * len(RQ_CLASSES)} counts a row "
                         f"(ind and agg per request class), got {width}", file=source, line=1)
    classes = RQ_CLASSES[:width // 2]
    columns = [f"{c}_{k}" for c in classes for k in ("ind", "agg")]
    hist = parse_hp_histogram(text, columns, source, pool=pool)
    return {c: sum(n for k in ("ind", "agg") for _, n in hist[f"{c}_{k}"]) for c in classes}


_Report = tuple[bytes, bytes, int | None, float]    # a report process's stdout, stderr, exit status, seconds


class PoolLatency:
    """Pool-side latency over a measured interval (OpenZFS): one `zpool iostat -Hp -y -w POOL T 1`
    (histogram deltas) and one `-Hp -y -l POOL T 1` (average waits) started with the measurement.
    2.1 rejects -w together with -l, so they are two processes.

    On an ssh target a loaded guest now and then refuses a shared-connection session (ssh exits 255
    at once, the command never ran): such a report process is started again, at most once per
    RETRY_DELAYS, and the record says how late its interval began (`late_s`)."""

    def __init__(self, target, pool: str, seconds: float) -> None:
        self.target, self.pool = target, pool
        self.seconds = max(1, int(round(seconds)))
        self.columns: list[str] = []
        self.procs: list = []
        self.late: dict[str, float] = {}           # flags -> seconds the restarted interval began late
        self._done: dict[str, tuple[bytes, bytes, int | None]] = {}
        self._threads: list[threading.Thread] = []
        self._abandoned = False
        self._lock = threading.Lock()
        forms = target.capabilities().iostat_forms
        self.available = "-w" in forms and "-Hp" in forms

    def _argv(self, flags: list[str]) -> list[str]:
        return ["zpool", "iostat", *flags, self.pool, str(self.seconds), "1"]

    def start(self) -> None:
        if not self.available:
            return
        hdr = self.target.run(["zpool", "iostat", "-w", self.pool])
        try:
            self.columns = parse_latency_header(hdr.stdout)
        except InputError:
            self.available = False
            return
        t0 = time.monotonic()
        for flags in (["-Hp", "-y", "-w"], ["-Hp", "-y", "-l"]):
            p = self.target.popen(self._argv(flags), stderr=subprocess.PIPE)
            self.procs.append((flags, p))
            t = threading.Thread(target=self._collect, args=(flags, p, t0), name="zpool-iostat-interval", daemon=True)
            t.start()
            self._threads.append(t)

    def _collect(self, flags: list[str], p: subprocess.Popen, t0: float) -> None:
        """The report of one process, started again while ssh failed to start it."""
        key = " ".join(flags)
        remote = self.target.capabilities().remote

        def wait(p: subprocess.Popen, started: float) -> _Report:
            out, err = p.communicate()
            return out or b"", err or b"", p.returncode, time.monotonic() - started

        def again() -> _Report | None:
            with self._lock:                       # no new process once abandon() has stopped them
                if self._abandoned:
                    return None
                started = time.monotonic()
                q = self.target.popen(self._argv(flags), stderr=subprocess.PIPE)
                self.procs = [(f, q if f == flags else o) for f, o in self.procs]
            self.late[key] = round(started - t0, 3)
            return wait(q, started)

        def refused(r: _Report | None) -> bool:
            return (r is not None and remote and not r[0] and r[2] is not None
                    and ssh_failed_to_start(r[2], r[3]))

        got = again_while_refused(wait(p, time.monotonic()), again, refused, before=lambda _d: not self._abandoned)
        self._done[key] = got[:3] if got is not None else (b"", b"", None)

    def _stop(self) -> None:
        with self._lock:
            self._abandoned = True
            for _flags, p in self.procs:
                if p.poll() is None:
                    p.kill()

    def abandon(self) -> None:
        """The measured interval was cut short (a signal, a timeout, fio failed): its report is not
        waited for. A reader that waited would hold a Ctrl-C'd run for up to the interval, twice."""
        self._stop()
        for t in self._threads:
            t.join(5)
        self.procs, self._threads = [], []

    def finish(self, timeout: float = 30) -> dict:
        if not self.available:
            return {"unavailable": f"{self.target.impl} has no `zpool iostat -w/-l` (pool v23 on zfs-fuse)"}
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        if any(t.is_alive() for t in self._threads):      # past the timeout: stop it, report what is there
            self._stop()
            for t in self._threads:
                t.join(10)
        texts, missing = [], []
        for flags in (["-Hp", "-y", "-w"], ["-Hp", "-y", "-l"]):
            out, err, rc = self._done.get(" ".join(flags), (b"", b"", None))
            text, err = (x.decode(errors="replace") for x in (out, err))
            texts.append(text)
            if not any(line.split("\t")[0] == self.pool for line in text.splitlines()):
                missing.append(f"`zpool iostat {' '.join(flags)} {self.pool} {self.seconds} 1` printed no report "
                               f"(exit status {rc}{': ' + err.strip()[:200] if err.strip() else ''})")
        if missing:
            # a report that never came is a measurement that was not made: said, not faked; a
            # report that came in a shape zfsperf does not know is still an error (parsed below)
            return {"unavailable": "; ".join(missing)}
        hist = parse_hp_histogram(texts[0], self.columns, pool=self.pool)
        rows = parse_hp_reports(texts[1], self.pool, ["-l"])
        waits = {k: v for k, v in (rows[-1] if rows else {}).items() if k in LATENCY_FIELDS}
        out: dict = {"seconds": self.seconds, "columns": self.columns,
                     "histograms": {c: h for c, h in hist.items() if any(n for _b, n in h)},
                     "average_wait_ns": waits}
        if self.late:
            out["late_s"] = dict(self.late)
        return out
