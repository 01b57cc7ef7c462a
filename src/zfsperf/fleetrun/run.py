"""`zfsperf fleet run -i INVENTORY -r RUNFILE`: the same runfile, seed and arguments on every host of
an Ansible inventory, hosts in parallel up to --forks, each host's A and B paired within itself.

1. Input first, nothing touched: the runfile is read here (an error names its file, line and
   field), the inventory by ansible-inventory, the options checked.
2. Every host checked before any runs: zfsperf found there, and `zfsperf run --dry-run` with the
   run's arguments (the runfile against that host's ZFS, its vdev room, the history store it is
   to write to). A host that cannot be reached, has no ZFS or cannot reach the store is exit 2,
   named, and no host has run anything.
3. The run: every host runs with the fleet's id and its inventory name (run.json `fleet`); its
   results directory comes back under DIR/fleet-ID/hosts/NAME/ whether its run passed or not.
   A host that failed or stopped answering is named in fleet.json with the task and why; the
   others' results stand. Ctrl-C or a hangup interrupts every host's run as Ctrl-C would (each
   restores what it changed) and removes the fleet's directories there.
4. fleet.json (the fleet's record: id, runfile, seed, arguments, each host's outcome and results
   directory), then `fleet compare` of it when two or more hosts have a paired A/B."""

from __future__ import annotations

import json
import random
import secrets
import tarfile
import tempfile
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

from .. import control, runfile
from ..errors import InputError
from ..redact import redact_argv
from ..units import format_span
from . import engine

FORMAT = 1


def _input(args: Namespace, defines: dict[str, str]) -> tuple[Path, str, str, dict[str, dict[str, Any]], list[str]]:
    """The inventory, the runfile (a local path copied to each host, or a built-in name), the
    hosts and the arguments every host's run gets; InputError (exit 2) before anything runs."""
    if args.forks < 1:
        raise InputError("--forks takes a whole number >= 1", field="--forks")
    if args.timeout <= 0:
        raise InputError("--timeout takes seconds > 0", field="--timeout")
    runfile.load(args.runfile, defines)              # errors name the file, line and field
    path = Path(args.runfile)
    src, name = (str(path.resolve()), "") if path.is_file() else ("", args.runfile)
    hosts = engine.inventory(Path(args.inventory))
    seed = args.seed if args.seed is not None else random.randrange(2 ** 31)
    rest: list[str] = ["--seed", str(seed)]
    for k, v in defines.items():
        rest += ["-D", f"{k}={v}"]
    for flag, value in (("-t", args.test), ("-T", args.tags), ("-I", args.iterations), ("--store", args.store),
                        ("--target", args.target), ("--detect", args.detect)):
        if value is not None:
            rest += [flag, str(value)]
    rest += [f for f, on in (("--interleave", args.interleave), ("--no-history", args.no_history),
                             ("--no-html", args.no_html)) if on]
    return Path(args.inventory), src, name, hosts, rest


def fleet_run(args: Namespace, defines: dict[str, str], say=print) -> int:
    """The command (module docstring); defines: -D NAME=VALUE, checked. 0: every host ran; 1: one
    or more did not (named); 2: bad input or a host that failed its check (no host ran)."""
    inv, src, name, hosts, rest = _input(args, defines)
    fleet_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
    common = {"zfsperf_fleet_id": fleet_id, "zfsperf_runfile_src": src, "zfsperf_runfile": name or "runfile.toml",
              "zfsperf_args": rest, "zfsperf_timeout": int(args.timeout)}
    with tempfile.TemporaryDirectory(prefix="zfsperf-fleet-") as tmp, control.stop_on_signals():
        work = Path(tmp)
        say(f"fleet {fleet_id}: {len(hosts)} hosts ({', '.join(hosts)}); each checked first (zfsperf there, "
            f"`zfsperf run --dry-run` with the run's arguments: its ZFS, vdev room and store)")
        events = engine.play(inv, common | {"zfsperf_phase": "check", "zfsperf_local_dir": str(work.resolve())}, work,
                             forks=args.forks, name="check")
        checked = engine.outcomes(events, list(hosts))
        bad = [r for r in checked.values() if r.status != "ok"]
        if bad:
            raise InputError("no host ran anything: " + "; ".join(
                f"host {r.host}: {r.status}" + (f" at {r.task!r}" if r.task else "") + f": {r.why}" for r in bad),
                field="-i")
        if args.dry_run:
            say(f"fleet {fleet_id}: every host checked ({', '.join(hosts)}); --dry-run: nothing run or written")
            return 0
        out = Path(args.outdir) / f"fleet-{fleet_id}"
        (out / "hosts").mkdir(parents=True)
        record: dict[str, Any] = {"format": FORMAT, "fleet_id": fleet_id, "inventory": str(inv.resolve()),
                                  "runfile": src or name, "arguments": redact_argv(rest), "forks": args.forks,
                                  "start": time.time(), "end": None, "interrupted": False,
                                  "hosts": {h: {"status": "running"} for h in hosts}}
        _write(out, record)
        say(f"fleet {fleet_id}: every host checked; running on {min(args.forks, len(hosts))} at a time; "
            f"results in {out}")
        try:            # (a relative fetch dest is Ansible's playbook directory's: made absolute)
            events = engine.play(inv, common | {"zfsperf_phase": "run",
                                                   "zfsperf_local_dir": str((out / "hosts").resolve())},
                                 work, forks=args.forks, name="run",
                                 tick=lambda t: say(f"fleet {fleet_id}: {_progress(work / 'run.events.jsonl', hosts)}, "
                                                    f"{format_span(t)} so far"))
        except KeyboardInterrupt:
            say(f"fleet {fleet_id}: interrupted: stopping every host's run (each restores what it changed)")
            record["interrupted"] = True
            engine.play(inv, {"zfsperf_fleet_id": fleet_id}, work, forks=max(args.forks, len(hosts)),
                        name="stop", playbook=engine.STOP)
            _collect(out, record, engine.outcomes(work / "run.events.jsonl", list(hosts)))
            raise
        _collect(out, record, engine.outcomes(events, list(hosts)))
    return _summary(out, record, say)


