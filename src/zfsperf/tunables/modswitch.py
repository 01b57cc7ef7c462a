"""Which OpenZFS build a kernel-OpenZFS target has loaded: the kernel modules of one build swapped
for another's between two cases, on the same machine (same kernel, memory, disk and userland), so
that two builds are measured in blocks like two values of a tunable: in zfsperf's own guest
(`guest ab`, `guest bisect`) or on any kernel-OpenZFS target (`run --build`). Nothing here is the
guest's: where the target reads the host's files is its declared capability (Target.host_root:
the guest's read-only view of the host's root, /hostroot; nothing on the machine itself).

A swap happens between cases, when no pool is imported: `rmmod zfs spl`, then `insmod` of the
build's spl.ko and zfs.ko, read by the target from the host's build directory. The target's own
build (the guest's: the one in its initramfs) is loaded back with `modprobe zfs` when the run
ends, however it ends (the runner calls restore() in its finally).
Which build is loaded is checked after each swap by the module's srcversion, which differs
between builds of different sources even when their version strings are equal.

A build may bring its own ZFS userland (BuildRef.userland, `run --userland NAME=DIR`): while its
module is loaded the target runs its zpool, zfs, zdb and zstream (Target.userland), so that a
module of another series than the machine's userland is driven by commands that speak its ioctls.
Each side's userland version (`zfs version`'s first line) is read before the first unload and
recorded beside its module's; a side without one runs with the machine's, and a series between
the two is said (userland_note).

After every load but the last (the guest's own build back), the implementations the module
picked by its load-time micro-benchmark are read and pinned to the run's first load's picks
(tunables/impls.py): two loads of one build on a busy or emulated machine can pick differently.

The same reload sets a load-scope tunable (one read only when the module loads): a sweep of one
loads the module with each case's value as a module option (tunables/reload.py), in a build A/B
too; the value before is journaled, and loaded back when the run ends.

A build's module loaded in place of the guest's own is journaled too (tunables.backend.BUILD_ENTRY),
before the load and forgotten once the own build is back: a zfsperf killed with -9 mid-A/B leaves
the entry, and the next start loads the guest's own build again (once the dead run's pools are gone)
instead of measuring, and recording as the guest's own, whatever build the A/B had loaded last.
"""

from __future__ import annotations

import re

from .. import proc
from ..buildref import BuildRef
from ..errors import InputError, Refused, TargetError
from ..pool import list_pools, pool_owner
from ..targets.base import Target
from .backend import BUILD_ENTRY, OWN_BUILD, FileTunables, module_spec
from .impls import ImplPin
from .journal import Journal
from .reload import ModuleLoader


