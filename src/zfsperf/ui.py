"""What the user sees while a run goes: one line per case, a progress bar and the running case's
live figure on a terminal, plain lines otherwise (CI logs, pipes)."""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from typing import Any, Iterator

from rich.console import Console as RichConsole
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable

from .control import detach_output
from .results.export import status_line
from .results.tables import Table
from .results.record import Status


class Console:
    def __init__(self, *, quiet: bool = False, verbose: bool = False, file: Any = None) -> None:
        self.quiet = quiet
        self.verbose = verbose
        self.file = file or sys.stdout
        self.is_tty = bool(getattr(self.file, "isatty", lambda: False)())
        self.rich = RichConsole(file=self.file, highlight=False, soft_wrap=True,
                                width=None if self.is_tty else 160)
        self._progress: Progress | None = None
        self._task = None
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

    def start_progress(self, total: int) -> None:
        if self.is_tty and not self.quiet:
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TextColumn("{task.fields[live]}"),
                                      console=self.rich, transient=True)
            self._task = self._progress.add_task("cases", total=total, live="")
            self._progress.start()

    def stop_progress(self) -> None:
        if self._progress is not None:
            progress, self._progress = self._progress, None
            with _output_may_be_gone():
                progress.stop()

    def case_start(self, case_id: str, iteration: int) -> None:
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

    def case_done(self, record: dict[str, Any], headline: str | None) -> None:
        if self._progress is not None:
            self._progress.advance(self._task)
        if self.quiet and record["status"] == Status.PASS:
            return
        self._print(status_line(record, headline))

    def _rich_table(self, t: Table) -> RichTable:
        rt = RichTable(title=t.title or None, show_lines=False)
        for i, c in enumerate(t.columns):
            rt.add_column(c, justify="left" if i < 2 else "right")
        for row in t.rows:
            rt.add_row(*row)
        return rt

    def render_table(self, t: Table) -> str:
        buf = io.StringIO()
        RichConsole(file=buf, width=160, color_system=None).print(self._rich_table(t))
        return buf.getvalue()

    def print_table(self, t: Table) -> None:
        if t.rows:
            with _output_may_be_gone():
                self.rich.print(self._rich_table(t))

    def summary_line(self, line: str) -> None:
        with _output_may_be_gone():
            print(line, file=self.file, flush=True)


@contextlib.contextmanager
def _output_may_be_gone() -> Iterator[None]:
    """A write to a terminal that was closed (EIO) or a pipe whose reader left (EPIPE) must never
    fail a run's teardown: from then on output goes to /dev/null (summary.txt has it all)."""
    try:
        yield
    except OSError:
        detach_output()
