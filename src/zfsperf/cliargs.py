"""zfsperf's command-line options: one parser per subcommand, its help and its examples (the
option table). cli.py parses with build_parser and dispatches; the longer bodies live beside it."""

from __future__ import annotations

import argparse
import re


# --smoke of a build A/B or bisect (guest ab, guest bisect, bisect); run's own says it of a run
SMOKE_AB = ("the A/B at its smallest, to check its set-up before a long one: 2 blocks (or --blocks) instead of "
            "the 6 a verdict needs; a bisect stops after BAD's step, which cannot call a change")


def _add_run(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a runfile (default: the built-in 'quick' suite)",
                       description="Run the cases of a runfile and write a results directory. Short flags "
                                   "follow the ZFS Test Suite (zfs-tests.sh).")
    p.add_argument("-r", "--runfile", default="quick", help="a runfile path or a built-in name (default quick)")
    p.add_argument("-T", "--tags", help="comma-separated tags: run only tests with one of them")
    p.add_argument("-t", "--test", help="run only this test")
    p.add_argument("-D", "--define", action="append", default=[], metavar="NAME=VALUE",
                   help="set a runfile [params] value, e.g. -D runtime=180 (repeatable)")
    p.add_argument("-I", "--iterations", type=int, help="iterations per case (overrides the runfile; with "
                   "--precision, the least)")
    p.add_argument("--interleave", action="store_true",
                   help="an A/B design: blocks of one iteration of every case, in a random order per block "
                   "(from --seed), at least 6 blocks, so drift hits every case alike and `zfsperf compare DIR` "
                   "can pair them")
    p.add_argument("--detect", metavar="PCT", help="an interleaved A/B run in blocks until every A/B pair's "
                   "headline could see a change of PCT %% (80%% power, paired test), up to max_iterations blocks "
                   "or the budget; implies --interleave")
    p.add_argument("--build", action="append", default=[], metavar="NAME=DIR",
                   help="a build A/B on kernel OpenZFS (repeat: two or more): each test runs once per build in "
                        "interleaved blocks, the zfs module swapped between cases; DIR holds the build's spl.ko "
                        "and zfs.ko, compiled for the target's running kernel (on this machine, or on an ssh "
                        "host; the guest reads it through its view of this machine's root), or is OpenZFS "
                        "source here (DIR, DIR@REV), compiled here for the target's kernel (an ssh host's: "
                        "copied there)")
    p.add_argument("--userland", action="append", default=[], metavar="NAME=DIR",
                   help="build NAME's own ZFS userland, run while its module is loaded (for a module of another "
                        "series than the machine's zpool and zfs): DIR is a `make install DESTDIR=DIR` or `dpkg -x` "
                        "tree holding zpool and zfs (sbin, usr/sbin, usr/local/sbin or bin) and libzfs (lib, usr/lib, "
                        "usr/local/lib or their x86_64-linux-gnu)")
    p.add_argument("--rebuild", action="store_true", help="with two --build sides naming one OpenZFS source (DIR "
                   "or DIR@REV, given twice): the second compiled again in a build tree of its own, an A/A′ whose "
                   "interval is kept as the rebuild floor of that test's later build verdicts (compare states it)")
    p.add_argument("--seed", type=int, help="--interleave: the seed of the order inside the blocks (default: "
                   "drawn, and recorded in run.json)")
    p.add_argument("--precision", metavar="PCT", help="adaptive: iterate until the 95%% CI half-width of each "
                   "case's headline figure is <= PCT %% of its mean (e.g. 2%%), up to max_iterations/budget")
    p.add_argument("--store", help="add the run to this history store (a path or postgresql://...; default "
                   "$ZFSPERF_STORE, else $ZFSPERF_STATE/history.sqlite); checked before the first case. Give "
                   "a PostgreSQL password by PGPASSWORD, ~/.pgpass or PGSERVICE, never in the URL")
    p.add_argument("--no-history", action="store_true", help="do not add the run to the history store")
    p.add_argument("--smoke", action="store_true", help="the run at its smallest, to check that it works before "
                   "a long one: -I as asked, else 2 blocks of an A/B (not the 6 its paired test needs to call a "
                   "change) and one iteration of any other case, no stopping rule; not added to history")
    _add_run_place(p)