def _progress(events: Path, hosts: dict[str, Any]) -> str:
    """How many hosts' runs have ended (ok or not) and how many hosts stopped answering."""
    res = engine.outcomes(events, list(hosts))
    ended = sum(1 for r in res.values() if r.rc is not None or r.status in ("failed", "unreachable"))
    lost = sum(1 for r in res.values() if r.status == "unreachable")
    return f"{ended} of {len(hosts)} hosts' runs ended" + (f" ({lost} unreachable)" if lost else "")


def _collect(out: Path, record: dict[str, Any], results: dict[str, engine.HostResult]) -> None:
    """Each host's results unpacked under out/hosts/NAME/ (its run's directory), its outcome in
    fleet.json: a host whose run passed but whose results did not come back is not ok."""
    for h, r in results.items():
        entry = r.as_dict()
        d = out / "hosts" / h
        tgz = d / "results.tgz"
        if tgz.is_file():
            with tarfile.open(tgz) as t:
                t.extractall(d, filter="data")
            tgz.unlink()
            run_dir = _run_dir(d)
            if run_dir is not None:
                entry["dir"] = str(run_dir.relative_to(out))
        if entry["status"] == "ok" and "dir" not in entry:
            entry |= {"status": "failed", "why": "its results did not come back"}
        record["hosts"][h] = entry
    record["end"] = time.time()
    _write(out, record)


def _run_dir(d: Path) -> Path | None:
    """The run's results directory in what a host sent back: the one directory there with a
    run.json (a resumed or repeated run leaves more: then the one `current` names)."""
    dirs = sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink() and (p / "run.json").is_file())
    if len(dirs) > 1 and (d / "current").is_symlink():
        named = Path(str((d / "current").readlink())).name
        dirs = [p for p in dirs if p.name == named] or dirs
    return dirs[-1] if dirs else None


def _write(out: Path, record: dict[str, Any]) -> None:
    tmp = out / "fleet.json.tmp"
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(out / "fleet.json")


def _summary(out: Path, record: dict[str, Any], say) -> int:
    """Each host's outcome, then the fleet's comparison where there is one; 0 when every host's
    run passed, else 1 (the failed and unreachable hosts named)."""
    from ..report import fleet
    hosts = record["hosts"]
    for h, e in hosts.items():
        say(f"  {h:<24} {e['status']}" + (f": {e.get('task')}: {e.get('why')}" if e["status"] != "ok" else
                                          f" ({e.get('dir')})"))
    ok = [h for h, e in hosts.items() if e["status"] == "ok"]
    if len(ok) >= 2:
        try:
            say(fleet.text(fleet.compare_fleet([out])))
        except InputError as e:
            say(f"no fleet comparison: {e}")
    bad = len(hosts) - len(ok)
    say(f"fleet {record['fleet_id']}: {len(ok)} of {len(hosts)} hosts ran" + (f"; {bad} did not (named above)"
                                                                              if bad else "") + f"; {out}")
    return 0 if not bad else 1