class ModuleSwitch:
    """The module the target has loaded: which build, with which load-scope tunables as module
    options. Each case asks for its own before its pool (load); nothing is reloaded when the case
    wants what is loaded. A load-scope value is journaled before the first reload that changes it,
    and forgotten once restore() has loaded the module with the value it had before."""

    def __init__(self, target: Target, builds: dict[str, BuildRef], journal: Journal | None = None,
                 log: proc.CommandLog | None = None, pin: ImplPin | None = None, where: str = "guest") -> None:
        self.target, self.builds, self.journal = target, builds, journal
        self.log, self.where = log, where
        self.pin = pin if pin is not None else ImplPin()     # shared by both guests' switches in build turns
        if not isinstance(target.tunables, FileTunables):
            raise TargetError("the target's zfs module parameters are not a directory (FreeBSD's are sysctls): "
                              "its module is swapped and loaded again with options only on Linux")
        self.params = target.tunables
        self.loader = ModuleLoader(lambda argv, **kw: target.run(argv, **kw), self.params, log)
        # what is loaded: (build, module options); unknown (None) until the first load in a build A/B,
        # the guest's own build as it booted otherwise
        self.current: tuple[str | None, dict[str, str]] | None = None if builds else (None, {})
        self.original: dict[str, str] = {}       # each load-scope tunable changed -> its value before
        self.srcversions: dict[str, str] = {}     # build name -> the loaded module's srcversion
        self.versions: dict[str, str] = {}        # build name -> the loaded module's version string
        self.userland = ""                        # the machine's ZFS userland (`zfs version`): a side's without its own
        self.userlands: dict[str, str] = {}       # build name -> its own userland's version (`run --userland`)
        self.warnings: list[str] = []             # what check() found to say before the first unload
        self.loaded = ""                          # what is loaded, in words (for each case's log)
        self.swaps = 0

    def check(self) -> None:
        """Before anything runs: the module may be unloaded here (swap_refusals: refused, exit 2,
        nothing unloaded), and every build's modules are readable on the target."""
        refusals = swap_refusals(self.target)
        if refusals:
            raise Refused(f"the {self.where}'s zfs module will not be unloaded for a build A/B or a load-scope "
                          "tunable: " + "; ".join(refusals))
        res = self.target.run(["zfs", "version"])
        self.userland = res.stdout.splitlines()[0].strip() if res.ok and res.stdout.strip() else ""
        for b in self.builds.values():
            if b.userland is not None:
                own = b.userland.seen_from(self.target.host_root)
                res = self.target.run(own.argv(["zfs", "version"]))
                if not res.ok or not res.stdout.strip():
                    raise TargetError(f"build {b.name}: its userland's `zfs version` ({own.bin}/zfs) failed on the "
                                      f"{self.where}: {res.error_text()}")
                self.userlands[b.name] = res.stdout.splitlines()[0].strip()
            if b.modules is None:
                continue
            for m in ("spl.ko", "zfs.ko"):
                path = f"{self.target.host_root}{b.modules}/{m}"
                if not self.target.run(["test", "-r", path]).ok:
                    raise TargetError(f"build {b.name}: the {self.where} cannot read {path}"
                                      + (" (is the host's root shared with the guest? see `zfsperf guest status`)"
                                         if self.target.host_root else ""))
            # the module's version from its file (modinfo), so that a series the userland it will run
            # with does not speak is said before the first unload, not found in the case logs after
            ver = self.target.run(["modinfo", "-F", "version", f"{self.target.host_root}{b.modules}/zfs.ko"],
                                  log=proc.NULL_LOG)
            note = userland_note(ver.stdout.strip(), self.userland_of(b.name)) if ver.ok else None
            if note:
                self.warnings.append(f"build {b.name}: {note}")

    def load(self, name: str | None, options: dict[str, str] | None = None) -> None:
        """Make build `name` (None: the guest's own) the loaded one, with these load-scope
        tunables as module options and every other one this run changed at its value before
        (nothing to do if that is what is loaded)."""
        options = dict(options or {})
        if name is not None and name not in self.builds:
            raise InputError(f"no build named {name!r} (have: {', '.join(self.builds)})", field="build")
        if self.current == (name, options):
            return
        for k, v in options.items():
            if k not in self.original:
                self.original[k] = self.params.get(k)
                if self.journal is not None:
                    self.journal.record(module_spec(self.params), k, self.original[k], v)
        want = {k: self.original[k] for k in self.original if k not in options} | options
        b = self.builds.get(name) if name is not None else None
        if b is not None and b.modules is not None and self.journal is not None:
            others = sorted(n for n, x in self.builds.items() if x.modules is not None)
            self.journal.record(module_spec(self.params), BUILD_ENTRY, OWN_BUILD,
                                f"a build of the run ({', '.join(others)})")
        self.current = None
        self.target.userland = None     # between two builds: the machine's commands
        self.swaps += 1                 # counted first: a reload that fails half-way is restored too
        src = self.loader.reload(want, None if b is None or b.modules is None else f"{self.target.host_root}{b.modules}",
                                 what=f"build {name}" if name is not None else "the guest's own build")
        if name is not None:
            self.srcversions[name] = src
            if name not in self.versions:
                ver = self.target.run(["cat", "/sys/module/zfs/version"])
                self.versions[name] = ver.stdout.strip() if ver.ok else ""
                note = userland_note(self.versions[name], self.userland_of(name))
                if note and self.log is not None:
                    self.log.write(f"# build {name}: {note}")
        if b is not None and b.userland is not None:
            self.target.userland = b.userland.seen_from(self.target.host_root)
        which = (f"{'build ' + name if name is not None else 'its own build'}"
                 + (f" with {' '.join(f'{k}={v}' for k, v in options.items())}" if options else ""))
        self.pin.after_load(lambda argv: self.target.run(argv), self.params, f"{self.where}, {which}",
                            self.log, self.journal)
        self.loaded = f"{self.where}: {which}, srcversion {src}" + (
            f", its own userland {self.userlands.get(name, '')} ({self.target.userland.bin})"
            if self.target.userland is not None else "")
        self.current = (name, options)

    def userland_of(self, name: str) -> str:
        """The userland build `name` runs with: its own, or the machine's."""
        return self.userlands.get(name) or self.userland

    def restore(self) -> None:
        """The guest's own build again, each load-scope tunable at its value before (a no-op if
        nothing was reloaded)."""
        if self.swaps == 0:
            return
        self.current = None
        self.target.userland = None
        self.loader.reload(dict(self.original), what="the guest's own build back")
        if self.journal is not None:
            self.journal.forget(module_spec(self.params), BUILD_ENTRY)
            for k in self.original:
                self.journal.forget(module_spec(self.params), k)
            for k in self.pin.pinned:                 # the reload put each selector back at its default
                self.journal.forget(self.params.spec, k)
        self.current = (None, {})
        self.original = {}
        self.swaps = 0                            # restored: a second call does nothing


