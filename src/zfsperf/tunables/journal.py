"""The tunables journal and a case's tunables session: every change is journaled (fsynced) before
it is made and forgotten once the old value is back; a zfsperf killed with -9 leaves entries that
the next start restores (replay), on whichever backend (here or over ssh) they were made."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from .. import proc
from ..errors import TargetError
from ..proc import pid_alive
from .backend import BackendSpec, TunableBackend, open_backend
from .scope import Scope, refused, scope_of


def _same(entry: dict[str, Any], backend: BackendSpec, name: str) -> bool:
    try:
        return entry.get("name") == name and BackendSpec.from_json(entry.get("backend")) == backend
    except (ValueError, TypeError, KeyError):
        return False


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

    def record(self, backend: BackendSpec, name: str, old: str, new: str) -> None:
        entries = self._read()
        if not any(_same(e, backend, name) for e in entries):
            entries.append({"backend": backend.as_dict(), "name": name, "old": old, "new": new,
                            "pid": os.getpid(), "time": time.time()})
            self._write(entries)

    def forget(self, backend: BackendSpec, name: str) -> None:
        entries = [e for e in self._read() if not _same(e, backend, name)]
        if entries:
            self._write(entries)
        else:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass

    def stale(self) -> list[dict]:
        """Entries left by a zfsperf that is no longer running."""
        return [e for e in self._read() if e.get("pid") == os.getpid() or not pid_alive(int(e.get("pid", 0)))]


def replay(journal: Journal, say: Callable[[str], None] | None = None, *, skip: tuple[str, ...] = ()) -> list[str]:
    """Restore what a crashed zfsperf left changed (skip: backend kinds left for later, such as a
    module to load again once a dead run's pools are gone). Returns one line per restored tunable."""
    done = []
    for e in journal.stale():
        where = str(e.get("backend"))
        try:
            spec = BackendSpec.from_json(e["backend"])
            where = spec.describe()
            gone = machine_gone(spec)
            if gone:                   # nothing to put back: that machine's module went with it
                journal.forget(spec, e["name"])
                line = f"forgot {e['name']} = {e['old']} (left at {e['new']} by zfsperf pid {e['pid']}, {where}): {gone}"
                done.append(line)
                if say:
                    say(line)
                continue
            if spec.kind in skip:
                continue
            open_backend(spec).set(e["name"], e["old"])
            line = f"restored {e['name']} = {e['old']} (left at {e['new']} by zfsperf pid {e['pid']}, {where})"
        except Exception as exc:  # noqa: BLE001 - report and keep the entry for the next start
            line = f"could not restore {e['name']} = {e['old']} ({where}): {exc}"
            done.append(line)
            if say:
                say(line)
            continue
        journal.forget(spec, e["name"])
        done.append(line)
        if say:
            say(line)
    return done


def machine_gone(spec: BackendSpec) -> str | None:
    """Why a change made through this backend no longer exists, or None: the machine it was made in
    was a QEMU process on this host (a guest: the twin of build turns, or the lab) that has ended
    since, and a guest starts with its module's defaults."""
    m = (spec.ssh or {}).get("machine")
    if not isinstance(m, dict) or not isinstance(m.get("pid"), int):
        return None
    if pid_alive(m["pid"]) and proc.start_ticks(m["pid"]) == m.get("start"):
        return None
    return f"the guest it was set in (QEMU pid {m['pid']}) has stopped since, and a guest starts with its module's defaults"


def applied_entry(before: str | None, value: str, scope: Scope) -> dict[str, Any]:
    """What a case records of one tunable it applied (record.tunables[name]): its value before the
    case, the value set, and how it applies (its scope), however it was applied (written, or
    loaded as a module option)."""
    return {"before": before, "set": value, "scope": str(scope)}


class TunableSession:
    """Sets tunables for one case through the journal and puts every one back."""

    def __init__(self, backend: TunableBackend, journal: Journal, log: proc.CommandLog | None = None) -> None:
        self.backend = backend
        self.journal = journal
        self.log = log
        self.changed: list[tuple[str, str]] = []     # (name, old)

    def scope(self, name: str) -> tuple[Scope, str]:
        """When a write of this tunable takes effect on this target, and why (scope.scope_of)."""
        return scope_of(name, self.backend.mode(name))

    def apply(self, values: dict[str, str], *, between_rounds: bool = False) -> dict[str, dict[str, str]]:
        """Write each value (journaled first), read it back, and return what was done: its value
        before, the value set and its scope. Every value's scope is checked before anything is
        written: a load-scope tunable cannot be set by a run, and one written between rounds
        (turns) must take effect at run time; either is refused, never a silent A/A."""
        scopes = {name: self.scope(name) for name in values}
        for name, (scope, why) in scopes.items():
            no = refused(name, scope, why, turns=between_rounds)
            if no:
                raise TargetError(f"tunable {no}")
        applied = {}
        for name, value in values.items():
            old = self.backend.get(name)
            self.journal.record(self.backend.spec, name, old, value)
            self.changed.append((name, old))
            now = self._set_and_read(name, value)
            if self.log:
                self.log.write(f"# tunable {name}: {old} -> {value} (reads back {now}; scope "
                               f"{scopes[name][0]}: {scopes[name][1]})")
            self._check(name, value, now, "")
            applied[name] = applied_entry(old, value, scopes[name][0])
        return applied

    def switch(self, values: dict[str, str]) -> dict[str, str]:
        """Between two turns: write tunables that apply() already journaled (their values before
        the case are kept from then) and read each back; a value that does not read back is an
        error (a tunable whose write does not take effect at run time never makes a silent A/A).
        Returns what each reads back."""
        journaled = {name for name, _old in self.changed}
        out = {}
        for name, value in values.items():
            if name not in journaled:
                raise TargetError(f"tunable {name} was not set through this case's journal")
            out[name] = self._check(name, value, self._set_and_read(name, value), " between turns")
        return out

    def _set_and_read(self, name: str, value: str) -> str:
        """Write one tunable and return what it reads back."""
        self.backend.set(name, value)
        return self.backend.get(name)

    @staticmethod
    def _check(name: str, value: str, now: str, when: str) -> str:
        if now != value:
            raise TargetError(f"tunable {name} reads back {now} after writing {value}{when}")
        return now

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
