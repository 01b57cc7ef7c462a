"""Runfiles: TOML, validated completely before anything is touched, expanded into cases.

```toml
[defaults]                 # iterations, timeout, pool, dataset, tunables, steady
iterations = 3
[defaults.pool]
layout = "mirror"
[[test]]
name = "recv-threads"
tags = ["receive", "quick"]
workload = "receive"
corpus = { kind = "small-records", size = "256M" }
threads = [1, 2, 4]        # a list is a sweep: one case per value; several lists make a matrix
tunables = { zfs_recv_write_batch_size = ["128K", "1M"] }
expect = { throughput = ">= 100 MiB/s" }
```
Every error names the file, the line, the field and what was expected (InputError, exit 2).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import re
import tomllib
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import InputError, did_you_mean, shown
from . import props
from .pool import LAYOUTS, PoolSpec, check_property_name
from .results.record import SteadyMode
from .steady import SteadySpec
from .steady.rounds import GROW_CAP, GROW_FIRST
from .tunables import normalise_value
from .tunables.registry import known_names
from .tunables.scope import Scope, refused, scope_of
from .units import parse_duration, parse_size
from .workloads import WORKLOADS
from .workloads.base import figure_names, figure_unit

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
TUNABLE_RE = re.compile(r"^[a-z][a-z0-9_]{1,80}$")
EXPECT_RE = re.compile(r"^\s*(>=|<=|==|>|<)\s*(-?\d+(?:\.\d+)?)\s*(\S.*)?$")
DEFAULT_MAX_ITERATIONS = 30
DEFAULT_BUDGET = 1800.0                    # seconds one case may spend reaching its precision
STEADY_BUDGET = 100.0                      # ... its steady verdict (iterations = "steady"), unless given
DEFAULT_ITERATIONS = 3
DEFAULT_TIMEOUT = 20 * 60.0


@dataclass(frozen=True)
class Key:
    """One field of a runfile table, declared once: the loader checks its type and bounds from here,
    `zfsperf list --keys` prints it, and the guide's reference table is tested against it."""
    name: str
    type: Any                               # a type or a tuple of types (TOML's)
    default: str                            # as the guide shows it ("-": none)
    help: str
    in_defaults: bool = False               # may be set in [defaults] too
    minimum: int | None = None              # whole numbers: the least allowed
    kind: str = ""                          # what the value is, where its type alone does not say

    def type_text(self) -> str:
        return self.kind or _type_name(self.type)


DURATION = (str, int, float)
DURATION_TEXT = 'a duration ("90s", "20m") or seconds'
SIZE_TEXT = 'a size ("512M", "2G") or bytes'
TEST_KEYS: tuple[Key, ...] = (
    Key("name", str, "-", "the test's name: letters, digits, _ . - (cases are named after it)"),
    Key("workload", str, "-", "receive, fio or mixed (each adds its own fields)"),
    Key("tags", list, "[]", "labels that `run -T` selects by"),
    Key("description", str, '""', "free text"),
    Key("iterations", (int, str), str(DEFAULT_ITERATIONS), 'counted iterations per case; "steady": on until the '
        "case's steady verdict is decided (from 5, at most max_iterations and budget)", True, 1,
        kind='a whole number, or "steady"'),
    Key("warmup", int, "0", "iterations run first and never counted", True, 0),
    Key("timeout", DURATION, "20m", "one iteration's time limit", True, kind=DURATION_TEXT),
    Key("pool", dict, "stripe of 2 × 2G", "the pool each case gets (the pool keys below)", True),
    Key("dataset", dict, "{}", "dataset properties of the received or written dataset; a list sweeps", True),
    Key("tunables", dict, "{}", "module tunables set around each case and restored; a list sweeps", True),
    Key("steady", dict, '{ mode = "record" }', "steady-state detection: mode, method, interval, window, ...",
        True),
    Key("expect", dict, "{}", 'limits a case must meet to PASS, e.g. { throughput = ">= 100 MiB/s" }'),
    Key("precision", (str, int, float), "-", "run on until the 95 % CI half-width is within this share", True,
        kind='a share like "2%"'),
    Key("max_iterations", int, f"{DEFAULT_MAX_ITERATIONS} (at least iterations); {GROW_CAP} for \"steady\"",
        "precision's, --detect's (or iterations = \"steady\"'s) iteration limit", True, 1),
    Key("budget", DURATION, f"30m; {STEADY_BUDGET:.0f}s for \"steady\"",
        "precision's, --detect's (or iterations = \"steady\"'s) time limit per case", True, kind=DURATION_TEXT),
    Key("duet", (bool, str), "false", "the two sides of a sweep in one iteration: at once, or taking turns",
        kind='true, false or "turns"'),
    Key("ab", bool, "false", "the sweep as an A/B in randomized blocks, compared as pairs"),
)
POOL_KEYS_TABLE: tuple[Key, ...] = (
    Key("layout", str, "stripe", "stripe, mirror, raidz1, raidz2 or raidz3"),
    Key("vdevs", int, "2", "data vdevs (sparse files, or DISKS)", minimum=1),
    Key("vdev_size", (str, int), "2G", "each vdev file's size", kind=SIZE_TEXT),
    Key("log_vdevs", int, "0", "separate intent-log vdevs; a list sweeps", minimum=0, kind="an integer or a list"),
    Key("cache_vdevs", int, "0", "L2ARC cache devices (loop devices over files); a list sweeps", minimum=0,
        kind="an integer or a list"),
    Key("cache_size", (str, int), "256M", "each cache device's size", kind=SIZE_TEXT),
    Key("ashift", int, "-", "zpool create -o ashift"),
    Key("prefill", bool, "false", "write the vdev files full first (steadier numbers on zfs-fuse)"),
    Key("properties", dict, "{}", "pool properties (zpool create -o)"),
)
TEST_KEY = {k.name: k for k in TEST_KEYS}
COMMON_TEST_KEYS = set(TEST_KEY)
DEFAULT_KEYS = {k.name for k in TEST_KEYS if k.in_defaults}
POOL_KEY = {k.name: k for k in POOL_KEYS_TABLE}
POOL_SWEEPS = ("log_vdevs", "cache_vdevs")     # pool keys a list sweeps: each case a pool of its own


