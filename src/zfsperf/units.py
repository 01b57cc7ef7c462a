"""Sizes and durations with the usual suffixes, and how figures are printed."""

from __future__ import annotations

import math
import re
from enum import StrEnum

from .errors import shown

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?)(i?b?)?\s*$", re.IGNORECASE)
_SIZE_POW = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}
_DUR_RE = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?", re.IGNORECASE)
_DUR_MULT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}

MIB = 1024 * 1024


def parse_size(value: str | int | float) -> int:
    """Bytes from 512, "128K", "2G", "1.5GiB", "256MB" (binary multiples, as ZFS and fio use)."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {shown(value)}")
    if isinstance(value, (int, float)):
        if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
            raise ValueError(f"not a size: {shown(value)}")
        return int(value)
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f"not a size: {shown(value)} (expected a number with an optional K, M, G, T suffix)")
    number, unit = float(m.group(1)), m.group(2).lower()
    return int(number * (1024 ** _SIZE_POW[unit]))


def parse_duration(value: str | int | float) -> float:
    """Seconds from 90, "90s", "20m", "1h30m", "250ms"."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {shown(value)}")
    if isinstance(value, (int, float)):
        if value < 0 or not math.isfinite(float(value)):
            raise ValueError(f"not a duration: {shown(value)}")
        return float(value)
    text = str(value).strip()
    if not text:
        raise ValueError("not a duration: empty")
    pos, total = 0, 0.0
    for m in _DUR_RE.finditer(text):
        if m.start() != pos:
            break
        unit = m.group(2).lower() if m.group(2) else None
        total += float(m.group(1)) * _DUR_MULT[unit]
        pos = m.end()
    if pos != len(text):
        raise ValueError(f"not a duration: {shown(value)} (expected e.g. 90, 90s, 20m, 1h30m)")
    return total


_HUMAN_RE = re.compile(r"^(-?\d+(?:\.\d+)?)([KMGTPEZ]?)$")


def parse_human(text: str) -> float | None:
    """A number as zpool prints it in human form ("1.35K", "6.30M", "616K", "-" for none).

    zpool scales by 1024 for sizes and operation counts alike.
    """
    text = text.strip()
    if text in ("-", ""):
        return None
    m = _HUMAN_RE.match(text)
    if not m:
        raise ValueError(f"not a zpool number: {shown(text)}")
    return float(m.group(1)) * 1024 ** " KMGTPEZ".index(m.group(2) or " ")


def format_size(nbytes: float) -> str:
    """1536 -> "1.5K"; used for names and messages, never for recorded figures."""
    for unit in ("", "K", "M", "G", "T", "P"):
        if abs(nbytes) < 1024 or unit == "P":
            return f"{nbytes:.0f}{unit}" if unit == "" or nbytes == int(nbytes) else f"{nbytes:.1f}{unit}"
        nbytes /= 1024
    return str(nbytes)


def format_bytes(nbytes: float) -> str:
    """A byte count in binary units to three significant figures: 3.01 GiB, 512 KiB, 17 B."""
    for unit, size in (("TiB", 1024.0 ** 4), ("GiB", 1024.0 ** 3), ("MiB", 1024.0 ** 2), ("KiB", 1024.0)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes:.0f} B"


