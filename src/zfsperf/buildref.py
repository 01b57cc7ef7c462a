"""One side of a build A/B: a name, what it is and where its modules are. A reference any kind of
target's build switch and the plan read (the guest's today; a kernel-ZFS host's next), so it lives
outside guest/."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

SOURCE_KIND = "source"          # BuildRef.info["kind"] of a side built from OpenZFS source
ZFS_TOOLS = frozenset({"zpool", "zfs", "zdb", "zstream"})     # the commands a side's own userland replaces


@dataclass(frozen=True)
class Userland:
    """A build's own ZFS userland (`run --userland NAME=DIR`): its zpool, zfs, zdb and zstream in
    `bin`, their libraries (libzfs, libzpool, libnvpair, libuutil) in `libs`, as the target's
    machine sees them. A side whose module speaks other ioctls than the machine's userland (another
    series) runs its own commands with it; None everywhere else: the machine's."""
    root: str                       # the directory given (a `make install DESTDIR=` or `dpkg -x` tree)
    bin: str
    libs: tuple[str, ...]

    def argv(self, argv: Sequence[str]) -> list[str]:
        """argv with a ZFS command taken from this userland (other commands as they are)."""
        out = [str(a) for a in argv]
        if not out or out[0] not in ZFS_TOOLS:
            return out
        return ["env", f"LD_LIBRARY_PATH={':'.join(self.libs)}", f"{self.bin}/{out[0]}", *out[1:]]

    def seen_from(self, root: str) -> "Userland":
        """The same userland as a machine that sees this one's files under `root` names it."""
        return Userland(self.root, root + self.bin, tuple(root + d for d in self.libs)) if root else self

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "bin": self.bin, "libs": list(self.libs)}

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Userland | None":
        return cls(d["root"], d["bin"], tuple(d["libs"])) if d else None


@dataclass
class BuildRef:
    """One side of a build A/B: its short name in case names ("a", "good", a commit), what it is,
    and where its modules are on the host (None: the guest's own build, loaded by modprobe);
    userland: its own ZFS commands (None: the machine's)."""
    name: str
    label: str
    modules: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    userland: Userland | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "modules": self.modules, "info": self.info} | (
            {"own_userland": self.userland.to_json()} if self.userland else {})

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "BuildRef":
        return cls(d["name"], d["label"], d.get("modules"), d.get("info") or {},
                   Userland.from_json(d.get("own_userland")))

    def unbuilt(self) -> bool:
        """A side given as source whose modules are not built yet (never the machine's own build)."""
        return self.modules is None and self.info.get("kind") == SOURCE_KIND


class BuildSources(Protocol):
    """How a run's sides given as source become modules (the application's buildsource.py, handed
    to the runner): checked with the rest of the input, compiled once the input is whole."""

    def check(self, builds: dict[str, BuildRef]) -> None: ...

    def compile(self, builds: dict[str, BuildRef], say: Callable[[str], None]) -> None: ...