def keys_text() -> str:
    """The key tables as `zfsperf list --keys` prints them (and the guide's reference shows them)."""
    def rows(keys: tuple[Key, ...]) -> list[str]:
        return [f"  {k.name:<19} {k.type_text():<36} {k.default:<24} {k.help}"
                + (" [also in [defaults]]" if k.in_defaults else "") for k in keys]
    head = f"  {'key':<19} {'type':<36} {'default':<24} meaning"
    out = ["[[test]] keys:", head, *rows(TEST_KEYS), "", "pool keys ([defaults.pool] or a test's pool = { ... }):",
           head, *rows(POOL_KEYS_TABLE)]
    for name, wl in sorted(WORKLOADS.items()):
        out += ["", f"workload {name} adds:"]
        out += [f"  {k:<19} {_type_name(tp):<36} {'a list sweeps' if sweep else 'one value'}"
                for k, (tp, sweep) in wl.fields.items()]
    return "\n".join(out)


def builtin_names() -> list[str]:
    return sorted(p.name[:-5] for p in resources.files("zfsperf.runfiles").iterdir()
                  if p.name.endswith(".toml"))


def resolve_path(name_or_path: str) -> tuple[str, str]:
    """(display name, text) of a runfile given as a path or a built-in name."""
    p = Path(name_or_path)
    if p.exists():
        if not p.is_file():             # a FIFO, a device or a directory: reading it could hang
            raise InputError("a runfile must be a regular file", file=str(p))
        if p.stat().st_size > 1 << 20:
            raise InputError("a runfile of more than 1 MiB is not a runfile", file=str(p))
        try:
            return str(p), p.read_text()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read runfile: {e}", file=str(p)) from None
    if name_or_path in builtin_names():
        res = resources.files("zfsperf.runfiles") / f"{name_or_path}.toml"
        return f"<builtin:{name_or_path}>", res.read_text()
    raise InputError(f"no such runfile (and no built-in of that name; built-ins: "
                     f"{', '.join(builtin_names())})", file=name_or_path)


class Locator:
    """Finds the line of a key in TOML text: tomllib gives values, not positions."""

    def __init__(self, text: str) -> None:
        self.index: dict[tuple[str, int, str], int] = {}
        section, test_idx = "", -1
        for i, raw in enumerate(text.splitlines(), start=1):
            s = raw.split("#", 1)[0].strip() if not raw.strip().startswith(("'", '"')) else raw.strip()
            if s.startswith("[["):
                section = s.strip("[] \t").strip()
                if section == "test":
                    test_idx += 1
                self.index.setdefault((section, test_idx if section.startswith("test") else -1, ""), i)
            elif s.startswith("["):
                section = s.strip("[] \t").strip()
                self.index.setdefault((section, test_idx if section.startswith("test") else -1, ""), i)
            elif "=" in s:
                key = s.split("=", 1)[0].strip().strip('"').strip("'")
                idx = test_idx if section.startswith("test") else -1
                self.index.setdefault((section, idx, key), i)
                head = key.split(".", 1)[0]
                self.index.setdefault((section, idx, head), i)

    def line(self, section: str, idx: int, key: str = "") -> int | None:
        parts = key.split(".") if key else [""]
        # "pool.layout" may be a key of [test.pool], a dotted key in [[test]], or inline
        for n in range(len(parts), 0, -1):
            sec = ".".join([section] + parts[:n - 1]) if n > 1 else section
            hit = self.index.get((sec, idx, parts[n - 1] if key else ""))
            if hit:
                return hit
        return self.index.get((section, idx, ""))


@dataclass
class Expectation:
    figure: str
    op: str
    value: float
    unit: str | None
    text: str

    def check(self, figures: dict[str, dict[str, Any]]) -> str | None:
        """None when met, else the failure text with both numbers."""
        fig = figures.get(self.figure)
        if fig is None:
            return f"expected {self.figure} {self.text}, but the case reported no {self.figure}"
        if self.unit and fig["unit"] != self.unit:
            return f"expected {self.figure} {self.text}, but it is reported in {fig['unit']}"
        v = fig["value"]
        ok = {">=": v >= self.value, "<=": v <= self.value, ">": v > self.value, "<": v < self.value,
              "==": v == self.value}[self.op]
        if ok:
            return None
        return f"expected {self.figure} {self.op} {self.value:g} {fig['unit']}, got {v:.4g} {fig['unit']}"


