"""Two OpenZFS builds measured against each other in one guest (`zfsperf guest ab`), and the first
commit of a range whose change exceeds the noise floor (`zfsperf guest bisect`).

The A/B is a run like any other: every selected test gets one case per build ("recv build=a",
"recv build=b"), the runner interleaves them in blocks whose order is drawn from a recorded seed,
and the guest loads each case's build before its pool (tunables/modswitch.py). Same kernel, memory,
disk, userland and pool for both sides: only the module differs. `compare` on the run gives the
paired verdict per case, with its interval and the change the data could have seen; the
markdown of that verdict (compare.md in the run's directory) is what goes into a pull request.

With --turns the two builds take turns instead, each in a guest of its own (the lab's and its
twin, booted here and stopped after; guest/pair.py pauses the one whose turn it is not), and with
--rebuild one source is compiled twice and the A/A′ it gives is kept as the floor of every later
build verdict of that test and figure (report/buildfloor.py).

A side is a series of Debian's build (`2.3`: the guest's own module), an OpenZFS source tree
(`DIR`: what is checked out there, dirty or not), or one commit of a git repository (`DIR@REV`,
exported with `git archive`, the repository untouched). Both sides run with the guest's userland,
so both must be of the guest's series.

Bisect walks the first-parent commits of GOOD..BAD: it measures BAD against GOOD first (no
significant change: nothing to look for), then halves the range, each step an A/B of GOOD against
the step's commit, a step "changed" when its verdict is significant in BAD's direction and its
change at least half of BAD's (nearer BAD than GOOD). Every
step is kept in bisect.json in the output directory: the same command again resumes there.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from . import control, proc
from .errors import InputError, TargetError
from .units import ChangeVerdict
from .report.abstats import ALPHA, MIN_BLOCKS
from .guest.build import VERSIONS, Builder, find_build
from .guest.source import ModuleBuild, SourceBuilder, cache_root, commit_meta, identify, read_meta, source_spec
from .buildref import BuildRef

DEFAULT_BLOCKS = 6            # the exact paired test needs 6 blocks to reach p < 0.05 at all
TCG_NOTE = ("under TCG (software emulation) only relative, CPU-bound differences between the builds "
            "mean anything; absolute figures are not speeds")


@dataclass
class Side:
    spec: str                 # as given: 2.3 | DIR | DIR@REV
    series: str
    ref: BuildRef


def resolve(spec: str, name: str, field: str, sb: SourceBuilder, rebuild: bool = False) -> Side:
    """A side of the A/B, built (or found cached) and named `name` in case names (rebuild: compiled
    again in a second build tree, for the A/A′ floor)."""
    if spec in VERSIONS:                   # with rebuild: refused by guest_ab before anything is built
        b = find_build(spec) or Builder(spec, sb.say, sb.log).run()
        return Side(spec, spec, BuildRef(name, f"OpenZFS {b.zfs_version} (Debian, the guest's own)", None,
                                         {"kind": "debian", "version": b.zfs_version, "kernel": b.kernel}))
    src, rev = _source(spec, field)
    if rev:
        mb = sb.build_commit(src, rev, rebuild=rebuild)
    else:
        identify(src)                      # bad input is refused before any build
        mb = sb.build(src, rebuild=rebuild)
    return Side(spec, mb.tree.series, _ref(name, mb))


def _source(spec: str, field: str) -> tuple[Path, str]:
    return source_spec(spec, field, f"neither a series ({', '.join(sorted(VERSIONS))}) nor a directory")


def series_of(spec: str, field: str) -> str:
    """The OpenZFS series a side is, read without building anything (bad input first)."""
    if spec in VERSIONS:
        return spec
    src, rev = _source(spec, field)
    if not rev:
        return read_meta(src)[1]
    return commit_meta(src, rev, field)[1]


def check_runfile(runfile: str, test: str | None, field: str = "--test", builds: int = 0) -> Any:
    """A build A/B's runfile, refused before anything is built or booted (an unknown test, a duet;
    builds: with two builds taking turns, what turns cannot hold, as the plan refuses it)."""
    from .plan import Plan
    from .runfile import load, refuse_duet_with_builds
    rf = load(runfile)
    tests = rf.select(test=test)
    if not tests:
        raise InputError(f"no test {test!r} in {rf.source} (it has: {', '.join(t.name for t in rf.tests)})",
                         field=field)
    refuse_duet_with_builds(rf, tests)
    if builds:
        Plan(runfile=load(runfile), test=test, build_turns=True,
             builds={n: BuildRef(n, n) for n in "ab"[:builds]}).cases()
    return rf


def _ref(name: str, mb: ModuleBuild) -> BuildRef:
    return BuildRef(name, mb.tree.label, str(mb.modules), mb.info())


FLOORS = "rebuild-floors.json"            # in the build cache: the A/A′ floors (report/buildfloor.py)


@dataclass
class AbResult:
    rc: int
    results_dir: Path | None
    comparison: Any | None              # report.compare.Comparison
    floors: list[str] = field(default_factory=list)     # the rebuild floors measured or applied, in words


def ensure_guest(series: str, say: Callable[[str], None]) -> tuple[Any, bool]:
    """The running guest of this series, booted if none runs. (guest, booted here)."""
    from .guest.vm import Guest
    lab = Guest()
    st = lab.state()
    if st is not None:
        if not st.zfs_version.startswith(series + "."):
            raise InputError(f"the running guest has OpenZFS {st.zfs_version}, the builds are {series}: "
                             "stop it with `zfsperf guest down` first", field="--a/--b")
        if not st.hostroot:
            raise TargetError("the running guest cannot see the host's root, where the builds are")
        return lab, False
    lab.up(series, say=say, watched=True)        # booted for this command: gone with it, however it ends
    return lab, True


def ensure_twin(lab: Any, say: Callable[[str], None]) -> tuple[Any, bool]:
    """Build turns: the twin of the running guest (guest/vm.py), booted if none runs, and checked
    to be the same machine: the same build, kernel, OpenZFS and accelerator. (twin, booted here)"""
    from .guest.vm import Guest, twin_root
    st = lab.state()
    twin = Guest(twin_root())
    booted = twin.state() is None
    if booted:
        say("booting the twin guest (build turns: one guest pauses while the other has its turn)")
        twin.up(st.zfs_version.rsplit(".", 1)[0], say=say, watched=True)
    else:
        twin.resume_if_paused(say)
    tst = twin.state()
    same = ("build_dir", "kernel", "zfs_version", "accel", "hostroot")
    differ = [k for k in same if getattr(tst, k) != getattr(st, k)]
    if differ:
        if booted:
            twin.down(say=say)
        raise TargetError("the twin guest is not the same machine as the guest: "
                          + ", ".join(f"{k} {getattr(st, k)} / {getattr(tst, k)}" for k in differ))
    return twin, booted


def run_ab(sides: dict[str, BuildRef], runfile: str, *, blocks: int, seed: int | None, outdir: str,
           tags: list[str] | None, test: str | None, argv: list[str], say: Callable[[str], None],
           defines: dict[str, str] | None = None, turns: bool = False, detect: float | None = None,
           rebuild: bool = False, cleanup: bool = False, target: str = "guest", html: bool = True,
           smoke: bool = False) -> AbResult:
    """One interleaved run of the runfile's selected tests on each build, and its paired comparison
    (turns: the builds take turns in two guests, `blocks` iterations of ABBA groups; detect: more
    iterations until the verdict is decided or could see `detect` %, runner --detect). rebuild: the
    sides are one source built twice, and what the A/B measures is kept as the rebuild floor;
    otherwise the floors kept so far are applied to its verdicts (report/buildfloor.py). cleanup: -x,
    what earlier zfsperf runs left in the guests is removed first. target: the guest, or this
    machine's kernel OpenZFS ("openzfs": a bisect on the machine zfsperf runs on). smoke: `blocks`
    as asked, not raised to the 6 a verdict needs (run --smoke)."""
    from .report import compare
    from .report.pairing import ab_pairs
    from .tunables import impls
    from .report.model import load_run
    from .runner import RunOptions, Runner
    if blocks < 2:
        raise InputError("--blocks takes a whole number >= 2", field="--blocks")
    seed = seed if seed is not None else random.SystemRandom().randrange(2 ** 31)
    opts = RunOptions.of(runfile=runfile, tags=tags, test=test, iterations=blocks, outdir=outdir, target=target,
                         html=html,
                         interleave=True, seed=seed, builds=sides, argv=argv, defines=defines or {},
                         keep_signal_handlers=False, store=None, check="warn", build_turns=turns,
                         detect=detect, cleanup=cleanup, smoke=smoke)
    runner = Runner(opts)
    rc = runner.run()
    if runner.results_dir is None:
        return AbResult(rc, None, None)
    run = load_run(runner.results_dir)
    pairs = ab_pairs(run)
    cmp = compare.compare_within(run, pairs)       # each case: first build -> second
    said = build_floors(run, cmp, pairs, keep=rebuild)
    pins = impls.summary(run.run.implementations)
    if pins:
        said.append(pins)
    (runner.results_dir / "compare.md").write_text(markdown(cmp, sides, said), encoding="utf-8")
    return AbResult(rc, runner.results_dir, cmp, said)


def is_rebuild(run: Any) -> bool:
    """The run (report.model.Run) was an A/A′: one of its builds is a source compiled a second time."""
    return any((b.get("info") or {}).get("rebuilt") for b in (run.run.builds or {}).values() if isinstance(b, dict))


def build_floors(run: Any, cmp: Any, pairs: list[Any], keep: bool = False) -> list[str]:
    """The rebuild floors of a build A/B's paired comparison (report/buildfloor.py), in words for
    above its table. An A/A′ (one source built twice, is_rebuild; or `keep`: the run that measured
    it, which keeps what it measured in the build cache as the floor of every later build verdict
    of its tests): what it measured. Any other build A/B: the floors kept so far applied to its
    verdicts. The tests' definitions are read from the runfile run.json keeps, with its -D values."""
    from .report import buildfloor
    from .runfile import loads
    if not run.run.builds:
        return []
    rf, defines = run.run.runfile or {}, run.run.selection.get("defines") or {}
    try:
        loaded = loads(rf["text"], rf.get("source", "<runfile>"), defines)
    except (KeyError, TypeError, InputError) as e:
        return [f"no rebuild floor: the run's runfile does not load here ({e})"]
    definitions = {t.name: t.definition() for t in loaded.tests}
    tests = {f"{a.case} → {b.case}": a.test for a, b in pairs}
    floors_file = cache_root() / FLOORS
    if keep or is_rebuild(run):  # an A/A′: what it measured is the floor of every later build verdict
        floors = buildfloor.measured(cmp, tests, definitions, run.run.accelerator, str(run.path))
        if keep:
            buildfloor.save(floors_file, floors)
        return [f"builds of one source differ by up to {f['floor_pct']:.1f} % here ({k.split('|')[0]}, "
                f"{k.split('|')[1]}): " + (f"recorded in {floors_file}" if keep else "this run's A/A′")
                for k, f in sorted(floors.items())]
    return buildfloor.apply(cmp, buildfloor.load(floors_file), tests, definitions, run.run.accelerator)


