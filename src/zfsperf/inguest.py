"""`zfsperf guest run -- ARGS`: zfsperf itself inside the OpenZFS guest, as a local process.

This is how most users run zfsperf: installed on a machine with kernel OpenZFS, `--target auto`
finding /proc/spl/kstat/zfs and /sys/module/zfs/parameters, `zpool`/`zfs` run locally, tunables
journaled in a local file. The guest sees the host's root read-only over 9p with a tmpfs laid over
it (guest/init_script.py), so the host's own Python and zfsperf checkout run there unchanged, with
OpenZFS's userland from the guest build first on PATH.

- Results: `run -o DIR` (or the default ./zfsperf-results) is written in the guest to a fresh
  directory under the writable exchange share and moved to DIR on the host when zfsperf ends,
  however it ends; paths in the output are shown as their host paths.
- Signals: SIGINT, SIGTERM and SIGHUP to `zfsperf guest run` are passed on to zfsperf in the guest
  (its pid is in a pidfile there), which restores its tunables and removes its pools as it does
  on any machine; its exit status is this command's.
- A guest this command booted is stopped when it ends, however it ends (watched by the guard: kill -9
  included); a guest that was already up stays up.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from . import safepaths
from .errors import InputError, TargetError
from .guest.init_script import BIND_OWN_MODULES
from .guest.vm import Guest, GuestState

ROOT = "/hostroot"                                  # the host's root, as the guest mounts it
IN_GUEST = "/opt/zfsperf-openzfs/bin/zfsperf-in-guest"
# before the chroot: the guest's own modules bound where the chroot looks for them, if the boot's
# bind is missing (guest/init_script.py); the command runs either way
OWN_MODULES = BIND_OWN_MODULES + '; exec "$@"'
# before that: the host files the arguments name ($1 of them, then the command), each looked up in
# the guest's view. A file the guest looked for before the host had it stays missing there for
# the boot (overlayfs keeps the failed lookup over the 9p share, whose changes it is not told of):
# then the guest's cached names are dropped (5-8 s of Python imports over 9p after; only then)
FRESH = ('n=$1; shift; miss=; while [ "$n" -gt 0 ]; do [ -e "' + ROOT + '$1" ] || miss=1; shift; n=$((n - 1)); '
         'done; [ -z "$miss" ] || echo 2 > /proc/sys/vm/drop_caches; ')
# the guest mounts its own filesystems here, over the host's: a program or directory the guest
# must reach cannot live under them
SHADOWED = ("/proc", "/sys", "/dev", "/run", "/var/tmp")
OUTDIR_FLAGS = ("-o", "--outdir")


# the commands whose output directory lands on the host, and its default
OUTDIRS = {"run": "zfsperf-results", "bisect": "zfsperf-bisect"}


def split_outdir(args: list[str]) -> tuple[list[str], Path | None]:
    """For `run` and `bisect`: args with the output directory taken out, and that directory
    (resolved on the host; the command's default when none is given). Other commands: (args, None)."""
    if not args or args[0] not in OUTDIRS:
        return list(args), None
    if any(a == "--resume" or a.startswith("--resume=") for a in args):
        raise InputError("guest run cannot resume a results directory: the guest sees the host's files "
                         "read-only", field="--resume")
    out: list[str] = []
    dest = OUTDIRS[args[0]]
    i = 0
    while i < len(args):
        a = args[i]
        if a in OUTDIR_FLAGS:
            if i + 1 >= len(args):
                raise InputError(f"{a} needs a directory", field=a)
            dest = args[i + 1]
            i += 2
            continue
        if a.startswith("--outdir="):
            dest = a.split("=", 1)[1]
        elif a.startswith("-o") and len(a) > 2 and not a.startswith("--"):
            dest = a[2:]
        else:
            out.append(a)
        i += 1
    return out, Path(dest).expanduser().resolve()


def host_paths(args: list[str], cwd: str) -> list[str]:
    """The files and directories on this host that the arguments name (an argument, or an option's
    value after `=`, relative to cwd), and cwd: their real paths, as the guest sees them under ROOT."""
    out = [os.path.realpath(cwd)]
    for a in args:
        for v in (a, a.split("=", 1)[1] if a.startswith("-") and "=" in a else ""):
            if v and not v.startswith("-") and os.path.exists(os.path.join(cwd, v)):
                out.append(os.path.realpath(os.path.join(cwd, v)))
    return [p for p in dict.fromkeys(out) if not shadowed(p)]        # the guest's own mounts: not the host's


def held(command: str, draw: bool, tail: list[str], line: str) -> bool:
    """Whether a line the guest printed waits for the end: a run's summary from its "Log directory:"
    line on, so that the Report line of the report.html drawn here goes where the runner puts it. A
    bisect's lines never wait (its steps' runs each print one, and later steps' progress with them)."""
    return draw and command == "run" and bool(tail or line.startswith("Log directory:"))


def shadowed(path: str) -> str | None:
    """The guest mount that hides path from zfsperf inside the guest, or None."""
    for m in SHADOWED:
        if path == m or path.startswith(m + "/"):
            return m
    return None


class InsideRun:
    def __init__(self, lab: Guest, st: GuestState, say: Callable[[str], None] = print) -> None:
        self.lab, self.st, self.say = lab, st, say
        self.token = f"{os.getpid()}-{int(time.time() * 1000)}"
        self.pidfile = f"/run/zfsperf-guest/{self.token}.pid"
        self.proc: subprocess.Popen | None = None
        self.signals = 0

    def ssh_argv(self, command: list[str]) -> list[str]:
        return ["ssh", "-p", str(self.st.port), "-o", "BatchMode=yes", "-o", "ConnectTimeout=15",
                "-o", "ServerAliveInterval=15", *self.lab.ssh_options(), "root@127.0.0.1", "--",
                shlex.join(command)]

    def _forward(self, signum: int, _frame) -> None:
        self.signals += 1
        name = signal.Signals(signum).name[3:]
        if self.signals > 2 and self.proc is not None:           # a third signal: stop waiting for the guest
            self.proc.kill()
            return
        self.say(f"zfsperf guest run: passing SIG{name} on to zfsperf in the guest")
        subprocess.run(self.ssh_argv(["sh", "-c", f"kill -{name} $(cat {ROOT}{self.pidfile})"]),
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)

    def run(self, args: list[str]) -> int:
        cwd = os.getcwd()
        for what, path in (("the working directory", cwd), ("Python", sys.executable), ("zfsperf", str(Path(__file__).parents[1]))):
            m = shadowed(path)
            if m:
                raise InputError(f"{what} ({path}) is under {m}, which the guest mounts over: run from elsewhere",
                                 field="guest run")
        args, dest = split_outdir(args)
        xdir = Path(self.st.exchange) / self.token
        state = dest / "bisect.json" if dest is not None and args[0] == "bisect" else None
        if state is not None:                   # a bisect's state: resumed in the guest from a copy
            safepaths.check_place(dest, "--outdir", "the output directory")
        elif dest is not None:                  # where the results land on the host, checked as run does
            safepaths.check_own_dir(dest, "--outdir", "the output directory", safepaths.results_entry)
        draw = dest is not None and "--no-html" not in args
        tail: list[str] = []                      # the summary's last lines, held for the Report line
        if dest is not None:
            xdir.mkdir(parents=True)
            if state is not None and state.is_file():
                shutil.copy2(state, xdir / state.name)
            # report.html is drawn here, on the host, from the same records: under TCG, matplotlib's
            # import and pictures took a third of a short run's time in the guest
            args = [args[0], "-o", str(xdir), *(["--no-html"] if draw else []), *args[1:]]
        fresh = host_paths(args, cwd)
        command = ["sh", "-c", FRESH + OWN_MODULES, "sh", str(len(fresh)), *fresh,
                   "chroot", ROOT, IN_GUEST, self.pidfile, cwd, sys.executable, "-m", "zfsperf.cli", *args]
        old = {s: signal.signal(s, self._forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            # its own session: a Ctrl-C at the terminal reaches this process only, which passes it on,
            # instead of ending ssh and leaving zfsperf in the guest to finish unwatched
            self.proc = subprocess.Popen(self.ssh_argv(command), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         text=True, bufsize=1, start_new_session=True)
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                if dest is not None:
                    line = line.replace(str(xdir), str(dest))
                if held(args[0], draw, tail, line):
                    tail.append(line)             # after the Report line, where the runner puts it
                    continue
                sys.stdout.write(line)
                sys.stdout.flush()
            rc = self.proc.wait()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            if dest is not None:
                collected = self._collect(xdir, dest)
                if draw:
                    self._draw(collected)
            sys.stdout.write("".join(tail))
            sys.stdout.flush()
            subprocess.run(self.ssh_argv(["rm", "-f", f"{ROOT}{self.pidfile}"]), stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        if rc == 255:
            raise TargetError("zfsperf in the guest ended without an exit status (killed by a signal), or ssh to "
                              "the guest failed (exit 255): `zfsperf guest status` shows whether it is up")
        return rc

    def _draw(self, runs: list[Path]) -> None:
        """report.html of each results directory the guest wrote, drawn on the host."""
        from .report.export import write_results_dir
        for d in runs:
            if not (d / "run.json").is_file():
                continue
            try:
                html = write_results_dir(d)["html"]
            except Exception as e:  # noqa: BLE001 - the results are what counts, as in the runner
                self.say(f"warning: could not draw {d / 'report.html'}: {type(e).__name__}: {e}")
                continue
            sys.stdout.write(f"Report:\t\t{html}\n")
            sys.stdout.flush()

    def _collect(self, xdir: Path, dest: Path) -> list[Path]:
        """Move what zfsperf wrote in the guest to dest on the host; the directories moved."""
        moved: list[Path] = []
        try:
            entries = sorted(xdir.iterdir())
        except OSError:
            return moved
        if entries:
            dest.mkdir(parents=True, exist_ok=True)
        for e in entries:
            target = dest / e.name
            if e.name == "runs" and e.is_dir() and target.is_dir():     # a resumed bisect's: its new steps' runs
                moved += self._collect(e, target)
                continue
            if e.is_symlink() and target.is_symlink():          # "current": now the newest run
                target.unlink()
            elif e.name == "bisect.json" and target.is_file():  # the state it resumed from, now with its steps
                target.unlink()
            elif target.exists() or target.is_symlink():
                target = dest / f"{e.name}-guest{self.token}"
            if e.name == "bisect.json":                         # its steps' runs where they landed
                e.write_text(e.read_text().replace(str(xdir), str(dest)))
            shutil.move(str(e), str(target))
            if target.is_dir() and not target.is_symlink():
                moved += [target] if e.name != "runs" else [d for d in target.iterdir() if not d.is_symlink()]
        shutil.rmtree(xdir, ignore_errors=True)
        return moved


def guest_run(args: list[str], series: str, say: Callable[[str], None] = print) -> int:
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        raise InputError("guest run needs a zfsperf command after --, e.g. `zfsperf guest run -- run`",
                         field="guest run")
    if args[0] == "guest":
        raise InputError("guest run runs zfsperf inside the guest: `guest` is a host command", field="guest run")
    lab = Guest()
    st = lab.state()
    booted = st is None
    if st is None:                      # one booted for this command: stopped by the guard however it ends
        st = lab.up(series, say=say, watched=True)
    try:
        if not st.hostroot or not st.exchange:
            raise TargetError("the running OpenZFS guest has no view of the host's root (booted by an older "
                              "zfsperf, or its 9p share failed: see serial.log): `zfsperf guest down`, then again")
        return InsideRun(lab, st, say).run(args)
    finally:
        if booted:
            lab.down(say=say)