@dataclass
class TestSpec:
    name: str
    workload: str
    tags: list[str]
    iterations: int
    timeout: float
    pool: PoolSpec
    dataset: dict[str, Any]                # property -> value or list (sweep)
    tunables: dict[str, Any]               # tunable -> value or list (sweep)
    fields: dict[str, Any]                 # workload fields, lists where swept
    expect: list[Expectation]
    steady: SteadySpec
    description: str = ""
    line: int | None = None
    warmup: int = 0                        # iterations run first and not counted (a cold first run)
    # adaptive precision: iterations go on (at least `iterations`) until the 95 % CI half-width of
    # the headline figure is <= precision % of its mean, max_iterations or the time budget
    precision: float | None = None         # percent
    # iterations = "steady": from GROW_FIRST iterations on until the case's steady verdict is steady
    # or not steady, max_iterations or the time budget (steady/rounds.py, the growing window)
    until_steady: bool = False
    pool_sweeps: dict[str, list[int]] = field(default_factory=dict)     # pool keys swept (log_vdevs = [0, 1])
    steady_cap: int = GROW_CAP             # ... its limits: max_iterations and budget when given, else
    steady_budget: float = STEADY_BUDGET   # GROW_CAP and STEADY_BUDGET (a fixed count, -I, ignores them)
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    budget: float = DEFAULT_BUDGET
    # duet: the two values of one swept dataset property run at the same time on one pool (a dataset
    # each), so the machine's noise hits both alike; the figure of merit is the within-iteration ratio
    duet: bool = False
    # duet = "turns": the two sides take turns on the one pool, round by round in ABBA groups, instead
    # of running at once (what one round pays is its side's alone; drift over seconds hits both alike)
    turns: bool = False
    # ab: the test is an A/B of its sweep points: they run in blocks of one iteration each, in an order
    # drawn from the run's seed (what --interleave does for a whole run), and compare pairs them by block
    ab: bool = False
    # builds: the OpenZFS builds this test is measured on, one case each, swapped in the guest
    # between cases (guest ab / guest bisect set it; a runfile does not)
    builds: list[str] = field(default_factory=list)
    # the tunables read only when the zfs module loads, with where the runfile set each: a run sets
    # them by loading the module again, which only zfsperf's own guest allows (refuse_load_scope)
    load_scope: dict[str, dict[str, Any]] = field(default_factory=dict)

    def definition(self) -> str:
        """What the test measures, as a short digest: its workload, fields (the corpus, duration,
        threads ...), pool, dataset properties and tunables (their values as the kernel takes them),
        after params and -D; not its name, iterations, timeout, expectations or how it is judged. A
        figure kept of one definition (the rebuild floor) is never taken for another's."""
        tunables = {k: [normalise_value(k, x) for x in (v if isinstance(v, list) else [v])]
                    for k, v in self.tunables.items()}
        what = {"workload": self.workload, "fields": self.fields, "pool": asdict(self.pool),
                "dataset": self.dataset, "tunables": tunables} | ({"pool_sweeps": self.pool_sweeps} if self.pool_sweeps else {})
        return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:12]


@dataclass
class Case:
    test: TestSpec
    sweep: dict[str, Any]                  # only the swept keys -> this case's value
    fields: dict[str, Any]                 # workload fields with this case's values
    dataset: dict[str, str]
    tunables: dict[str, str]               # normalised for the kernel
    build: str | None = None               # the OpenZFS build it runs on (a build A/B), else None
    pool_sweep: dict[str, Any] = field(default_factory=dict)   # its swept pool keys' values (log_vdevs)

    @property
    def pool(self) -> PoolSpec:
        """The case's pool: the test's, with its swept pool keys at this case's values (read anew
        each time: the command line's overrides of the test's pool count)."""
        return dataclasses.replace(self.test.pool, **self.pool_sweep) if self.pool_sweep else self.test.pool

    @property
    def id(self) -> str:
        if not self.sweep:
            return self.test.name
        return self.test.name + " " + " ".join(f"{k}={_short(v)}" for k, v in self.sweep.items())

    @property
    def slug(self) -> str:
        return case_slug(self.id)


def case_slug(case_id: str) -> str:
    """A case's id as its files are named (fio/<slug>.i<iteration>.json, logs/<slug>...)."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", case_id.replace(" ", "__"))


def _short(v: Any) -> str:
    if isinstance(v, dict):
        if "file" in v:
            return Path(str(v["file"])).name
        return "-".join(str(v[k]) for k in ("kind", "size") if k in v)
    return str(v)


@dataclass
class Runfile:
    source: str
    text: str
    tests: list[TestSpec] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)     # [params] after -D overrides

    def cases(self, *, tags: list[str] | None = None, test: str | None = None) -> list[Case]:
        out = []
        for t in self.select(tags=tags, test=test):
            out.extend(expand(t))
        return out

    def where(self, t: TestSpec, key: str) -> dict:
        """file, line and field of a test's key (dotted: "dataset.compression"): the test's own line
        for it, else [defaults]' (a built-in's too), else the test's first line."""
        loc, idx = Locator(self.text), next((i for i, x in enumerate(self.tests) if x is t), -1)
        own = loc.line("test", idx, key) if idx >= 0 else None
        if own is not None:
            return {"file": self.source, "line": own, "field": f"test[{idx + 1}].{key}"}
        dflt = loc.line("defaults", -1, key)
        if dflt is not None:
            return {"file": self.source, "line": dflt, "field": f"defaults.{key}"}
        return {"file": self.source, "line": t.line, "field": key}

    def select(self, *, tags: list[str] | None = None, test: str | None = None) -> list[TestSpec]:
        tests = self.tests
        if test:
            tests = [t for t in tests if t.name == test]
            if not tests:
                raise InputError(f"no test named {shown(test)} (tests: {', '.join(x.name for x in self.tests)})",
                                 file=self.source, field="-t")
        if tags:
            tests = [t for t in tests if set(tags) & set(t.tags)]
        return tests


