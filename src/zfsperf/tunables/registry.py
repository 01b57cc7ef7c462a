"""ZFS tunables: one canonical name, the Linux module parameter and the FreeBSD sysctl behind it.

The canonical name is the Linux module parameter (/sys/module/zfs/parameters/<name>). FreeBSD
names follow ZFS_MODULE_PARAM(scope_prefix, name_prefix, name) -> vfs.<scope>.<name>, the same
pattern as the ZFS Test Suite's tunables.cfg (docs/reference/anchors.md §2.4, §4.5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import shown
from ..units import parse_size
from .impls import offered

KNOWN_DIR = Path(__file__).resolve().parent / "known"      # captured /sys/module/zfs/parameters lists


@dataclass(frozen=True)
class Tunable:
    name: str                 # canonical = Linux module parameter
    freebsd: str              # sysctl name
    kind: str = "int"         # "int" | "size" (accepts 128K, 1M) | "bool"
    doc: str = ""


REGISTRY: dict[str, Tunable] = {t.name: t for t in [
    Tunable("zfs_vdev_async_write_max_active", "vfs.zfs.vdev.async_write_max_active", "int",
            "max concurrent async write I/Os per vdev (default 10)"),
    Tunable("zfs_vdev_async_write_min_active", "vfs.zfs.vdev.async_write_min_active", "int"),
    Tunable("zfs_vdev_async_read_max_active", "vfs.zfs.vdev.async_read_max_active", "int"),
    Tunable("zfs_vdev_async_read_min_active", "vfs.zfs.vdev.async_read_min_active", "int"),
    Tunable("zfs_vdev_sync_write_max_active", "vfs.zfs.vdev.sync_write_max_active", "int"),
    Tunable("zfs_vdev_sync_read_max_active", "vfs.zfs.vdev.sync_read_max_active", "int"),
    Tunable("zfs_vdev_max_active", "vfs.zfs.vdev.max_active", "int"),
    Tunable("zfs_vdev_aggregation_limit", "vfs.zfs.vdev.aggregation_limit", "size"),
    Tunable("zfs_recv_write_batch_size", "vfs.zfs.recv.write_batch_size", "size",
            "bytes of WRITE records batched per DMU tx in zfs receive (default 1M)"),
    Tunable("zfs_recv_queue_length", "vfs.zfs.recv.queue_length", "size"),
    Tunable("zfs_send_queue_length", "vfs.zfs.send.queue_length", "size"),
    Tunable("zfs_txg_timeout", "vfs.zfs.txg.timeout", "int", "seconds between txg syncs (default 5)"),
    Tunable("zfs_txg_history", "vfs.zfs.txg_history", "int"),
    Tunable("zfs_dirty_data_max", "vfs.zfs.dirty_data_max", "size"),
    Tunable("zfs_dirty_data_sync_percent", "vfs.zfs.dirty_data_sync_percent", "int"),
    Tunable("zfs_delay_min_dirty_percent", "vfs.zfs.delay_min_dirty_percent", "int"),
    Tunable("zfs_arc_max", "vfs.zfs.arc.max", "size"),
    Tunable("zfs_arc_min", "vfs.zfs.arc.min", "size"),
    Tunable("zfs_prefetch_disable", "vfs.zfs.prefetch.disable", "bool"),
    Tunable("l2arc_write_max", "vfs.zfs.l2arc.write_max", "size"),
    Tunable("l2arc_write_boost", "vfs.zfs.l2arc.write_boost", "size"),
    Tunable("l2arc_noprefetch", "vfs.zfs.l2arc.noprefetch", "bool"),
]}


def normalise_value(name: str, value: object) -> str:
    """The value as the kernel takes it: sizes in bytes, booleans as 0/1, integers as decimal, an
    implementation selector's name as it is (the kernel refuses one its build does not offer)."""
    spec = REGISTRY.get(name)
    kind = spec.kind if spec else "int"
    if name in selectors():
        if isinstance(value, str) and SELECTOR_NAME.match(value):
            return value
        raise ValueError(f"{name} takes the name of an implementation (the captured releases offer "
                         f"{', '.join(selectors()[name])}), not {shown(value)}")
    if isinstance(value, bool) or kind == "bool":
        if isinstance(value, str) and value.lower() in ("0", "1", "true", "false", "on", "off"):
            return "1" if value.lower() in ("1", "true", "on") else "0"
        if isinstance(value, (bool, int)) and int(value) in (0, 1):
            return "1" if value else "0"
        raise ValueError(f"{name} takes 0 or 1, not {shown(value)}")
    if kind == "size" or isinstance(value, str):
        return str(parse_size(value))  # type: ignore[arg-type]
    if isinstance(value, int):
        return str(value)
    raise ValueError(f"{name} takes an integer, not {shown(value)}")


def freebsd_name(name: str) -> str | None:
    spec = REGISTRY.get(name)
    return spec.freebsd if spec else None


def canonical_from_freebsd(sysctl: str) -> str | None:
    for t in REGISTRY.values():
        if t.freebsd == sysctl:
            return t.name
    return None


@lru_cache(maxsize=1)
def captured() -> dict[str, list[str]]:
    """The module parameters of the OpenZFS releases captured in known/ (2.1.11, 2.3.2): name ->
    the value each release read (in file order; a release lacking it adds nothing)."""
    out: dict[str, list[str]] = {}
    for f in sorted(KNOWN_DIR.glob("openzfs-*.txt")):
        for ln in f.read_text().splitlines():
            if ln.strip():
                name, _, value = ln.partition("\t")
                out.setdefault(name, []).append(value)
    return out


@lru_cache(maxsize=1)
def known_names() -> frozenset[str]:
    """Every module parameter of the captured releases, and the registry's: the names a runfile
    may set."""
    return frozenset(REGISTRY) | frozenset(captured())


SELECTOR_NAME = re.compile(r"^[a-z0-9_]{1,32}$")


@lru_cache(maxsize=1)
def selectors() -> dict[str, list[str]]:
    """The implementation selectors of the captured releases ("[fastest] scalar superscalar ...":
    zfs_fletcher_4_impl, zfs_vdev_raidz_impl, ...): name -> every implementation they offered."""
    return {name: sorted({w for v in values for w in offered(v)})
            for name, values in captured().items() if any(offered(v) for v in values)}
