"""`zfsperf ab`: an A/B of one change in one line, no runfile. The change (a dataset property, or a
module tunable, two values) and a workload become a runfile of one test in the most sensitive
design the change allows -- the two sides taking turns on one pool, round by round, where it can;
interleaved blocks of whole iterations where it cannot (a pool-scope tunable) -- checked by the
runfile loader like any other, run, and judged by compare. `--runfile-out` writes that runfile, so
the one-liner is the start of a runfile, never a second way of describing a test."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import safepaths
from .errors import InputError, shown
from .dryrun import too_few_pairs
from .report.abstats import MIN_BLOCKS
from .runfile import Runfile, loads

CHANGE_RE = re.compile(r"^([A-Za-z0-9_.:@+-]+)=([^,]+),([^,]+)$")
FIO_RW = ("read", "write", "randread", "randwrite", "rw", "randrw")
WORKLOADS = ("receive", *(f"fio:{rw}" for rw in FIO_RW))

_HEAD = '''# written by `zfsperf {argv}`: an A/B of {name} = {a} against {b}, {design}
[defaults]
iterations = {iterations}
warmup = 1
timeout = "20m"

[defaults.pool]
layout = "stripe"
vdevs = 2
vdev_size = "2G"
prefill = true

[defaults.steady]
mode = "record"
interval = 0.4

[[test]]
name = "ab"
description = "{name} = {a} (A) against {b} (B)"
tags = ["ab"]
'''

_RECEIVE = '''workload = "receive"
corpus = {{ kind = "random", size = "{size}" }}
threads = 1
io_size = "{io_size}"
'''

_FIO = '''workload = "fio"
rw = "{rw}"
bs = "{bs}"
size = "{size}"
runtime = {runtime}
'''


@dataclass(frozen=True)
class Change:
    kind: str           # "dataset" or "tunables"
    name: str
    a: str
    b: str


def parse_change(text: str, kind: str, field: str) -> Change:
    m = CHANGE_RE.match(text.strip())
    if not m:
        raise InputError(f"expected NAME=A,B (two values, e.g. recordsize=128K,1M), got {shown(text)}", field=field)
    name, a, b = m.group(1), m.group(2).strip(), m.group(3).strip()
    if a == b:
        raise InputError(f"{name}: A and B are the same value ({a}): an A/A is `zfsperf run` of one value twice, "
                         "not an A/B", field=field)
    return Change(kind, name, a, b)


def _value(v: str) -> str:
    """A TOML value as the runfile loader takes it: a whole number bare, else a quoted string."""
    return v if v.isdigit() else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


def runfile_text(change: Change, workload: str, *, iterations: int, size: str, turns: bool, argv: str) -> str:
    """The runfile of the A/B: one test, its two sides the change's values."""
    if workload not in WORKLOADS:
        raise InputError(f"--workload takes one of {', '.join(WORKLOADS)}, not {shown(workload)}", field="--workload")
    design = ("the two sides taking turns on one pool (duet = \"turns\")" if turns else
              "in interleaved blocks (ab = true)")
    text = _HEAD.format(argv=argv, name=change.name, a=change.a, b=change.b, design=design, iterations=iterations)
    if workload == "receive":
        text += _RECEIVE.format(size=size, io_size="1G")
    else:
        rw = workload.split(":", 1)[1]
        text += _FIO.format(rw=rw, bs="4k" if rw.startswith("rand") else "128k", size=size, runtime=4)
    text += 'duet = "turns"\n' if turns else "ab = true\n"
    text += f"{change.kind} = {{ {_key(change.name)} = [{_value(change.a)}, {_value(change.b)}] }}\n"
    return text


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else f'"{name}"'


# where an error in the runfile `ab` makes comes from on its command line: a runfile field's
# first part -> the option that set it
_OPTION = {"corpus": "--size", "size": "--size", "pool": "--size", "iterations": "-I", "workload": "--workload",
           "rw": "--workload", "bs": "--workload", "runtime": "--workload"}
_CASE_ID = re.compile(r"^ab( [^:]*)?: ")


