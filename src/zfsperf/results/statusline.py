"""One line per case iteration, in the ZFS Test Suite's style: what a run prints as each case ends
and writes to summary.txt."""

from __future__ import annotations

from ..units import emulation_label, format_duration, format_figure
from .record import CaseRecord


def status_line(r: CaseRecord, headline: str | None = None) -> str:
    """One line per case, in the ZFS Test Suite's style."""
    figs = r.figures
    text = f"Test: {r.case} iter={r.iteration} [{format_duration(r.duration or 0.0)}] [{r.status.value}]"
    if r.passed and headline and headline in figs:
        text += " " + format_figure(figs[headline].value, figs[headline].unit)
        if emulation_label(r.accelerator):
            text += "  " + emulation_label(r.accelerator)
    elif not r.passed and r.error:
        text += " " + r.error.splitlines()[0][:200]
    return text