def expand(t: TestSpec) -> list[Case]:
    """The cross product of every list-valued (swept) field, in the order they appear."""
    axes: list[tuple[str, str, list[Any]]] = []     # (kind, key, values)
    wl = WORKLOADS[t.workload]
    for k, v in t.fields.items():
        if isinstance(v, list) and wl.fields.get(k, (None, False))[1]:
            axes.append(("field", k, v))
    for k, v in t.dataset.items():
        if isinstance(v, list):
            axes.append(("dataset", k, v))
    for k, v in t.tunables.items():
        if isinstance(v, list):
            axes.append(("tunable", k, v))
    for k, v in t.pool_sweeps.items():
        axes.append(("pool", k, v))
    if t.builds:
        axes.append(("build", "build", list(t.builds)))
    cases = []
    for combo in itertools.product(*[a[2] for a in axes]) if axes else [()]:
        params = {k: v for k, v in t.fields.items()}
        dataset = {k: v for k, v in t.dataset.items() if not isinstance(v, list)}
        tunables = {k: v for k, v in t.tunables.items() if not isinstance(v, list)}
        sweep = {}
        build = None
        pool: dict[str, Any] = {}
        for (kind, key, _), value in zip(axes, combo):
            sweep[key] = value
            if kind == "build":
                build = value
            elif kind == "pool":
                pool[key] = value
            else:
                {"field": params, "dataset": dataset, "tunable": tunables}[kind][key] = value
        cases.append(Case(test=t, sweep=sweep, fields=params,
                          dataset={k: _propval(v) for k, v in dataset.items()},
                          tunables={k: normalise_value(k, v) for k, v in tunables.items()}, build=build,
                          pool_sweep=pool))
    return cases


def _propval(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


# ----------------------------------------------------------------------------- loading
def load(name_or_path: str, defines: dict[str, str] | None = None) -> Runfile:
    source, text = resolve_path(name_or_path)
    return loads(text, source, defines)


PARAM_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _substitute(value: Any, params: dict[str, Any], w: Any) -> Any:
    """${name} in strings: a whole-string reference keeps the parameter's type."""
    if isinstance(value, str):
        m = PARAM_RE.fullmatch(value)
        names = PARAM_RE.findall(value)
        for n in names:
            if n not in params:
                raise InputError(f"unknown parameter ${{{n}}} (define it in [params] or with -D {n}=VALUE)", **w)
        if m:
            return params[m.group(1)]
        return PARAM_RE.sub(lambda mm: str(params[mm.group(1)]), value)
    if isinstance(value, list):
        return [_substitute(v, params, w) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, params, w) for k, v in value.items()}
    return value


def _params(data: dict, defines: dict[str, str], source: str, loc: "Locator") -> dict[str, Any]:
    raw = data.pop("params", {})
    if not isinstance(raw, dict):
        raise InputError("[params] must be a table", file=source, line=loc.line("params", -1), field="params")
    params: dict[str, Any] = {}
    for k, v in raw.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) or isinstance(v, (dict, list)):
            raise InputError("a parameter is a name and a single value", file=source,
                             line=loc.line("params", -1, k), field=f"params.{k}")
        params[k] = v
    for k, text in defines.items():
        if k not in params:
            raise InputError(f"the runfile has no parameter {shown(k)} (it has: "
                             f"{', '.join(sorted(params)) or 'none'})", file=source, field=f"-D {k}")
        old = params[k]
        try:
            params[k] = (text.lower() in ("1", "true", "yes") if isinstance(old, bool) else
                         int(text) if isinstance(old, int) else float(text) if isinstance(old, float) else text)
        except ValueError:
            raise InputError(f"-D {k}={text}: expected {type(old).__name__} like {shown(old)}", file=source,
                             field=f"-D {k}") from None
    return params


