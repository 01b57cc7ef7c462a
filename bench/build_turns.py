#!/usr/bin/env python3
"""Build turns against blocks in the OpenZFS guest: an A/A of one build, both ways, in windows.

Two real `zfsperf guest ab --a 2.3 --b 2.3` runs of one receive test (the guest's own build on both
sides: nothing differs but the case's name), each cut into windows of --block iterations (--step
apart; --step = --block: disjoint windows, independent comparisons):

  blocks   today's design: the two builds' cases in interleaved blocks in one guest, the module
           loaded again before each case's pool (paired by block)
  turns    `--turns`: each build in a guest of its own (crosswise every iteration), ABBA turns for
           the test's duration, the other guest paused (paired by iteration)
  rebuild  the A/A′: `--a SRC --b SRC --rebuild --turns`, one source (--zfs-src DIR@REV) compiled
           twice, in turns; nothing differs but the module's layout (its floor is what this measures)
  local    zfsperf inside the guest as a local process, the guest being the kernel-OpenZFS machine
           (issue 72, 3): `guest run -- run --build a=M --build b=M`, M the modules of the guest's
           own build (--modules, default: the cached build of the guest's Debian source), the module
           swapped between cases in interleaved blocks (paired by block): `run --build`'s and
           `zfsperf bisect`'s design on a host
  local-rebuild  the same with --zfs-src DIR@REV compiled twice (two build trees): the A/A′ there

For each: the A/A false alarms (better/WORSE called on identical builds; goal <= 5 %), the change
called with 80 % power when one side's values are scaled (power.py's method), compare's three
outcomes per window, the machine time, and (turns) a pair's spread taken apart: a round's own
(what more rounds an iteration, --duration, or a larger round, --size, narrow) and what is left
between iterations (what only more iterations narrow). Under TCG only relative CPU-bound figures mean
anything: these are the designs' noise under emulation, not speeds.

Designs measured side by side on one machine: run them in an ABBA order of designs, each half kept
apart (`--keep D1 --designs turns,blocks`, then `--keep D2 --designs blocks,turns`), then judge the
halves together with `--pool D1,D2` (each kept run cut into its own windows; the spread over all pairs).

Usage: bench/build_turns.py [--iterations 30] [--block 6] [--step 6] [--duration 4s] [--size 8M]
                            [--vdev-size 256M] [--keep DIR] [--reuse]
                            [--designs turns,blocks,rebuild,local,local-rebuild] [--zfs-src DIR@REV]
                            [--modules DIR] [--pool DIR,DIR...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from power import arms_and_windows, paired, report, three_way, whole  # noqa: E402

RUNFILE = """
[defaults]
iterations = 1
timeout = "20m"
[defaults.pool]
vdevs = 1
vdev_size = "{vdev_size}"
[[test]]
name = "recv"
workload = "receive"
corpus = {{ kind = "random", size = "{size}", seed = 7 }}
threads = 1
duration = "{duration}"
steady = {{ mode = "off" }}
"""


def own_modules() -> str:
    """The modules of the guest's own build as built from its Debian source (the cache's source
    tree build whose version is the guest image's)."""
    from zfsperf.guest.build import find_build
    from zfsperf.guest.source import cache_root
    b = find_build("2.3")
    if b is None:
        raise SystemExit("no guest image: `zfsperf guest build` first")
    for info in sorted(cache_root().glob("src-tree-*/build.json")):
        meta = json.loads(info.read_text())
        if meta.get("version") == b.zfs_version and meta.get("kernel") == b.kernel and not meta.get("rebuilt"):
            return str(info.parent / "modules")
    raise SystemExit("no build of the guest's own source in the cache: give --modules DIR")


def local_sides(design: str, src: str | None, modules: str | None) -> list[str]:
    """run --build's two sides of a local design: one directory twice, or one commit built twice."""
    if design == "local":
        m = modules or own_modules()
        return ["--build", f"a={m}", "--build", f"b={m}"]
    if not src or "@" not in src:
        raise SystemExit("the local-rebuild design needs --zfs-src DIR@REV (one commit, compiled twice)")
    from zfsperf.guest.source import SourceBuilder
    path, rev = src.split("@", 1)
    one = SourceBuilder().build_commit(Path(path), rev)
    two = SourceBuilder().build_commit(Path(path), rev, rebuild=True)
    return ["--build", f"a={one.modules}", "--build", f"b={two.modules}"]