def _add_run_place(p: argparse.ArgumentParser) -> None:
    """run's options for where and how: vdevs, disks, the output directory, what is printed, the target."""
    p.add_argument("-d", "--vdev-dir", default="/var/tmp/zfsperf", help="directory for vdev files")
    p.add_argument("-s", "--vdev-size", help="size of each vdev file, e.g. 2G (overrides the runfile)")
    p.add_argument("-f", "--files", action="store_true",
                   help="sparse files as vdevs even when DISKS is set (files are the default without DISKS)")
    p.add_argument("--dry-run", action="store_true",
                   help="run every check a run makes before it touches anything (the runfile, tunable and "
                        "property names and values, vdev room, data against pool size, DISKS, the history "
                        "store), say what was checked, and stop: exit 0, or 2 with what is wrong")
    p.add_argument("--force", action="store_true",
                   help="take DISKS that hold a stale partition table, filesystem or pool label; never a disk in use "
                        "(mounted, swap, held, open) or a KEEP pool's")
    p.add_argument("--prefill", action="store_true", help="pre-fill vdev files with zeros (steadier numbers)")
    p.add_argument("-o", "--outdir", default="zfsperf-results", help="where results directories go")
    p.add_argument("--no-html", action="store_true",
                   help="do not draw report.html at the end (junit.xml and results.csv are still written; "
                        "`zfsperf report DIR --html DIR/report.html` draws it later)")
    p.add_argument("-v", "--verbose", action="store_true", help="show each case's live figures")
    p.add_argument("-q", "--quiet", action="store_true", help="print only non-PASS lines and the summary")
    p.add_argument("-x", "--cleanup", action="store_true",
                   help="first remove leftovers of earlier zfsperf runs (only pools and files zfsperf marked)")
    p.add_argument("-k", "--keep-failed", action="store_true", help="keep the pool and files of a failed case")
    p.add_argument("--profile", action="store_true",
                   help="sample on-CPU stacks (perf record, cpu-clock, 99 Hz) during every counted iteration, "
                        "kept per side in DIR/profiles/ as folded stacks; compare shows what changed (the zfs-fuse "
                        "daemon, or the whole machine on a kernel OpenZFS)")
    p.add_argument("--class", dest="machine_class", metavar="LABEL",
                   help="this machine's class in run.json, which `fleet compare` combines verdicts by (default: "
                        "its CPUs, memory, disk and ZFS)")
    p.add_argument("--fleet-id", metavar="ID", help="the fleet this run is one host's run of, in run.json "
                   "(given by `zfsperf fleet run`, with --fleet-host)")
    p.add_argument("--fleet-host", metavar="NAME", help="this host's name in the fleet's inventory (with --fleet-id)")
    p.add_argument("--pidfile", metavar="PATH", help="write this run's pid and start time to PATH while it runs "
                   "(`zfsperf fleet stop` stops the run by it)")
    p.add_argument("--target", default="auto",
                   help="auto | zfs-fuse | openzfs | guest (the OpenZFS guest) | ssh://user@host[:port] (default auto)")
    p.add_argument("--tunables-dir", dest="tunables_dir",
                   help="use a directory laid out like /sys/module/zfs/parameters for tunables")
    p.add_argument("--params-dir", dest="tunables_dir", help=argparse.SUPPRESS)      # the old spelling
    p.add_argument("--resume", metavar="DIR", help="finish the cases an interrupted run in DIR did not")
    p.add_argument("--arc-max", type=int, metavar="MB", help="zfs-fuse ARC size in MB (embedded daemon only)")
    p.add_argument("--check", choices=["warn", "strict", "off"], default="warn",
                   help="the machine check before the run (see `zfsperf check`): warn prints what makes numbers "
                        "noisy, strict refuses a busy machine (exit 2), off skips it (default warn)")


class Parser(argparse.ArgumentParser):
    """Options wherever a user puts them: positionals and options interleave in every subcommand
    (`history import --store X DIR` as well as `history --store X import DIR`). argparse's plain
    parse stops filling a list positional at the first option; its intermixed parse does not,
    but cannot hold subcommands, so it is used by every parser that has none."""

    _intermixing = False

    def parse_known_args(self, args=None, namespace=None):  # type: ignore[override]
        nested = any(a.nargs in (argparse.PARSER, argparse.REMAINDER) for a in self._actions)
        if self._intermixing or nested:
            return super().parse_known_args(args, namespace)
        self._intermixing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._intermixing = False


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="zfsperf", description="A performance test suite for ZFS.")
    ap.add_argument("--version", action="store_true", help="print zfsperf's version and git commit")
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")
    _add_run(sub)
    _add_list(sub)
    _add_check(sub)
    _add_calibrate(sub)
    _add_info(sub)
    _add_lab(sub)
    _add_guest(sub)
    _add_bisect(sub)
    _add_fleet(sub)
    _add_corpus(sub)
    _add_steady(sub)
    _add_report(sub)
    _add_history(sub)
    _add_compare(sub)
    _add_ab(sub)
    helps = {a.dest: a.help for a in sub._choices_actions}
    for name, p in sub.choices.items():          # one to three examples under every subcommand's help
        if name in EXAMPLES and not p.epilog:
            p.epilog = "examples:\n" + "\n".join(f"  {line}" for line in EXAMPLES[name])
        if not p.description and helps.get(name):    # its line in the list, as a sentence
            p.description = helps[name][0].upper() + helps[name][1:] + "."
    # `lab` (a zfs-fuse daemon kept between runs: the tests' and a debugging aid) works, unlisted
    sub._choices_actions[:] = [a for a in sub._choices_actions if a.dest != "lab"]
    ap.epilog = "examples:\n" + "\n".join("  {:<42}# {}".format(*re.split(r"\s{2,}", ln.strip(), maxsplit=1))
                                           for ln in USAGE.splitlines()[2:] if ln.strip())
    for p in _parsers(ap):
        p.formatter_class = Formatter
    return ap


class Formatter(argparse.HelpFormatter):
    """Descriptions wrapped to the terminal's width (argparse's own), an examples epilog kept line by
    line (a command is never wrapped)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if text.startswith("examples:"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def _parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """A parser and every subcommand's parser under it."""
    out = [p]
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in dict.fromkeys(a.choices.values()):
                out += _parsers(sp)
    return out


