#!/usr/bin/env python3
"""A planted change of about 5 % found by `zfsperf bisect` on a kernel-OpenZFS machine (issue 72, 3).

The machine is the OpenZFS guest with zfsperf inside it as a local process (`zfsperf guest run --
bisect ...`): each commit compiled for the guest's kernel (here on the host, found in the build
cache inside), each step a `run --build` A/B of GOOD's build against the step's in interleaved
blocks, the module swapped between cases. TCG: emulated CPU work, relative figures only.

The repository is tests/helpers.openzfs_repo's (Debian's zfs-dkms 2.3 source: base, comment, the
100 ms pause, note) with one more commit on a branch from "comment" (the last before the 100 ms
pause): an hrtimer sleep of --pause-us microseconds (zfs_sleep_until) per WRITE record of a
receive, after the record is checked, sized to cost about 5 % of the 1 MiB receive of
tests/test_guest_builds.py under TCG. GOOD is "comment", BAD the planted commit: a range of one
commit, so BAD's own step decides (a longer range adds steps of the same kind, each as long). --detect: the step runs blocks until its verdict is decided or it
could see that change (runner --detect), up to the runfile's max_iterations.

Prints: the bisect's outcome and first worse commit, BAD's step (its change, interval, p, blocks,
the change it could see) and the machine time.

Usage: bench/bisect_planted.py [--pause-us 1250] [--detect 5] [--max-blocks 126] [--seed 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

def runfile(max_blocks: int) -> str:
    """tests/test_guest_builds.py's build receive (a 1 MiB corpus), up to max_blocks blocks."""
    from helpers import RECV
    return RECV.replace('size = "4M"', 'size = "1M"').replace("iterations = 1\n",
                                                               f"iterations = 1\nmax_iterations = {max_blocks}\n")


def planted_repo(dest: Path, pause_us: int) -> dict[str, str]:
    """tests/helpers.openzfs_repo's four commits, and the planted one ("planted") on a branch of its
    own from "comment" (the last commit before the 100 ms pause): GOOD..BAD is that one commit."""
    from helpers import RECEIVE_COST, openzfs_repo
    commits = openzfs_repo(dest)
    when = {"GIT_AUTHOR_DATE": "2026-01-02T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-02T00:00:00Z"}
    git = ["git", "-C", str(dest), "-c", "user.name=zfsperf bench", "-c", "user.email=bench@zfsperf.invalid"]
    env = {**os.environ, **when}
    subprocess.run([*git, "checkout", "-q", "-b", "planted", commits["comment"]], check=True, env=env)
    recv = dest / "module" / "zfs" / "dmu_recv.c"
    text = recv.read_text()
    checked = RECEIVE_COST[0]                   # after the record is checked, before it is written
    assert checked in text, "the test repository's receive path is not where it was"
    sleep = checked.replace("\n\n\tif (rwa->heal) {",
                            f"\n\n\tzfs_sleep_until(gethrtime() + USEC2NSEC({pause_us}));\n\n\tif (rwa->heal) {{")
    recv.write_text(text.replace(checked, sleep, 1))
    subprocess.run([*git, "commit", "-qam", f"dmu_recv: a {pause_us} us pause per WRITE record"], check=True, env=env)
    commits["planted"] = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True,
                                        text=True).stdout.strip()
    return commits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pause-us", type=int, default=1250)
    ap.add_argument("--detect", type=float, default=5.0)
    ap.add_argument("--max-blocks", type=int, default=126)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--keep", help="a directory for the repository, the runfile and the bisect (not under "
                                   "/var/tmp or /run: the guest mounts its own there)")
    args = ap.parse_args()
    out = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="zfsperf-bisect-planted-", dir="/root"))
    out.mkdir(parents=True, exist_ok=True)
    from zfsperf.guest.source import SourceBuilder
    repo = out / "zfs"
    commits = planted_repo(repo, args.pause_us) if not repo.exists() else json.loads((out / "commits.json").read_text())
    (out / "commits.json").write_text(json.dumps(commits, indent=1))
    sb = SourceBuilder(print)
    for name in ("comment", "planted"):             # compiled here for the guest's kernel, found cached inside
        sb.build_commit(repo, commits[name])
    rf = out / "bisect.toml"
    rf.write_text(runfile(args.max_blocks))
    t0 = time.monotonic()
    argv = [sys.executable, "-m", "zfsperf.cli", "guest", "run", "--", "bisect", "--zfs-src", str(repo),
            "--good", commits["comment"], "--bad", commits["planted"], "-r", str(rf), "--case", "recv",
            "--figure", "throughput", "--seed", str(args.seed), "--detect", str(args.detect), "-x",
            "-o", str(out / "bisect")]
    res = subprocess.run(argv, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    (out / "bisect.log").write_text(res.stdout + res.stderr)
    print(res.stdout[-3000:])
    if res.returncode != 0:
        print(res.stderr[-3000:])
        raise SystemExit(f"bisect exited {res.returncode}")
    state = json.loads((out / "bisect" / "bisect.json").read_text())
    step = state["steps"][commits["planted"]]
    run = Path(step["results_dir"])
    cmp = json.loads(subprocess.run([sys.executable, "-m", "zfsperf.cli", "compare", str(run), "--json"],
                                    capture_output=True, text=True, check=True).stdout)
    ch = next(c for c in cmp["changes"] if c["figure"] == "throughput")
    found = f"first worse commit: {commits['planted']}" in res.stdout
    print(f"planted: {args.pause_us} us a WRITE record ({commits['planted'][:12]}); range comment..planted, one commit")
    print(f"bisect: {'found it' if found else 'did NOT name it'}; step verdict {step['verdict']}")
    print(f"BAD's step: {ch['change_pct']:+.1f} % [{ch['ci_pct'][0]:+.1f} … {ch['ci_pct'][1]:+.1f}] p {ch.get('p')}, "
          f"{ch.get('pairs')} blocks, could see {ch.get('detectable_pct')} %")
    print(f"machine time: {seconds / 60:.1f} min (TCG: emulated CPU work, relative figures only)")


if __name__ == "__main__":
    main()
