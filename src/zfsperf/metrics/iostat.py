"""`zpool iostat` in the two forms targets print: human-scaled (zfs-fuse, any OpenZFS) and -Hp
(OpenZFS: tab-separated exact numbers). Default column groups only: capacity, operations, bandwidth.
The first report is the average since import; later ones are per-interval."""

from __future__ import annotations

from ..errors import InputError
from ..units import parse_human

FIELDS = ("alloc", "free", "read_ops", "write_ops", "read_bw", "write_bw")
# -l adds, after the default six: total_wait, disk_wait, syncq_wait, asyncq_wait ({read,write} each),
# scrub, trim and (2.2+) rebuild. The first ones are at the same place in every version.
LATENCY_FIELDS = ("total_wait_read", "total_wait_write", "disk_wait_read", "disk_wait_write")


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
        names = FIELDS + (LATENCY_FIELDS if len(parts) >= 11 else ())
        for name, p in zip(names, parts[1:1 + len(names)]):
            try:
                row[name] = None if p.strip() == "-" else float(p)
            except ValueError:
                raise InputError(f"{name} is not a number: {p!r}", file=source, line=i) from None
        out.append(row)
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