EXAMPLES = {
    "run": ["zfsperf run                        # the default suite on the embedded zfs-fuse",
            "zfsperf run -r checksum-ab         # an A/B of a dataset property, the sides taking turns",
            "zfsperf run -r my.toml --dry-run   # check a runfile, nothing started or written"],
    "list": ["zfsperf list -r receive-batch", "zfsperf list --keys"],
    "check": ["zfsperf check", "zfsperf check --window 10 --json"],
    "info": ["zfsperf info     # starts the embedded zfs-fuse when there is no kernel ZFS"],
    "lab": ["zfsperf lab start", "zfsperf lab status", "zfsperf lab stop"],
    "guest": ["zfsperf guest up", "zfsperf guest run -- run -r receive-batch",
              "zfsperf guest ab --a 2.3 --b ~/src/zfs -r receive --turns"],
    "corpus": ["zfsperf corpus make --kind small-records --size 256M"],
    "steady": ["zfsperf steady zfsperf-results/current", "zfsperf steady --method snia zfsperf-results/current"],
    "report": ["zfsperf report zfsperf-results/current", "zfsperf report zfsperf-results/current --format md"],
    "history": ["zfsperf history import zfsperf-results/*", "zfsperf history --fail-on-change 10",
                "zfsperf history runs"],
    "ab": ["zfsperf ab recordsize=8K,128K", "zfsperf ab --tunable zfs_recv_write_batch_size=128K,1M --target guest",
           "zfsperf ab compression=off,gzip --workload fio:randread --runfile-out ab.toml"],
    "fleet": ["zfsperf fleet run -i hosts.ini -r ab.toml",
              "zfsperf fleet compare host1/current host2/current host3/current"],
    "bisect": ["zfsperf bisect --zfs-src ~/src/zfs --good v2.3.1 --bad HEAD -r receive \\\n"
               "      --case recv --figure throughput"],
    "compare": ["zfsperf compare zfsperf-results/current       # the A/B pairs of one run (turns, duet, blocks)",
                "zfsperf compare BASE NEW --fail-on-regression 5",
                "zfsperf compare BASE1 BASE2 BASE3 --vs NEW1 NEW2 NEW3"],
}


def _add_ab(sub: argparse._SubParsersAction) -> None:
    """`zfsperf ab`."""
    from .abline import WORKLOADS
    p = sub.add_parser("ab", help="an A/B of one change in one line: a dataset property or a tunable, two values",
                       description="Make the runfile of an A/B of one change (two values of a dataset property, "
                                   "or of a module tunable with --tunable) in the most sensitive design it allows "
                                   "(the sides taking turns on one pool; interleaved blocks where turns cannot "
                                   "hold it), run it, and print compare's verdict. --runfile-out keeps the runfile.")
    p.add_argument("change", nargs="?", metavar="PROPERTY=A,B", help="a dataset property and its two values")
    p.add_argument("--tunable", metavar="NAME=A,B", help="a module tunable and its two values (kernel OpenZFS, "
                                                          "the guest)")
    p.add_argument("--workload", default="receive", choices=WORKLOADS, metavar="WORKLOAD",
                   help=f"receive (1 stream, 1 GiB an iteration; default) or a fio job: {', '.join(WORKLOADS[1:])}")
    p.add_argument("-I", "--iterations", type=int, default=8, help="pairs (default 8)")
    p.add_argument("--size", default="64M", help="the stream received (receive) or each fio file (default 64M)")
    p.add_argument("--runfile-out", metavar="FILE", help="write the runfile there (and run it, unless --dry-run)")
    p.add_argument("-o", "--outdir", default="zfsperf-results", help="where results go (default zfsperf-results)")
    p.add_argument("--target", default="auto", help="as for run")
    p.add_argument("--dry-run", action="store_true", help="check and print the plan; nothing started or written "
                                                          "(but --runfile-out)")
    p.add_argument("--no-history", action="store_true", help="as for run")
    p.add_argument("--fail-on-regression", metavar="PCT", help="as for compare: exit 1 when B is worse by PCT %% "
                                                                "or more, significantly")


def _add_list(sub: argparse._SubParsersAction) -> None:
    """`zfsperf list`."""
    p = sub.add_parser("list", help="show a runfile's tests, tags and the cases its sweeps expand to")
    p.add_argument("-r", "--runfile", default="quick", help="a runfile path or a built-in name (default quick)")
    p.add_argument("-D", "--define", action="append", default=[], metavar="NAME=VALUE",
                   help="set a runfile [params] value, as for run")
    p.add_argument("-T", "--tags", help="only tests with one of these comma-separated tags")
    p.add_argument("-t", "--test", help="only this test")
    p.add_argument("--keys", action="store_true",
                   help="the fields a runfile's tests, [defaults] and pool take (type, default, help), and each "
                        "workload's own fields (type, sweepable)")


