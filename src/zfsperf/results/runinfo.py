"""run.json: how a run's results were obtained (versions, host, target, runfile, selection, pool
layouts, every tunable before and after), in results format FORMAT_VERSION."""

from __future__ import annotations

import platform
import sys
from typing import Any

from .. import __version__, proc
from ..errors import ZfsperfError
from ..redact import redact_argv
from ..runfile import Case, Runfile
from ..targets.base import Target
from .record import RunRecord


def read_tunables(target: Target, names: list[str]) -> dict[str, str | None]:
    values = target.read_tunables()                    # one read for hundreds (ssh targets)
    out: dict[str, str | None] = {}
    for n in names:
        if n in values:
            out[n] = values[n]
            continue
        try:
            out[n] = target.get_tunable(n)
        except ZfsperfError:
            out[n] = None
    return out


def run_info(rf: Runfile, target: Target, cases: list[Case], t_start: float, tun_names: list[str], *,
             argv: list[str], selection: dict[str, Any], vdev_dir: str) -> RunRecord:
    fio = proc.run(["fio", "--version"])
    return RunRecord(
        zfsperf_version=__version__, command_line=redact_argv(argv), host=platform.node(),
        os=platform.platform(), kernel=platform.release(), python=sys.version.split()[0],
        target=target.info(), fio_version=fio.stdout.strip() if fio.ok else None, start=t_start,
        runfile={"source": rf.source, "text": rf.text}, selection=selection, params=rf.params,
        vdev_dir=vdev_dir, pools={t.name: t.pool.describe() for t in {c.test.name: c.test for c in cases}.values()},
        cases=[c.id for c in cases], tunables={"before": read_tunables(target, tun_names), "after": None})