def run_floors(results_dir: Path) -> list[str]:
    """What a finished `run --build` says last: of one source built twice (--rebuild), the rebuild
    floors its paired comparison measured, kept in the build cache; of any other build A/B, the
    floors kept so far that hold its verdicts (as `compare` of it states them), in words."""
    from .report import compare
    from .report.model import load_run
    from .report.pairing import ab_pairs
    run = load_run(results_dir)
    pairs = ab_pairs(run)
    return build_floors(run, compare.compare_within(run, pairs), pairs, keep=is_rebuild(run))


def markdown(cmp: Any, sides: dict[str, BuildRef], floors: list[str] | None = None) -> str:
    """The A/B for a pull request: what each side was, the rebuild floors, then compare's paired
    verdicts."""
    from .report.export.compare import markdown as compare_md, text as compare_text
    out = ["builds:"] + [f"- **{b.name}**: {b.label}" + (f" (modules {b.modules})" if b.modules else "")
                         for b in sides.values()] + [f"- {line}" for line in floors or []]
    if compare_text.emulated(cmp):
        out.append(f"- {TCG_NOTE}")
    return "\n".join(out) + "\n\n" + compare_md.markdown(cmp)


def print_ab(res: AbResult, sides: dict[str, BuildRef]) -> None:
    from .report.export.compare import terminal as compare_terminal, text as compare_text
    from .ui import Console
    for b in sides.values():
        print(f"build {b.name}: {b.label}")
    if res.comparison is None:
        return
    for line in res.floors:
        print(line)
    compare_terminal.render(res.comparison, Console().rich)
    if compare_text.emulated(res.comparison):
        print(f"note: {TCG_NOTE}")
    print(f"for a pull request: {res.results_dir / 'compare.md'}")
    print(f"Log directory:\t{res.results_dir}")


