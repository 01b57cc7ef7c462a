"""Output fitted to the terminal (issue 83): a line of prose or a table takes at most the width the
output has (COLUMNS, the terminal's, or 100 piped: ui.width), no line ends in spaces, and a number
is never parted from its unit or sign when a line wraps (`+43 %`, `449 MiB`, `-11.2 %`).

A table shrinks by wrapping the cells of its text columns (verdicts, case names, intervals) at
their spaces; numbers and units never wrap. A table whose unwrappable columns alone are wider than
the output (`report --wide` at 80 columns) keeps the width they need: a number is never cut.
"""

from __future__ import annotations

import io
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Sequence

GLUE = "\u00a0"          # held together while wrapping: textwrap never breaks at it
# a space after a number (or a closing bracket) before a unit or a percent sign, and the space
# after an interval's dots: each stays with its number
_UNIT_SPACE = re.compile(r"(?<=\d) (?=(?:%|[A-Za-zµ][A-Za-z/]{0,7})(?![A-Za-z]))")
_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.M)


def _glued(text: str) -> str:
    return _UNIT_SPACE.sub(GLUE, text).replace(" …", GLUE + "…")


def wrap(text: str, width: int | None, indent: str = "") -> str:
    """text wrapped at width (None or 0: as it is), later lines indented; never inside a word or a
    path, never between a number and its unit."""
    if not width or len(text) <= width:
        return text.rstrip()
    out = textwrap.fill(_glued(text), width, subsequent_indent=indent, break_long_words=False,
                        break_on_hyphens=False)
    return "\n".join(line.rstrip() for line in out.replace(GLUE, " ").splitlines())


def stripped(rendered: str) -> str:
    """Rendered output without the spaces a line ends in (before any colour codes that close it)."""
    return _TRAILING.sub(r"\1", rendered)


@dataclass(frozen=True)
class Column:
    name: str
    right: bool = False              # numbers: right-justified
    wraps: bool = False              # text that may wrap at its spaces to fit the width


def _measure(cols: Sequence[Column], rows: Sequence[Sequence[str]]) -> int:
    return measure(_rich(cols, rows))


def measure(t: Any) -> int:
    """The columns a rich table takes when nothing limits it (its padding included)."""
    from rich.console import Console
    from rich.measure import Measurement
    c = Console(file=io.StringIO(), width=10_000, color_system=None)
    return Measurement.get(c, c.options, t).maximum


def _rich(cols: Sequence[Column], rows: Sequence[Sequence[str]]) -> Any:
    from rich import box
    from rich.table import Table
    t = Table(box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    for c in cols:
        t.add_column(c.name, justify="right" if c.right else "left", no_wrap=True)
    for r in rows:
        t.add_row(*r)
    return t


def _cell_width(text: str) -> int:
    return max((len(ln) for ln in text.splitlines()), default=0)


def _least(text: str) -> int:
    """The narrowest a cell can wrap to: its longest word (a number with its unit is one word)."""
    return max((len(w) for w in _glued(text).split()), default=0)


def fitted(cols: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None) -> Any:
    """A rich table of these columns and rows at most width columns wide (None: as wide as its
    cells): the widest wrapping column is wrapped first, down to its longest word, until it fits."""
    rows = [list(r) for r in rows]
    if width:
        for _ in range(4 * len(cols)):
            over = _measure(cols, rows) - width
            if over <= 0:
                break
            room = {i: max(_cell_width(r[i]) for r in rows) if rows else 0 for i, c in enumerate(cols) if c.wraps}
            floor = {i: max([_least(r[i]) for r in rows] + [len(cols[i].name)]) for i in room}
            shrink = [i for i in room if room[i] > floor[i]]
            if not shrink:
                break
            i = max(shrink, key=lambda k: room[k] - floor[k])
            limit = max(floor[i], room[i] - over)
            for r in rows:
                r[i] = wrap(" ".join(r[i].split()), limit) if len(r[i]) > limit else r[i]
    return _rich(cols, rows)


def table(console: Any, cols: Sequence[Column], rows: Sequence[Sequence[str]], title: str | None = None) -> None:
    """A title (wrapped) and a table fitted to the console's width, no line ending in spaces."""
    if title:
        console.print(wrap(title, console.width, "  "), highlight=False, markup=False)
    t = fitted(cols, rows, console.width)
    emit(console, t, measure(t))


def emit(console: Any, renderable: Any, least: int = 0) -> None:
    """Print a rich renderable on console with no line ending in spaces; at least `least` columns
    wide (a table whose numbers alone are wider than the console: never cut)."""
    if least > console.width:
        from rich.console import Console
        console = Console(file=console.file, width=least, color_system=console.color_system, highlight=False)
    with console.capture() as cap:
        console.print(renderable)
    console.file.write(stripped(cap.get()))
    console.file.flush()
