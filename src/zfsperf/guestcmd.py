"""`zfsperf guest ACTION`'s body (cliargs.py parses; this runs it): build, up, down, status, run
zfsperf inside the guest, and the A/B and bisect of two OpenZFS builds; and `zfsperf bisect`, the
same bisect on this machine's kernel OpenZFS."""

from __future__ import annotations

import argparse
import json
import sys

from .errors import InputError
from .redact import redact_argv


def run(args: argparse.Namespace) -> int:
    """`zfsperf guest ACTION`: the action's arguments checked, then done."""
    from .guest.build import Builder, check_version
    from .guest.vm import Guest
    if args.guest_action is None:
        raise InputError("guest takes an action: build | up | down | status | run | ab | bisect "
                         "(`zfsperf guest ACTION --help` says what each does)", field="guest")
    series = check_version(args.zfs)
    lab = Guest()
    if args.guest_action == "run":
        from .inguest import guest_run
        inside = list(args.inside or [])
        return guest_run(inside[1:] if inside[:1] == ["--"] else inside, series)
    if getattr(args, "inside", None):
        raise InputError(f"guest {args.guest_action} takes no further arguments: {' '.join(args.inside)}",
                         field="guest")
    if args.guest_action in ("ab", "bisect"):
        return _guest_ab_or_bisect(args)
    if args.guest_action == "build" and getattr(args, "zfs_src", None):
        from .guest.source import SourceBuilder, source_spec
        src, rev = source_spec(args.zfs_src, "--zfs-src")
        mb = SourceBuilder().build_commit(src, rev) if rev else SourceBuilder().build(src)
        print(f"{mb.tree.label} for kernel {mb.kernel}: {mb.modules}")
    elif args.guest_action == "build":
        b = Builder(series).run()
        print(f"OpenZFS {b.zfs_version} for kernel {b.kernel}: {b.dir}")
    elif args.guest_action == "up":
        st = lab.up(series)
        print(f"target: --target guest  ({st.url()}, accelerator {st.accel})")
    elif args.guest_action == "down":
        lab.down()
    else:
        print(json.dumps(lab.status(), indent=1))
    return 0


def bisect_here(args: argparse.Namespace) -> int:
    """`zfsperf bisect`: guest bisect's input, then the bisect on this machine (buildsource.LocalBench)."""
    from . import buildab as ab
    from .buildsource import LocalBench
    blocks = _checked(args, "bisect", "bisect")
    bench = LocalBench(cleanup=args.cleanup, html=not args.no_html)     # kernel OpenZFS, headers: before any build
    return ab.bisect(bench, args.zfs_src, args.good, args.bad, args.runfile, args.case, args.figure, blocks=blocks,
                     seed=args.seed, outdir=args.outdir or "zfsperf-bisect",
                     argv=redact_argv(["zfsperf", *sys.argv[1:]]), detect=args.detect, smoke=args.smoke)


def _checked(args: argparse.Namespace, action: str, command: str) -> int:
    """An A/B's or bisect's own options checked (exit 2 before anything is built); its blocks."""
    from . import buildab as ab
    from . import safepaths
    need = {"ab": ("a", "b", "runfile"), "bisect": ("zfs_src", "good", "bad", "runfile", "case", "figure")}
    for k in need[action]:
        if not getattr(args, k):
            raise InputError(f"{command} needs --{k.replace('_', '-')}", field=f"--{k}")
    if args.rebuild and action != "ab":
        raise InputError("--rebuild is for guest ab (the A/A′ floor of one source built twice)", field="--rebuild")
    if args.detect is not None and not args.detect > 0:
        raise InputError(f"--detect takes a change in per cent above 0, got {args.detect:g}", field="--detect")
    from .plan import SMOKE_BLOCKS, smoke_refused
    if args.smoke and (args.detect is not None or args.rebuild):
        raise smoke_refused("--detect" if args.detect is not None else "--rebuild")
    blocks = (SMOKE_BLOCKS if args.smoke else ab.DEFAULT_BLOCKS) if args.blocks is None else args.blocks
    if blocks < 2:
        raise InputError(f"--blocks takes a whole number >= 2, got {blocks}", field="--blocks")
    if action == "ab":
        safepaths.check_own_dir(args.outdir or "zfsperf-results", "--outdir", "the output directory",
                                safepaths.results_entry)
    else:                                       # bisect.json and runs/ of one bisect: resumed when found
        safepaths.check_place(args.outdir or "zfsperf-bisect", "--outdir", "the output directory")
    return blocks


def _guest_ab_or_bisect(args: argparse.Namespace) -> int:
    from . import buildab as ab
    blocks = _checked(args, args.guest_action, f"guest {args.guest_action}")
    argv = redact_argv(["zfsperf", *sys.argv[1:]])
    if args.guest_action == "ab":
        return ab.guest_ab(args.a, args.b, args.runfile, blocks=blocks, seed=args.seed,
                           outdir=args.outdir or "zfsperf-results", test=args.test, argv=argv, turns=args.turns,
                           detect=args.detect, rebuild=args.rebuild, cleanup=args.cleanup, smoke=args.smoke)
    return ab.guest_bisect(args.zfs_src, args.good, args.bad, args.runfile, args.case, args.figure, blocks=blocks,
                           seed=args.seed, outdir=args.outdir or "zfsperf-bisect", argv=argv, turns=args.turns,
                           detect=args.detect, cleanup=args.cleanup, smoke=args.smoke)