def guest_ab(a: str, b: str, runfile: str, *, blocks: int = DEFAULT_BLOCKS, seed: int | None = None,
             outdir: str = "zfsperf-results", tags: list[str] | None = None, test: str | None = None,
             argv: list[str] | None = None, say: Callable[[str], None] = print, turns: bool = False,
             detect: float | None = None, rebuild: bool = False, cleanup: bool = False, smoke: bool = False) -> int:
    """One A/B of two builds (rebuild: one source compiled twice, the A/A′ floor measured; smoke:
    `blocks` as asked, a check of the set-up)."""
    if rebuild and a != b:
        raise InputError("--rebuild compiles one source twice: give the same --a and --b", field="--rebuild")
    if rebuild and a in VERSIONS:
        raise InputError(f"--rebuild compiles a source twice: {a} is Debian's build (give DIR or DIR@REV)",
                         field="--rebuild")
    check_runfile(runfile, test, builds=2 if turns else 0)      # bad input before anything is built or booted
    sa, sb_ = series_of(a, "--a"), series_of(b, "--b")
    if sa != sb_:
        raise InputError(f"--a is OpenZFS {sa}, --b is {sb_}: the guest runs one series' userland, so both "
                         "builds must be of one series", field="--b")
    sb = SourceBuilder(say)
    side_a, side_b = resolve(a, "a", "--a", sb), resolve(b, "b", "--b", sb, rebuild=rebuild)
    sides = {"a": side_a.ref, "b": side_b.ref}
    with control.stop_on_signals():
        lab, booted = ensure_guest(side_a.series, say)
        twin, twin_booted = None, False
        try:
            if turns:
                twin, twin_booted = ensure_twin(lab, say)
            res = run_ab(sides, runfile, blocks=blocks, seed=seed, outdir=outdir, tags=tags, test=test,
                         argv=argv or [], say=say, turns=turns, detect=detect, rebuild=rebuild, cleanup=cleanup,
                         smoke=smoke)
        finally:
            if twin_booted:
                twin.down(say=say)
            if booted:
                lab.down(say=say)
    print_ab(res, sides)
    return res.rc


