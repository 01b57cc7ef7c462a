"""On-CPU profiles of a case (`zfsperf run --profile`), taken with the system's own profiler: Linux
`perf record` on the software `cpu-clock` event (it works in VMs and under QEMU TCG, where hardware
counters do not), at RATE_HZ, with call chains, timed on CLOCK_MONOTONIC so that each sample can be
given to the round it fell in.

perf records the whole machine (one event per CPU: attached to zfs-fuse's hundred-odd threads one
by one, perf itself used 60-130 % of a CPU); which samples a profile keeps is the target's to say
(Target.profile_scope): zfs-fuse's daemon's, where its ZFS code runs; all of them on a kernel
OpenZFS, whose ZFS code runs in kernel threads and in the callers' system calls (an idle CPU's
excepted). A profile covers the counted part of an iteration only (from the lifecycle's measuring()
to the workload's end: no warm-up, no preconditioning), and in cases that take turns the samples of
A's rounds and of B's rounds are kept apart by the rounds' times.

Folded stacks, one line per distinct stack, "comm;outermost;...;innermost COUNT" (the format of
Brendan Gregg's stackcollapse scripts, which flame graph tools read). A frame perf cannot name (a
stripped binary: Debian's zfs-fuse and libz) is named by its object file, "[libz.so.1.2.13]", so
that its share is still counted; repeated frames of one object in a row are one frame.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import guard, proc

if TYPE_CHECKING:
    from ..targets.base import Target

EVENT = "cpu-clock"
RATE_HZ = 99                    # the ZFS Test Suite's perf rate: off any timer's multiple
STOP_TIMEOUT = 60.0

_HEAD = re.compile(r"^(?P<comm>\S.*?)\s+(?P<tid>\d+)\s+(?P<t>\d+\.\d+):\s*$")
_FRAME = re.compile(r"^\s+(?P<ip>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")


@dataclass(frozen=True)
class Sample:
    t: float                        # CLOCK_MONOTONIC seconds
    stack: tuple[str, ...]          # the thread's comm, then the frames from the outermost in


def frame_name(sym: str, dso: str) -> str:
    """A frame's name: its symbol, else its object file's name in brackets."""
    if sym and sym != "[unknown]":
        return sym
    if dso and dso != "[unknown]":
        base = os.path.basename(dso)
        return base if base.startswith("[") else f"[{base}]"
    return "[unknown]"


def parse_script(lines: Any) -> list[Sample]:
    """Samples from `perf script -F comm,tid,time,ip,sym,dso` (a sample's header line, its call
    chain from the innermost frame out, a blank line). An idle CPU's samples (tid 0) are left out:
    a profile's shares are of the CPU time something used."""
    out: list[Sample] = []
    head: re.Match[str] | None = None
    frames: list[str] = []

    def close() -> None:
        if head is None or head["tid"] == "0":      # an idle CPU (the swapper task): not a cost
            return
        stack: list[str] = [head["comm"]]
        for name in reversed(frames):
            if stack[-1] != name or len(stack) == 1:
                stack.append(name)
        out.append(Sample(float(head["t"]), tuple(stack)))

    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            close()
            head, frames = None, []
            continue
        m = _HEAD.match(line)
        if m:
            close()
            head, frames = m, []
            continue
        f = _FRAME.match(line)
        if f and head is not None:
            frames.append(frame_name(f["sym"], f["dso"]))
    close()
    return out


def fold(samples: list[Sample], spans: list[tuple[float, float]] | None = None) -> Counter[str]:
    """Folded stacks of the samples (those inside one of the spans, when spans are given)."""
    out: Counter[str] = Counter()
    for s in samples:
        if spans is None or any(a <= s.t <= b for a, b in spans):
            out[";".join(s.stack)] += 1
    return out