def loads(text: str, source: str = "<runfile>", defines: dict[str, str] | None = None) -> Runfile:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"line (\d+)", str(e))
        raise InputError(f"not valid TOML: {e}", file=source, line=int(m.group(1)) if m else None) from None
    loc = Locator(text)

    def where(section: str, idx: int, key: str) -> dict:
        return {"file": source, "line": loc.line(section, idx, key), "field": key if section != "test"
                else f"test[{idx + 1}].{key}" if key else f"test[{idx + 1}]"}

    unknown = set(data) - {"defaults", "test", "params"}
    if unknown:
        k = sorted(unknown)[0]
        raise InputError("unknown top-level table (expected [params], [defaults] and [[test]])",
                         file=source, line=loc.line(k, -1) or loc.line("", -1, k), field=k)
    params = _params(data, defines or {}, source, loc)
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise InputError("must be a table", **where("", -1, "defaults"))
    defaults = {k: _substitute(v, params, {"file": source, "line": loc.line("defaults", -1, k),
                                           "field": f"defaults.{k}"}) for k, v in defaults.items()}
    dwhere = lambda key: {"file": source, "line": loc.line("defaults", -1, key), "field": f"defaults.{key}"}
    for k in defaults:
        if k not in DEFAULT_KEYS:
            raise InputError(f"unknown field{did_you_mean(k, DEFAULT_KEYS)} (expected one of "
                             f"{', '.join(sorted(DEFAULT_KEYS))})", **dwhere(k))
    tests_raw = data.get("test", [])
    if not isinstance(tests_raw, list) or not tests_raw:
        raise InputError("no [[test]] entries", file=source, line=1, field="test")

    rf = Runfile(source, text, params=params)
    seen: dict[str, int] = {}
    for idx, raw in enumerate(tests_raw):
        twhere = lambda key, idx=idx: where("test", idx, key)
        if isinstance(raw, dict):
            raw = {k: _substitute(v, params, twhere(k)) for k, v in raw.items()}
        t = _load_test(raw, defaults, twhere, dwhere)
        t.line = loc.line("test", idx)
        if t.name in seen:
            raise InputError(f"duplicate test name {shown(t.name)} (first at test[{seen[t.name] + 1}])",
                             **twhere("name"))
        seen[t.name] = idx
        rf.tests.append(t)
    for t in rf.tests:          # expansion errors (bad tunable values) are input errors too
        try:
            cases = expand(t)
        except ValueError as e:
            raise InputError(str(e), file=source, line=t.line, field=f"{t.name}.tunables") from None
        ids: dict[str, int] = {}
        for c in cases:         # `threads = [1, 1]`: two cases with one id would be one in every report
            ids[c.id] = ids.get(c.id, 0) + 1
        twice = [cid for cid, n in ids.items() if n > 1]
        if twice:
            raise InputError(f"the sweep gives the case {shown(twice[0])} {ids[twice[0]]} times: a swept value is "
                             "listed twice", file=source, line=t.line, field=t.name)
    return rf


def _type_name(tp: Any) -> str:
    names = {str: "a string", int: "an integer", bool: "true or false", dict: "a table", list: "a list",
             float: "a number"}
    if isinstance(tp, tuple):
        return " or ".join(names.get(x, x.__name__) for x in tp)
    return names.get(tp, tp.__name__)


def _is(value: Any, tp: Any) -> bool:
    tps = tp if isinstance(tp, tuple) else (tp,)
    if isinstance(value, bool) and bool not in tps:
        return False
    return isinstance(value, tps)


def _whole(raw: dict, defaults: dict, name: str, default: int, where, dwhere, least: int | None = None) -> int:
    """A whole-number key of TEST_KEYS: the test's value, else [defaults]', else default; at least
    the key's declared minimum (or least, when that depends on another key)."""
    key = TEST_KEY[name]
    value = raw.get(name, defaults.get(name, default))
    low = least if least is not None else key.minimum if key.minimum is not None else 0
    if not _is(value, int) or value < low:
        bound = f"iterations ({low})" if least is not None else str(low)
        alt = ' or "steady"' if name == "iterations" else ""
        raise InputError(f"expected a whole number >= {bound}{alt}, got {shown(value)}",
                         **(where(name) if name in raw else dwhere(name)))
    return value


def _known_keys(raw: dict, workload: str, fields: set[str], where) -> None:
    """Every key of a [[test]] is one a test of its workload has (with the nearest one offered)."""
    allowed = COMMON_TEST_KEYS | fields
    for k in raw:
        if k not in allowed:
            raise InputError(f"unknown field for a {workload} test{did_you_mean(k, allowed)} (expected one of "
                             f"{', '.join(sorted(allowed))})", **where(k))


def _load_ab(raw: dict, duet: bool, swept: list[str], where) -> bool:
    """`ab = true`: the test's sweep run in interleaved blocks; refused beside a duet (which already
    pairs its sides) and without a sweep of two or more values."""
    ab = raw.get("ab", False)
    if not isinstance(ab, bool):
        raise InputError(f"expected true or false, got {shown(ab)}", **where("ab"))
    if ab and duet:
        raise InputError("a duet already pairs its two sides in every iteration: ab and duet do not go together",
                         **where("ab"))
    if ab and not swept:
        raise InputError("ab needs a sweep to compare (a dataset property, tunable or field with two or more "
                         "values)", **where("ab"))
    return ab


