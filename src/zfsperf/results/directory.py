"""The results directory: written once, append-only, read back by report/compare/steady.

<outdir>/<YYYYMMDDTHHMMSS>/
  run.json        how the results were obtained (versions, host, layout, tunables, runfile, times)
  results.jsonl   one line per case and iteration, appended, flushed and fsynced as each ends
  logs/           every command with its output, one file per case; daemon.log from zfs-fuse
  series/         sampled metric series (steady state)
  profiles/       on-CPU profiles (--profile): folded stacks per case iteration, and per case
  summary.txt, junit.xml, results.csv   derived from the above
<outdir>/current -> the newest results directory
"""

from __future__ import annotations

import json
import sys
import os
import time
from pathlib import Path
from typing import Any, Iterator

from ..errors import InputError, shown
from ..proc import CommandLog

from .record import FORMAT_VERSION, STATUSES, CaseRecord, RunRecord

# every path inside a results directory is named here and nowhere else
RUN_JSON, RESULTS, SUMMARY = "run.json", "results.jsonl", "summary.txt"
LOGS, SERIES, FIO, PROFILES = "logs", "series", "fio", "profiles"


def _iteration_name(slug: str, iteration: int, suffix: str) -> str:
    return f"{slug}.i{iteration}{suffix}" if iteration > 0 else f"{slug}.warmup{-iteration}{suffix}"


def series_path(results_dir: Path, slug: str, iteration: int) -> Path:
    """The sampled series of one case iteration (JSON lines)."""
    return Path(results_dir) / SERIES / _iteration_name(slug, iteration, ".jsonl")


def profile_path(results_dir: Path, slug: str, iteration: int | None = None) -> Path:
    """The folded stacks of one case iteration, or (iteration None) of all the case's iterations."""
    name = f"{slug}.folded" if iteration is None else _iteration_name(slug, iteration, ".folded")
    return Path(results_dir) / PROFILES / name


def fio_json_path(results_dir: Path, name: str) -> Path:
    """fio's own final JSON of one case iteration (name: `<case>.i<iteration>[tag]`)."""
    return Path(results_dir) / FIO / f"{name}.json"


def log_path(results_dir: Path, name: str) -> Path:
    """A file in the logs: per-case command logs, fio job files, target.log, daemon.log."""
    return Path(results_dir) / LOGS / name



class ResultsDir:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def shown(self, path: Path | None = None) -> str:
        """A path in this directory as a user reads it: relative to the working directory when it
        lies under it (`zfsperf-results/20261203T101500`), else absolute."""
        p = Path(path or self.path)
        try:
            return str(p.relative_to(Path.cwd()))
        except ValueError:
            return str(p)

    @classmethod
    def create(cls, outdir: Path) -> "ResultsDir":
        """A new results directory under outdir. Its path is absolute whatever outdir was: the
        workloads that run in another mount namespace or working directory (fio in zfs-fuse's
        namespace: every fio run from the default `-o zfsperf-results` failed, issue 83) are handed
        paths inside it."""
        outdir = Path(outdir).absolute()
        outdir.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        path = outdir / stamp
        n = 1
        while True:
            try:
                path.mkdir()
                break
            except FileExistsError:
                n += 1
                path = outdir / f"{stamp}.{n}"
        for sub in (LOGS, SERIES):
            (path / sub).mkdir()
        rd = cls(path)
        rd.link_current()
        return rd

    @classmethod
    def open(cls, path: Path) -> "ResultsDir":
        path = Path(path).absolute()
        if not (path / RUN_JSON).exists():
            raise InputError("not a zfsperf results directory (no run.json)", file=str(path))
        return cls(path)

    def link_current(self) -> None:
        link = self.path.parent / "current"
        tmp = self.path.parent / f".current.{os.getpid()}"
        try:
            if tmp.is_symlink():
                tmp.unlink()
            tmp.symlink_to(self.path.name)
            os.replace(tmp, link)
        except OSError:
            pass

    # ---------------------------------------------------------------- writing
    def write_json(self, name: str, data: Any) -> None:
        tmp = self.path / f".{name}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, default=str)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path / name)

    def append_result(self, record: CaseRecord) -> None:
        line = json.dumps(record.to_json(), separators=(",", ":"), default=str)
        with open(self.path / RESULTS, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def case_log(self, slug: str, iteration: int) -> CommandLog:
        name = f"{slug}.iter{iteration}.log" if iteration > 0 else f"{slug}.warmup{-iteration}.log"
        return CommandLog(log_path(self.path, name))

    def write_text(self, name: str, text: str) -> None:
        (self.path / name).write_text(text)

    # ---------------------------------------------------------------- reading
    def run_record(self) -> RunRecord:
        """run.json as a RunRecord (any format this zfsperf reads; a newer one is refused by name)."""
        try:
            data = json.loads((self.path / RUN_JSON).read_text())
        except (OSError, ValueError) as e:
            raise InputError(f"cannot read run.json: {e}", file=str(self.path / RUN_JSON)) from None
        if not isinstance(data, dict):
            raise InputError("run.json is not an object", file=str(self.path / RUN_JSON))
        self.format()
        return RunRecord.from_json(data)

    def write_run(self, run: RunRecord) -> None:
        self.write_json(RUN_JSON, run.to_json())

    def format(self) -> int:
        """The results format the directory was written in (1 before run.json carried it; a run
        killed before its run.json was written is this zfsperf's own)."""
        try:
            fmt = json.loads((self.path / RUN_JSON).read_text()).get("format", 1)
        except (OSError, ValueError):
            return FORMAT_VERSION
        if not isinstance(fmt, int) or fmt > FORMAT_VERSION:
            raise InputError(f"results format {shown(fmt)} is newer than this zfsperf reads ({FORMAT_VERSION}): "
                             "read it with the zfsperf that wrote it", file=str(self.path / RUN_JSON),
                             field="format")
        return fmt

    def results(self) -> list[CaseRecord]:
        """Every record, in the order written, as CaseRecords of this directory's format."""
        fmt = self.format()
        out = []
        for line, r in iter_results(self.path / RESULTS, with_lines=True):
            if "case" not in r:
                continue
            try:
                out.append(CaseRecord.from_json(r, fmt))
            except (KeyError, TypeError, ValueError) as e:     # a figure without a value, ...
                raise InputError(f"malformed record: {type(e).__name__}: {e}", file=str(self.path / RESULTS),
                                 line=line) from None
        return out


def iter_results(path: Path, *, with_lines: bool = False) -> Iterator[Any]:
    """Records of a results.jsonl. A torn last line (a run killed mid-write) is skipped;
    a malformed line elsewhere is an error naming the file and line."""
    try:
        lines = Path(path).read_text(encoding="utf-8", errors="replace").split("\n")
    except FileNotFoundError:
        return
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    for i, line in enumerate(lines[:last + 1], start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise ValueError("not an object")
        except ValueError as e:
            if i == last + 1:               # torn final write: the finished cases are whole, and
                print(f"zfsperf: warning: {path}:{i}: a torn last record (a run killed while writing it) "
                      "is left out", file=sys.stderr)      # what is left out is said
                return
            raise InputError(f"malformed record: {e}", file=str(path), line=i) from None
        if rec.get("status") not in STATUSES:
            raise InputError(f"status must be one of {', '.join(STATUSES)}, got {shown(rec.get('status'))}",
                             file=str(path), line=i, field="status")
        yield (i, rec) if with_lines else rec
