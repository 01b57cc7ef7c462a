"""The fake target and the scripted workload: the runner's order, statuses, precision, interleave,
resume and signals tested in seconds, without ZFS (tests/test_lifecycle.py).

FakeTarget is a kernel-OpenZFS-shaped target with no kernel: arcstats replay output captured from
OpenZFS 2.3.2 (tests/fixtures/openzfs-2.3.2), tunables are files in a directory laid out like
/sys/module/zfs/parameters (the real FileTunables backend and the real journal), and the zpool/zfs
commands zfsperf runs are recorded in order and answered as the real tools answer a success. No pool
exists anywhere: what these tests check is what zfsperf does around a measurement, never a figure
of ZFS. Every real-ZFS path stays tested by the tests that use the session's zfs-fuse daemon.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from zfsperf import proc
from zfsperf.tunables import FileTunables
from zfsperf.pool import OWNER_PROP
from zfsperf.targets.base import Target
from zfsperf.targets.kstat import parse_named
from zfsperf.workloads.base import CaseContext, Figures, figure

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ARCSTATS = FIXTURES / "openzfs-2.3.2" / "kstat_arcstats_final.txt"

TUNABLES = {"zfs_txg_timeout": "5", "zfs_dirty_data_max": "4294967296", "zfs_recv_write_batch_size": "1048576"}


class LoggedTunables(FileTunables):
    """The real file backend, with each set written to the event list (the lifecycle order)."""

    def __init__(self, directory: str, events: list[tuple[Any, ...]]) -> None:
        super().__init__(directory)
        self.events = events

    def set(self, name: str, value: str) -> None:
        self.events.append(("set", name, str(value)))
        super().set(name, value)


class FakeTarget(Target):
    impl = "openzfs-linux"

    def __init__(self, root: Path, log: proc.CommandLog = proc.NULL_LOG) -> None:
        super().__init__(log)
        self.events: list[tuple[Any, ...]] = []        # every command, set and workload call, in order
        pdir = root / "parameters"
        pdir.mkdir(parents=True, exist_ok=True)
        for k, v in TUNABLES.items():
            (pdir / k).write_text(v + "\n")
        self.tunables = LoggedTunables(str(pdir), self.events)
        self.pools: dict[str, str] = {}               # name -> owner mark
        self.arcstats = parse_named(ARCSTATS.read_text(), "arcstats")
        self.closed = False

    def zfs_version(self) -> str:
        return "2.3.2 (fake: replayed kstats)"

    def kstat_sources(self) -> list[str]:
        return ["arcstats"]

    def kstat(self, name: str) -> dict[str, float] | None:
        return dict(self.arcstats) if name == "arcstats" else None

    def iostat_forms(self) -> list[str]:
        return []

    def close(self) -> None:
        self.closed = True

    def commands(self, *names: str) -> list[list[str]]:
        return [e[1] for e in self.events if e[0] == "run" and (not names or e[1][0] in names)]

    def run(self, argv: Sequence[str], *, stdin_file: str | None = None, timeout: float | None = None,
            log: proc.CommandLog | None = None, input: str | None = None,
            stdout_file: str | None = None) -> proc.Completed:
        argv = [str(a) for a in argv]
        self.events.append(("run", argv))
        out, rc = self._answer(argv)
        return proc.Completed(argv, rc, out, "" if rc == 0 else f"{argv[0]}: cannot do that", 0.001)

    def _answer(self, argv: list[str]) -> tuple[str, int]:
        cmd = argv[:2]
        if argv[0] == "truncate":                      # a sparse vdev file, as the real truncate makes it
            Path(argv[-1]).parent.mkdir(parents=True, exist_ok=True)
            with open(argv[-1], "ab") as f:
                f.truncate(int(argv[2]))
            return "", 0
        if cmd == ["zpool", "create"]:
            name = next(a for a in argv[2:] if not a.startswith("-") and "=" not in a and "/" not in a)
            owner = next((a.split("=", 1)[1] for a in argv if a.startswith(f"{OWNER_PROP}=")), "-")
            self.pools[name] = owner
            return "", 0
        if cmd == ["zpool", "destroy"]:
            return ("", 0) if self.pools.pop(argv[-1], None) is not None else ("", 1)
        if cmd == ["zpool", "list"]:
            return "".join(f"{n}\n" for n in self.pools), 0
        if cmd == ["zfs", "get"] and OWNER_PROP in argv:
            return f"{self.pools.get(argv[-1], '-')}\n", 0 if argv[-1].split("/")[0] in self.pools else 1
        return "", 0                                   # zfs create/set, rm of vdev files: done


class ScriptedWorkload:
    """A workload whose figures and failures the test writes: `script(ctx)` returns the figures
    (or raises what a real workload raises). Each call is an event ("workload", case, iteration)."""
    name = "scripted"
    headline = "throughput"
    series_headline = "workload_mibs"
    bandwidth_figure = None
    summary_figures = ["throughput"]
    directions: dict[str, int] = {}
    fields = {"level": ((int, float), True), "mode": (str, True)}

    def __init__(self, target: FakeTarget, script: Callable[[CaseContext], Figures] | None = None) -> None:
        self.target = target
        self.script = script or (lambda ctx: {"throughput": figure(float(ctx.fields.get("level", 100)), "MiB/s")})

    def validate(self, test: dict[str, Any], where: Callable[[str], dict]) -> None:
        pass

    def prepare(self, test: dict[str, Any], target: Target, vdev_dir: Path, progress: Any) -> Any:
        return None

    def run(self, ctx: CaseContext) -> Figures:
        self.target.events.append(("workload", ctx.case_id, ctx.iteration))
        return self.script(ctx)

    def active_bytes(self, fields: dict[str, Any], prepared: Any) -> int | None:
        return None

    def cycle(self, ctx: CaseContext, figures: Figures) -> tuple[float | None, str]:
        return None, "one call"


def runfile(path: Path, body: str, *, iterations: int = 3) -> Path:
    path.write_text(f"[defaults]\niterations = {iterations}\nwarmup = 0\ntimeout = \"1m\"\n"
                    "[defaults.pool]\nvdevs = 1\nvdev_size = \"64M\"\n"
                    "[defaults.steady]\nmode = \"off\"\n\n" + body)
    return path


def wait_until(cond: Callable[[], bool], timeout: float = 5.0) -> bool:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def interrupt_self(signum: int) -> None:
    """What a user's Ctrl-C (or a hangup) does to the run: the signal, to this process."""
    os.kill(os.getpid(), signum)