def sides(design: str, src: str | None) -> list[str]:
    """The guest ab arguments of a design's two sides."""
    if design.startswith("local"):
        return []
    if design == "rebuild":
        if not src:
            raise SystemExit("the rebuild design needs --zfs-src DIR@REV (one source, compiled twice)")
        return ["--a", src, "--b", src, "--rebuild", "--turns"]
    return ["--a", "2.3", "--b", "2.3"] + (["--turns"] if design == "turns" else [])


def measure(out: Path, design: str, iterations: int, duration: str, reuse: bool,
            src: str | None = None, size: str = "8M", vdev_size: str = "256M",
            modules: str | None = None) -> tuple[Path, float]:
    kept = out / design
    done = sorted(kept.glob("2*/results.jsonl")) if kept.exists() else []
    if reuse and done:
        d = done[-1].parent
        return d, json.loads((d / "elapsed.json").read_text())["seconds"]
    rf = out / "recv.toml"
    rf.write_text(RUNFILE.format(duration=duration, size=size, vdev_size=vdev_size))
    if design.startswith("local"):
        argv = [sys.executable, "-m", "zfsperf.cli", "guest", "run", "--", "run", "-r", str(rf),
                *local_sides(design, src, modules), "--iterations", str(iterations), "--no-history", "--no-html",
                "-o", str(kept)]
    else:
        argv = [sys.executable, "-m", "zfsperf.cli", "guest", "ab", *sides(design, src), "-r", str(rf),
                "--blocks", str(iterations), "-o", str(kept)]
    t0 = time.monotonic()
    res = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if res.returncode != 0:
        raise SystemExit(f"the {design} A/A failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    d = sorted(kept.glob("2*/results.jsonl"))[-1].parent
    (d / "elapsed.json").write_text(json.dumps({"seconds": seconds}))
    return d, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=30, help="iterations (blocks) of each A/A run")
    ap.add_argument("--block", type=int, default=6, help="pairs per comparison window")
    ap.add_argument("--step", type=int, help="windows start this many pairs apart (default: --block, disjoint)")
    ap.add_argument("--duration", default="4s", help="the receive test's duration (turns: of its ABBA groups)")
    ap.add_argument("--size", default="8M", help="the receive's stream (a round receives it once)")
    ap.add_argument("--vdev-size", default="256M", help="the pool's one vdev (each round's data stays on the pool)")
    ap.add_argument("--designs", default="turns,blocks", help="of turns, blocks, rebuild, local, local-rebuild")
    ap.add_argument("--modules", help="local: the directory of modules both sides load (default: the guest's own)")
    ap.add_argument("--zfs-src", help="rebuild: the source compiled twice (DIR, or DIR@REV of a git repository)")
    ap.add_argument("--keep", help="keep the runs here (default: a temporary directory)")
    ap.add_argument("--reuse", action="store_true", help="with --keep: judge the kept runs again")
    ap.add_argument("--pool", help="judge the runs kept in these --keep directories together, design by design "
                                   "(nothing is run)")
    args = ap.parse_args()
    if args.pool:
        pool([Path(d) for d in args.pool.split(",")], args.designs.split(","), args.block, args.step or args.block)
        return
    designs = args.designs.split(",")
    unknown = sorted(set(designs) - {"turns", "blocks", "rebuild", "local", "local-rebuild"})
    if unknown:
        raise SystemExit(f"--designs: unknown {', '.join(unknown)} (turns, blocks, rebuild, local, local-rebuild)")
    for design in designs:                # each design's sides checked before anything runs
        sides(design, args.zfs_src)
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zfsperf-build-turns-"))
    out.mkdir(parents=True, exist_ok=True)
    step = args.step or args.block
    print(f"A/A of one OpenZFS build against itself, {args.iterations} iterations a design, "
          f"windows of {args.block} pairs {step} apart; runs in {out}", flush=True)
    results = {}
    for design in designs:
        d, seconds = measure(out, design, args.iterations, args.duration, args.reuse, args.zfs_src, args.size,
                             args.vdev_size, args.modules)
        a, b, comps = arms_and_windows(d, args.block, step)
        results[design] = judge(f"{design} ({len(a)} pairs", a, b, comps, seconds, args.block)
        results[design]["spread"] = spread_parts([d / "results.jsonl"], results[design]["whole"]["pair_sd_pct"])
    (out / "build_turns.json").write_text(json.dumps(results, indent=1))


