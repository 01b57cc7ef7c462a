"""Where tunables are read and written: a small protocol, two backends, and a structured spec.

A backend is a directory of one file per parameter (Linux /sys/module/zfs/parameters, a directory
laid out like it for tests, or the same on a remote host over ssh) or FreeBSD's `sysctl vfs.zfs.*`
(here or over ssh); the journal also names `module`, load-scope values set by loading the module
again (reload.py). Its BackendSpec is what the journal stores, so that a zfsperf started after a
crash can open the same backend again (open_backend) and put the old values back."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from .. import proc
from ..errors import TargetError, Unavailable
from ..fileops import LOCAL, FileOps
from ..sshlink import Ssh
from .impls import chosen
from .registry import REGISTRY, canonical_from_freebsd, freebsd_name
from .reload import ModuleLoader

KINDS = ("files", "sysctl", "module")


@dataclass(frozen=True)
class BackendSpec:
    kind: str                          # "files" | "sysctl" | "module" (load scope: set by a reload)
    path: str | None = None            # files, module: the directory of parameters
    ssh: dict[str, Any] | None = None  # the ssh link's spec ({"url", "options"}) when remote

    def __post_init__(self) -> None:
        if self.kind not in KINDS or (self.kind != "sysctl") != bool(self.path):
            raise ValueError(f"not a tunables backend: {self!r}")

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, data: Any) -> "BackendSpec":
        """From a journal entry: the dict written by as_dict, or the strings journals held before
        ("file:/dir", "sysctl:local", "ssh:<json link>|<dir or sysctl>")."""
        if isinstance(data, dict):
            return cls(str(data.get("kind")), data.get("path"), data.get("ssh"))
        if isinstance(data, str):
            kind, _, arg = data.partition(":")
            if kind == "file":
                return cls("files", arg)
            if kind == "sysctl":
                return cls("sysctl")
            if kind == "ssh":
                head, _, rest = arg.rpartition("|")
                link = json.loads(head)
                return cls("sysctl", ssh=link) if rest == "sysctl" else cls("files", rest, ssh=link)
        raise ValueError(f"unknown tunable backend {data!r}")

    def describe(self) -> str:
        where = f" on {self.ssh['url']}" if self.ssh else ""
        what = {"files": f"{self.path}", "module": f"the zfs module's load options ({self.path})"}
        return what.get(self.kind, "sysctl vfs.zfs") + where


class TunableBackend(Protocol):
    spec: BackendSpec

    def names(self) -> list[str]: ...
    def has(self, name: str) -> bool: ...
    def get(self, name: str) -> str: ...
    def set(self, name: str, value: str) -> None: ...
    def read_all(self) -> dict[str, str]: ...
    def mode(self, name: str) -> int | None: ...       # the parameter's permission bits, when known


class FileTunables:
    """Tunables as files, one per parameter, through a FileOps (this host's, or an ssh link's)."""

    def __init__(self, directory: str, files: FileOps | None = None, ssh: dict[str, Any] | None = None) -> None:
        self.directory = Path(directory)
        self.files = files if files is not None else LOCAL
        self.spec = BackendSpec("files", str(directory), ssh)

    def names(self) -> list[str]:
        try:
            names = self.files.listdir(str(self.directory))
            if self.files.remote:      # one round trip, not one per name
                return names
            return [n for n in names if (self.directory / n).is_file()]
        except OSError:
            return []

    def has(self, name: str) -> bool:
        return "/" not in name and name not in ("", ".", "..") and self.files.is_file(str(self.directory / name))

    def read_all(self) -> dict[str, str]:
        """Every parameter's value in one go (one round trip on a remote host); a selector
        ("[fastest] scalar superscalar") as its chosen name."""
        try:
            return {k: chosen(v.strip()) for k, v in self.files.read_dir(str(self.directory)).items()}
        except OSError:
            return {}

    def get(self, name: str) -> str:
        """The parameter's value; a selector's as its chosen name (what a write of it sets)."""
        return chosen(self.raw(name))

    def raw(self, name: str) -> str:
        """The parameter's file as it reads (a selector: every name it offers, the chosen one in brackets)."""
        if not self.has(name):
            raise Unavailable(f"no tunable {name} in {self.directory}")
        return self.files.read_text(str(self.directory / name)).strip()

    def mode(self, name: str) -> int | None:
        try:
            return self.files.mode(str(self.directory / name))
        except OSError:
            return None

    def set(self, name: str, value: str) -> None:
        if not self.has(name):
            raise Unavailable(f"no tunable {name} in {self.directory}")
        try:
            self.files.write_param(str(self.directory / name), f"{value}\n")
        except OSError as e:
            raise TargetError(f"cannot set {name}={value}: {e.strerror or e}") from e


