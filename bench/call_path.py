#!/usr/bin/env python3
"""How far one side of an A/B travels through zfsperf's code before its workload starts (issue 85).

Runs, in this process, two small receive tests on the embedded zfs-fuse through `zfsperf run`: a
single case and an A/B whose sides take turns (`duet = "turns"`). When a side's `zfs receive` starts,
the Python stack is taken; its frames inside zfsperf down to the call that spawns the process are
that side's path, from the command line and from `CaseRunner.iterate` (the one iteration body).
Printed for each: the calls (frames), the modules they cross, and how often the path climbs back up the layers table of
docs/architecture.md (a call into a module of a higher layer than its caller's). Goal of issue 85: a
turns side at most 12 calls. Nothing is judged: a figure of the code's shape, taken on demand.
Usage: bench/call_path.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from test_layers import layer_of, layers_table  # noqa: E402

from zfsperf import cli  # noqa: E402

RUNFILE = """
[defaults]
iterations = 1
warmup = 0
[defaults.pool]
vdevs = 1
vdev_size = "256M"
[defaults.steady]
mode = "off"
[[test]]
name = "{name}"
workload = "receive"
corpus = {{ kind = "random", size = "8M", seed = 3 }}
threads = 1
duration = "1s"
{extra}
"""


def path_of(name: str, extra: str, work: Path) -> list[tuple[str, str]]:
    """(module, function) from CaseRunner.iterate to the spawn of the first `zfs receive`."""
    seen: list[list[tuple[str, str]]] = []
    real = subprocess.Popen.__init__

    def spy(self, args, *a, **kw):              # type: ignore[no-untyped-def]
        argv = [str(x) for x in args] if isinstance(args, (list, tuple)) else [str(args)]
        if not seen and "receive" in argv:
            frames = []
            for f in traceback.extract_stack()[:-1]:
                p = Path(f.filename)
                if "zfsperf" in p.parts and p.suffix == ".py" and "src" in p.parts:
                    rel = p.relative_to(ROOT / "src").with_suffix("")
                    frames.append((".".join(rel.parts), f.name))
            seen.append(frames)
        real(self, args, *a, **kw)

    rf = work / f"{name}.toml"
    rf.write_text(RUNFILE.format(name=name, extra=extra))
    subprocess.Popen.__init__ = spy            # type: ignore[method-assign]
    try:
        rc = cli.main(["run", "-q", "-r", str(rf), "-o", str(work / name), "--no-history", "--no-html",
                       "--check", "off", "-d", str(work / "vdev")])
    finally:
        subprocess.Popen.__init__ = real       # type: ignore[method-assign]
    if rc != 0 or not seen:
        raise SystemExit(f"{name}: the run exited {rc}" + ("" if seen else ", and no zfs receive started"))
    return seen[0]


def main() -> None:
    table = layers_table((ROOT / "docs" / "architecture.md").read_text())
    with tempfile.TemporaryDirectory(prefix="zfsperf-callpath-", dir="/var/tmp") as tmp:
        work = Path(tmp)
        os.environ.setdefault("ZFSPERF_STATE", str(work / "state"))
        rows = [("a single case", path_of("single", "", work)),
                ("a side taking turns", path_of("turns", 'duet = "turns"\ndataset = { "zfsperf:arm" = ["a", "b"] }',
                                                work))]
    for what, whole in rows:
        for where, frames in (("from the command line", whole),
                              ("from the iteration body", whole[next((i for i, (m, fn) in enumerate(whole)
                                                                      if (m, fn) == ("zfsperf.case", "iterate")), 0):])):
            modules = list(dict.fromkeys(m for m, _ in frames))
            layers = [layer_of(m, table) for m, _ in frames]
            climbs = sum(1 for a, b in zip(layers, layers[1:]) if a is not None and b is not None and b < a)
            print(f"{what}, {where}: {len(frames)} calls in {len(modules)} modules, climbing back up {climbs} times")
        print("    " + " → ".join(f"{m.removeprefix('zfsperf.')}.{fn}" for m, fn in whole))


if __name__ == "__main__":
    main()
