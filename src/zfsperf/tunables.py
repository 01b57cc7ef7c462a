"""ZFS tunables: one canonical name, the Linux module parameter and the FreeBSD sysctl behind it.

The canonical name is the Linux module parameter (/sys/module/zfs/parameters/<name>). FreeBSD
names follow ZFS_MODULE_PARAM(scope_prefix, name_prefix, name) -> vfs.<scope>.<name>, the same
pattern as the ZFS Test Suite's tunables.cfg (docs/reference/anchors.md §2.4, §4.5).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import TargetError, Unavailable
from .units import parse_size


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
    """The value as the kernel takes it: sizes in bytes, booleans as 0/1, integers as decimal."""
    spec = REGISTRY.get(name)
    kind = spec.kind if spec else "int"
    if isinstance(value, bool) or kind == "bool":
        if isinstance(value, str) and value.lower() in ("0", "1", "true", "false", "on", "off"):
            return "1" if value.lower() in ("1", "true", "on") else "0"
        if isinstance(value, (bool, int)) and int(value) in (0, 1):
            return "1" if value else "0"
        raise ValueError(f"{name} takes 0 or 1, not {value!r}")
    if kind == "size" or isinstance(value, str):
        return str(parse_size(value))  # type: ignore[arg-type]
    if isinstance(value, int):
        return str(value)
    raise ValueError(f"{name} takes an integer, not {value!r}")


def freebsd_name(name: str) -> str | None:
    spec = REGISTRY.get(name)
    return spec.freebsd if spec else None


def canonical_from_freebsd(sysctl: str) -> str | None:
    for t in REGISTRY.values():
        if t.freebsd == sysctl:
            return t.name
    return None


# ----------------------------------------------------------------------------- backends
class FileParams:
    """Tunables as files, one per parameter: /sys/module/zfs/parameters or a directory laid out like
    it, on this host or (files = an ssh target) on a remote one."""

    def __init__(self, directory: str, files=None, spec_prefix: str = "file:") -> None:
        from .target.files import LOCAL
        self.directory = Path(directory)
        self.files = files if files is not None else LOCAL
        self.spec_prefix = spec_prefix

    @property
    def spec(self) -> str:
        return f"{self.spec_prefix}{self.directory}"

    def names(self) -> list[str]:
        try:
            names = self.files.listdir(str(self.directory))
            if getattr(self.files, "remote", False):      # one round trip, not one per name
                return names
            return [n for n in names if (self.directory / n).is_file()]
        except OSError:
            return []

    def has(self, name: str) -> bool:
        return "/" not in name and name not in ("", ".", "..") and self.files.is_file(str(self.directory / name))

    def read_all(self) -> dict[str, str]:
        """Every parameter's value in one go (one round trip on a remote host)."""
        try:
            return {k: v.strip() for k, v in self.files.read_dir(str(self.directory)).items()}
        except OSError:
            return {}

    def get(self, name: str) -> str:
        if not self.has(name):
            raise Unavailable(f"no tunable {name} in {self.directory}")
        return self.files.read_text(str(self.directory / name)).strip()

    def set(self, name: str, value: str) -> None:
        if not self.has(name):
            raise Unavailable(f"no tunable {name} in {self.directory}")
        try:
            self.files.write_param(str(self.directory / name), f"{value}\n")
        except OSError as e:
            raise TargetError(f"cannot set {name}={value}: {e.strerror or e}") from e


# ----------------------------------------------------------------------------- journal
def journal_path() -> Path:
    env = os.environ.get("ZFSPERF_STATE")
    base = Path(env) if env else (Path("/var/lib/zfsperf") if os.geteuid() == 0
                                  else Path.home() / ".local" / "state" / "zfsperf")
    return base / "tunables.journal"


class Journal:
    """Every tunable change is written here (and fsynced) before it is made, and removed once the old
    value is back. A zfsperf killed with -9 leaves entries; the next start restores them."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else journal_path()

    def _read(self) -> list[dict]:
        try:
            data = json.loads(self.path.read_text())
            return data if isinstance(data, list) else []
        except (OSError, ValueError):
            return []

    def _write(self, entries: list[dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(entries, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def entries(self) -> list[dict]:
        return self._read()

    def record(self, backend_spec: str, name: str, old: str, new: str) -> None:
        entries = self._read()
        if not any(e["backend"] == backend_spec and e["name"] == name for e in entries):
            entries.append({"backend": backend_spec, "name": name, "old": old, "new": new,
                            "pid": os.getpid(), "time": time.time()})
            self._write(entries)

    def forget(self, backend_spec: str, name: str) -> None:
        entries = [e for e in self._read() if not (e["backend"] == backend_spec and e["name"] == name)]
        if entries:
            self._write(entries)
        else:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    def stale(self) -> list[dict]:
        """Entries left by a zfsperf that is no longer running."""
        from .proc import pid_alive
        return [e for e in self._read() if e.get("pid") == os.getpid() or not pid_alive(int(e.get("pid", 0)))]


def backend_from_spec(spec: str):
    """Re-open a journaled backend: "file:/dir" (Linux sysfs or a directory like it), "sysctl:local"."""
    kind, _, arg = spec.partition(":")
    if kind == "file":
        return FileParams(arg)
    if kind == "ssh":                  # "ssh:<json>": a remote target's parameters (target/ssh.py)
        from .target.ssh import params_from_spec
        return params_from_spec(arg)
    if kind == "sysctl":
        from .target.openzfs_freebsd import SysctlParams
        return SysctlParams()
    raise ValueError(f"unknown tunable backend {spec!r}")


def replay(journal: Journal, say=None) -> list[str]:
    """Restore what a crashed zfsperf left changed. Returns one line per restored tunable."""
    done = []
    for e in journal.stale():
        try:
            backend_from_spec(e["backend"]).set(e["name"], e["old"])
            line = f"restored {e['name']} = {e['old']} (left at {e['new']} by zfsperf pid {e['pid']}, " \
                   f"{e['backend']})"
        except Exception as exc:  # noqa: BLE001 - report and keep the entry for the next start
            line = f"could not restore {e['name']} = {e['old']} ({e['backend']}): {exc}"
            done.append(line)
            if say:
                say(line)
            continue
        journal.forget(e["backend"], e["name"])
        done.append(line)
        if say:
            say(line)
    return done


class TunableSession:
    """Sets tunables for one case through the journal and puts every one back."""

    def __init__(self, backend, journal: Journal, log=None) -> None:
        self.backend = backend
        self.journal = journal
        self.log = log
        self.changed: list[tuple[str, str]] = []     # (name, old)

    def apply(self, values: dict[str, str]) -> dict[str, dict[str, str]]:
        applied = {}
        for name, value in values.items():
            old = self.backend.get(name)
            self.journal.record(self.backend.spec, name, old, value)
            self.changed.append((name, old))
            self.backend.set(name, value)
            now = self.backend.get(name)
            if self.log:
                self.log.write(f"# tunable {name}: {old} -> {value} (reads back {now})")
            if now != value:
                raise TargetError(f"tunable {name} reads back {now} after writing {value}")
            applied[name] = {"before": old, "set": value}
        return applied

    def restore(self) -> None:
        errors = []
        for name, old in reversed(self.changed):
            try:
                self.backend.set(name, old)
                self.journal.forget(self.backend.spec, name)
                if self.log:
                    self.log.write(f"# tunable {name} restored to {old}")
            except Exception as e:  # noqa: BLE001 - keep restoring the others; the journal keeps it
                errors.append(f"{name}: {e}")
        self.changed = []
        if errors:
            raise TargetError("could not restore tunables: " + "; ".join(errors))
