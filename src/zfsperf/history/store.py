"""The results store: every run in one database, SQLite by default, PostgreSQL for a team.

A store URL is a path (or sqlite:///PATH) for SQLite, or postgresql://… (psycopg 3). The same SQL
runs on both (placeholders and the id column are the only dialect differences). Schema, version 4
(version 1 had no case_seconds and accepted, version 2 no runs.accelerator, version 3 no
runs.identity, version 4 no runs.fleet_id, fleet_host, machine_class; opening an older store adds
them):

  zfsperf_meta(key TEXT PRIMARY KEY, value TEXT)          -- "schema" = "1"
  runs(id            integer primary key,                 -- one row per results directory
       path          TEXT UNIQUE NOT NULL,                -- where it was imported from
       name          TEXT,                                -- the directory's name (its start time)
       started       DOUBLE PRECISION,                    -- epoch seconds (run.json start)
       host, os, kernel, implementation, zfs_version, pool_version, zfsperf_version TEXT,
       runfile       TEXT,                                -- the runfile's source name
       runfile_sha   TEXT,                                -- sha256 of its text: "the runfile changed"
       defines       TEXT,                                -- JSON: -D NAME=VALUE of the run
       tunables      TEXT,                                -- JSON: every tunable before the run
       format        INTEGER,                             -- results format (run.json "format")
       imported      DOUBLE PRECISION,
       accelerator   TEXT,                                -- "tcg"/"kvm": a QEMU guest (schema 3)
       identity      TEXT,                                -- host, start and its records' sha256: a
                                                          -- copy of a run is the same run (schema 4)
       fleet_id, fleet_host TEXT,                         -- a host's run of `fleet run`: the fleet's
                                                          -- id, the host's inventory name (schema 5)
       machine_class TEXT)                                -- run.json's class of the machine (schema 5)
  figures(run_id     INTEGER REFERENCES runs(id) ON DELETE CASCADE,
          test, workload, case_id, figure, unit TEXT,     -- case_id: the case as zfsperf names it
          n          INTEGER,                             -- PASS iterations the figure came from
          passed, total INTEGER,                          -- iterations that passed / ran
          median, mean, stddev DOUBLE PRECISION,          -- over the PASS iterations
          PRIMARY KEY (run_id, case_id, figure))
  case_seconds(run_id INTEGER REFERENCES runs(id) ON DELETE CASCADE,
               case_id TEXT, iterations INTEGER,         -- counted iterations that recorded a duration
               seconds DOUBLE PRECISION,                  -- their sum: what the ETA of a later run uses
               PRIMARY KEY (run_id, case_id))
  accepted(run TEXT, case_id TEXT, figure TEXT,           -- a change point at this run (name) is expected;
           reason TEXT, at DOUBLE PRECISION)              -- case/figure NULL: every series of the run
A case that never passed in a run has its figures absent for that run (never a zero)."""

from __future__ import annotations

import hashlib
import math
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from ..errors import InputError, ZfsperfError, shown
from ..redact import redact, scrub
from ..safepaths import check_place
from ..report.model import RunData
from ..tunables.impls import chosen_all
from ..metrics import counts, zil

SCHEMA_VERSION = 5
SCHEMA_LOCK = 0x7A667370      # PostgreSQL's advisory lock on making the schema: "zfsp"
RUN_COLUMNS = ("path", "name", "started", "host", "os", "kernel", "implementation", "zfs_version", "pool_version",
               "zfsperf_version", "runfile", "runfile_sha", "defines", "tunables", "format", "imported", "accelerator",
               "identity", "fleet_id", "fleet_host", "machine_class")
FIGURE_COLUMNS = ("run_id", "test", "workload", "case_id", "figure", "unit", "n", "passed", "total", "median", "mean",
                  "stddev")


def default_url() -> str:
    """ZFSPERF_STORE when set (a path or postgresql://...), else $ZFSPERF_STATE/history.sqlite."""
    if os.environ.get("ZFSPERF_STORE"):
        return os.environ["ZFSPERF_STORE"]
    env = os.environ.get("ZFSPERF_STATE")
    base = Path(env) if env else (Path("/var/lib/zfsperf") if os.geteuid() == 0
                                  else Path.home() / ".local" / "state" / "zfsperf")
    return str(base / "history.sqlite")