def swap_refusals(target: Target) -> list[str]:
    """Why the target's zfs module must not be unloaded, said before the first unload (empty: it may
    be): a pool imported that is not zfsperf's (unloading needs every pool exported, and zfsperf
    exports only its own), the root file system, /boot or a swap device on ZFS, or the module held
    by something else (a use count with no pool imported)."""
    pools = list_pools(target)
    out = [f"pool {p} is imported and is not zfsperf's (zfsperf exports only the pools it made)"
           for p in pools if pool_owner(target, p) is None]
    mounts = target.run(["cat", "/proc/mounts"], log=proc.NULL_LOG)
    for line in mounts.stdout.splitlines() if mounts.ok else []:
        f = line.split()
        if len(f) >= 3 and f[2] == "zfs" and f[1] in ("/", "/boot"):
            out.append(f"{f[1]} is on ZFS ({f[0]})")
    swaps = target.run(["cat", "/proc/swaps"], log=proc.NULL_LOG)
    for line in swaps.stdout.splitlines()[1:] if swaps.ok else []:
        dev = line.split()[0] if line.split() else ""
        if dev.startswith(("/dev/zd", "/dev/zvol/")):
            out.append(f"swap is on a ZFS volume ({dev})")
    if not out and not pools:         # an imported pool holds the module too: zfsperf's own are exported first
        ref = target.run(["cat", "/sys/module/zfs/refcnt"], log=proc.NULL_LOG)
        if ref.ok and ref.stdout.strip().isdigit() and int(ref.stdout.strip()) > 0:
            out.append(f"the zfs module is in use by something else (its use count is {ref.stdout.strip()} with "
                       "no pool of zfsperf's imported)")
    return out


def series(version: str) -> str | None:
    """The major.minor of a ZFS version string ("zfs-2.3.2-2~bpo12+2", "2.4.99-1"), or None."""
    m = re.search(r"(\d+)\.(\d+)", version)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def userland_note(module: str, userland: str) -> str | None:
    """What a build's module beside the userland it runs with deserves a word on: another series,
    whose ioctls the userland may not speak (None: the same series, or either unknown)."""
    a, b = series(module), series(userland)
    if a is None or b is None or a == b:
        return None
    return (f"its module is OpenZFS {module}, the userland it runs with is {userland} (series {a} against "
            f"{b}): a command the two disagree on fails, and the figure or the case that needs it; give the "
            "build its own (`--userland NAME=DIR`)")