def _load_test(raw: Any, defaults: dict, where, dwhere) -> TestSpec:
    if not isinstance(raw, dict):
        raise InputError("each [[test]] must be a table", **where(""))
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InputError(f"expected a name of letters, digits, _ . - (got {shown(name)})", **where("name"))
    workload = raw.get("workload")
    if workload not in WORKLOADS:
        raise InputError(f"unknown workload {shown(workload)} (expected one of {', '.join(sorted(WORKLOADS))})",
                         **where("workload"))
    wl = WORKLOADS[workload]
    _known_keys(raw, workload, set(wl.fields), where)
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(x, str) and x for x in tags):
        raise InputError("tags must be a list of strings", **where("tags"))

    until_steady = raw.get("iterations", defaults.get("iterations")) == "steady"
    iterations = GROW_FIRST if until_steady else _whole(raw, defaults, "iterations", DEFAULT_ITERATIONS, where, dwhere)
    warmup = _whole(raw, defaults, "warmup", 0, where, dwhere)
    timeout = _seconds(raw, defaults, "timeout", DEFAULT_TIMEOUT, where, dwhere, positive=True)

    def merged(table: str) -> tuple[dict, Any]:
        d, t = defaults.get(table, {}), raw.get(table, {})
        for x, w in ((d, dwhere), (t, where)):
            if not isinstance(x, dict):
                raise InputError("must be a table", **w(table))
        # each key's errors point at the line that set it: the test's own, else [defaults]
        return {**d, **t}, lambda k: where(f"{table}.{k}") if k in t else dwhere(f"{table}.{k}")

    pool_d, pool_w = merged("pool")
    pool, swept_pool = _load_pool(pool_d, pool_w), pool_sweeps(pool_d)
    dataset = _load_props(*merged("dataset"))
    tunables, load_scope = _load_tunables(*merged("tunables"))

    fields = _load_fields(raw, wl, where)
    expect = _load_expect(raw, wl, where)
    steady_d, steady_w = merged("steady")
    steady = SteadySpec.from_dict(steady_d, steady_w)

    precision_raw = raw.get("precision", defaults.get("precision"))
    precision = None if precision_raw is None else \
        parse_precision(precision_raw, where("precision") if "precision" in raw else dwhere("precision"))
    max_it = _whole(raw, defaults, "max_iterations", max(DEFAULT_MAX_ITERATIONS, iterations), where, dwhere,
                    least=iterations)
    budget = _seconds(raw, defaults, "budget", DEFAULT_BUDGET, where, dwhere)
    # iterations = "steady" has limits of its own unless given: the default suite's ≤ 5 min; what
    # the command line runs instead (--precision, --detect) keeps the general ones
    given = {k for k in ("max_iterations", "budget") if k in raw or k in defaults}
    steady_cap = max_it if "max_iterations" in given else GROW_CAP
    steady_budget = budget if "budget" in given else STEADY_BUDGET
    if until_steady:
        _until_steady_fits(raw, precision, steady, where, dwhere)
    duet, turns = _load_duet(raw, workload, dataset, tunables, fields, steady, where)
    if duet and swept_pool:
        raise InputError(f"{next(iter(swept_pool))} is a pool key: the two sides of a duet share one pool (sweep "
                         "it with --interleave, each case a pool of its own)", **where("duet"))
    ab = _load_ab(raw, bool(duet), [k for table in (dataset, tunables, fields) for k, v in table.items()
                                    if isinstance(v, list) and len(v) >= 2 and (table is not fields or wl.fields[k][1])]
                  + [k for k, v in swept_pool.items() if len(v) >= 2], where)
    return TestSpec(name=name, workload=workload, tags=list(tags), iterations=iterations, timeout=timeout,
                    pool=pool, dataset=dataset, tunables=tunables, fields=fields, expect=expect, steady=steady,
                    description=str(raw.get("description", "")), warmup=warmup, precision=precision,
                    max_iterations=max_it, budget=budget, duet=duet, turns=turns, ab=ab, load_scope=load_scope,
                    until_steady=until_steady, steady_cap=steady_cap, steady_budget=steady_budget,
                    pool_sweeps=swept_pool)


def _until_steady_fits(raw: dict, precision: float | None, steady: SteadySpec, where, dwhere) -> None:
    """iterations = "steady" needs the case's verdict as the default rule makes it, for each case
    alone: refused with a precision target, no sampler (steady mode "off"), SNIA's fixed window, or
    an A/B's sides (their pairs would end apart)."""
    at = where("iterations") if "iterations" in raw else dwhere("iterations")
    why = ("precision is another stopping rule: give one" if precision is not None else
           'steady mode "off" makes no verdict to wait for' if steady.mode == SteadyMode.OFF else
           'method "snia" judges a fixed window of 5' if steady.criteria.method == "snia" else
           "an A/B's (ab, duet) sides are paired by iteration: give them a count" if raw.get("ab") or raw.get("duet")
           else None)
    if why:
        raise InputError(f'iterations = "steady": {why}', **at)


def _seconds(raw: dict, defaults: dict, key: str, default: Any, where, dwhere, positive: bool = False) -> float:
    """A duration key of a test (else of [defaults], else its default) in seconds; errors at its line."""
    w = where(key) if key in raw else dwhere(key)
    try:
        value = parse_duration(raw.get(key, defaults.get(key, default)))
    except ValueError as e:
        raise InputError(str(e), **w) from None
    if positive and value <= 0:
        raise InputError(f"{key} must be positive", **w)
    return value


def _load_fields(raw: dict, wl: Any, where) -> dict[str, Any]:
    """The workload's own fields, checked against its declared types (a list: a sweep, where the
    field may be swept), then by the workload itself."""
    fields: dict[str, Any] = {}
    for k, (tp, sweepable) in wl.fields.items():
        if k not in raw:
            continue
        v = raw[k]
        values = v if isinstance(v, list) and tp is not list else [v]
        if isinstance(v, list) and tp is not list:
            if not sweepable:
                raise InputError(f"{k} cannot be swept (expected {_type_name(tp)})", **where(k))
            if not v:
                raise InputError("an empty list sweeps over nothing", **where(k))
        for x in values:
            if not _is(x, tp):
                raise InputError(f"expected {_type_name(tp)}" + (" or a list of them" if sweepable else "")
                                 + f", got {shown(x)}", **where(k))
        fields[k] = v
    wl.validate(fields, where)
    return fields