def _ddl(serial: str) -> list[str]:
    return [
        "CREATE TABLE IF NOT EXISTS zfsperf_meta (key TEXT PRIMARY KEY, value TEXT)",
        f"CREATE TABLE IF NOT EXISTS runs (id {serial} PRIMARY KEY, path TEXT NOT NULL UNIQUE, name TEXT, "
        "started DOUBLE PRECISION, host TEXT, os TEXT, kernel TEXT, implementation TEXT, zfs_version TEXT, "
        "pool_version TEXT, zfsperf_version TEXT, runfile TEXT, runfile_sha TEXT, defines TEXT, tunables TEXT, "
        "format INTEGER, imported DOUBLE PRECISION, accelerator TEXT, identity TEXT, fleet_id TEXT, fleet_host TEXT, "
        "machine_class TEXT)",
        "CREATE INDEX IF NOT EXISTS runs_identity ON runs (identity)",
        "CREATE TABLE IF NOT EXISTS figures (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, "
        "test TEXT, workload TEXT, case_id TEXT NOT NULL, figure TEXT NOT NULL, unit TEXT, n INTEGER, passed INTEGER, "
        "total INTEGER, median DOUBLE PRECISION, mean DOUBLE PRECISION, stddev DOUBLE PRECISION, "
        "PRIMARY KEY (run_id, case_id, figure))",
        "CREATE INDEX IF NOT EXISTS figures_series ON figures (case_id, figure)",
        "CREATE TABLE IF NOT EXISTS case_seconds (run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE, "
        "case_id TEXT NOT NULL, iterations INTEGER, seconds DOUBLE PRECISION, PRIMARY KEY (run_id, case_id))",
        "CREATE TABLE IF NOT EXISTS accepted (run TEXT NOT NULL, case_id TEXT, figure TEXT, reason TEXT NOT NULL, "
        "at DOUBLE PRECISION)",
    ]


@dataclass
class RunRow:
    id: int
    path: str
    name: str
    started: float
    host: str
    kernel: str
    implementation: str
    zfs_version: str
    runfile: str
    runfile_sha: str
    defines: dict[str, Any]
    tunables: dict[str, Any]
    accelerator: str | None = None      # "tcg": its figures are emulation, not speeds
    identity: str | None = None         # None: imported by a zfsperf before schema 4