# ------------------------------------------------------------------------------------- bisect
def _commits(repo: Path, good: str, bad: str) -> list[str]:
    res = proc.run(["git", "-C", str(repo), "rev-list", "--first-parent", "--reverse", f"{good}..{bad}"], timeout=300)
    if not res.ok:
        raise InputError(f"git rev-list {good}..{bad} in {repo}: {res.error_text()}", field="--good/--bad")
    commits = res.stdout.split()
    if not commits:
        raise InputError(f"{bad} has no commit after {good} (first-parent)", field="--bad")
    return commits


def _subject(repo: Path, commit: str) -> str:
    res = proc.run(["git", "-C", str(repo), "log", "-1", "--format=%s", commit], timeout=60)
    return res.stdout.strip() if res.ok else ""


@dataclass
class Step:
    commit: str
    verdict: str                 # compare's verdict for the case and figure
    change_pct: float | None
    ci_pct: list[float] | None
    p: float | None
    detectable_pct: float | None
    results_dir: str
    subject: str = ""

    def changed(self, direction: str, full_pct: float | None) -> bool:
        """Does this step carry the change BAD has (`direction`, `full_pct` from GOOD to BAD)?
        Significant in that direction, and at least half of it: a step nearer GOOD than BAD is on
        GOOD's side even when significant (a small real change of its own, or a false positive of
        the 5 % level), so one such step cannot draw the search away from the commit that made
        the change."""
        if self.verdict != direction:
            return False
        if full_pct is None or self.change_pct is None:
            return True
        return abs(self.change_pct) >= abs(full_pct) / 2

    def line(self) -> str:
        ci = f" [{self.ci_pct[0]:+.1f} … {self.ci_pct[1]:+.1f} %]" if self.ci_pct else ""
        ch = f"{self.change_pct:+.1f} %" if self.change_pct is not None else "n/a"
        p = f"p {self.p:.3f}" if self.p is not None else "p n/a"
        see = f", could see ≥ {self.detectable_pct:.1f} %" if self.detectable_pct is not None else ""
        return f"{self.commit[:12]}  {ch}{ci}  {p}  {self.verdict}{see}  {self.subject}"


