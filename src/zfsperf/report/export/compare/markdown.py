"""compare as Markdown: a pull request comment or a CI step summary."""

from __future__ import annotations

from ...comparison import Comparison
from .text import COLUMNS, design_lines, history_line, notes, setup_lines, table_rows, title


def markdown(cmp: Comparison, figures: list[str] | None = None) -> str:
    """For a pull request comment or a CI step summary."""
    def cell(x: str) -> str:
        return x.replace("|", "\\|")
    out = [f"### zfsperf compare: {title(cmp)}", ""] + [f"**{line}**\n" for line in history_line(cmp)]
    out += [f"- {line}" for line in setup_lines(cmp) + design_lines(cmp)] + [""]
    out.append("| " + " | ".join(COLUMNS) + " |")
    out.append("|" + "|".join("---" if c in ("case", "figure", "design", "verdict") else "---:" for c in COLUMNS) + "|")
    out += ["| " + " | ".join(cell(x) for x in row) + " |" for row in table_rows(cmp, figures)]
    extra = notes(cmp, figures)
    for d in cmp.profiles:
        if not d.rows:
            continue
        head, rows = d.table()
        extra += ["", f"#### Profile {d.label} (not judged): share of {d.scope or 'the samples'}", "",
                  "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 2) + "---|"]
        extra += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    if cmp.classes:
        extra += ["", "#### Latency histograms, A | B (not judged)", "", "```"]
        extra += [f"{c.label}\n{c.side_by_side()}\n" for c in cmp.classes] + ["```"]
    return "\n".join(out + ([""] + extra if extra else [])) + "\n"