def _add_calibrate(sub: argparse._SubParsersAction) -> None:
    """`zfsperf calibrate`."""
    p = sub.add_parser("calibrate", help="this machine's run-to-run noise, so that two separate runs can be judged",
                       description="Make N identical runs of a runfile (default: the quick suite) and add them to "
                                   "the history store; print each case's run-to-run spread and what two separate "
                                   "runs of these settings can then see. `compare BASE NEW` of these settings is "
                                   "judged against that noise (the history design) and says so on its first line. "
                                   "Example: zfsperf calibrate -r quick --runs 5",
                       epilog="examples:\n  zfsperf calibrate --runs 5\n  zfsperf calibrate -r my.toml -D size=64M "
                              "--runs 8\n  zfsperf calibrate --from-store zfsperf-results/current",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="*", metavar="DIR", help="--from-store: a results directory of the settings")
    p.add_argument("-r", "--runfile", default="quick", help="a runfile path or a built-in name (default quick)")
    p.add_argument("-D", "--define", action="append", default=[], metavar="NAME=VALUE",
                   help="a runfile parameter, as for run (the runs and the later compare share them)")
    p.add_argument("-I", "--iterations", type=int, help="iterations per case of each run")
    p.add_argument("-s", "--vdev-size", help="vdev size of each run (as run -s)")
    p.add_argument("--target", help="as run --target")
    p.add_argument("--runs", type=int, default=5, help="identical runs to make (default 5, the least the history "
                                                        "design takes)")
    p.add_argument("--store", help="the history store (default $ZFSPERF_STORE, else $ZFSPERF_STATE/history.sqlite)")
    p.add_argument("-o", "--outdir", default="zfsperf-results", help="where the runs' results directories go")
    p.add_argument("--from-store", action="store_true",
                   help="make no run: read the runs of DIR's settings the store already holds")


def _add_check(sub: argparse._SubParsersAction) -> None:
    """`zfsperf check`."""
    p = sub.add_parser("check", help="what would make numbers noisy or unrepresentative on this machine, measured now",
                       description="Measures the machine over a short window (zfsperf idle): CPU busy from other "
                                   "processes, steal, load, swapping, disk I/O, other ZFS daemons, a zfsperf run in "
                                   "progress; and settings: frequency governor, turbo, transparent huge pages, ARC "
                                   "limits, ZFS tunables off their defaults. Exit 0: quiet; 1: busy.")
    p.add_argument("--window", type=float, default=1.0, help="seconds to measure over (default 1)")
    p.add_argument("--json", action="store_true", help="the measurements and findings as JSON")


def _add_info(sub: argparse._SubParsersAction) -> None:
    """`zfsperf info`."""
    p = sub.add_parser("info", help="what ZFS this machine has and what zfsperf can read from it",
                       description="What ZFS the target has and what zfsperf can read from it. Without kernel "
                                   "OpenZFS (and no `zfsperf lab` running) it starts the embedded zfs-fuse daemon "
                                   "for a moment, in a private mount namespace, and stops it; it creates no pool.")
    p.add_argument("--target", default="auto", help="auto (kernel OpenZFS, else the embedded zfs-fuse), zfs-fuse, "
                                                    "openzfs, guest or ssh://[user@]host")
    p.add_argument("--json", action="store_true", help="the same as JSON")


def _add_lab(sub: argparse._SubParsersAction) -> None:
    """`zfsperf lab`."""
    p = sub.add_parser("lab", help="the embedded zfs-fuse daemon: start | stop | status",
                       description="zfsperf lab start|stop|status. status exits 0 when a lab is running and 1 when "
                                   "none is (so a script can ask).")
    p.add_argument("action", choices=["start", "stop", "status", "openzfs"],
                   help="(openzfs: the old spelling of `zfsperf guest`)")
    p.add_argument("guest_action", nargs="?", choices=["build", "up", "down", "status"], help=argparse.SUPPRESS)
    p.add_argument("--zfs", default="2.3", help=argparse.SUPPRESS)
    p.add_argument("--arc-max", type=int, metavar="MB", help="start: zfs-fuse's ARC size (16-16384 MB)")


GUEST_EXAMPLES = {
    "build": ["zfsperf guest build                          # Debian's OpenZFS 2.3 in the guest image (cached)",
              "zfsperf guest build --zfs-src ~/src/zfs@a1b2c3d  # the modules of one commit"],
    "up": ["zfsperf guest up --zfs 2.1"],
    "down": ["zfsperf guest down"],
    "status": ["zfsperf guest status"],
    "run": ["zfsperf guest run -- run -r receive-batch -o res   # res lands on this host"],
    "ab": ["zfsperf guest ab --a 2.3 --b ~/src/zfs -r receive --turns",
           "zfsperf guest ab --a ~/src/zfs --b ~/src/zfs -r receive --turns --rebuild   # the A/A′ floor"],
    "bisect": ["zfsperf guest bisect --zfs-src ~/src/zfs --good v2.3.1 --bad HEAD -r receive \\\n"
               "      --case recv --figure throughput --turns"],
}