class Bench(Protocol):
    """Where a bisect measures: it checks the input, builds a side (a commit) and runs an A/B."""
    turns: bool

    def check_runfile(self, runfile: str, case: str) -> Any: ...
    def settings(self, detect: float | None) -> dict[str, Any]: ...
    def good_series(self, src: Path, good: str) -> str: ...
    def side(self, src: Path, commit: str, name: str, field: str) -> Side: ...
    def check_step(self, good: Side, side: Side, short: str, good_rev: str) -> None: ...
    def how(self, blocks: int) -> str: ...
    def ab(self, sides: dict[str, BuildRef], good: Side, **kw: Any) -> AbResult: ...
    def close(self) -> None: ...


class GuestBench:
    """Where `guest bisect` measures: the guest (with --turns: and its twin), booted for the first
    step that needs it and stopped at the end if booted here; each commit built for its kernel."""

    def __init__(self, say: Callable[[str], None], turns: bool = False, cleanup: bool = False,
                 html: bool = True) -> None:
        self.say, self.turns, self.cleanup, self.html = say, turns, cleanup, html
        self.sb = SourceBuilder(say)
        self.guests: list[Any] = []        # (lab, booted), then the twin's

    def settings(self, detect: float | None) -> dict[str, Any]:
        """What bisect.json keeps beside the range, so that another bisect is not resumed as this one."""
        return {"turns": self.turns, "detect": detect} if self.turns or detect is not None else {}

    def check_runfile(self, runfile: str, case: str) -> Any:
        return check_runfile(runfile, case, "--case", builds=2 if self.turns else 0)

    def good_series(self, src: Path, good: str) -> str:
        return series_of(f"{src}@{good}", "--good")

    def side(self, src: Path, commit: str, name: str, field: str) -> Side:
        return resolve(f"{src}@{commit}", name, field, self.sb)

    def check_step(self, good: Side, side: Side, short: str, good_rev: str) -> None:
        if side.series != good.series:       # the guest runs one series' userland
            raise InputError(f"commit {short} is OpenZFS {side.series}, {good_rev} is {good.series}", field="--bad")

    def how(self, blocks: int) -> str:
        return f"{blocks} iterations of turns" if self.turns else f"{blocks} blocks"

    def ab(self, sides: dict[str, BuildRef], good: Side, **kw: Any) -> AbResult:
        if not self.guests:
            self.guests.append(ensure_guest(good.series, self.say))
            if self.turns:
                self.guests.append(ensure_twin(self.guests[0][0], self.say))
        return run_ab(sides, say=self.say, turns=self.turns, cleanup=self.cleanup, html=self.html, **kw)

    def close(self) -> None:
        for lab, booted in reversed(self.guests):     # the twin first, then the guest, each if booted here
            if booted:
                lab.down(say=self.say)


