"""One side of a build A/B: a name, what it is and where its modules are. A reference any kind of
target's build switch and the plan read (the guest's today; a kernel-ZFS host's next), so it lives
outside guest/."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

SOURCE_KIND = "source"          # BuildRef.info["kind"] of a side built from OpenZFS source


@dataclass
class BuildRef:
    """One side of a build A/B: its short name in case names ("a", "good", a commit), what it is,
    and where its modules are on the host (None: the guest's own build, loaded by modprobe)."""
    name: str
    label: str
    modules: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "modules": self.modules, "info": self.info}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "BuildRef":
        return cls(d["name"], d["label"], d.get("modules"), d.get("info") or {})

    def unbuilt(self) -> bool:
        """A side given as source whose modules are not built yet (never the machine's own build)."""
        return self.modules is None and self.info.get("kind") == SOURCE_KIND


class BuildSources(Protocol):
    """How a run's sides given as source become modules (the application's buildsource.py, handed
    to the runner): checked with the rest of the input, compiled once the input is whole."""

    def check(self, builds: dict[str, BuildRef]) -> None: ...

    def compile(self, builds: dict[str, BuildRef], say: Callable[[str], None]) -> None: ...
