"""Which OpenZFS build the running guest has loaded: the kernel modules of one build swapped for
another's between two cases, in the same guest (same kernel, memory, disk and userland), so that
two builds are measured in blocks like two values of a tunable.

A swap happens between cases, when no pool is imported: `rmmod zfs spl`, then `insmod` of the
build's spl.ko and zfs.ko, read by the guest from the host through its read-only view of the
host's root (/hostroot). The guest's own build (the one in its initramfs) is loaded back with
`modprobe zfs` when the run ends, however it ends (the runner calls restore() in its finally).
Which build is loaded is checked after each swap by the module's srcversion, which differs
between builds of different sources even when their version strings are equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError, TargetError
from ..targets.base import Target

HOSTROOT = "/hostroot"        # where the guest sees the host's root (guest/init_script.py)


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


class ModuleSwitch:
    def __init__(self, target: Target, builds: dict[str, BuildRef]) -> None:
        self.target, self.builds = target, builds
        self.current: str | None = None          # unknown until the first swap
        self.srcversions: dict[str, str] = {}     # build name -> the loaded module's srcversion
        self.swaps = 0

    def check(self) -> None:
        """Before anything runs: every build's modules are readable in the guest."""
        for b in self.builds.values():
            if b.modules is None:
                continue
            for m in ("spl.ko", "zfs.ko"):
                path = f"{HOSTROOT}{b.modules}/{m}"
                if not self.target.run(["test", "-r", path]).ok:
                    raise TargetError(f"build {b.name}: the guest cannot read {path} (is the host's root "
                                      "shared with the guest? see `zfsperf guest status`)")

    def _sh(self, argv: list[str], what: str) -> str:
        res = self.target.run(argv, timeout=600)
        if not res.ok:
            raise TargetError(f"{what}: {' '.join(argv)}: {res.error_text()}")
        return res.stdout

    def _unload(self) -> None:
        loaded = self._sh(["cat", "/proc/modules"], "reading the loaded modules")
        names = {ln.split()[0] for ln in loaded.splitlines() if ln.strip()}
        for m in ("zfs", "spl"):
            if m in names:
                self._sh(["rmmod", m], f"unloading {m} (is a pool still imported?)")

    def load(self, name: str) -> None:
        """Make build `name` the loaded one (nothing to do if it already is)."""
        if name == self.current:
            return
        b = self.builds.get(name)
        if b is None:
            raise InputError(f"no build named {name!r} (have: {', '.join(self.builds)})", field="build")
        self.current = None
        self._unload()
        if b.modules is None:
            self._sh(["modprobe", "zfs"], f"loading the guest's own build for {b.name}")
        else:
            for m in ("spl.ko", "zfs.ko"):
                self._sh(["insmod", f"{HOSTROOT}{b.modules}/{m}"], f"loading build {b.name}")
        src = self._sh(["cat", "/sys/module/zfs/srcversion"], "reading the module's srcversion").strip()
        self.srcversions[name] = src
        self.current = name
        self.swaps += 1

    def restore(self) -> None:
        """The guest's own build again (a no-op if no swap was made)."""
        if self.swaps == 0:
            return
        self.current = None
        self._unload()
        self._sh(["modprobe", "zfs"], "loading the guest's own build back")
        self.swaps = 0                            # restored: a second call does nothing