def _load_expect(raw: dict, wl: Any, where) -> list[Expectation]:
    expect = []
    ex = raw.get("expect", {})
    if not isinstance(ex, dict):
        raise InputError("expect must be a table like { throughput = \">= 100 MiB/s\" }", **where("expect"))
    for fig, text in ex.items():
        m = EXPECT_RE.match(text) if isinstance(text, str) else None
        if not m:
            raise InputError(f"expected e.g. \">= 100 MiB/s\", got {shown(text)}", **where("expect"))
        unit, reported = (m.group(3) or "").strip() or None, figure_unit(wl, fig)
        at = dict(where("expect"))
        at["field"] = f"{at['field']}.{fig}"
        if reported is None:
            raise InputError(f"a {wl.name} test reports no figure {shown(fig)} (its figures: "
                             f"{', '.join(figure_names(wl))})", **at)
        if unit is not None and unit != reported:
            raise InputError(f"{fig} is reported in {reported}, not {shown(unit)} (write e.g. \"{m.group(1)} "
                             f"{m.group(2)} {reported}\")", **at)
        expect.append(Expectation(fig, m.group(1), float(m.group(2)), unit, text.strip()))
    return expect


def _load_duet(raw: dict, workload: str, dataset: dict[str, Any], tunables: dict[str, Any],
               fields: dict[str, Any], steady: SteadySpec, where) -> tuple[bool, bool]:
    """duet (true, false or "turns") -> (duet, turns), with what a duet and turns need checked."""
    wl = WORKLOADS[workload]
    duet_raw = raw.get("duet", False)
    if isinstance(duet_raw, bool):
        duet, turns = duet_raw, False
    elif duet_raw == "turns":
        duet, turns = True, True
    else:
        raise InputError(f'expected true, false or "turns", got {shown(duet_raw)}', **where("duet"))
    for k, what in (("slice", "the length of a turn"), ("settle", "left out after each switch of a turn")):
        if k in fields and not turns:
            raise InputError(f'{k} is {what}: it needs duet = "turns"', **where(k))
    if duet and "latency_target" in fields:
        raise InputError("a latency-target search bisects one job set's rate: it cannot duet", **where("latency_target"))
    if turns and fields.get("clients"):
        raise InputError('fio load hosts cannot take turns: its slices run on the target (drop clients, or '
                         'use duet = true)', **where("clients"))
    if duet:
        _check_duet(workload, dataset, tunables, {k: v for k, v in fields.items()
                                                  if isinstance(v, list) and wl.fields[k][1]}, steady, where,
                    "turns" if turns else "together")
    return duet, turns


def refuse_duet_with_builds(rf: "Runfile", tests: list[TestSpec]) -> None:
    """Two OpenZFS builds cannot duet: one kernel module is loaded at a time."""
    for t in tests:
        if t.duet:
            raise InputError("two OpenZFS builds cannot duet (one kernel module is loaded at a time): "
                             "remove duet from this test for a build A/B", file=rf.source, line=t.line,
                             field="duet")


def _check_duet(workload: str, dataset: dict[str, Any], tunables: dict[str, Any], swept_fields: dict[str, Any],
                steady: SteadySpec, where, mode: str) -> None:
    """Only what two datasets of one pool can hold side by side can duet; taking turns, one module
    tunable with two values too (written between rounds)."""
    swept_tunables = [k for k, v in tunables.items() if isinstance(v, list)]
    swept = [k for k, v in dataset.items() if isinstance(v, list)]
    if swept_tunables and mode != "turns":
        raise InputError(f"{swept_tunables[0]} is a module tunable: it is global to the machine, so its two values "
                         "cannot run side by side (duet = \"turns\" writes it between rounds; or sweep it with "
                         "--interleave)", **where("duet"))
    if swept_fields:
        raise InputError(f"{next(iter(swept_fields))} is a workload field: only a dataset property or a module "
                         "tunable sweep can duet", **where("duet"))
    if swept_tunables:
        if swept or len(swept_tunables) != 1 or len(tunables[swept_tunables[0]]) != 2:
            raise InputError("turns over a module tunable need exactly one tunable swept over two values and no "
                             "dataset property swept", **where("duet"))
        why = refused(swept_tunables[0], *scope_of(swept_tunables[0]), turns=True)
        if why:
            raise InputError(why, **where("duet"))
    elif len(swept) != 1 or len(dataset[swept[0]]) != 2:
        raise InputError("duet needs exactly one dataset property swept over two values", **where("duet"))
    if mode not in WORKLOADS[workload].duet_modes:
        able = [name for name, w in WORKLOADS.items() if mode in w.duet_modes]
        what = 'duet = "turns"' if mode == "turns" else "duet"
        raise InputError(f"a {workload} test cannot {what} (only {' and '.join(able)})", **where("duet"))
    if steady.mode == SteadyMode.GATE:
        raise InputError("a duet is measured as it runs: steady mode \"gate\" cannot precondition two "
                         "sides at once (use \"record\")", **where("duet"))


