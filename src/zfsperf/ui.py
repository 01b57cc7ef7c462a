"""What the user sees while a run goes: one line per case, and on a terminal one overall progress
bar above them -- iterations done of the total, the case and iteration running, elapsed time and
an ETA -- with the running case's live figure; plain lines otherwise (CI logs, pipes).

The ETA is the remaining iterations times each case's seconds per iteration: from the history
store's past runs of the same case on this host when it has them ("ETA 02:10 (history)"), else
from this run's own iterations so far ("(this run)"), and counts down between iterations."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
import time
from typing import Any, Iterator

from rich.console import Console as RichConsole
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text

from .control import detach_output
from .results.statusline import status_line
from .report import fit
from .report.tables import TABLE_ROOM, Table
from .results.record import CaseRecord


class Eta:
    """Seconds left in a run, from per-case seconds per iteration (history, else this run)."""

    def __init__(self, remaining: dict[str, int], history: dict[str, float]) -> None:
        self.remaining = dict(remaining)
        self.history = dict(history)
        self.seen: dict[str, list[float]] = {}
        self.started: float | None = None          # monotonic start of the iteration running now
        self.running: str | None = None

    def start(self, case_id: str) -> None:
        self.running, self.started = case_id, time.monotonic()

    def done(self, case_id: str, seconds: float | None) -> None:
        if case_id in self.remaining and self.remaining[case_id] > 0:
            self.remaining[case_id] -= 1
        if seconds is not None:
            self.seen.setdefault(case_id, []).append(seconds)
        self.running = self.started = None

    def _per(self, case_id: str) -> tuple[float | None, str]:
        if case_id in self.history:
            return self.history[case_id], "history"
        if self.seen.get(case_id):
            v = self.seen[case_id]
            return sum(v) / len(v), "this run"
        every = [x for v in self.seen.values() for x in v]
        return (sum(every) / len(every), "this run") if every else (None, "")

    def left(self) -> tuple[float | None, str]:
        """(seconds left or None when nothing can be said yet, where the figures came from)."""
        total, sources = 0.0, set()
        for cid, n in self.remaining.items():
            if n <= 0:
                continue
            per, src = self._per(cid)
            if per is None:
                return None, ""
            total += n * per
            sources.add(src)
            if cid == self.running and self.started is not None:     # the running one is partly done
                total -= min(per, time.monotonic() - self.started)
        return max(total, 0.0), "history" if sources == {"history"} else "this run" if sources else ""


class EtaColumn(ProgressColumn):
    def __init__(self, eta: Eta) -> None:
        super().__init__()
        self.eta = eta

    def render(self, task: Any) -> Text:
        left, src = self.eta.left()
        if left is None:
            return Text("ETA -:--")
        m, sec = divmod(int(left + 0.5), 60)
        src = f" ({src})" if src else ""
        return Text(f"ETA {m // 60:d}:{m % 60:02d}:{sec:02d}{src}" if m >= 60 else f"ETA {m:02d}:{sec:02d}{src}")


class Console:
    def __init__(self, *, quiet: bool = False, verbose: bool = False, file: Any = None) -> None:
        self.quiet = quiet
        self.verbose = verbose
        self.file = file or sys.stdout
        self.is_tty = bool(getattr(self.file, "isatty", lambda: False)())
        self.rich = RichConsole(file=self.file, highlight=False, soft_wrap=True, width=width(self.file))
        self._progress: Progress | None = None
        self._task = None
        self.eta: Eta | None = None
        self._lock = threading.Lock()

    def _print(self, text: str) -> None:
        with self._lock, _output_may_be_gone():
            if self._progress is not None:
                self._progress.console.print(text, markup=False, highlight=False)
            else:
                print(text, file=self.file, flush=True)

    def say(self, text: str) -> None:
        if not self.quiet:
            self._print(text)

    def start_progress(self, total: int, remaining: dict[str, int] | None = None,
                       history: dict[str, float] | None = None) -> None:
        """total: iterations to run; remaining: of them, per case; history: a case's seconds per
        iteration in earlier runs (the history store)."""
        self.eta = Eta(remaining or {}, history or {})
        if self.is_tty and not self.quiet:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("iterations"), TimeElapsedColumn(), EtaColumn(self.eta),
                                      TextColumn("{task.fields[live]}"),
                                      console=self.rich, transient=True)
            self._task = self._progress.add_task("starting", total=total, live="")
            self._progress.start()

    def stop_progress(self) -> None:
        if self._progress is not None:
            progress, self._progress = self._progress, None
            with _output_may_be_gone():
                progress.stop()

    def case_start(self, case_id: str, iteration: int) -> None:
        if self.eta is not None:
            self.eta.start(case_id)
        if self._progress is not None:
            self._progress.update(self._task, description=f"{case_id} iter={iteration}", live="")
        elif self.verbose:
            self._print(f"Starting: {case_id} iter={iteration}")

    def live(self, text: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, live=text)
        elif self.verbose:
            self._print(f"  {text}")

    def progress_text(self, text: str) -> None:
        self.say(text)

    def case_done(self, record: CaseRecord, headline: str | None) -> None:
        if self.eta is not None:
            self.eta.done(record.case, record.duration)
        if self._progress is not None:
            self._progress.advance(self._task)
        if self.quiet and record.passed:
            return
        self._print(status_line(record, headline))

    @staticmethod
    def _columns(t: Table) -> list[fit.Column]:
        """A header's unit goes under its name; the case column wraps to fit, numbers never."""
        return [fit.Column(c.replace(" (", "\n(", 1), right=i >= 2, wraps=i == 0) for i, c in enumerate(t.columns)]

    def render_table(self, t: Table) -> str:
        """The table as summary.txt keeps it: as wide as its cells, notes at PIPED_WIDTH."""
        buf = io.StringIO()
        fit.emit(RichConsole(file=buf, width=TABLE_ROOM, color_system=None), fit.fitted(self._columns(t), t.rows, None))
        return ((t.title + "\n" if t.title else "") + buf.getvalue()
                + "".join(fit.wrap(n, PIPED_WIDTH, "  ") + "\n" for n in t.notes))

    def print_table(self, t: Table) -> None:
        if t.rows:
            with _output_may_be_gone():        # fitted to the width (report/fit.py): numbers never cut
                fit.table(self.rich, self._columns(t), t.rows, t.title or None)
                for n in t.notes:
                    self.rich.print(fit.wrap(n, self.rich.width, "  "), markup=False, highlight=False)

    def summary_line(self, line: str) -> None:
        with _output_may_be_gone():
            print(line, file=self.file, flush=True)


PIPED_WIDTH = 100          # columns of output that goes to a file or a pipe without COLUMNS


def width(file: Any) -> int | None:
    """The columns output to `file` may take: COLUMNS when set (also piped), else the terminal's
    own (None: rich asks it), else PIPED_WIDTH."""
    cols = os.environ.get("COLUMNS", "")
    if cols.isdigit() and int(cols) > 0:
        return int(cols)
    return None if bool(getattr(file, "isatty", lambda: False)()) else PIPED_WIDTH


@contextlib.contextmanager
def _output_may_be_gone() -> Iterator[None]:
    """A write to a terminal that was closed (EIO) or a pipe whose reader left (EPIPE) must never
    fail a run's teardown: from then on output goes to /dev/null (summary.txt has it all)."""
    try:
        yield
    except OSError:
        detach_output()
