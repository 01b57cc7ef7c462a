"""Setting a load-scope tunable: the zfs module loaded again with it as a module option.

A parameter read only when the module loads (sysfs mode 0444, or zfs.4 "only enforced at module
load time") changes nothing when written at run time. Its value is set the only way that works:
`rmmod zfs spl`, then `modprobe zfs NAME=VALUE` (or `insmod` of a build's spl.ko and zfs.ko with
the option), and the value read back from /sys/module/zfs/parameters. Only zfsperf's own guest
allows it (opentarget.reloads_modules): the unload fails while any pool is imported, and a reload
puts every parameter back at its load-time default. Parameters derived at load from the option
(zfs_dirty_data_max from zfs_dirty_data_max_percent) must follow it, so nothing is written back;
in the guest no one but zfsperf sets parameters, and its own runtime values are set per case
after the reload and restored before the next.

ModuleLoader does one reload. The journal's backend for a load-scope value (backend.py,
`kind = "module"`) uses it: a zfsperf killed with -9 while the module had a case's value leaves a
journal entry, and the next start loads the module again with the value it had before."""

from __future__ import annotations

import time
from typing import Callable, Protocol

from .. import proc
from ..errors import TargetError

Run = Callable[..., proc.Completed]


class Params(Protocol):
    """The module's parameters as a backend reads them (backend.FileTunables)."""
    def read_all(self) -> dict[str, str]: ...


UNLOAD_WAIT_S = 30          # a module still held just after its last pool went
# the modules of one OpenZFS build in the order they load (each after those it needs: modinfo's
# "depends" of 2.1.11's); 2.2 and later build two, spl and zfs, and 2.1 seven more between them
LOAD_ORDER = ("spl", "znvpair", "zcommon", "zunicode", "zavl", "icp", "zlua", "zzstd", "zfs")


class ModuleLoader:
    """Unload and load the zfs module on a machine reached through `run`, with module options
    (every other parameter at its load-time default again)."""

    def __init__(self, run: Run, params: Params, log: proc.CommandLog | None = None) -> None:
        self._run, self.params, self.log = run, params, log

    def _sh(self, argv: list[str], what: str) -> str:
        res = self._run(argv, timeout=600)
        if not res.ok:
            raise TargetError(f"{what}: {' '.join(argv)}: {res.error_text()}")
        return res.stdout

    def _unload(self) -> None:
        """rmmod zfs, then the modules between (a 2.1 build's), then spl. Just after a pool is
        destroyed the module is still held for a moment (rmmod: Resource temporarily
        unavailable): tried again for up to UNLOAD_WAIT_S."""
        loaded = self._sh(["cat", "/proc/modules"], "reading the loaded modules")
        names = {ln.split()[0] for ln in loaded.splitlines() if ln.strip()}
        for m in reversed(LOAD_ORDER):
            if m not in names:
                continue
            deadline = time.monotonic() + UNLOAD_WAIT_S
            while True:
                res = self._run(["rmmod", m], timeout=600)
                if res.ok:
                    break
                if time.monotonic() > deadline:
                    raise TargetError(f"unloading {m} (is a pool still imported?): rmmod {m}: {res.error_text()} "
                                      f"(for {UNLOAD_WAIT_S} s)")
                time.sleep(1)

    def reload(self, options: dict[str, str], modules: str | None = None, what: str = "the zfs module") -> str:
        """Load the module again with options (modules: a directory holding a build's spl.ko and
        zfs.ko, and a 2.1 build's modules between them, as the machine sees it; None: the
        installed one, by modprobe). Each option must
        read back as given. Every other parameter is at its load-time default again, derived
        ones included (zfs_dirty_data_max from zfs_dirty_data_max_percent): the ones that read
        differently are logged. Returns the loaded module's srcversion."""
        before = self.params.read_all()
        self._unload()
        args = [f"{k}={v}" for k, v in options.items()]
        if modules is None:
            self._sh(["modprobe", "zfs", *args], f"loading {what}")
        else:
            have = set(self._sh(["ls", modules], f"listing {what}'s modules").split())
            for m in LOAD_ORDER:
                if m in ("spl", "zfs") or f"{m}.ko" in have:
                    self._sh(["insmod", f"{modules}/{m}.ko", *(args if m == "zfs" else [])], f"loading {what}")
        after = self.params.read_all()
        for k, v in options.items():
            if after.get(k) != v:
                raise TargetError(f"tunable {k} reads back {after.get(k)} after loading the zfs module with {k}={v}")
        moved = [f"{k} {v} -> {after[k]}" for k, v in before.items()
                 if k not in options and k in after and after[k] != v]
        if self.log:
            self.log.write(f"# module reloaded ({what}) with {' '.join(args) or 'no options'}"
                           + (f"; parameters that read differently now (derived from an option, or written "
                              f"at run time before): {', '.join(moved)}" if moved else ""))
        return self._sh(["cat", "/sys/module/zfs/srcversion"], "reading the module's srcversion").strip()