def _add_guest(sub: argparse._SubParsersAction) -> None:
    """`zfsperf guest ACTION`: each action its own parser, options and examples."""
    p = sub.add_parser("guest", help="the real OpenZFS guest under QEMU: build | up | down | status | run -- ARGS "
                                     "| ab | bisect",
                       description="The real OpenZFS guest under QEMU (software emulation where there is no KVM: "
                                   "formats and behaviour are real, timings are not speeds). A BUILD is a series "
                                   "(2.3: Debian's), an OpenZFS source tree DIR, or DIR@REV (one commit of a git "
                                   "repository). `zfsperf guest ACTION --help` for each action.")
    gsub = p.add_subparsers(dest="guest_action", metavar="ACTION")

    def action(name: str, text: str) -> argparse.ArgumentParser:
        a = gsub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".",
                            epilog="examples:\n" + "\n".join(f"  {ln}" for ln in GUEST_EXAMPLES[name]),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        a.add_argument("--zfs", default="2.3", help="OpenZFS series for the guest: 2.1 or 2.3 (default 2.3)")
        a.set_defaults(zfs_src=None, rebuild=False, test=None, **({} if name == "run" else {"inside": []}))
        return a

    b = action("build", "build the guest image with its OpenZFS (cached), or the modules of a source tree")
    b.add_argument("--zfs-src", metavar="DIR", help="the modules of this OpenZFS source tree (DIR@REV: of one "
                                                    "commit of a git repository)")
    action("up", "boot the guest (it prints the --target to use)")
    action("down", "stop the guest")
    action("status", "show the guest: running or not, its address, accelerator and OpenZFS")
    r = action("run", "run zfsperf itself inside the guest, as a local process on kernel OpenZFS "
                      "(`run -o DIR` lands in DIR on this host)")
    r.add_argument("inside", nargs=argparse.REMAINDER, help="the zfsperf command line for inside the guest, after --")

    def measured(a: argparse.ArgumentParser, what: str) -> None:
        a.add_argument("-r", "--runfile", help="the runfile")
        a.add_argument("--blocks", type=int, default=None, help="interleaved blocks (default 6; with --turns: "
                       "iterations of ABBA turns)")
        a.add_argument("--turns", action="store_true", help="the builds take turns in two identical guests, the "
                       "idle one paused (QMP), round by round")
        a.add_argument("--detect", type=float, metavar="PCT", help="more iterations until each verdict is decided "
                       "or could see PCT %%" + (f" ({what})" if what else ""))
        a.add_argument("--seed", type=int, help="the seed of the block order")
        a.add_argument("--smoke", action="store_true", help=SMOKE_AB)
        a.add_argument("-o", "--outdir", help="where results go")
        a.add_argument("-x", "--cleanup", action="store_true", help="first remove what earlier zfsperf runs left "
                       "in the guests (their marked pools, their vdev files), as run -x does")

    ab = action("ab", "A/B two OpenZFS builds on one runfile, measured in the guest")
    ab.add_argument("--a", metavar="BUILD", help="side A (2.3 | DIR | DIR@REV)")
    ab.add_argument("--b", metavar="BUILD", help="side B")
    ab.add_argument("-t", "--test", help="only this test")
    ab.add_argument("--rebuild", action="store_true", help="--a and --b are one source, compiled twice (a second "
                    "build tree): the A/A′ floor stated beside every later build verdict of the test")
    measured(ab, "")
    bi = action("bisect", "bisect a range of OpenZFS commits for the one that changed a figure")
    _bisect_range(bi)
    measured(bi, "a step after the first: half of BAD's change")


def _bisect_range(p: argparse.ArgumentParser) -> None:
    """What a bisect (in the guest, or on this machine) bisects."""
    p.add_argument("--zfs-src", metavar="DIR", help="the git repository")
    p.add_argument("--good", metavar="REV", help="a commit without the change")
    p.add_argument("--bad", metavar="REV", help="a commit with it")
    p.add_argument("--case", metavar="TEST", help="the test to measure")
    p.add_argument("--figure", metavar="NAME", help="the figure judged (e.g. throughput)")