def judge(head: str, a: np.ndarray, b: np.ndarray, comps: list, seconds: float, block: int) -> dict:
    """One design's A/A: its windows' false alarms and power, compare's three outcomes, the whole."""
    per_window = seconds * block / max(len(a), 1)
    res = report(f"{head}, {per_window / 60:.1f} min a window)", comps, paired, seconds)
    res["three_way"] = three_way(comps)
    res["whole"] = whole(a, b)
    res["minutes_per_window"] = round(per_window / 60, 2)
    res["seconds_per_pair"] = round(seconds / max(len(a), 1), 1)
    return res


def spread_parts(runs: list[Path], pair_sd: float) -> dict | None:
    """A pair's spread taken apart (turns: each side's rounds of an iteration kept in `streams`):
    the rounds' own, from how one side's rounds of one iteration differ once each round position's
    mean over the iterations is left out (the pool fills, so later rounds are slower alike on both
    sides), what that makes of a pair, and the rest, between iterations (each with its own module
    loads and pools). More rounds an iteration narrow the first part only; more iterations both."""
    groups: dict[tuple, list[np.ndarray]] = {}
    for r in runs:
        for ln in r.read_text().splitlines():
            rec = json.loads(ln) if ln.strip() else {}
            t = [x["seconds"] for x in rec.get("streams") or []]
            if rec.get("status") == "PASS" and len(t) >= 2:
                key = (str(r), rec["sweep"].get("build"), rec["iteration"] % 2, len(t))
                groups.setdefault(key, []).append(np.log(t))
    resid = [m - m.mean(axis=0) for m in (np.array(v) for v in groups.values()) if len(m) >= 2]
    dof = sum(x.shape[0] * (x.shape[1] - 1) - (x.shape[1] - 1) for x in resid)
    if dof <= 0:
        return None
    round_sd = float(np.sqrt(sum(((x - x.mean(axis=1, keepdims=True)) ** 2).sum() for x in resid) / dof) * 100)
    per_side = float(np.median([x.shape[1] for x in resid]))
    from_rounds = round_sd * np.sqrt(2 / per_side)
    between = float(np.sqrt(max(0.0, pair_sd ** 2 - from_rounds ** 2)))
    print(f"  a pair's spread {pair_sd:.1f} %: a round's own {round_sd:.1f} % ({per_side:.0f} rounds a side: "
          f"{from_rounds:.1f} % of a pair), between iterations {between:.1f} %", flush=True)
    return {"round_sd_pct": round_sd, "rounds_a_side": per_side, "pair_sd_from_rounds_pct": float(from_rounds),
            "between_iterations_pct": between}


def pool(dirs: list[Path], designs: list[str], block: int, step: int) -> None:
    """Each design's kept runs in dirs judged together: every run cut into its own windows (none
    spans two runs), the whole-run figures over all their pairs, the machine time summed."""
    results = {}
    for design in designs:
        runs = [r for d in dirs for r in sorted((d / design).glob("2*/results.jsonl"))[-1:]]
        if not runs:
            continue
        a_all, b_all, comps, seconds = [], [], [], 0.0
        for r in runs:
            a, b, w = arms_and_windows(r.parent, block, step)
            a_all.append(a)
            b_all.append(b)
            comps += w
            seconds += json.loads((r.parent / "elapsed.json").read_text())["seconds"]
        a, b = np.concatenate(a_all), np.concatenate(b_all)
        head = f"{design} ({len(runs)} run{'s' * (len(runs) > 1)}, {len(a)} pairs"
        results[design] = judge(head, a, b, comps, seconds, block)
        results[design]["spread"] = spread_parts(runs, results[design]["whole"]["pair_sd_pct"])
        print(f"  {results[design]['seconds_per_pair']:.1f} s a pair (boots included)", flush=True)
    if not results:
        raise SystemExit(f"no kept run of {', '.join(designs)} in {', '.join(map(str, dirs))}")
    (dirs[0] / "build_turns-pooled.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