def write_folded(path: Path, counts: Counter[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{stack} {n}\n" for stack, n in sorted(counts.items())), encoding="utf-8")


def read_folded(path: Path) -> Counter[str]:
    out: Counter[str] = Counter()
    for line in path.read_text(encoding="utf-8").splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit():
            out[stack] += int(n)
    return out


def add_folded(path: Path, counts: Counter[str]) -> None:
    """Add counts into the folded file at path (a case's iterations, merged)."""
    write_folded(path, (read_folded(path) if path.is_file() else Counter()) + counts)


def functions(counts: Counter[str]) -> Counter[str]:
    """Each function's samples, inclusive (a stack counts once for each function it holds; the
    thread's name at the root is not a function)."""
    out: Counter[str] = Counter()
    for stack, n in counts.items():
        for f in set(stack.split(";")[1:]):
            out[f] += n
    return out


def leaves(counts: Counter[str]) -> Counter[str]:
    """Each function's own samples (self: the stacks it is the innermost frame of)."""
    out: Counter[str] = Counter()
    for stack, n in counts.items():
        frames = stack.split(";")
        if len(frames) > 1:
            out[frames[-1]] += n
    return out


def case_summary(run_path: Path, details: list[dict[str, Any]], top: int = 5) -> dict[str, Any] | None:
    """A case's profile over its iterations, for the report: samples, what was profiled, the case's
    folded file and the functions with the largest share (None: the case was not profiled)."""
    have = [d for d in details if d.get("folded") and (run_path / d["folded"]).is_file()]
    if not have:
        why = next((d["unavailable"] for d in details if d.get("unavailable")), None)
        return {"unavailable": why} if why else None
    counts: Counter[str] = sum((read_folded(run_path / d["folded"]) for d in have), Counter())
    total = sum(counts.values())
    out: dict[str, Any] = {"samples": total, "iterations": len(have), "scope": have[0].get("scope"),
                           "folded": re.sub(r"\.i\d+\.folded$", ".folded", have[0]["folded"]),
                           "top": [[f, round(100.0 * n / total, 1)] for f, n in functions(counts).most_common(top)]
                           if total else []}
    if any(d.get("shared") for d in have):
        out["shared"] = True
    return out


def line(summary: dict[str, Any] | None) -> str | None:
    """One line for a report: the profile's size and where the CPU went most."""
    if not summary:
        return None
    if summary.get("unavailable"):
        return f"profile: not taken ({summary['unavailable']})"
    both = ", both sides at once" if summary.get("shared") else ""
    most = "; ".join(f"{f} {pct:g} %" for f, pct in summary["top"])
    return (f"profile: {summary['samples']} samples in {summary['iterations']} iterations of {summary['scope']}{both} "
            f"({summary['folded']}); largest shares (inclusive): {most}")


def named_share(counts: Counter[str]) -> float:
    """The share of frames perf named by symbol (not "[object]" or "[unknown]")."""
    total = named = 0
    for stack, n in counts.items():
        frames = stack.split(";")[1:]
        total += n * len(frames)
        named += n * sum(1 for f in frames if not f.startswith("["))
    return named / total if total else 0.0


class Profiler:
    """One `perf record` over the counted part of one iteration. Nothing it does fails a case: a
    profiler that cannot start or read back says why in the record."""

    def __init__(self, target: "Target", data: Path, log: proc.CommandLog) -> None:
        self.data, self.log = data, log
        self.scope = target.profile_scope()
        self.p: subprocess.Popen | None = None
        self.error: str | None = None
        self.t0 = self.seconds = 0.0         # when perf started; how long it ran
        self.cpu_s: float | None = None      # the CPU perf record itself used (its cost, in part)
        if self.scope is None:
            self.error = (f"{target.impl} is reached through a transport: profiles are taken on the target's own "
                          "machine (run zfsperf there, e.g. `zfsperf guest run -- run --profile ...`)"
                          if target.remote else f"{target.impl}: no process to profile (its daemon is not running)")
        elif shutil.which("perf") is None:
            self.error = "perf is not installed (Debian package linux-perf)"

    def start(self, procs: proc.ProcessSet) -> None:
        if self.error is not None:
            return
        self.data.parent.mkdir(parents=True, exist_ok=True)
        argv = ["perf", "record", "-e", EVENT, "-F", str(RATE_HZ), "-g", "-k", "CLOCK_MONOTONIC", "-q", "-a",
                "-o", str(self.data)]
        self.log.write(f"$ {' '.join(argv)} &")
        guard.ready()
        self.p = procs.add(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.PIPE, start_new_session=True,
                                            env=proc.c_locale_env()))
        guard.watch(self.p)
        self.t0 = time.monotonic()
        time.sleep(0.2)                     # perf attaches before the first round
        if self.p.poll() is not None:
            self.error = f"perf record ended at once: {self._stderr()}"

    def _stderr(self) -> str:
        assert self.p is not None
        err = self.p.stderr.read().decode(errors="replace") if self.p.stderr else ""
        return " ".join(err.split())[:300] or f"exit status {self.p.returncode}"

    def stop(self) -> list[Sample]:
        """Stop perf record (SIGINT: it writes its file) and read its samples back."""
        if self.p is None or self.error is not None or self.scope is None:
            return []
        if self.p.poll() is None:
            self.measure_own_cpu()
            self.p.send_signal(signal.SIGINT)
        try:
            self.p.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.stop_pid(self.p.pid, proc=self.p, group=True)
            self.error = f"perf record did not stop within {STOP_TIMEOUT:g} s"
            return []
        if not self.data.is_file():
            self.error = f"perf record wrote no data: {self._stderr()}"
            return []
        text = self.data.with_suffix(".script")
        try:
            with open(text, "wb") as f:
                res = proc.run(["perf", "script", "-F", "comm,tid,time,ip,sym,dso", "-i", str(self.data),
                                *self.scope.select], log=self.log, stdout=f, timeout=300)
            if not res.ok:
                self.error = f"perf script failed: {res.error_text()[:300]}"
                return []
            with open(text, encoding="utf-8", errors="replace") as f:
                return parse_script(f)
        finally:
            for p in (text, self.data, self.data.with_name(self.data.name + ".old")):
                p.unlink(missing_ok=True)

    def measure_own_cpu(self) -> float | None:
        """perf record's own share of one CPU since it started, in % (read while it still runs;
        the kernel's sampling interrupts are not in it), kept for describe()."""
        if self.p is None or self.p.poll() is not None:
            return None
        self.cpu_s = proc.cpu_seconds(self.p.pid)
        self.seconds = time.monotonic() - self.t0
        return 100.0 * self.cpu_s / self.seconds if self.cpu_s is not None and self.seconds > 0 else None

    def discard(self) -> None:
        """Stop perf record and drop what it wrote (a case that failed has no profile)."""
        if self.p is not None and self.p.poll() is None:
            proc.stop_pid(self.p.pid, proc=self.p, group=True)
        for p in (self.data, self.data.with_name(self.data.name + ".old")):
            p.unlink(missing_ok=True)

    def describe(self) -> dict[str, Any]:
        """How the profile was taken, for the record."""
        out = {"tool": "perf record", "event": EVENT, "rate_hz": RATE_HZ, "call_graph": "frame pointers",
               "scope": self.scope.what if self.scope else None}
        if self.cpu_s is not None and self.seconds > 0:       # perf's own share of one CPU while it ran
            out["perf_cpu_pct"] = round(100.0 * self.cpu_s / self.seconds, 2)
        return out