def guest_bisect(repo: str, good: str, bad: str, runfile: str, case: str, figure: str, *,
                 blocks: int = DEFAULT_BLOCKS, seed: int | None = None, outdir: str = "zfsperf-bisect",
                 argv: list[str] | None = None, say: Callable[[str], None] = print, turns: bool = False,
                 detect: float | None = None, cleanup: bool = False, smoke: bool = False) -> int:
    """0: the first changed commit named; 1: no change between GOOD and BAD beyond the noise (or,
    smoke: BAD's step in blocks too few to call one, a check of the set-up).
    turns: each step a build-turns A/B in two guests; detect: each step's iterations go on until its
    verdict is decided -- worse or better, or the same within the margin -- or could see that
    change (BAD's own step: `detect` %; every other step: half of BAD's change, the line between
    GOOD's side and BAD's, or `detect` if smaller)."""
    return bisect(GuestBench(say, turns, cleanup), repo, good, bad, runfile, case, figure, blocks=blocks, seed=seed,
                  outdir=outdir, argv=argv, say=say, detect=detect, smoke=smoke)


def bisect(bench: Bench, repo: str, good: str, bad: str, runfile: str, case: str, figure: str, *,
           blocks: int = DEFAULT_BLOCKS, seed: int | None = None, outdir: str = "zfsperf-bisect",
           argv: list[str] | None = None, say: Callable[[str], None] = print, detect: float | None = None,
           smoke: bool = False) -> int:
    """A bisect of GOOD..BAD measured where `bench` measures (GuestBench, or buildsource.LocalBench:
    the machine zfsperf runs on). Bad input before anything is built: the runfile and its case, the
    repository, the range, GOOD's META; bisect.json in outdir resumed when its settings are these."""
    rf_source = bench.check_runfile(runfile, case).source
    src = Path(repo).expanduser().resolve()
    if not (src / ".git").exists():
        raise InputError(f"{repo} is not a git repository", field="--zfs-src")
    commits = _commits(src, good, bad)
    bench.good_series(src, good)
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    state_file = out / "bisect.json"
    settings = {"repo": str(src), "good": good, "bad": bad, "runfile": rf_source, "case": case, "figure": figure,
                "blocks": blocks} | bench.settings(detect) | ({"smoke": True} if smoke else {})
    state: dict[str, Any] = {"settings": settings, "steps": {}}
    if state_file.exists():
        old = json.loads(state_file.read_text())
        if old.get("settings") == settings:
            state = old
            say(f"bisect: resuming from {state_file} ({len(state['steps'])} step(s) measured)")
        else:
            raise InputError(f"{state_file} is a bisect with other settings: use another -o", field="-o")
    with control.stop_on_signals():
        try:
            return _bisect(bench, src, good, commits, runfile, case, figure, blocks, seed, out, argv or [], say,
                           state, state_file, detect=detect, smoke=smoke)
        finally:
            bench.close()


