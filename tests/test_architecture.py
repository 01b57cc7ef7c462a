"""One home per concern. These fail when a concern drifts back to where it was."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import zfsperf
from zfsperf.tunables import BackendSpec, FileTunables, Journal, open_backend, replay
from zfsperf.results.record import FORMAT_VERSION, CaseOutcome, Status

SRC = Path(__file__).resolve().parents[1] / "src" / "zfsperf"


def _function_level_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and node.level > 0:
                    out.append(f"{path.relative_to(SRC)}:{node.lineno} from {'.' * node.level}{node.module}")
    return out


def test_tunables_and_targets_import_each_other_nowhere_inside_functions():
    """The old tunables.py imported target modules and the targets imported tunables (a
    circle held together by five function-level imports). Parameter backends now live in
    tunables/, which imports no target; nothing there, in targets/ or in zfsfuse/ imports inside a
    function."""
    found = [x for d in ("tunables", "targets", "zfsfuse") for p in sorted((SRC / d).glob("*.py"))
             for x in _function_level_imports(p)]
    assert found == [], found
    res = subprocess.run([sys.executable, "-c", "import sys, zfsperf.tunables; "
                          "print(sorted(m for m in sys.modules if m.startswith('zfsperf.')))"],
                         capture_output=True, text=True, check=True)
    loaded = json.loads(res.stdout.replace("'", '"'))
    assert not [m for m in loaded if m.startswith(("zfsperf.targets", "zfsperf.zfsfuse", "zfsperf.guest"))], loaded
    for order in ("zfsperf.zfsfuse.target", "zfsperf.targets.ssh", "zfsperf.guest.vm", "zfsperf.opentarget"):
        subprocess.run([sys.executable, "-c", f"import {order}"], check=True)      # any import order works


def test_old_homes_are_gone():
    """zfs-fuse in one package; `target/` renamed (build tools skip a `target/` folder)."""
    assert not (SRC / "target").exists() and not (SRC / "tunables.py").exists() and not (SRC / "lab.py").exists()
    assert not (SRC / "params").exists()         # the tunables package says tunable (glossary)
    assert [p.name for p in SRC.glob("_*.py")] == ["__init__.py"]
    assert {p.name for p in (SRC / "zfsfuse").glob("*.py")} >= {"daemon.py", "nsholder.py", "syslogd.py", "target.py"}


def test_backend_spec_is_structured_and_reads_old_journal_strings(tmp_path):
    """Backend specs were strings built in ssh.py and parsed in two places."""
    d = tmp_path / "params"
    d.mkdir()
    (d / "zfs_txg_timeout").write_text("5\n")
    fp = FileTunables(str(d))
    assert fp.spec == BackendSpec("files", str(d)) and BackendSpec.from_json(fp.spec.as_dict()) == fp.spec
    remote = BackendSpec("sysctl", ssh={"url": "ssh://root@h:22", "options": []})
    assert BackendSpec.from_json(json.loads(json.dumps(remote.as_dict()))) == remote
    assert BackendSpec.from_json('ssh:{"url": "ssh://root@h:22", "options": []}|sysctl') == remote
    assert BackendSpec.from_json(f"file:{d}") == fp.spec
    with pytest.raises(ValueError):
        BackendSpec.from_json("tape:/dev/st0")
    # a journal a crashed (older) zfsperf left, with the old string spec: restored all the same
    (d / "zfs_txg_timeout").write_text("9\n")
    j = tmp_path / "tunables.journal"
    j.write_text(json.dumps([{"backend": f"file:{d}", "name": "zfs_txg_timeout", "old": "5", "new": "9",
                              "pid": 2 ** 22 + 7, "time": 0}]))
    lines = replay(Journal(j))
    assert len(lines) == 1 and lines[0].startswith("restored zfs_txg_timeout = 5") and str(d) in lines[0]
    assert (d / "zfs_txg_timeout").read_text().strip() == "5" and not j.exists()
    assert open_backend(fp.spec).get("zfs_txg_timeout") == "5"


@pytest.mark.parametrize("outcome, status, text", [
    (CaseOutcome(figures={"x": {}}), Status.PASS, None),
    (CaseOutcome(figures={"x": {}}, unmet=["throughput 1 < 2"]), Status.FAIL, "throughput 1 < 2"),
    (CaseOutcome(), Status.FAIL, "the workload returned no figures"),
    (CaseOutcome(failure="zfs receive exit 1"), Status.FAIL, "zfs receive exit 1"),
    (CaseOutcome(killed="timeout of 5 s", teardown_error="pool busy"), Status.KILLED, "timeout of 5 s; pool busy"),
    (CaseOutcome(skipped="no tunable x"), Status.SKIP, "no tunable x"),
    (CaseOutcome(figures={"x": {}}, teardown_error="could not restore"), Status.FAIL, "could not restore"),
    (CaseOutcome(figures={"x": {}}, daemon_died=True), Status.FAIL,
     "(the zfs-fuse daemon died during the case; zfsperf restarted it)"),
])
def test_one_place_decides_a_status(outcome, status, text):
    """PASS/FAIL was decided in three files; now CaseOutcome.decide_status() only."""
    assert outcome.decide_status() == (status, text)
    assert json.dumps(status) == f'"{status.value}"'                 # a str enum: records stay plain JSON
    users = [p for p in SRC.rglob("*.py") if '"PASS"' in p.read_text() and p.name != "record.py"]
    assert users == [], users


def test_results_format_version(tmp_path):
    """run.json says its format; a newer one is refused by name, exit 2."""
    d = tmp_path / "20260101T000000"
    d.mkdir()
    (d / "results.jsonl").write_text(json.dumps({"test": "t", "case": "t", "iteration": 1, "status": "PASS",
                                                 "figures": {"iops": {"value": 1.0, "unit": "IOPS"}}}) + "\n")
    (d / "run.json").write_text(json.dumps({"format": FORMAT_VERSION + 1}))
    res = zfsperf("report", str(d))
    assert res.returncode == 2 and "run.json" in res.stderr and "format" in res.stderr
    (d / "run.json").write_text(json.dumps({"format": FORMAT_VERSION}))
    assert zfsperf("report", str(d), "--format", "junit").returncode == 0


def test_one_exporter_interface(tmp_path):
    """One exporter interface, one module per output format, one CSV writer (there were two)."""
    from zfsperf.report.export import EXPORTERS
    assert set(EXPORTERS) == {"md", "csv", "json", "openmetrics", "results-csv", "junit", "html"}
    modules = {p.stem for p in (SRC / "report" / "export").glob("*.py")} - {"__init__", "cells", "terminal"}
    assert modules == {"markdown", "csv", "json", "openmetrics", "results_csv", "junit", "html"}
    writers = [p for p in SRC.rglob("*.py") if "csv.writer(" in p.read_text()]
    assert [p.name for p in writers] == ["cells.py"], writers


def test_the_guest_has_its_own_word():
    """`lab` is zfs-fuse; the OpenZFS guest is `guest` (`lab openzfs` still works, and says so)."""
    res = zfsperf("guest", "status", env={**os.environ, "ZFSPERF_GUEST_DIR": "/nonexistent/zfsperf-guest"})
    assert res.returncode == 0, res.stderr
    old = zfsperf("lab", "openzfs", "status", env={**os.environ, "ZFSPERF_GUEST_DIR": "/nonexistent/zfsperf-guest"})
    assert old.returncode == 0 and "zfsperf guest" in old.stderr and old.stdout == res.stdout
    assert "guest" in zfsperf("run", "--help").stdout


def test_workloads_own_their_facts():
    """Headline, summary figures and directions live on the workload (they were in runner, tables
    and model); what reads them asks the workload (no workload imports report/: test_layers.py)."""
    from zfsperf.report.tables import case_table
    from zfsperf.results.record import CaseRecord, Figure, Status
    from zfsperf.workloads import WORKLOADS, figure_direction, headline
    for name, wl in WORKLOADS.items():
        assert wl.headline and wl.series_headline.startswith("workload_") and wl.headline in wl.summary_figures
        assert wl.directions.get(wl.headline, figure_direction(name, wl.headline, "MiB/s")) != 0 or name == "mixed"
    assert figure_direction("receive", "txgs", "TXGs/s") == 0 and figure_direction("receive", "throughput", "MiB/s") == 1
    assert figure_direction("mixed", "read_p99_ratio", "x") == -1 and figure_direction("fio", "read_lat_p99", "us") == -1
    assert figure_direction("fio", "sync_ops", "ops") == 0 and figure_direction("fio", "read_ops", "ops") == 1
    for name, wl in WORKLOADS.items():
        assert headline(name) == wl.headline
        # the summary table shows what the workload says it shows, and no other figure
        figs = {f: Figure(1.0, "x") for f in wl.summary_figures} | {"not_in_summary": Figure(2.0, "x")}
        rec = CaseRecord(test="t", case="c", sweep={}, iteration=1, workload=name, status=Status.PASS, figures=figs)
        cols = case_table([rec], {name: list(wl.summary_figures)}).columns
        assert cols[:3] == ["case", "status", "n"]
        assert {c.split(" (")[0] for c in cols[3:]} == set(wl.summary_figures) - {"bytes"}, (name, cols)


def _every_import_from(path: Path) -> list[tuple[int, str, list[str]]]:
    """Every `from X import a, b` in a module, at any depth (a function-level import is only
    executed when its function runs, so an import error there hides until a user hits it)."""
    parts = ("zfsperf",) + path.relative_to(SRC).with_suffix("").parts
    package = list(parts[:-1])                  # the package a relative import starts from
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod, [a.name for a in node.names]))
    return out


def test_every_import_resolves_even_inside_functions():
    """A module moved (report/html.py -> report/export/html.py) left `from .report import html`
    in `history --html` and `from .summary import ...` in the HTML exporter: both surfaced only
    when a user asked for HTML. Every `from ... import` of zfsperf's own modules, also the lazy
    ones, must name a module and names that exist."""
    import importlib
    bad = []
    for p in sorted(SRC.rglob("*.py")):
        for line, mod, names in _every_import_from(p):
            if not mod.startswith("zfsperf"):
                continue
            try:
                m = importlib.import_module(mod)
            except ImportError as e:
                bad.append(f"{p.relative_to(SRC)}:{line}: {mod}: {e}")
                continue
            for n in names:
                if n != "*" and not hasattr(m, n):
                    try:
                        importlib.import_module(f"{mod}.{n}")
                    except ImportError:
                        bad.append(f"{p.relative_to(SRC)}:{line}: {mod} has no {n}")
    assert bad == [], "\n".join(bad)


def _class_attr_problems(path: Path, tree: ast.Module, classes: dict[str, ast.ClassDef]) -> list[str]:
    """`self.NAME(...)` calls in a class whose NAME no class of the chain (the project's own
    classes; a base from outside the project means unknown) defines as a method, class attribute
    or `self.NAME = ...` assignment."""
    def defined(cls: ast.ClassDef) -> set[str] | None:
        names: set[str] = set()
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
        for node in ast.walk(cls):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
            flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
            names |= {t.attr for t in flat if isinstance(t, ast.Attribute)
                      and isinstance(t.value, ast.Name) and t.value.id == "self"}
        for base in cls.bases:
            name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
            if name is None or name not in classes:
                return None                               # a base we cannot read: no claim
            more = defined(classes[name])
            if more is None:
                return None
            names |= more
        return names

    out = []
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        names = defined(cls)
        if names is None:
            continue
        for node in ast.walk(cls):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self" \
                    and node.func.attr not in names:
                out.append(f"{path.relative_to(SRC)}:{node.lineno} {cls.name}.{node.func.attr}")
    return out


def test_every_method_a_class_calls_on_itself_exists():
    """A module-level function put between two methods made the methods after it nested
    functions: Builder.run called self._initramfs, which no longer existed, and every guest build
    on a cold cache failed at its last step (a warm cache never reached it)."""
    trees = {p: ast.parse(p.read_text()) for p in sorted(SRC.rglob("*.py"))}
    classes = {n.name: n for t in trees.values() for n in t.body if isinstance(n, ast.ClassDef)}
    found = [x for p, t in trees.items() for x in _class_attr_problems(p, t, classes)]
    assert found == [], found


def test_a_run_starts_without_scipy_ruptures_or_matplotlib():
    """What `zfsperf run` (and `guest run`, `guest ab`) import before their first case: none of
    scipy, ruptures or matplotlib. They are imported when a steady-state verdict, an interval or a
    page is first computed: scipy.stats came in with the HTML exporter and compare, and cost every
    run ~0.8 s on a host and ~23 s inside the OpenZFS guest under emulation."""
    probe = subprocess.run([sys.executable, "-c", "import sys, zfsperf.cli, zfsperf.runner, zfsperf.buildab, "
                            "zfsperf.inguest; print(' '.join(sorted({m.split('.')[0] for m in sys.modules} "
                            "& {'scipy', 'ruptures', 'matplotlib'})))"],
                           capture_output=True, text=True, check=True)
    assert probe.stdout.strip() == "", probe.stdout


def test_one_owner_of_leftovers():
    """What earlier runs left (guard notes, orphan labs, leftover pools and vdev directories) was
    handled in five modules (guard, zfsfuse/orphans, runner, pool, cli); leftovers.py is its one
    owner now: outside the modules that find each kind, only leftovers.py calls the finders."""
    finders = {"find_orphans": "zfsfuse/orphans.py", "teardown": "zfsfuse/orphans.py", "guard_notes": "leftovers.py",
               "leftover_pools": "pool.py", "leftover_vdev_dirs": "pool.py"}
    callers: dict[str, set[str]] = {}
    for p in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
                if name in finders:
                    callers.setdefault(name, set()).add(str(p.relative_to(SRC)))
    also = {"leftover_pools": {"zfsfuse/orphans.py"}}      # an orphan lab's teardown destroys its marked pools
    for name, home in finders.items():
        assert callers.get(name, set()) <= {home, "leftovers.py"} | also.get(name, set()), (name, callers.get(name))
    assert callers["find_orphans"] == {"leftovers.py"} and "leftovers.py" in callers["leftover_pools"]
    from zfsperf import runner
    assert not hasattr(runner.Runner, "_orphans")
    assert not [n for n in ("cleanup_leftovers", "describe_leftovers") if hasattr(__import__("zfsperf.pool").pool, n)]


def test_one_rule_for_better_or_worse():
    """compare, history and steady state decided better/worse each their own way (steady by `"lat"
    in name`); now all three ask units.better_or_worse, with the direction from the one unit table."""
    import numpy as np
    from zfsperf.history.analysis import ChangePoint
    from zfsperf.report.compare import compare_values
    from zfsperf.steady import changepoint
    from zfsperf.steady.verdict import Criteria
    from zfsperf.units import METRIC_UNITS, better_or_worse, metric_direction
    assert better_or_worse(-3.0, 1) == "worse" and better_or_worse(-3.0, -1) == "better"
    assert better_or_worse(5.0, 0) is None and better_or_worse(0.0, 1) is None
    assert metric_direction("pool_lat_ms") == -1 and metric_direction("workload_mibs") == 1
    assert metric_direction("arc_hit_ratio") == 1 and set(METRIC_UNITS) >= {"pool_lat_ms", "workload_iops"}
    ch = compare_values("c", "read_lat_p99", "us", [10.0] * 6, [20.0] * 6)
    assert ch.verdict == "worse"
    cp = ChangePoint(index=1, run="r", before=10.0, after=20.0, change_pct=100.0, p=0.001, direction=-1)
    assert cp.verdict == "worse"
    # a latency metric that falls to its level is warming up; a throughput that falls is slowing down
    rng = np.random.default_rng(1)
    falling = np.concatenate([np.full(15, 20.0), np.full(30, 10.0)]) + rng.normal(0, 0.05, 45)
    for name, kind in (("pool_lat_ms", "warm-up"), ("workload_mibs", "slowdown")):
        m = changepoint.classify(name, falling, Criteria(window=10))
        assert m.kind == kind, (name, m)


def test_the_daemon_interface_is_declared_and_zfs_fuse_has_all_of_it():
    """`Target.daemon()` returned Any, and the core called whatever it liked on it; now it returns a
    declared `Daemon` (every method the core calls), zfs-fuse's lab has each with the same signature,
    and owning the daemon is a declared capability."""
    import ast
    import inspect
    from pathlib import Path
    from zfsperf.targets.base import Capabilities, Daemon, Target
    from zfsperf.zfsfuse.daemon import Lab
    declared = {n for n, v in vars(Daemon).items() if callable(v) and not n.startswith("_")}
    assert declared == {"daemon_alive", "recover", "note_vdev_dir", "syslog_since"}
    for name in declared:
        assert inspect.signature(getattr(Lab, name)).parameters.keys() == \
            inspect.signature(getattr(Daemon, name)).parameters.keys(), name
    assert "Daemon" in str(inspect.signature(Target.daemon).return_annotation)
    assert "owns_daemon" in Capabilities.__dataclass_fields__
    # every call on what daemon() returned, outside zfs-fuse's own package, is a declared method
    src = Path(__file__).resolve().parent.parent / "src" / "zfsperf"
    called = set()
    for f in src.rglob("*.py"):
        if "zfsfuse" in f.parts:
            continue
        tree = ast.parse(f.read_text())
        names = {t.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
                 and isinstance(node.value, (ast.Call, ast.IfExp)) and "daemon()" in ast.unparse(node.value)
                 for t in node.targets if isinstance(t, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                base = ast.unparse(node.value)
                if base.endswith("daemon()") or base in names:
                    called.add(node.attr)
    assert called and called <= declared, called - declared


def test_verdict_design_stop_and_steady_mode_words_are_enums_not_strings():
    """"verdict used four ways", and its words spelled as string literals in five modules: the
    change verdict, the design and the stop reason are enums now. No comparison in the source
    holds one of their words as a string literal, and the members are what JSON carries."""
    import ast
    import json
    from pathlib import Path
    from zfsperf.report.designs import Design
    from zfsperf.results.record import SteadyMode, StopReason
    from zfsperf.units import ChangeVerdict
    words = {m.value for e in (ChangeVerdict, Design, StopReason) for m in e}
    modes = {m.value for m in SteadyMode}
    src = Path(__file__).resolve().parent.parent / "src" / "zfsperf"
    found = []
    for f in src.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                text = ast.unparse(node)
                consts = [s.value for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, str)]
                consts += [e.value for s in sides if isinstance(s, (ast.Tuple, ast.Set, ast.List))
                           for e in s.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                if (any(c in words for c in consts) and any(k in text for k in ("verdict", "design", "stopped_by", "why"))
                        or any(c in modes for c in consts) and "steady" in text):
                    found.append(f"{f.name}:{node.lineno}: {text}")
    assert not found, found
    assert json.dumps([ChangeVerdict.WORSE, Design.TURNS, StopReason.DECIDED, SteadyMode.GATE]) == \
        '["worse", "turns", "decided", "gate"]'