def blamed(e: InputError, change: Change, source: str) -> InputError:
    """An error in the runfile `ab` made (named source), told as an error in what the user typed:
    the option or the change that set the field, never a line of a runfile they did not write."""
    if e.file != source:
        return e
    field = (e.field or "").split(".", 1)[-1] if (e.field or "").startswith(("test[", "defaults.")) else e.field or ""
    head = field.split(".", 1)[0]
    if head in ("dataset", "tunables", "duet", "ab"):
        where = "--tunable" if change.kind == "tunables" else f"{change.name}={change.a},{change.b}"
    else:
        where = _OPTION.get(head, f"the runfile ab writes ({field}; --runfile-out FILE keeps it)")
    msg = _CASE_ID.sub("", e.message)
    if msg.startswith(f"{change.name}: "):
        msg = msg[len(change.name) + 2:]
    return InputError(msg, field=where)


def build(change: Change, workload: str, *, iterations: int, size: str, argv: str) -> tuple[str, Runfile, str]:
    """The most sensitive design the change allows: turns, unless the loader refuses them for it
    (a pool-scope tunable, a property a duet cannot hold); then interleaved blocks. Returns the
    runfile text, the loaded runfile and the design in words; an input error, told in the terms of
    the command line, when neither holds."""
    source = f"zfsperf {argv}"
    text = runfile_text(change, workload, iterations=iterations, size=size, turns=True, argv=argv)
    try:
        return text, loads(text, source), "turns"
    except InputError as turns_refused:
        text = runfile_text(change, workload, iterations=iterations, size=size, turns=False, argv=argv)
        try:
            return text, loads(text, source), f"interleaved blocks (turns refused: {turns_refused.message})"
        except InputError as e:
            raise blamed(e, change, source) from None


def run_ab(change_text: str | None, tunable: str | None, *, workload: str, iterations: int, size: str,
           runfile_out: str | None, outdir: str, target: str, dry_run: bool, no_history: bool, gate: str | None,
           argv: list[str], run: Callable[[list[str], str, str], int], main: Callable[[list[str]], int]) -> int:
    """`zfsperf ab`: the runfile made and checked, then `run` on its text (named by the command
    line, or by --runfile-out's file, never a temporary file) and `compare` through the command
    line's own `main`, as a user would type them (the runfile is in run.json either way). An error
    the run finds in the runfile is told as an error in the command line's option."""
    if (change_text is None) == (tunable is None):
        raise InputError("give one change: PROPERTY=A,B (a dataset property) or --tunable NAME=A,B", field="change")
    if iterations < 1:
        raise InputError("-I takes a whole number >= 1", field="-I")
    change = (parse_change(change_text, "dataset", "change") if change_text else
              parse_change(str(tunable), "tunables", "--tunable"))
    command = " ".join(shlex.quote(a) for a in ["ab", *argv[1:]])
    text, rf, design = build(change, workload, iterations=iterations, size=size, argv=command)
    print(f"ab: {change.name} = {change.a} (A) against {change.b} (B), {workload}, {iterations} pairs, "
          f"design: {design}")
    if iterations < MIN_BLOCKS and rf.tests[0].turns and not dry_run:      # blocks are raised to MIN_BLOCKS
        print(f"ab: warning: -I {iterations}: {too_few_pairs(iterations)}")
    source = runfile_out or f"zfsperf {command}"
    if runfile_out:
        safepaths.check_place(runfile_out, "--runfile-out", "the runfile")
        Path(runfile_out).write_text(text)
        print(f"ab: runfile written to {runfile_out} (`zfsperf run -r {runfile_out}` runs it again)")
    try:
        rc = run(["run", "-r", source, "-o", outdir, "--target", target, *(["--dry-run"] if dry_run else []),
                  *(["--no-history"] if no_history else [])], text, source)
    except InputError as e:
        raise blamed(e, change, source) from None
    if rc != 0 or dry_run:
        return rc
    print()
    return main(["compare", str(Path(outdir) / "current"), "--no-history",
                 *(["--fail-on-regression", gate] if gate else [])])