def parse_precision(value: Any, where: dict) -> float:
    """"2%" or 2 -> 2.0 (percent of the mean); must be in (0, 100)."""
    text = value.strip().removesuffix("%").strip() if isinstance(value, str) else value
    try:
        pct = float(text) if not isinstance(text, bool) else math.nan
    except (TypeError, ValueError):
        pct = math.nan
    if not 0 < pct < 100:
        raise InputError(f"expected a share of the mean like \"2%\", got {shown(value)}", **where)
    return pct


def pool_sweeps(d: dict) -> dict[str, list[int]]:
    """The pool keys a test sweeps (POOL_SWEEPS given a list), after _load_pool checked them."""
    return {k: list(d[k]) for k in POOL_SWEEPS if isinstance(d.get(k), list)}


def _load_pool(d: dict, w) -> PoolSpec:
    for k, v in d.items():
        key = POOL_KEY.get(k)
        if key is None:
            raise InputError(f"unknown pool field {shown(k)}{did_you_mean(k, POOL_KEY)} (expected one of "
                             f"{', '.join(POOL_KEY)})", **w(k))
        values = v if isinstance(v, list) and k in POOL_SWEEPS else [v]
        if not values:
            raise InputError("an empty list sweeps nothing", **w(k))
        for x in values:
            if not _is(x, key.type):
                raise InputError(f"expected {_type_name(key.type)}" + (" or a list of them" if k in POOL_SWEEPS else "")
                                 + f", got {shown(x)}", **w(k))
            low = key.minimum
            if low is not None and x < low:
                raise InputError(f"expected a whole number >= {low}, got {shown(x)}", **w(k))
    spec = PoolSpec()
    if "layout" in d:
        if d["layout"] not in LAYOUTS:
            raise InputError(f"expected {' | '.join(LAYOUTS)}, got {shown(d['layout'])}", **w("layout"))
        spec.layout = d["layout"]
    for k in ("vdevs", "log_vdevs", "cache_vdevs", "ashift"):
        if k in d:
            setattr(spec, k, max(d[k]) if isinstance(d[k], list) else d[k])     # a sweep: checked at its largest
    for k in ("vdev_size", "cache_size"):
        if k in d:
            try:
                setattr(spec, k, parse_size(d[k]))
            except ValueError as e:
                raise InputError(str(e), **w(k)) from None
    if "prefill" in d:
        spec.prefill = d["prefill"]
    if "properties" in d:
        spec.properties = {}
        for k, v in d["properties"].items():
            at = dict(w("properties"))                  # the line of the table that set it
            at["field"] = f"{at['field']}.{k}"
            if not _is(v, (str, int, bool)):
                raise InputError(f"expected a property value (string, integer, true/false), got {shown(v)}", **at)
            try:
                check_property_name(k)
            except InputError:
                raise InputError(f"{shown(k)} is not a ZFS property name", **at) from None
            why = props.problem(k, _propval(v), pool=True)
            if why:
                raise InputError(why, **at)
            spec.properties[k] = _propval(v)
    try:
        spec.validate()
    except InputError as e:
        raise InputError(e.message, **w((e.field or "pool.").split(".", 1)[1])) from None
    return spec


def _load_props(d: dict, w) -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        try:
            check_property_name(k)
        except InputError:
            raise InputError(f"{shown(k)} is not a ZFS property name", **w(k)) from None
        values = v if isinstance(v, list) else [v]
        if isinstance(v, list) and not v:
            raise InputError("an empty list sweeps over nothing", **w(k))
        for x in values:
            if not _is(x, (str, int, bool)) or (isinstance(x, str) and ("\n" in x or not x)):
                raise InputError(f"expected a property value (string, integer, true/false), got {shown(x)}", **w(k))
            why = props.problem(k, _propval(x))
            if why:
                raise InputError(why, **w(k))
        out[k] = v
    return out


def _load_tunables(d: dict, w) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The tunables table, and where each load-scope one is set (refuse_load_scope decides on
    those once the target is known)."""
    load_scope = {}
    for k, v in d.items():
        if not TUNABLE_RE.match(k):
            raise InputError(f"{shown(k)} is not a tunable name", **w(k))
        if k not in known_names():
            raise InputError(f"no OpenZFS release zfsperf knows (2.1.11, 2.3.2) has a tunable {k}"
                             + did_you_mean(k, known_names()), **w(k))
        if scope_of(k)[0] is Scope.LOAD:
            load_scope[k] = w(k)
        values = v if isinstance(v, list) else [v]
        if isinstance(v, list) and not v:
            raise InputError("an empty list sweeps over nothing", **w(k))
        for x in values:
            try:
                normalise_value(k, x)
            except ValueError as e:
                raise InputError(str(e), **w(k)) from None
    return d, load_scope


def refuse_load_scope(tests: list[TestSpec], *, reload: bool) -> None:
    """A load-scope tunable is set by loading the zfs module again with it: refused, at the line
    that sets it, where the target's module may not be reloaded (anywhere but zfsperf's guest)."""
    for t in tests:
        for name, where in t.load_scope.items():
            why = refused(name, *scope_of(name), turns=False, reload=reload)
            if why:
                raise InputError(why, **where)