Runner = Callable[..., proc.Completed]


class SysctlTunables:
    """FreeBSD tunables: `sysctl vfs.zfs.<scope>.<name>`, by canonical (Linux) name."""

    def __init__(self, log: proc.CommandLog = proc.NULL_LOG, runner: Runner | None = None,
                 ssh: dict[str, Any] | None = None) -> None:
        self.log = log
        self.spec = BackendSpec("sysctl", ssh=ssh)
        self._run = runner or proc.run      # an ssh link passes its own

    def names(self) -> list[str]:
        res = self._run(["sysctl", "-N", "vfs.zfs"], log=proc.NULL_LOG)
        if not res.ok:
            return []
        names = {canonical_from_freebsd(ln.strip()) for ln in res.stdout.splitlines()}
        return sorted(n for n in names if n)

    def has(self, name: str) -> bool:
        sysctl = freebsd_name(name)
        return sysctl is not None and self._run(["sysctl", "-n", sysctl], log=proc.NULL_LOG).ok

    def read_all(self) -> dict[str, str]:
        return {n: self.get(n) for n in self.names()}

    def mode(self, name: str) -> int | None:
        """Unknown: a sysctl's flags are not its mode (a read-only one refuses the write)."""
        return None

    def get(self, name: str) -> str:
        sysctl = freebsd_name(name)
        if sysctl is None:
            raise Unavailable(f"no FreeBSD sysctl is known for {name} (known: {', '.join(sorted(REGISTRY))})")
        res = self._run(["sysctl", "-n", sysctl], log=proc.NULL_LOG)
        if not res.ok:
            raise Unavailable(f"openzfs-freebsd has no tunable {name}: {res.error_text()}")
        return chosen(res.stdout.strip())

    def set(self, name: str, value: str) -> None:
        sysctl = freebsd_name(name)
        if sysctl is None:
            raise Unavailable(f"no FreeBSD sysctl is known for {name}")
        res = self._run(["sysctl", f"{sysctl}={value}"], log=self.log)
        if not res.ok:
            raise TargetError(f"cannot set {name}={value}: {res.error_text()}")


# The journal's name for "another build's module is loaded" (tunables/modswitch.py, a build A/B): its old
# value is OWN_BUILD, and putting it back loads the machine's own build (modprobe) again.
BUILD_ENTRY = "zfs module build"
OWN_BUILD = "the machine's own"


class ReloadTunables:
    """The journal's backend for load-scope values: set() loads the module again with the value
    (BUILD_ENTRY: the machine's own build loaded back, with no options)."""

    def __init__(self, spec: BackendSpec, run: Runner, files: Any = None) -> None:
        self.spec = spec
        self.params = FileTunables(str(spec.path), files=files, ssh=spec.ssh)
        self.loader = ModuleLoader(run, self.params)

    def names(self) -> list[str]:
        return self.params.names()

    def has(self, name: str) -> bool:
        return self.params.has(name)

    def get(self, name: str) -> str:
        return self.params.get(name)

    def read_all(self) -> dict[str, str]:
        return self.params.read_all()

    def mode(self, name: str) -> int | None:
        return self.params.mode(name)

    def set(self, name: str, value: str) -> None:
        if name == BUILD_ENTRY:
            if value != OWN_BUILD:
                raise TargetError(f"{BUILD_ENTRY} can only be put back to {OWN_BUILD}, not {value!r}")
            self.loader.reload({}, what="the machine's own build back")
            return
        if self.params.has(name) and self.params.get(name) == value:
            return
        self.loader.reload({name: value}, what=f"the zfs module with {name}={value}")


def module_spec(params: FileTunables) -> BackendSpec:
    """The journal's spec for load-scope values of the machine whose parameters these are."""
    return BackendSpec("module", params.spec.path, params.spec.ssh)


def open_backend(spec: BackendSpec) -> TunableBackend:
    """The backend a spec names (a journal replay after a crash), reconnecting over ssh if remote."""
    link = Ssh(spec.ssh["url"], spec.ssh.get("options") or []) if spec.ssh else None
    if spec.kind == "sysctl":
        return SysctlTunables(runner=link.run if link else None, ssh=spec.ssh)
    if spec.kind == "module":
        return ReloadTunables(spec, link.run if link else proc.run, files=link)
    return FileTunables(str(spec.path), files=link, ssh=spec.ssh)