def _add_fleet(sub: argparse._SubParsersAction) -> None:
    """`zfsperf fleet compare`: many hosts' runs of one A/B combined."""
    p = sub.add_parser("fleet", help="many machines' runs of one A/B: each host's own paired verdict, then combined "
                                     "(random effects) over the fleet and per machine class")
    fsub = p.add_subparsers(dest="fleet_action", metavar="ACTION")
    c = fsub.add_parser("compare", help="combine hosts' results directories of one A/B",
                        description="Each DIR is one host's results directory of the same A/B (turns, a duet or "
                                    "interleaved blocks): its own paired verdict first, then the hosts' log ratios "
                                    "combined by a random-effects meta-analysis, over the fleet and per class.",
                        epilog="examples:\n  zfsperf fleet compare host1/current host2/current host3/current\n"
                               "  zfsperf fleet compare hosts/*/current --class h4=4-core --fail-on-regression 2",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("dirs", nargs="+", metavar="DIR", help="each host's results directory")
    c.add_argument("--case", metavar="TEST", help="the test whose A/B is combined (needed when a run has several)")
    c.add_argument("--figure", metavar="NAME", help="the figure (default: the test's headline)")
    c.add_argument("--class", dest="classes", action="append", default=[], metavar="HOST=CLASS",
                   help="a host's machine class (default: its CPUs, memory and ZFS from run.json)")
    c.add_argument("--json", action="store_true", help="the comparison as JSON")
    c.add_argument("--fail-on-regression", type=float, metavar="PCT", help="exit 1 when the fleet, or any class, is "
                   "WORSE by at least PCT %%")
    r = fsub.add_parser("run", help="run one runfile on every host of an Ansible inventory (each host paired within "
                                    "itself), then compare the fleet",
                        description="The same runfile, seed and arguments on every host of the inventory, through "
                                    "Ansible (ansible-playbook, its ssh, its forks): every host is checked first "
                                    "(zfsperf there, `zfsperf run --dry-run`: its ZFS, vdev room, the store) and any "
                                    "that fails the check is exit 2 before a host runs anything; each host's results "
                                    "come back under DIR/fleet-ID/hosts/NAME, a host that failed or could not be "
                                    "reached is named in DIR/fleet-ID/fleet.json, and `zfsperf fleet compare "
                                    "DIR/fleet-ID` combines the hosts' own verdicts. Host variables: zfsperf_bin "
                                    "(zfsperf's path there), zfsperf_class (its machine class).",
                        epilog="examples:\n  zfsperf fleet run -i hosts.ini -r ab.toml --store postgresql://db/zfsperf\n"
                               "  zfsperf fleet compare zfsperf-results/fleet-20261205-120000-1a2b3c",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("-i", "--inventory", required=True, help="an Ansible inventory (INI or YAML)")
    r.add_argument("-r", "--runfile", required=True, help="a runfile path (copied to each host) or a built-in name")
    r.add_argument("-t", "--test", help="run only this test")
    r.add_argument("-T", "--tags", help="comma-separated tags")
    r.add_argument("-D", "--define", action="append", default=[], metavar="NAME=VALUE", help="as for run")
    r.add_argument("-I", "--iterations", type=int, help="as for run")
    r.add_argument("--interleave", action="store_true", help="as for run")
    r.add_argument("--detect", metavar="PCT", help="as for run")
    r.add_argument("--seed", type=int, help="the seed every host's run gets (default: drawn once, in fleet.json)")
    r.add_argument("--store", help="the history store every host adds its run to (checked from each host first)")
    r.add_argument("--no-history", action="store_true", help="as for run")
    r.add_argument("--no-html", action="store_true", help="as for run")
    r.add_argument("--target", help="each host's target (default: run's, auto)")
    r.add_argument("-f", "--forks", type=int, default=5, help="hosts running at once (Ansible's forks; default 5)")
    r.add_argument("--timeout", type=float, default=6 * 3600, help="seconds a host's run may take (default 21600)")
    r.add_argument("-o", "--outdir", default="zfsperf-results", help="where the fleet's directory goes")
    r.add_argument("--dry-run", action="store_true", help="check every host as a run would (zfsperf there, its "
                   "`run --dry-run`), say so, and stop: exit 0, or 2 naming each host that failed")
    h = fsub.add_parser("history", help="fleet-wide trends in the history store: each host against itself, "
                                        "then combined, fleet run by fleet run",
                        description="For each case and figure (its headline unless --figure) and each two "
                                    "consecutive fleet runs in the store: each host's own change (its mean against "
                                    "its own mean in the fleet before), then the hosts combined by the same "
                                    "random-effects meta-analysis as `fleet compare`, over the fleet and per class.",
                        epilog="examples:\n  zfsperf fleet history --store postgresql://db/zfsperf\n"
                               "  zfsperf fleet history --case 'recv compression=off' --json",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_argument("--store", help="the history store (default $ZFSPERF_STORE, else $ZFSPERF_STATE/history.sqlite)")
    h.add_argument("--case", metavar="CASE", help="one case (as the store names it)")
    h.add_argument("--figure", metavar="NAME", help="the figure (default: each case's headline)")
    h.add_argument("--json", action="store_true", help="the steps as JSON")
    st = fsub.add_parser("stop", help="on a fleet's host: end the fleet's run there by its pid (the stop playbook "
                                      "runs it)",
                         description="Each DIR is a fleet run's directory on this host; its run (DIR/run.pid: pid "
                                     "and start time) gets SIGINT as Ctrl-C, SIGKILL after 120 s; a pid that is "
                                     "another process now is left alone.",
                         epilog="examples:\n  zfsperf fleet stop /tmp/zfsperf-fleet-20261206-101500-1a2b3c-x1y2",
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    st.add_argument("dirs", nargs="+", metavar="DIR", help="a fleet run's directory on this host")


def _add_bisect(sub: argparse._SubParsersAction) -> None:
    """`zfsperf bisect`: `guest bisect` on this machine's kernel OpenZFS."""
    p = sub.add_parser("bisect", help="bisect a range of OpenZFS commits on this machine's kernel OpenZFS, each "
                                      "compiled for its running kernel")
    _bisect_range(p)
    p.add_argument("-r", "--runfile", help="the runfile")
    p.add_argument("--blocks", type=int, default=None, help="interleaved blocks a step (default 6)")
    p.add_argument("--detect", type=float, metavar="PCT", help="more blocks until each step's verdict is decided or "
                   "could see PCT %% (a step after the first: half of BAD's change)")
    p.add_argument("--seed", type=int, help="the seed of the block order")
    p.add_argument("--smoke", action="store_true", help=SMOKE_AB)
    p.add_argument("-o", "--outdir", help="where bisect.json and each step's run go (default zfsperf-bisect)")
    p.add_argument("-x", "--cleanup", action="store_true", help="first remove what earlier zfsperf runs left "
                   "(their marked pools, their vdev files), as run -x does")
    p.add_argument("--no-html", action="store_true", help="no report.html for each step's run")
    p.set_defaults(turns=False, rebuild=False)


def _add_corpus(sub: argparse._SubParsersAction) -> None:
    """`zfsperf corpus`."""
    p = sub.add_parser("corpus", help="the send streams a receive test replays: make one ahead of a run",
                       description="The send streams a receive test replays (its corpus), made once and cached by "
                                   "kind, size and seed, so that every run receives the same bytes. A run makes "
                                   "the corpus it needs; `corpus make` makes one ahead, or into a file.")
    csub = p.add_subparsers(dest="corpus_cmd", metavar="ACTION", required=True)
    m = csub.add_parser("make", help="make a deterministic send stream",
                        description="Make a deterministic send stream: fio writes the kind's data with the seed "
                                    "into a scratch pool of zfsperf's own, `zfs send` streams it to the cache (or "
                                    "-o FILE), and the pool is destroyed. The same kind, size and seed give the "
                                    "same stream.",
                        epilog="examples:\n  zfsperf corpus make --kind random --size 64M\n"
                               "  zfsperf corpus make --kind small-records --size 256M -o small.zstream")
    from .workloads.corpus import KINDS
    m.add_argument("--kind", required=True, choices=KINDS, help="what the stream holds")
    m.add_argument("--size", default="256M", help="bytes of data written before the send (default 256M)")
    m.add_argument("--seed", type=int, default=1, help="fio's random seed: the same seed, the same stream")
    m.add_argument("-o", "--output", help="write the stream to this file (default: the cache)")
    m.add_argument("-d", "--vdev-dir", default="/var/tmp/zfsperf", help="where its scratch pool's vdev files go")
    m.add_argument("--target", default="auto", help="the ZFS that makes it (as for run)")


def _add_steady(sub: argparse._SubParsersAction) -> None:
    """`zfsperf steady`."""
    from .steady import METHODS, Criteria
    from .steady.verdict import WINDOW_PER
    dflt = Criteria()                    # one set of defaults: the runner's and this command's
    p = sub.add_parser("steady", help="re-decide steady state from a recorded series (change points, or SNIA)")
    p.add_argument("series", help="a recorded series (RESULTS/series/<case>.i<N>.jsonl) to decide with the options "
                                  "below; or a results directory (or its run.json): every verdict the run recorded "
                                  "decided again as the run decided it, beside the recorded one (exit 1 if any "
                                  "differs)")
    p.add_argument("--window", type=int, help=f"samples per window W (default: changepoint scales it with the series, "
                                               f"n/{WINDOW_PER}, at least {dflt.window}; snia {dflt.window})")
    p.add_argument("--interval", type=float, help="re-sample the series to one sample per this many seconds")
    p.add_argument("--range", type=float, default=dflt.range, help=f"R: max-min <= R*mean (default {dflt.range:g})")
    p.add_argument("--slope", type=float, default=dflt.slope,
                   help=f"S: |slope|*span <= S*mean (default {dflt.slope:g})")
    p.add_argument("--quorum", type=float, default=dflt.quorum,
                   help=f"fraction of (the other) metrics that must pass (default {dflt.quorum:g})")
    p.add_argument("--method", choices=METHODS, default=dflt.method,
                   help=f"changepoint: PELT segments, headline veto; snia: the SNIA range/slope vote "
                        f"(default {dflt.method})")
    p.add_argument("--tolerance", type=float, default=dflt.tolerance,
                   help=f"changepoint: changes and trends below this share of the level are none "
                        f"(default {dflt.tolerance:g})")
    p.add_argument("--headline", help="changepoint: the metric with a veto (default: the one the run "
                                      "recorded, else workload_mibs, workload_iops, pool_mibs, pool_kops)")
    p.add_argument("--json", action="store_true", help="the decision as JSON")


def _add_report(sub: argparse._SubParsersAction) -> None:
    """`zfsperf report`."""
    p = sub.add_parser("report", help="summarise results directories (nothing is re-run)")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="results directories (zfsperf-results/current: the last run)")
    p.add_argument("--format", choices=["terminal", "md", "csv", "json", "openmetrics", "results-csv", "junit", "html"],
                   default="terminal", help="terminal (default), or an exporter's text on stdout: md, csv (a row "
                                            "per case and figure), json, openmetrics, results-csv (a row per "
                                            "iteration, as results.csv), junit, html")
    p.add_argument("--html", metavar="OUT", help="also write a self-contained HTML report with pictures")
    p.add_argument("--no-histograms", action="store_true", help="terminal: leave out the quantize histograms")
    p.add_argument("--wide", action="store_true", help="terminal: every statistic (median, stddev, min, max too)")


def _add_history(sub: argparse._SubParsersAction) -> None:
    """`zfsperf history`."""
    p = sub.add_parser("history", help="every run in one store: import results, series over runs, change points",
                       description="zfsperf history import DIR...  |  zfsperf history [--case C] [--figure F] "
                                   "[--fail-on-change PCT]  |  zfsperf history runs  |  zfsperf history accept RUN "
                                   "--reason TEXT  |  zfsperf history remove RUN.  A run is known by its identity "
                                   "(host, start, its records' sha256): a copy of a stored run is already there.")
    p.add_argument("action", nargs="?", choices=["import", "show", "runs", "accept", "remove"], default="show",
                   help="show (default): series and change points; import: add results directories; runs: list the "
                        "stored runs with id, path, host and time; accept: mark a change at RUN as expected; "
                        "remove: take RUN out of the store")
    p.add_argument("dirs", nargs="*", help="import: results directories; accept, remove: the run (its id from "
                                           "`history runs`, its name or its directory)")
    p.add_argument("--reason", help="accept: why the change at this run is expected (shown on the trend page)")
    p.add_argument("--min-segment", type=int, default=2, metavar="N",
                   help="a level must hold for N runs to count: a shorter excursion that comes back is an "
                        "outlier run, not a change (default 2; 1 reports a change at the latest run at once)")
    p.add_argument("--store", help="a path (SQLite, the default $ZFSPERF_STATE/history.sqlite) or postgresql://...")
    p.add_argument("--case", help="only this case (as zfsperf names it, e.g. 'receive threads=4')")
    p.add_argument("--figure", help="only this figure (e.g. throughput)")
    p.add_argument("--min-change", type=float, default=0.0, metavar="PCT",
                   help="report change points of at least PCT %% only (default 0)")
    p.add_argument("--fail-on-change", type=float, metavar="PCT",
                   help="exit 1 when a change point worse by >= PCT %% is at one of the last --recent runs")
    p.add_argument("--recent", type=int, default=5, help="runs that count as recent for --fail-on-change (default 5)")
    p.add_argument("--json", action="store_true", help="the series and change points as JSON")
    p.add_argument("--html", metavar="FILE", help="also write trend charts with change points to FILE")


def _add_compare(sub: argparse._SubParsersAction) -> None:
    """`zfsperf compare`."""
    p = sub.add_parser("compare", help="A/B with significance: two runs, several runs a side, or the points of "
                                          "one interleaved run",
                       description="zfsperf compare BASE NEW  |  compare BASE... --vs NEW...  |  compare RUN "
                                   "[--cases A B]")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="BASE NEW; or the BASE runs with --vs; or one run")
    p.add_argument("--vs", nargs="+", metavar="NEW", help="the NEW runs (the DIRs are then all BASE runs): the run "
                   "is the unit, so run-to-run variance is measured, not assumed")
    p.add_argument("--cases", nargs="+", metavar="CASE", help="one run: compare these cases (the first is A)")
    p.add_argument("--store", help="history store whose identical-settings runs give the run-to-run noise "
                   "(default: the default store, when it exists)")
    p.add_argument("--no-history", action="store_true", help="do not read run-to-run noise from a history store")
    p.add_argument("--format", choices=["terminal", "md", "json"], default="terminal",
                   help="terminal, md (a pull request comment or CI step summary) or json")
    p.add_argument("--drift-floor", type=float, default=None, metavar="PCT",
                   help="one run a side, no history: a change within a factor of 1 + PCT/100 either way "
                        "cannot be judged between separate runs (default 75: -42.9 … +75 %%, above the A/A "
                        "differences measured here; A/A false alarms ≤ 5 %% up to a 20 %% run-to-run spread)")
    p.add_argument("--fail-on-regression", type=float, metavar="PCT",
                   help="a CI gate: exit 1 when a case's gated figure (its headline, or --gate-figure) is worse "
                        "by PCT %% or more and significant after Holm's correction across the cases, or a case "
                        "stopped passing; exit 2 when no figure could fail it")
    p.add_argument("--figures", help="comma-separated figures to show (default all; the gate is --gate-figure)")
    p.add_argument("--allow-setup-change", nargs="?", const="all", metavar="KEY,...",
                   help="let --fail-on-regression judge although the sides' set-ups differ in these (host, "
                        "kernel, zfs, target, runfile, defines, zfsperf, tunables, machine; bare: any). compare "
                        "names every difference either way; without this the gate exits 2 on one")
    p.add_argument("--gate-figure", metavar="NAME",
                   help="the figure --fail-on-regression judges in every case (default: each case's headline, "
                        "e.g. throughput for receive, iops for fio; the others are shown, not gated)")
    p.add_argument("--noise", type=float, default=0.0, metavar="PCT",
                   help="significant changes smaller than PCT %% count as within noise (default 0: a "
                        "significant change keeps its direction and is told as smaller than ±margin)")
    p.add_argument("--margin", type=float, metavar="PCT",
                   help="a change whose whole 95 %% interval lies inside ±PCT %% is \"same within ±PCT %%\" "
                        "(designs in one run, several runs a side, or history; default 5, or a --detect "
                        "run's own PCT)")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)    # the old spelling of --format json
    p.add_argument("--html", metavar="OUT", help="also write an HTML report of the comparison")



USAGE = """zfsperf: a performance test suite for ZFS (zfsperf COMMAND --help for each; zfsperf --help for all)

  zfsperf run                               the default suite on the embedded zfs-fuse (3 min)
  zfsperf run -r RUNFILE --dry-run          check a runfile and show its plan, nothing written
  zfsperf report zfsperf-results/current    summarise a run (nothing is re-run)
  zfsperf compare BASE NEW                  faster or slower, by how much, and how sure
  zfsperf ab checksum=fletcher2,fletcher4   an A/B of one change in one line (80 s)
  zfsperf check                             what would make numbers noisy here, measured now
"""