class Store:
    """One connection to a store; `with Store.open(url) as s:` commits and closes."""

    def __init__(self, conn: Any, dialect: str, url: str, *, commit: bool = True) -> None:
        # url is what zfsperf shows and records: the connection's secrets never leave the driver
        self.conn, self.dialect, self.url = conn, dialect, redact(url)
        self._init(commit=commit)

    @classmethod
    def open(cls, url: str | None = None, *, create: bool = True, commit: bool = True) -> "Store":
        """create=False (reading): a SQLite store that does not exist is an error, not a new file."""
        url = url or default_url()
        if url.startswith(("postgresql://", "postgres://")):
            try:
                import psycopg      # only a PostgreSQL store needs it
            except ImportError as e:
                raise InputError(f"a PostgreSQL store needs psycopg: {e}", field="--store") from None
            try:
                conn = psycopg.connect(url, connect_timeout=10)
            except psycopg.Error as e:
                raise ZfsperfError(f"cannot connect to {redact(url)}: {scrub(str(e).strip(), url)}") from None
            except ValueError as e:       # libpq could not parse the URL
                raise InputError(f"{redact(url)}: {scrub(str(e), url)}", field="--store") from None
            try:
                return cls(conn, "postgresql", url, commit=commit)
            except psycopg.Error as e:
                conn.close()
                raise ZfsperfError(f"{redact(url)}: {scrub(str(e).strip(), url)}") from None
        path = url[len("sqlite:///") - 1:] if url.startswith("sqlite:///") else url
        if "://" in path:
            raise InputError(f"unknown store {shown(url)} (a path, sqlite:///PATH or postgresql://...)", field="--store")
        if not create and not Path(path).is_file():
            raise InputError("no history store here (zfsperf run adds to it; zfsperf history import fills it)",
                             file=path, field="--store")
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=30)
        conn.execute("PRAGMA foreign_keys = ON")
        return cls(conn, "sqlite", path)

    @classmethod
    def probe(cls, url: str | None = None) -> str:
        """Whether a run could be added to the store, found out without writing anything: no file or
        directory made, no table created, every write rolled back (a dry run, `check`). Returns
        the store's URL without secrets; raises what open() and check_writable() raise."""
        url = url or default_url()
        if url.startswith(("postgresql://", "postgres://")):
            store = cls.open(url, create=True, commit=False)   # its DDL too is inside the transaction
            try:
                store.check_writable()
                return store.url
            finally:
                store.conn.rollback()
                store.conn.close()
        path = url[len("sqlite:///") - 1:] if url.startswith("sqlite:///") else url
        if "://" in path:
            raise InputError(f"unknown store {shown(url)} (a path, sqlite:///PATH or postgresql://...)", field="--store")
        check_place(path, "--store", "the history store")
        if not Path(path).exists():
            parent = Path(path).absolute().parent
            while not parent.exists():
                parent = parent.parent
            if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
                raise InputError(f"the history store {path} could not be created: {parent} is not a writable "
                                 "directory", field="--store")
            return redact(path)
        conn = sqlite3.connect(f"file:{Path(path).absolute()}?mode=rw", uri=True, timeout=30)
        try:
            conn.isolation_level = None              # explicit transactions: BEGIN ... ROLLBACK
            conn.execute("BEGIN")
            store = cls(conn, "sqlite", path, commit=False)
            store.check_writable()
            return store.url
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        if exc[0] is None:
            self.conn.commit()
        else:
            self.conn.rollback()
        self.conn.close()

    # ------------------------------------------------------------------ SQL
    def _sql(self, q: str) -> str:
        return q.replace("?", "%s") if self.dialect == "postgresql" else q

    def execute(self, q: str, args: Iterable[Any] = ()) -> Any:
        cur = self.conn.cursor()
        cur.execute(self._sql(q), tuple(args))
        return cur

    def _init(self, *, commit: bool = True) -> None:
        serial = "INTEGER" if self.dialect == "sqlite" else "BIGINT GENERATED BY DEFAULT AS IDENTITY"
        if self.dialect == "postgresql":
            # one connection at a time makes or upgrades the schema (a fleet's hosts open a new store
            # at once; CREATE ... IF NOT EXISTS is not safe against a concurrent one): held until this
            # transaction ends (SQLite's writers are one at a time already)
            self.execute("SELECT pg_advisory_xact_lock(?)", (SCHEMA_LOCK,))
        row = None
        if self._has_table("zfsperf_meta"):
            row = self.execute("SELECT value FROM zfsperf_meta WHERE key = ?", ("schema",)).fetchone()
        if row is not None and int(row[0]) < SCHEMA_VERSION and self._has_table("runs"):
            have = self._columns("runs")
            for col in ("accelerator", "identity", "fleet_id", "fleet_host", "machine_class"):   # schemas 3, 4, 5
                if col not in have:
                    self.execute(f"ALTER TABLE runs ADD COLUMN {col} TEXT")
        for q in _ddl(serial):
            self.execute(q)
        row = self.execute("SELECT value FROM zfsperf_meta WHERE key = ?", ("schema",)).fetchone()
        if row is None:
            self.execute("INSERT INTO zfsperf_meta (key, value) VALUES (?, ?)", ("schema", str(SCHEMA_VERSION)))
        elif int(row[0]) > SCHEMA_VERSION:
            raise InputError(f"store schema {row[0]} is newer than this zfsperf knows ({SCHEMA_VERSION})",
                             file=self.url)
        elif int(row[0]) < SCHEMA_VERSION:          # the tables and columns it lacked were just added
            self.execute("UPDATE zfsperf_meta SET value = ? WHERE key = ?", (str(SCHEMA_VERSION), "schema"))
        if commit:
            self.conn.commit()

    def _columns(self, table: str) -> set[str]:
        if self.dialect == "sqlite":
            return {r[1] for r in self.execute(f"PRAGMA table_info({table})")}
        return {r[0] for r in self.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                           "AND table_schema = current_schema()", (table,))}

    def _has_table(self, name: str) -> bool:
        if self.dialect == "sqlite":
            q = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        else:
            q = "SELECT 1 FROM information_schema.tables WHERE table_name = ? AND table_schema = current_schema()"
        return self.execute(q, (name,)).fetchone() is not None

    def check_writable(self) -> None:
        """Write a row and take it back: a store that can be read but not written (a read-only
        role, a full disk) fails here, before a run, not after it."""
        try:
            self.execute("DELETE FROM zfsperf_meta WHERE key = ?", ("write_check",))
            self.execute("INSERT INTO zfsperf_meta (key, value) VALUES (?, ?)", ("write_check", str(time.time())))
        finally:
            self.conn.rollback()

    # ------------------------------------------------------------------ import
    def has(self, path: str) -> bool:
        return self.execute("SELECT 1 FROM runs WHERE path = ?", (path,)).fetchone() is not None

    def add(self, run: RunData) -> int | None:
        """Add one results directory (None when it is already in the store: the same path, or a
        copy of a run the store has, wherever the copy lives)."""
        path = str(run.path)
        identity = run.identity
        if self.has(path) or self.execute("SELECT 1 FROM runs WHERE identity = ?", (identity,)).fetchone():
            return None
        info = run.run
        target = info.target
        same = settings(run)
        row = (path, run.path.name, info.start, same["host"], info.os, info.kernel,
               same["implementation"], same["zfs_version"], target.get("pool_version"),
               info.zfsperf_version, info.runfile.get("source"),
               same["runfile_sha"], same["defines"],
               json.dumps(info.tunables.get("before") or {}, sort_keys=True),
               info.format, time.time(), info.accelerator, identity, (info.fleet or {}).get("id"),
               (info.fleet or {}).get("host"), info.class_label())
        cols = ", ".join(RUN_COLUMNS)
        marks = ", ".join("?" for _ in RUN_COLUMNS)
        run_id = int(self.execute(f"INSERT INTO runs ({cols}) VALUES ({marks}) RETURNING id", row).fetchone()[0])
        rows = list(figure_rows(run_id, run))
        if rows:
            cur = self.conn.cursor()
            q = self._sql(f"INSERT INTO figures ({', '.join(FIGURE_COLUMNS)}) VALUES "
                          f"({', '.join('?' for _ in FIGURE_COLUMNS)})")
            cur.executemany(q, rows)
        secs = [(run_id, cid, n, t) for cid, n, t in case_seconds(run)]
        if secs:
            self.conn.cursor().executemany(self._sql("INSERT INTO case_seconds (run_id, case_id, iterations, seconds) "
                                                     "VALUES (?, ?, ?, ?)"), secs)
        return run_id

    # ------------------------------------------------------------------ read
    def same_settings_medians(self, run: RunData, case_id: str, figure: str,
                              compared: Iterable[RunData] = ()) -> list[float]:
        """The medians of this case and figure in the store's runs with run's settings (host, ZFS
        implementation and version, runfile text, -D defines) that started before the earliest of
        the compared runs, oldest first, one per run: the run-to-run noise of identical settings on
        this machine. The compared runs and every copy of them (same identity, or same host and
        start for runs stored before identities) are never part of it."""
        same = settings(run)
        compared = list(compared) or [run]
        idents = {r.identity for r in compared}
        starts = {(r.run.host, r.run.start) for r in compared}
        before = min((r.run.start for r in compared if r.run.start), default=None)
        rows = self.execute(
            "SELECT r.identity, r.host, r.started, f.median FROM figures f JOIN runs r ON r.id = f.run_id "
            "WHERE f.case_id = ? AND f.figure = ? AND r.host = ? AND r.implementation = ? AND r.zfs_version = ? "
            "AND r.runfile_sha = ? AND r.defines = ? ORDER BY r.started, r.id",
            (case_id, figure, same["host"], same["implementation"], same["zfs_version"], same["runfile_sha"],
             same["defines"])).fetchall()
        out: list[float] = []
        seen: set[Any] = set()
        for ident, host, started, median in rows:
            key = (host, started)
            if median is None or ident in idents or key in starts or key in seen or ident in seen:
                continue
            if before is None or started is None or not started < before:
                continue                # a run made after BASE, or one whose time is unknown
            seen.update({key, ident} if ident else {key})
            out.append(float(median))
        return out

    def resolve(self, ref: str) -> RunRow:
        """The one run that REF names: its id (as `history runs` lists it), its name or its results
        directory. A name that several runs share is refused with their ids (exit 2)."""
        rows = self.runs()
        if ref.isdigit() and int(ref) in rows:
            return rows[int(ref)]
        path = str(Path(ref).resolve())
        found = [r for r in rows.values() if r.path == path] or [r for r in rows.values() if r.name == Path(ref).name]
        if not found:
            raise InputError(f"no run {shown(ref)} in {self.url} (zfsperf history runs lists them)", field="RUN")
        if len(found) > 1:
            raise InputError(f"{shown(ref)} names {len(found)} runs in {self.url}: "
                             + ", ".join(f"id {r.id} ({r.path}, {r.host})" for r in sorted(found, key=lambda r: r.id))
                             + "; give the id", field="RUN")
        return found[0]

    def remove(self, ref: str) -> RunRow:
        """Take one run (and its figures) out of the store."""
        row = self.resolve(ref)
        for table in ("figures", "case_seconds"):
            self.execute(f"DELETE FROM {table} WHERE run_id = ?", (row.id,))
        self.execute("DELETE FROM runs WHERE id = ?", (row.id,))
        return row

    def seconds_per_iteration(self, case_ids: Iterable[str], host: str, last: int = 10) -> dict[str, float]:
        """Each case's median seconds per counted iteration over its last `last` runs on this host
        (what a run's ETA is made of); cases the store has not seen are absent."""
        out = {}
        for cid in case_ids:
            rows = self.execute("SELECT c.iterations, c.seconds FROM case_seconds c JOIN runs r ON r.id = c.run_id "
                                "WHERE c.case_id = ? AND r.host = ? ORDER BY r.started DESC", (cid, host)).fetchall()
            per = sorted(float(t) / int(n) for n, t in rows[:last] if n and t is not None)
            if per:
                out[cid] = per[len(per) // 2]
        return out

    def accept(self, run: str, reason: str, case: str | None = None, figure: str | None = None) -> str:
        """Mark change points at a run as expected; run is its id, name or results directory. The
        run's name is returned; an unknown or ambiguous run is an error (exit 2)."""
        row = self.resolve(run)
        self.execute("INSERT INTO accepted (run, case_id, figure, reason, at) VALUES (?, ?, ?, ?, ?)",
                     (row.name, case, figure, reason, time.time()))
        return row.name

    def accepted(self) -> list[tuple[str, str | None, str | None, str]]:
        """(run name, case or None, figure or None, reason) of every acceptance, oldest first."""
        return [(r[0], r[1], r[2], r[3]) for r in
                self.execute("SELECT run, case_id, figure, reason FROM accepted ORDER BY at")]

    def runs(self) -> dict[int, RunRow]:
        out = {}
        for r in self.execute("SELECT id, path, name, started, host, kernel, implementation, zfs_version, runfile, "
                              "runfile_sha, defines, tunables, accelerator, identity FROM runs ORDER BY id"):
            out[int(r[0])] = RunRow(int(r[0]), r[1], r[2] or "", float(r[3] or 0), r[4] or "", r[5] or "",
                                    r[6] or "", r[7] or "", r[8] or "", r[9] or "", json.loads(r[10] or "{}"),
                                    chosen_all(json.loads(r[11] or "{}")), r[12], r[13])
        return out

    def fleet_figures(self, case: str | None = None, figure: str | None = None) -> list[dict[str, Any]]:
        """Every figure of the store's fleet runs (`fleet run`), oldest fleet first: fleet id, host
        (inventory name), class, start, case, figure, unit, workload, n, mean and sd."""
        q = ("SELECT r.fleet_id, r.fleet_host, r.machine_class, r.started, f.case_id, f.figure, f.unit, f.workload, "
             "f.n, f.mean, f.stddev FROM figures f JOIN runs r ON r.id = f.run_id WHERE r.fleet_id IS NOT NULL")
        args: list[Any] = []
        if case:
            q += " AND f.case_id = ?"
            args.append(case)
        if figure:
            q += " AND f.figure = ?"
            args.append(figure)
        keys = ("fleet", "host", "class", "started", "case", "figure", "unit", "workload", "n", "mean", "sd")
        rows = [dict(zip(keys, r)) for r in self.execute(q + " ORDER BY r.started, r.id", args)]
        return rows

    def figure_rows(self, case: str | None = None, figure: str | None = None) -> Iterator[tuple[Any, ...]]:
        q = "SELECT run_id, case_id, figure, unit, n, median, workload FROM figures"
        where, args = [], []
        if case:
            where.append("case_id = ?")
            args.append(case)
        if figure:
            where.append("figure = ?")
            args.append(figure)
        if where:
            q += " WHERE " + " AND ".join(where)
        yield from self.execute(q, args)


def unfit(run: RunData) -> str | None:
    """Why a run never goes into history (None: it does): a smoke run (--smoke) checked that it
    works and measured nothing to compare with; not one iteration passed, so it measured nothing --
    every case SKIP (the target lacks what it needs), FAIL or KILLED."""
    if run.run.selection.get("smoke"):
        return "a smoke run (--smoke) checks that the run works: its figures are not measurements"
    if any(r.passed for r in run.records):
        return None
    seen = sorted({str(r.status) for r in run.records})
    return f"no iteration passed ({', '.join(seen) if seen else 'no records'}): it measured nothing"


def settings(run: RunData) -> dict[str, Any]:
    """What makes two runs "the same settings" for the store: host, ZFS, runfile text, defines."""
    info = run.run
    target = info.target
    text = info.runfile.get("text") or ""
    return {"host": info.host, "implementation": target.get("implementation"),
            "zfs_version": target.get("zfs_version"),
            "runfile_sha": hashlib.sha256(text.encode()).hexdigest()[:16] if text else None,
            "defines": json.dumps(info.selection.get("defines") or {}, sort_keys=True)}


def case_seconds(run: RunData) -> Iterator[tuple[str, int, float]]:
    """(case, counted iterations with a duration, their seconds) of a run."""
    for cd in run.cases.values():
        ds = [r.duration for r in cd.records if r.duration is not None and r.iteration >= 1]
        if ds:
            yield cd.case, len(ds), sum(ds)


def figure_rows(run_id: int, run: RunData) -> Iterator[tuple[Any, ...]]:
    for cd in run.cases.values():
        total = len(cd.records)
        passed = len(cd.passed)
        for name in cd.figure_names():
            vals = cd.values(name)
            if not vals:
                continue
            yield (run_id, cd.test, cd.workload, cd.case, name, cd.unit(name), len(vals), passed, total,
                   *_median_mean_sd(vals))
        for name, (unit, vals) in count_series(cd).items():
            yield (run_id, cd.test, cd.workload, cd.case, name, unit, len(vals), passed, total, *_median_mean_sd(vals))


def count_series(cd: Any) -> dict[str, tuple[str, list[float]]]:
    """What a case's passed iterations counted beside their figures, as series of their own: the
    exact counts (metrics/counts.py: `count_<name>`, their denominator left out) and the ZIL's
    counters (metrics/zil.py), so that a behaviour change is a change point in history too."""
    out: dict[str, tuple[str, list[float]]] = {}
    for r in cd.passed:
        c = (r.detail or {}).get("counts") or {}
        for name, (_what, unit) in counts.COUNTS.items():
            if isinstance(c.get(name), (int, float)):
                out.setdefault(f"count_{name}", (unit, []))[1].append(float(c[name]))
        z = (r.detail or {}).get("zil") or {}
        for name in zil.FIELDS:
            if "unavailable" not in z and isinstance(z.get(name), (int, float)):
                out.setdefault(name, ("count", []))[1].append(float(z[name]))
    return out


def _median_mean_sd(vals: list[float]) -> tuple[float, float, float]:
    """Of a handful of iterations, in plain Python (numpy's per-call cost dominates at n = 3, and
    an import of 10,000 runs makes 50,000 of these)."""
    v = sorted(vals)
    n = len(v)
    med = v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    mean = sum(v) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    return float(med), float(mean), sd
