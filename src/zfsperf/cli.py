"""zfsperf's command line: the entry point, its dispatch and the shorter command bodies (the options:
cliargs.py; the longer bodies: abline, comparecmd, historycmd, guestcmd, steadycmd)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from . import __version__
from .buildref import BuildRef
from .errors import InputError, ZfsperfError, shown
from .redact import redact, redact_argv
from .cliargs import USAGE, build_parser
from .units import ChangeVerdict, parse_size


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--version"]:       # the checkout alone: the parser's tables import the run's model
        print(version_line(), end="")                   # (15 s of a `guest run -- --version` under TCG)
        return 0
    args = build_parser().parse_args(argv)
    try:
        if args.cmd is None:                # `zfsperf` alone: what to type, never a benchmark
            print(version_line() if args.version else USAGE, end="" if args.version else None)
            return 0
        if args.cmd == "run":
            return cmd_run(args, argv)
        if args.cmd == "ab":
            return cmd_ab(args, argv)
        return {"list": cmd_list, "info": cmd_info, "check": cmd_check, "lab": cmd_lab, "guest": cmd_guest, "corpus": cmd_corpus,
                "bisect": cmd_bisect, "fleet": cmd_fleet,
                "calibrate": cmd_calibrate,
                "history": cmd_history,
                "report": cmd_report, "compare": cmd_compare, "steady": cmd_steady}[args.cmd](args)
    except InputError as e:
        print(f"zfsperf: {redact(str(e))}", file=sys.stderr)
        return 2
    except ZfsperfError as e:
        print(f"zfsperf: {redact(str(e))}", file=sys.stderr)
        return e.exit_status
    except KeyboardInterrupt:
        print("zfsperf: interrupted", file=sys.stderr)
        return 3
    except BrokenPipeError:                 # `zfsperf … | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def version_line() -> str:
    """zfsperf's version and the git commit it runs from (and whether that has local changes)."""
    from .runinfo import checkout
    sw = checkout()
    commit = sw.get("commit")
    return f"zfsperf {__version__}" + (f" (commit {commit[:12]}{', with local changes' if sw.get('dirty') else ''})"
                                       if commit else "") + "\n"


def cmd_calibrate(args: argparse.Namespace) -> int:
    from . import calibrate

    def run_once(argv: list[str]) -> tuple[int, str | None]:
        code = cmd_run(build_parser().parse_args(["run", *argv]), ["run", *argv])
        current = Path(args.outdir) / "current"
        return code, str(current.resolve()) if current.exists() else None
    return calibrate.run(args, run_once)