def format_duration(seconds: float) -> str:
    """[MM:SS] as the ZFS Test Suite prints a test's time; HH:MM:SS past an hour."""
    seconds = max(0, int(round(seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h:02d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def format_span(seconds: float) -> str:
    """A length of time in the largest unit that keeps it readable: 4 s, 20 min, 3 h, 1000 days."""
    def num(v: float) -> str:
        return f"{v:,.0f}" if v >= 10 else f"{v:.2g}"
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= 2 * size:
            return f"{num(seconds / size)} {unit}"
    return f"{num(seconds)} s"


# every figure taken under QEMU TCG (software emulation) carries this, wherever it is shown
EMULATED = "[TCG emulation: not a speed]"


def emulation_label(accelerator: str | None) -> str:
    """EMULATED for a figure taken under TCG, else ""."""
    return EMULATED if accelerator == "tcg" else ""


# ---------------------------------------------------------------- facts about figures
# The one home of what a figure's unit says: which way is better, and how it is written. A
# workload may override the direction of one of its figures (Workload.directions; read through
# workloads.figure_direction); figures without a known direction are shown, never judged.
HIGHER_BETTER_UNITS = {"MiB/s", "IOPS", "blocks/s", "ops"}
LOWER_BETTER_UNITS = {"us", "ms", "s", "x", "s/GiB", "ms/kop"}     # the last two: CPU per work (metrics/cpucost.py)
# context, not a goodness: how often the pool synced (TXGs/s), how much was moved (B)
CONTEXT_UNITS = {"TXGs/s", "B"}
# the sampler's metrics (a series' samples), each in its unit: the charts label their panels with it
# and steady state reads a metric's direction from it
METRIC_UNITS = {"workload_mibs": "MiB/s", "pool_mibs": "MiB/s", "l2_read_mibs": "MiB/s", "workload_iops": "IOPS",
                "pool_kops": "k ops/s", "arc_size_frac": "share of c_max", "arc_hit_ratio": "hits / accesses",
                "l2_size_frac": "share of the cache devices", "l2_hit_ratio": "hits / accesses",
                "pool_lat_ms": "ms", "txgs_per_s": "TXGs/s"}


def unit_direction(unit: str) -> int:
    """+1 when higher is better, -1 when lower is better, 0 when not judged (context)."""
    return 1 if unit in HIGHER_BETTER_UNITS else -1 if unit in LOWER_BETTER_UNITS else 0


class ChangeVerdict(StrEnum):
    """A comparison's verdict on one figure: the words compare, the gate, history, guest ab and its
    bisect share (its value is what JSON carries). Better and WORSE come from better_or_worse."""
    BETTER = "better"
    WORSE = "worse"
    SAME = "same"                                   # within the equivalence margin, both ways
    NOT_SIGNIFICANT = "not significant"
    WITHIN_NOISE = "within noise"                   # significant, but smaller than the noise floor
    UNKNOWN_DRIFT = "within unknown drift"          # separate runs: within the drift floor
    NOT_ALTERNATED = "not alternated"               # one run's cases that did not take turns: a scaling row
    TOO_FEW = "too few iterations"
    NONE = "no verdict"                             # a figure that is not judged (context)

    @property
    def decided(self) -> bool:
        """A direction was called."""
        return self in (ChangeVerdict.BETTER, ChangeVerdict.WORSE)


def better_or_worse(change: float, way: int) -> ChangeVerdict | None:
    """The one rule for which way a change goes, for compare, history and steady state alike:
    BETTER when it moves the way `way` calls better (+1 higher, -1 lower), WORSE the other way,
    None when the figure is not judged (way 0) or did not move."""
    if way == 0 or change == 0:
        return None
    return ChangeVerdict.BETTER if change * way > 0 else ChangeVerdict.WORSE


def metric_direction(name: str) -> int:
    """Which way is better for a sampler metric, from its unit; a metric without a judged unit (a
    hit ratio, the ARC's fill) counts as higher-is-better, the way a cache warms up."""
    return unit_direction(METRIC_UNITS.get(name, "")) or 1


def format_number(value: float | None) -> str:
    """A figure's number at a precision a reader can use ("-" when there is none)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    mag = abs(value)
    if mag >= 1000:
        return f"{value:,.0f}"
    if mag >= 100:
        return f"{value:.1f}"
    if mag >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def format_figure(value: float | None, unit: str) -> str:
    """A figure with its unit, for people: bytes in binary units (3.01 GiB); machines' formats use
    exact_number."""
    if unit == "B" and value is not None and value == value:
        return format_bytes(value)
    return f"{format_number(value)} {unit}"


def exact_number(value: float) -> str:
    """A figure for machines (CSV, JUnit properties): whole numbers whole (a byte count of
    471,016,112 stays 471016112, not 4.71016e+08), others to 10 significant digits."""
    if value == value and abs(value) < 1e15 and float(value).is_integer():
        return str(int(value))
    return f"{value:.10g}"
