"""A run's plan: what it measures, decided once -- from the command line, or from run.json when a
run is resumed -- and stored in run.json as one unit (`selection`, plus `builds`). The runner reads
the plan; it never writes what it decided back into the command line's options (a resume used to
overwrite them field by field)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from .errors import InputError
from .buildref import BuildRef
from .results.directory import ResultsDir
from .results.record import SteadyMode
from .report.abstats import MIN_BLOCKS
from .runfile import Case, Runfile, TestSpec, expand, load, loads, refuse_duet_with_builds
from .workloads import WORKLOADS


@dataclass(kw_only=True)
class Choice:
    """What the command line chose to measure; `Plan.new` turns it into the run's plan (a resumed
    run takes its plan from run.json instead)."""
    runfile: str = "quick"                 # a path or a built-in name (or the name of text)
    text: str | None = None                # the runfile itself (zfsperf ab's), named runfile
    tags: list[str] | None = None
    test: str | None = None
    iterations: int | None = None
    defines: dict[str, str] = field(default_factory=dict)
    precision: float | None = None
    interleave: bool = False
    seed: int | None = None
    detect: float | None = None
    builds: dict[str, BuildRef] = field(default_factory=dict)   # a build A/B in the guest (guest ab, bisect):
                                           # every selected test runs once per build, swapped in per case
    build_turns: bool = False              # guest ab --turns: the two builds take turns in two guests
    smoke: bool = False                    # --smoke: the run at its smallest, a check and not a measurement


# --smoke: the blocks of an A/B (interleaved, an `ab` test, a duet) when -I gives none: the fewest
# that pair each case with its other side more than once (turns: ABBA's two orders), a third of the
# 6 its paired test needs to call a change (report/abstats.MIN_BLOCKS); any other case runs once
SMOKE_BLOCKS = 2


def smoke_refused(other: str) -> InputError:
    """--smoke beside an option that asks for more than a check (a stopping rule, a verdict, a floor)."""
    return InputError(f"--smoke runs a fixed count and keeps nothing, and {other} asks for a stopping rule, a "
                      "verdict or a floor: give one of them", field="--smoke")


@dataclass(frozen=True, kw_only=True)
class Plan:
    runfile: Runfile
    tags: list[str] | None = None
    test: str | None = None
    iterations: int | None = None          # -i: every test's iterations (None: each test's own)
    precision: float | None = None         # --precision PCT for every test (None: each test's own)
    interleave: bool = False               # --interleave: blocks of one iteration of every case
    seed: int | None = None                # the order of the cases inside each block
    detect: float | None = None            # --detect PCT: blocks until every A/B pair could see PCT %
    defines: dict[str, str] = field(default_factory=dict)
    builds: dict[str, BuildRef] = field(default_factory=dict)   # a build A/B in the guest
    build_turns: bool = False              # ... taking turns in two guests, one paused (guest/pair.py)
    smoke: bool = False                    # --smoke: -I as asked (else SMOKE_BLOCKS or 1), no stopping rule
    done: frozenset[tuple[str, int]] = frozenset()              # (case, iteration) a resumed run has

    @classmethod
    def new(cls, choice: Choice) -> "Plan":
        """From the command line's choice: the runfile (a path or a built-in) loaded with its defines."""
        rf = (load(choice.runfile, choice.defines) if choice.text is None
              else loads(choice.text, choice.runfile, choice.defines))
        return cls(runfile=rf, defines=dict(choice.defines), tags=choice.tags,
                   test=choice.test, iterations=choice.iterations, precision=choice.precision,
                   interleave=choice.interleave, seed=choice.seed, detect=choice.detect, builds=dict(choice.builds),
                   build_turns=choice.build_turns, smoke=choice.smoke)

    @classmethod
    def resumed(cls, rd: ResultsDir, builds: dict[str, BuildRef] | None = None) -> "Plan":
        """From the results directory of a run that did not finish: its runfile text and selection
        as run.json holds them, and the (case, iteration) pairs it already has."""
        info = rd.run_record()
        sel = info.selection
        defines = sel.get("defines") or {}
        return cls(runfile=loads(info.runfile["text"], info.runfile["source"], defines), defines=defines,
                   tags=sel.get("tags"), test=sel.get("test"), iterations=sel.get("iterations"),
                   precision=sel.get("precision"), interleave=bool(sel.get("interleave")), seed=sel.get("seed"),
                   detect=sel.get("detect"), build_turns=bool(sel.get("build_turns")), smoke=bool(sel.get("smoke")),
                   builds={k: BuildRef.from_json(v) for k, v in (info.builds or {}).items()} or dict(builds or {}),
                   done=frozenset((r.case, r.iteration) for r in rd.results()))

    def iterations_of(self, t: TestSpec) -> int:
        """A test's counted iterations: -I, else the runfile's; an A/B's blocks (an interleaved run,
        an `ab` test) never fewer than the 6 its paired test needs to call a change, except in a
        smoke run, which runs what -I asks, else SMOKE_BLOCKS of an A/B (a duet too) and one of any
        other test."""
        if self.smoke:
            return self.iterations or (SMOKE_BLOCKS if self.interleave or t.ab or t.duet else 1)
        n = self.iterations or t.iterations
        return max(n, MIN_BLOCKS) if self.interleave or t.ab else n

    def cases(self) -> list[Case]:
        """The selected cases, each test given the builds it runs on; none selected is bad input."""
        if self.builds:
            selected = [t for t in self.runfile.select(tags=self.tags, test=self.test)
                        if t.builds != list(self.builds)]          # not given its builds already
            refuse_duet_with_builds(self.runfile, selected)
            for t in selected:
                t.builds = list(self.builds)
                if self.build_turns:
                    self._as_build_turns(t)
        cases = self.runfile.cases(tags=self.tags, test=self.test)
        if not cases:
            tags = ", ".join(self.tags) if self.tags else "any"
            raise InputError(f"no test matches the selection (tags: {tags}; test: {self.test or 'any'})",
                             file=self.runfile.source)
        return cases

    def until_steady(self, t: TestSpec) -> bool:
        """The test iterates until its steady verdict is decided (iterations = "steady"), unless
        the command line gives a count (-I) or another stopping rule (--precision, --detect), or
        pairs every case in blocks (--interleave, builds): each case would stop on its own and leave
        its blocks unpaired."""
        return (t.until_steady and not self.iterations and self.precision is None and self.detect is None
                and not self.interleave and not self.builds and not self.smoke)

    def _as_build_turns(self, t: TestSpec) -> None:
        """A test whose two builds take turns in two guests: a duet in turns whose sides are the
        builds, so what it cannot hold is refused here, before anything is booted."""
        where = {"file": self.runfile.source, "line": t.line}
        if len(self.builds) != 2:
            raise InputError(f"build turns take two builds, not {len(self.builds)}", field="--turns")
        if "turns" not in WORKLOADS[t.workload].duet_modes or not WORKLOADS[t.workload].turns_across_guests:
            raise InputError(f"test {t.name}: its {t.workload} workload cannot take turns between two guests "
                             "(receive can)", **where, field="workload")
        if len(expand(t)) != len(self.builds):
            swept = [k for k, v in {**t.fields, **t.dataset, **t.tunables}.items() if isinstance(v, list)]
            raise InputError(f"test {t.name} sweeps {', '.join(swept) or 'a field'}: build turns compare the builds alone "
                             "(select a test without a sweep)", **where, field=swept[0] if swept else "build")
        if t.steady.mode == SteadyMode.GATE:
            raise InputError(f"test {t.name}: steady gate needs a sampled series, and a paused guest is not "
                             "sampled in build turns", **where, field="steady")
        t.duet, t.turns = True, True

    def seeded(self, blocks: bool) -> "Plan":
        """With a seed for the order inside blocks, drawn now when blocks need one and none was given."""
        if blocks and self.seed is None:
            return replace(self, seed=random.SystemRandom().randrange(2 ** 31))
        return self

    def selection(self) -> dict[str, Any]:
        """What run.json stores of the plan (a resume reads it back)."""
        return {"tags": self.tags, "test": self.test, "iterations": self.iterations, "precision": self.precision,
                "interleave": self.interleave, "seed": self.seed, "detect": self.detect, "defines": self.defines,
                "build_turns": self.build_turns, "smoke": self.smoke}