def _bisect(bench: Bench, src: Path, good: str, commits: list[str], runfile: str, case: str, figure: str, blocks: int,
            seed: int | None, out: Path, argv: list[str], say: Callable[[str], None], state: dict[str, Any],
            state_file: Path, *, detect: float | None = None, smoke: bool = False) -> int:
    bad = commits[-1][:12]
    good_side = bench.side(src, good, "good", "--good")
    good_full = good_side.ref.info.get("commit") or good
    steps: dict[str, Step] = {k: Step(**v) for k, v in state["steps"].items()}
    margin: list[float | None] = [detect]      # the change a step must be able to see (--detect)

    def measure(commit: str) -> Step:
        if commit in steps:
            return steps[commit]
        short = commit[:8]
        side = bench.side(src, commit, short, f"commit {short}")
        bench.check_step(good_side, side, short, good)
        how = bench.how(blocks) + (f", more until decided or it could see {margin[0]:.1f} %"
                                   if margin[0] is not None else "")
        say(f"bisect: measuring {short} against {good_full[:8]} ({how})")
        res = bench.ab({"good": good_side.ref, short: side.ref}, good_side, runfile=runfile, blocks=blocks,
                       seed=seed, outdir=str(out / "runs"), tags=None, test=case, argv=argv, detect=margin[0],
                       smoke=smoke)
        st = _step_of(res, src, commit, case, figure)
        steps[commit] = st
        state["steps"][commit] = st.__dict__
        state_file.write_text(json.dumps(state, indent=1))          # a resumed bisect measures it never again
        say(f"bisect: {st.line()}")
        return st

    last = measure(commits[-1])
    if not ChangeVerdict(last.verdict).decided:
        why = (f"its {blocks} blocks cannot call a change (p < {ALPHA:g} needs {MIN_BLOCKS}): nothing to look for"
               if last.verdict == ChangeVerdict.TOO_FEW else "no change beyond the noise floor to look for")
        print(f"bisect: {bad} against {good}: {last.verdict} — {why}")
        _print_steps(steps, commits)
        return 1
    direction = last.verdict
    if (bench.turns or detect is not None) and last.change_pct is not None:   # GOOD's side ends at half of it
        margin[0] = min(abs(last.change_pct) / 2, detect if detect is not None else float("inf"))

    def changed(i: int) -> bool:
        st = measure(commits[i])
        if st.changed(direction, last.change_pct):
            return True
        if st.verdict == direction:
            say(f"bisect: {commits[i][:12]} is {direction} by less than half of {bad}'s change: "
                "counted on the good side")
        return False
    hi = first_changed(len(commits), changed)
    return _found(src, commits, hi, direction, steps, state, state_file)


def _found(src: Path, commits: list[str], hi: int, direction: str, steps: dict[str, "Step"],
           state: dict[str, Any], state_file: Path) -> int:
    """The bisect's end: every step measured, the first commit with the change, kept in its state."""
    first = commits[hi]
    _print_steps(steps, commits)
    print(f"first {direction} commit: {first}  {_subject(src, first)}")
    state["first"] = {"commit": first, "direction": direction}
    state_file.write_text(json.dumps(state, indent=1))
    return 0


def _step_of(res: AbResult, src: Path, commit: str, case: str, figure: str) -> Step:
    """One bisect step from its A/B: the judged figure's verdict, change, interval and p."""
    ch = None
    if res.comparison is not None:
        ch = next((c for c in res.comparison.changes if c.figure == figure), None)
    if ch is None:
        raise TargetError(f"the A/B of {commit[:8]} gave no {figure!r} for {case} "
                          f"(see {res.results_dir}; exit status {res.rc})")
    return Step(commit, ch.verdict, ch.change_pct, list(ch.ci_pct) if ch.ci_pct else None, ch.p,
                ch.detectable_pct, str(res.results_dir), _subject(src, commit))


def first_changed(n: int, changed: Callable[[int], bool]) -> int:
    """The index of the first changed one of n commits in order, the last known changed and
    GOOD (before the first) known not: halving, about log2(n) calls of `changed`."""
    lo, hi = -1, n - 1                        # commits[hi] changed; commits[lo] (or GOOD) did not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if changed(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _print_steps(steps: dict[str, Step], commits: list[str]) -> None:
    print("bisect steps (each against GOOD):")
    for c in commits:
        if c in steps:
            print(f"  {steps[c].line()}")