def _tags(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def cmd_ab(args: argparse.Namespace, argv: list[str]) -> int:
    from . import abline
    return abline.run_ab(args.change, args.tunable, workload=args.workload, iterations=args.iterations,
                         size=args.size, runfile_out=args.runfile_out, outdir=args.outdir, target=args.target,
                         dry_run=args.dry_run, no_history=args.no_history, gate=args.fail_on_regression,
                         argv=argv, run=lambda a, text, name: cmd_run(build_parser().parse_args(a), argv,
                                                                      text=text, name=name), main=main)


def cmd_run(args: argparse.Namespace, argv: list[str], *, text: str | None = None, name: str | None = None) -> int:
    """`zfsperf run`; text: the runfile as text (zfsperf ab's, never written to a file), named name."""
    from .plan import Choice
    from .runner import Output, RunOptions, Runner, Storage
    if args.iterations is not None and args.iterations < 1:
        raise InputError("-I takes a whole number >= 1", field="-I")
    try:
        vdev_size = parse_size(args.vdev_size) if args.vdev_size else None
    except ValueError as e:
        raise InputError(str(e), field="-s") from None
    from .disks import disks_from_env
    from .runfile import parse_precision
    precision = parse_precision(args.precision, {"field": "--precision"}) if args.precision else None
    detect = parse_precision(args.detect, {"field": "--detect"}) if args.detect else None
    smoke = bool(getattr(args, "smoke", False))
    if smoke and (precision is not None or detect is not None):
        from .plan import smoke_refused
        raise smoke_refused("--precision" if precision is not None else "--detect")
    if args.arc_max is not None and not 16 <= args.arc_max <= 16384:
        raise InputError(f"--arc-max takes zfs-fuse's range, 16 to 16384 MB, not {args.arc_max}", field="--arc-max")
    disks = [] if args.files else disks_from_env()
    builds = _builds(getattr(args, "build", []) or [], args.target, getattr(args, "rebuild", False))
    _userlands(getattr(args, "userland", []) or [], builds, args.target)
    opts = RunOptions(
        choice=Choice(runfile=name or args.runfile, text=text, tags=_tags(args.tags), test=args.test, iterations=args.iterations,
                      defines=_defines(args.define), precision=precision,
                      interleave=args.interleave or detect is not None or bool(builds), seed=args.seed, detect=detect,
                      builds=builds, smoke=smoke),
        storage=Storage(target=args.target, tunables_dir=args.tunables_dir,
                        vdev_dir=_where_on_target(args.vdev_dir, args.target, "--vdev-dir"),
                        vdev_size=vdev_size, prefill=args.prefill, disks=disks, force=args.force,
                        arc_max_mb=args.arc_max),
        output=Output(outdir=args.outdir, keep_failed=args.keep_failed, verbose=args.verbose, quiet=args.quiet,
                      html=not args.no_html, store=None if args.no_history or smoke else (args.store or ""),
                      profile=args.profile, machine_class=_label(args.machine_class, "--class"),
                      fleet=_fleet_of(args)),
        resume=args.resume, cleanup=args.cleanup, dry_run=args.dry_run, check=args.check,
        argv=redact_argv(["zfsperf", *argv]), keep_signal_handlers=True,
        build_sources=_sources(args.target) if any(b.unbuilt() for b in builds.values()) else None)
    pidfile = getattr(args, "pidfile", None)
    if pidfile is None:
        return _run(opts, builds)
    from .fleetrun.hoststop import write_pidfile
    if not Path(pidfile).parent.is_dir():
        raise InputError(f"--pidfile {pidfile}: its directory does not exist", field="--pidfile")
    write_pidfile(Path(pidfile))
    try:
        return _run(opts, builds)
    finally:
        Path(pidfile).unlink(missing_ok=True)


def _run(opts: Any, builds: dict[str, BuildRef]) -> int:
    """The run (opts: runner.RunOptions). A build A/B says its rebuild floors last: one source built
    twice (--rebuild) keeps the A/A′'s for the later build verdicts of its tests; any other, those
    kept so far that hold its verdicts."""
    from .runner import Runner
    if builds:
        from .buildab import run_floors
        opts.closing = run_floors
    return Runner(opts).run()


def _fleet_of(args: argparse.Namespace) -> dict[str, str] | None:
    """run --fleet-id ID --fleet-host NAME (given by `zfsperf fleet run`, both or neither)."""
    fid, host = getattr(args, "fleet_id", None), getattr(args, "fleet_host", None)
    if fid is None and host is None:
        return None
    if not fid or not host:
        raise InputError("--fleet-id and --fleet-host go together (`zfsperf fleet run` gives both)",
                         field="--fleet-id" if not fid else "--fleet-host")
    return {"id": _label(fid, "--fleet-id") or "", "host": _label(host, "--fleet-host") or ""}


def _label(text: str | None, field: str) -> str | None:
    """A free-text label given on the command line: one line of printable text, or None."""
    if text is None:
        return None
    if not text.strip() or not text.isprintable() or len(text) > 200:
        raise InputError(f"takes one line of text (at most 200 characters), got {shown(text)}", field=field)
    return text.strip()


def _sources(target: str) -> Any:
    from .buildsource import Sources
    return Sources(target)


def _builds(items: list[str], target: str, rebuild: bool = False) -> dict[str, BuildRef]:
    """--build NAME=DIR, two or more: the sides of a build A/B, each a directory of an OpenZFS
    build's kernel modules (on this machine: its spl.ko and zfs.ko are there; over ssh the run
    checks them on the target before the first unload) or, on this machine, OpenZFS source (DIR or
    DIR@REV: buildsource.py; over ssh, source here compiled here for the host's kernel and copied
    there); checked before anything starts. rebuild: two sides, one source, the second compiled
    again in a build tree of its own (the A/A′ of the rebuild floor)."""
    if not items:
        if rebuild:
            raise InputError("--rebuild compiles one source twice: give it as two builds (--build a=DIR@REV "
                             "--build b=DIR@REV)", field="--rebuild")
        return {}
    from .buildsource import is_modules_dir, is_source_here, source_ref
    out: dict[str, BuildRef] = {}
    for it in items:
        name, eq, where = it.partition("=")
        if not eq or not re.fullmatch(r"[A-Za-z0-9._-]+", name) or not where:
            raise InputError(f"takes NAME=DIR (a name of letters, digits, _ . -), got {shown(it)}", field="--build")
        if name in out:
            raise InputError(f"build {name} is given twice", field="--build")
        if not os.path.isabs(where):
            raise InputError(f"build {name}: DIR must be an absolute path, got {shown(where)}", field="--build")
        if (target.startswith("ssh://") and not is_source_here(where)) or is_modules_dir(where):
            out[name] = BuildRef(name, f"the modules in {where}", where.rstrip("/") or "/")
        else:                                # OpenZFS source, compiled for this machine's kernel
            out[name] = source_ref(name, where, target)
    if len(out) == 1:
        raise InputError("two builds or more to compare (--build a=DIR --build b=DIR)", field="--build")
    if rebuild:
        from .buildsource import mark_rebuild
        mark_rebuild(out)
    return out


def _where_on_target(path: str, target: str, field: str) -> str:
    """A directory the target's own commands write into (the vdev files), given relative: the working
    directory's, made absolute once here for a target on this machine (zfs-fuse's commands run in its
    mount namespace, where a relative path is another place: every iteration failed to make its vdev
    files). On another machine (ssh, the guest) no working directory is the user's: exit 2."""
    if os.path.isabs(path):
        return path
    from .opentarget import elsewhere
    if elsewhere(target):
        raise InputError(f"{shown(path)} is relative, and --target {target} is another machine: give an absolute "
                         "path there", field=field)
    return os.path.abspath(path)


def _userlands(items: list[str], builds: dict[str, BuildRef], target: str) -> None:
    """--userland NAME=DIR: build NAME's own ZFS commands (buildsource.userland_dir), checked here
    with the rest of the input."""
    from .buildsource import userland_dir
    for it in items:
        name, eq, where = it.partition("=")
        if not eq or not name or not where:
            raise InputError(f"takes NAME=DIR, got {shown(it)}", field="--userland")
        if name not in builds:
            raise InputError(f"no build named {name!r} to give a userland to (--build {name}=DIR first)"
                             if builds else "gives a build of `--build NAME=DIR` its own userland: no --build given",
                             field="--userland")
        if builds[name].userland is not None:
            raise InputError(f"build {name}'s userland is given twice", field="--userland")
        if target.startswith("ssh://"):
            raise InputError(f"build {name}: --userland takes a directory on this machine, the one zfsperf runs on "
                             "(over ssh, run zfsperf on the host itself)", field="--userland")
        builds[name].userland = userland_dir(name, where)


def _defines(items: list[str]) -> dict[str, str]:
    return _pairs(items, "-D", "NAME=VALUE")


def _pairs(items: list[str], field: str, form: str, value_needed: bool = False) -> dict[str, str]:
    """Options of the form NAME=VALUE, each checked (a name, and with value_needed a value)."""
    out = {}
    for it in items:
        name, sep, value = it.partition("=")
        if not sep or not name.strip() or (value_needed and not value.strip()):
            raise InputError(f"{field} takes {form}, got {shown(it)}", field=field)
        out[name.strip()] = value.strip()
    return out


def cmd_list(args: argparse.Namespace) -> int:
    from .runfile import load
    if args.keys:
        from .runfile import keys_text
        print(keys_text())
        return 0
    rf = load(args.runfile, _defines(args.define))
    for t in rf.select(tags=_tags(args.tags), test=args.test):
        from .runfile import expand
        cases = expand(t)
        print(f"{t.name}  [{', '.join(t.tags)}]  workload={t.workload}  iterations={t.iterations}  "
              f"pool={t.pool.describe()}  cases={len(cases)}")
        for c in cases:
            print(f"    {c.id}")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from . import machine
    if not 0 < args.window <= 60:
        raise InputError("--window takes seconds, more than 0 and at most 60", field="--window")
    c = machine.measure(args.window)
    if args.json:
        print(json.dumps(c.as_dict(), indent=1))
    else:
        print(f"measured over {c.window_s:g} s on {c.cpus} CPUs: CPU busy from other processes "
              f"{c.cpu_busy_pct:.1f} %, steal {c.steal_pct:.1f} %, load average {c.load1:.2f}, "
              f"swapping {c.swap_pages_s:.0f} pages/s, disks {c.disk_mibs:.1f} MiB/s")
        for f in c.findings:
            print(f"  {f.line()}")
        from .leftovers import journal_lines
        for line in journal_lines():      # a module or tunable a dead zfsperf left changed (issue 72)
            print(f"  {line}")
        print("quiet: nothing found that makes numbers noisy" if not c.busy else
              f"busy: {len(c.busy)} finding(s) make numbers noisy (`zfsperf run --check strict` would refuse)")
    return 1 if c.busy else 0


def cmd_info(args: argparse.Namespace) -> int:
    from .opentarget import expected, open_target
    reach = expected(args.target)             # said before anything starts (stderr: --json stays JSON)
    print(f"target: {reach.how}", file=sys.stderr)
    target = open_target(args.target)
    try:
        info = target.info()
        try:
            arc = target.kstat("arcstats")
        except ZfsperfError:
            arc = None
        info["arcstats_fields"] = len(arc) if arc else 0
    finally:
        target.close()
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    print(f"implementation:  {info['implementation']}")
    print(f"version:         {info['zfs_version']} (pool version {info['pool_version']})")
    print(f"kstat sources:   {', '.join(info['kstat_sources']) or 'none yet'}"
          + (f" ({info['kstat_note']})" if info.get("kstat_note") else ""))
    if info["arcstats_fields"] or info["kstat_sources"]:
        print(f"arcstats:        {info['arcstats_fields']} fields")
    else:                   # not there yet: said once, above, with when they come (not "0 fields")
        print("arcstats:        none yet (as the kstat sources)")
    print(f"txgs:            {info['txgs'] if info['txgs'] else 'unavailable'}")
    print(f"zpool iostat:    {', '.join(info['zpool_iostat_forms'])}")
    print(f"tunables:        {info['tunables'] or 'none at run time'}")
    return 0


def cmd_lab(args: argparse.Namespace) -> int:
    from .zfsfuse.daemon import Lab, lab_dir_from_env
    if args.action == "openzfs":             # the old spelling: `lab` is zfs-fuse now, the guest is `guest`
        print("zfsperf: `zfsperf lab openzfs` is now `zfsperf guest`", file=sys.stderr)
        return cmd_guest(args)
    root = lab_dir_from_env()
    if args.action == "start":
        lab = Lab.start(root, owner="lab", arc_max_mb=args.arc_max)
        st = lab.status()
        print(f"zfs-fuse lab started at {root}: daemon pid {st['daemon_pid']} in a private mount namespace "
              f"(holder pid {st['holder_pid']})")
        return 0
    if args.action == "status":
        from .leftovers import journal_lines, orphan_lines
        for line in orphan_lines() + journal_lines():
            print(line)
    lab = Lab.find(root)
    if lab is None:
        print(f"no zfsperf lab is running at {root}")
        return 0 if args.action == "stop" else 1
    if args.action == "status":
        print(json.dumps(lab.status(), indent=1))
        return 0
    lab.stop()
    print(f"zfs-fuse lab at {root} stopped")
    return 0


def cmd_corpus(args: argparse.Namespace) -> int:
    from .opentarget import open_target
    from .workloads import corpus
    from . import safepaths
    if args.output:
        safepaths.check_place(args.output, "--output", "the sendfile")
    args.vdev_dir = _where_on_target(args.vdev_dir, args.target, "--vdev-dir")
    safepaths.check_place(args.vdev_dir, "--vdev-dir", "the vdev directory")
    safepaths.check_place(corpus.cache_dir(), "ZFSPERF_CACHE", "the corpus cache")
    target = open_target(args.target)
    try:
        c = corpus.make(target, args.kind, args.size, seed=args.seed, vdev_dir=Path(args.vdev_dir),
                        out=args.output, progress=print)
    finally:
        target.close()
    s = c.stream
    print(f"{s.path}: {s.length} bytes, {s.writes} WRITE records ({c.describe()}, made by {c.made_by})")
    if c.base:
        print(f"{c.base.path}: base stream, {c.base.length} bytes, {c.base.writes} WRITE records")
    return 0


def cmd_guest(args: argparse.Namespace) -> int:
    from . import guestcmd
    return guestcmd.run(args)


def cmd_bisect(args: argparse.Namespace) -> int:
    from . import guestcmd
    return guestcmd.bisect_here(args)


def cmd_fleet(args: argparse.Namespace) -> int:
    """`zfsperf fleet run` (fleetrun/run.py) and `fleet compare`: the hosts' own verdicts, then combined
    (report/fleet.py); the gate."""
    from pathlib import Path
    from .report import fleet
    if args.fleet_action == "run":
        from .fleetrun.run import fleet_run
        return fleet_run(args, _defines(args.define))
    if args.fleet_action == "stop":
        from .fleetrun.hoststop import stop_run
        for d in args.dirs:
            print(stop_run(Path(d)))
        return 0
    if args.fleet_action == "history":
        from .history.store import Store
        with Store.open(args.store, create=False) as st:
            rows = st.fleet_figures(args.case, args.figure)
        steps = fleet.trend(rows, args.figure)
        print(json.dumps([s.as_dict() for s in steps], indent=1) if args.json else
              fleet.trend_text(steps, len({r["fleet"] for r in rows})))
        return 0
    if args.fleet_action != "compare":
        raise InputError("fleet takes an action: run, compare, history or stop (`zfsperf fleet run --help`)",
                         field="fleet")
    classes = _pairs(args.classes, "--class", "HOST=CLASS", value_needed=True)
    if args.fail_on_regression is not None and not args.fail_on_regression >= 0:
        raise InputError("--fail-on-regression takes a change in per cent, 0 or more", field="--fail-on-regression")
    fc = fleet.compare_fleet([Path(d) for d in args.dirs], args.case, args.figure, classes)
    print(json.dumps(fc.as_dict(), indent=1) if args.json else fleet.text(fc))
    if args.fail_on_regression is None:
        return 0
    failed = [c for c in ([fc.fleet] if fc.fleet else []) + fc.classes
              if c.verdict == ChangeVerdict.WORSE and abs(c.change_pct) >= args.fail_on_regression]
    for c in failed:
        print(f"regression: {'the fleet' if c.label == 'fleet' else 'class ' + c.label} {c.change_pct:+.1f} % "
              f"{fc.figure} (gate {args.fail_on_regression:g} %)", file=sys.stderr)
    return 1 if failed else 0


def cmd_steady(args: argparse.Namespace) -> int:
    from . import steadycmd
    return steadycmd.run(args)


def cmd_report(args: argparse.Namespace) -> int:
    from .report import export, summary
    from .report.export import terminal
    from .report.model import load_run
    runs = [load_run(d) for d in args.dirs]
    reports = [summary.build(r) for r in runs]
    x = export.Exported.of(runs, reports)
    if args.format == "terminal":
        from .ui import Console
        terminal.show(reports, Console().rich, histograms=not args.no_histograms, wide=args.wide)
    else:
        sys.stdout.write(export.EXPORTERS[args.format].render(x))
    if args.html:
        out = export.EXPORTERS["html"].write(x, Path(args.html))
        print(f"HTML report: {out}", file=sys.stderr)
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    from . import historycmd
    return historycmd.run(args)


def cmd_compare(args: argparse.Namespace) -> int:
    from . import comparecmd
    return comparecmd.run(args)


if __name__ == "__main__":
    sys.exit(main())
