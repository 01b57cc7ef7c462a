"""docs/ci.md's recipe, as written: its shell steps run under `bash -e` (GitHub Actions' default)
on stored results directories laid out like perf-regression's (27 fio cases, 7 iterations each).

The defects: the recipe gated `perf-regression`, which ran one iteration per case, so every case
was "too few iterations" and the gate passed a NEW whose throughput was halved; its compare step
ended under `bash -e` before the verdict was posted; every figure of a case was gated (one effect
counted four times, a duration judged as speed) with no correction for many comparisons.
Stored directories made here, no ZFS: fast."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path


from helpers import REPO, zfsperf


CASES = [f"fio_{i}" for i in range(27)]


def _run(d: Path, rng: random.Random, *, halved: str | None = None, iterations: int = 7, start: float = 0) -> Path:
    d.mkdir(parents=True)
    info = {"target": {"implementation": "zfs-fuse", "zfs_version": "0.7"}, "host": "h", "start": start,
            "runfile": {"source": "perf-regression", "text": "same"}, "selection": {}}
    (d / "run.json").write_text(json.dumps(info))
    lines = []
    for case in CASES:
        for i in range(iterations):
            level = 1000.0 * (0.5 if case == halved else 1.0)
            lines.append({"test": case, "case": case, "params": {}, "iteration": i + 1, "workload": "fio",
                          "status": "PASS", "figures": {
                              "iops": {"value": level * (1 + rng.gauss(0, 0.03)), "unit": "IOPS"},
                              "bw": {"value": level * (1 + rng.gauss(0, 0.03)) / 128, "unit": "MiB/s"},
                              "write_lat_mean": {"value": 1.0 / level * (1 + rng.gauss(0, 0.03)), "unit": "s"}}})
    (d / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return d


def _recipe_steps() -> list[str]:
    """The `run: |` blocks of the compare and Grafana steps in docs/ci.md."""
    text = (REPO / "docs" / "ci.md").read_text()
    yaml = text.split("```yaml", 1)[1].split("```", 1)[0]
    blocks = re.findall(r"run: \|\n((?:        .*\n)+)", yaml)
    steps = [b for b in blocks if "zfsperf compare" in b or "openmetrics" in b]
    assert len(steps) == 2, blocks
    return [re.sub(r"(?m)^        ", "", b) for b in steps]


def _run_recipe(tmp_path: Path, base: Path, new: Path) -> tuple[subprocess.CompletedProcess, ...]:
    """The two steps, with the recipe's paths pointed at this test's directories and zfsperf on PATH."""
    bin_dir = tmp_path / "bin"
    (bin_dir / ".venv" / "bin").mkdir(parents=True, exist_ok=True)
    shim = bin_dir / ".venv" / "bin" / "zfsperf"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m zfsperf.cli \"$@\"\n")
    shim.chmod(0o755)
    (bin_dir / "results").mkdir(exist_ok=True)           # the recipe's paths are the checkout's
    current = bin_dir / "results" / "current"
    if current.is_symlink():
        current.unlink()
    current.symlink_to(new)
    prom_dir = tmp_path / "node_exporter"
    prom_dir.mkdir(exist_ok=True)
    out = []
    for step in _recipe_steps():
        script = (step.replace("/srv/zfsperf/baseline", str(base))
                  .replace("/var/lib/node_exporter", str(prom_dir)))
        out.append(subprocess.run(["bash", "-e", "-c", script], cwd=bin_dir, capture_output=True, text=True,
                                  env={**os.environ, "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
                                       "PYTHONPATH": str(REPO / "src")}))
    return tuple(out)


def test_perf_regression_runs_enough_iterations_for_its_gate():
    from zfsperf.report.abstats import min_p
    from zfsperf.runfile import load
    rf = load("perf-regression", {})
    cases = rf.cases()
    assert len(cases) == len(CASES)
    n = {c.test.iterations for c in cases}
    assert len(n) == 1 and min_p(n.pop(), 7) < 0.05 / len(cases)        # Holm's first step is reachable


def test_the_recipe_fails_on_a_halved_case_and_posts_the_verdict(tmp_path):
    rng = random.Random(11)
    base = _run(tmp_path / "base", rng, start=1)
    new = _run(tmp_path / "new", rng, halved="fio_5", start=2)
    compare_step, prom_step = _run_recipe(tmp_path, base, new)
    assert compare_step.returncode == 1, compare_step.stdout + compare_step.stderr
    assert "regression: fio_5 iops -5" in compare_step.stderr
    assert compare_step.stderr.count("regression: ") == 1        # iops only: bw and latency shown, not gated
    assert "Holm" in compare_step.stderr
    summary = (tmp_path / "summary.md").read_text()               # posted before the step failed
    assert "fio_5" in summary and "|" in summary
    assert prom_step.returncode == 0, prom_step.stderr
    prom = (tmp_path / "node_exporter" / "zfsperf.prom").read_text()
    assert "zfsperf_" in prom and not (tmp_path / "node_exporter" / "zfsperf.prom.tmp").exists()


def test_the_recipe_passes_an_a_a(tmp_path):
    rng = random.Random(12)
    base = _run(tmp_path / "base", rng, start=1)
    new = _run(tmp_path / "new", rng, start=2)
    compare_step, _ = _run_recipe(tmp_path, base, new)
    assert compare_step.returncode == 0, compare_step.stdout + compare_step.stderr
    assert "regression:" not in compare_step.stderr


def test_a_gate_that_cannot_fail_says_so(tmp_path):
    """One iteration a side (the old perf-regression) or four across 27 cases: no p can pass Holm.
    Such a gate passed (exit 0) with a case halved: it is exit 2 now, saying why (issue 87)."""
    rng = random.Random(13)
    for n in (1, 4):
        base = _run(tmp_path / f"base{n}", rng, iterations=n, start=1)
        new = _run(tmp_path / f"new{n}", rng, halved="fio_5", iterations=n, start=2)
        res = zfsperf("compare", str(base), str(new), "--fail-on-regression", "5", "--no-history")
        assert res.returncode == 2
        assert "warning: the gate cannot fail on 27 of 27 cases" in res.stderr, res.stderr
        assert "the gate cannot fail on any figure here: 27 comparisons too few iterations for Holm's" in res.stderr
        assert "run ≥ 7 iterations a side" in res.stderr


def test_gate_figure_and_durations(tmp_path):
    rng = random.Random(14)
    base = _run(tmp_path / "base", rng, start=1)
    new = _run(tmp_path / "new", rng, halved="fio_5", start=2)
    res = zfsperf("compare", str(base), str(new), "--fail-on-regression", "5", "--no-history",
                  "--gate-figure", "bw")
    assert res.returncode == 1 and "regression: fio_5 bw" in res.stderr and "figure bw" in res.stderr
    res = zfsperf("compare", str(base), str(new), "--fail-on-regression", "5", "--gate-figure", "receive_time")
    assert res.returncode == 2 and "never gated" in res.stderr
    res = zfsperf("compare", str(base), str(new), "--fail-on-regression", "5", "--gate-figure", "nosuch")
    assert res.returncode == 2 and "no case has the figure \"nosuch\"" in res.stderr
