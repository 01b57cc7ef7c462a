#!/usr/bin/env python3
"""A fleet's verdicts for real (issue 74, 4): hosts on this machine (tests/fleethosts.py: an sshd
each, in a mount namespace and a cpu cgroup of its own, so its own zfs-fuse and its own CPU limit),
`zfsperf fleet run` through the real Ansible, then `zfsperf fleet compare` of each fleet.

Two fleets of the same hosts (--full unlimited hosts, --limited hosts held to --cpus CPUs each):
  A/A     a user property ZFS ignores (zfsperf:arm = a|b), taking turns: neither the fleet nor a
          class may be called
  change  --change (default compression off against gzip-9 on compressible data), taking turns:
          a CPU-bound cost; what each class sees, and whether the CPU-limited class is named

Prints each fleet's per-host verdicts and the combined ones (fleet compare's own lines) and a line
of figures to copy into docs/benchmarks.md.

Usage: bench/fleet.py [--full 2] [--limited 2] [--cpus 0.5] [--iterations 8] [--change 'compression = ["off", "gzip-9"]']
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]

from fleethosts import ab_runfile as runfile, fleet_host, inventory  # noqa: E402

ZFSPERF = str(Path(sys.executable).parent / "zfsperf")


def fleet(work: Path, name: str, text: str, seed: int) -> dict:
    d = work / name
    d.mkdir()
    (d / "ab.toml").write_text(text)
    t0 = time.monotonic()
    r = subprocess.run([ZFSPERF, "fleet", "run", "-i", str(work / "hosts.ini"), "-r", "ab.toml", "--seed", str(seed),
                        "--no-history", "--no-html", "-f", "8"], cwd=d, capture_output=True, text=True)
    took = time.monotonic() - t0
    (fd,) = (d / "zfsperf-results").glob("fleet-*")
    cmp = subprocess.run([ZFSPERF, "fleet", "compare", str(fd)], capture_output=True, text=True)
    js = json.loads(subprocess.run([ZFSPERF, "fleet", "compare", str(fd), "--json"], capture_output=True,
                                   text=True).stdout)
    print(f"\n== {name}: fleet run exit {r.returncode} in {took:.0f} s ({fd})")
    print(cmp.stdout.rstrip() or cmp.stderr.rstrip())
    return js


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", type=int, default=2)
    ap.add_argument("--limited", type=int, default=2)
    ap.add_argument("--cpus", type=float, default=0.5)
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--change", default='compression = ["off", "gzip-9"]')
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="zfsperf-bench-fleet-"))
    names = [(f"full{i}", None) for i in range(1, args.full + 1)] + \
            [(f"small{i}", args.cpus) for i in range(1, args.limited + 1)]
    with contextlib.ExitStack() as st:
        hosts = [st.enter_context(fleet_host(n, work / n, cpus=c)) for n, c in names]
        inventory(work / "hosts.ini", [h.inventory_line() for h in hosts])
        print(f"{args.full} hosts unlimited and {args.limited} held to {args.cpus:g} CPUs on this "
              f"{__import__('os').cpu_count()}-CPU machine, {args.iterations} pairs a host, all at once; in {work}")
        aa = fleet(work, "aa", runfile(args.iterations, '"zfsperf:arm" = ["a", "b"]'), args.seed)
        ch = fleet(work, "change", runfile(args.iterations, args.change), args.seed)
    def verdicts(js: dict) -> str:
        out = []
        for c in ([js["fleet"]] if js.get("fleet") else []) + js.get("classes", []):
            out.append(f"{c['label'][:40]}: {c['change_pct']:+.1f} % [{c['ci_pct'][0]:+.1f} … {c['ci_pct'][1]:+.1f}] "
                       f"{c['verdict']}")
        return "; ".join(out)
    print(f"\nA/A: {verdicts(aa)}\nchange ({args.change}): {verdicts(ch)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
