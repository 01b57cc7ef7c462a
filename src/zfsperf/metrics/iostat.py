"""`zpool iostat` in the two forms targets print: human-scaled (zfs-fuse, any OpenZFS) and -Hp
(OpenZFS: tab-separated exact numbers). Default column groups only: capacity, operations, bandwidth.
The first report is the average since import; later ones are per-interval."""

from __future__ import annotations

from ..errors import InputError
from ..units import parse_human

FIELDS = ("alloc", "free", "read_ops", "write_ops", "read_bw", "write_bw")


def parse_human_reports(text: str, pool: str, source: str = "zpool iostat") -> list[dict[str, float | None]]:
    """One dict per report: the pool's row of human output (`1.35K`, `6.30M`, `-`)."""
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or parts[0] != pool:
            continue
        if len(parts) < 7:
            raise InputError(f"expected 7 columns for {pool}, got {len(parts)}", file=source, line=i)
        try:
            out.append(dict(zip(FIELDS, (parse_human(p) for p in parts[1:7]))))
        except ValueError as e:
            raise InputError(str(e), file=source, line=i) from None
    return out


def parse_hp_reports(text: str, pool: str, source: str = "zpool iostat -Hp") -> list[dict[str, float | None]]:
    """One dict per report: the pool's row of -Hp output (tab-separated, exact, `-` for none)."""
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        parts = line.split("\t")
        if not parts or parts[0] != pool:
            continue
        if len(parts) < 7:
            raise InputError(f"expected at least 7 tab-separated fields, got {len(parts)}", file=source, line=i)
        row: dict[str, float | None] = {}
        for name, p in zip(FIELDS, parts[1:7]):
            try:
                row[name] = None if p.strip() == "-" else float(p)
            except ValueError:
                raise InputError(f"{name} is not a number: {p!r}", file=source, line=i) from None
        out.append(row)
    return out
