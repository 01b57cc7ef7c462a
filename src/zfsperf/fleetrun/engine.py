"""The orchestration engine, Ansible: the inventory read by ansible-inventory, the playbook shipped
beside this file run by ansible-playbook, and each host's outcome read from the events the
callback in callback/ writes (ok, or where and why it failed or could not be reached). Nothing here
is a scheduler of zfsperf's own: parallelism is Ansible's forks, connections are its ssh."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..errors import InputError

HERE = Path(__file__).parent
PLAYBOOK = HERE / "playbook.yml"
STOP = HERE / "stop.yml"            # an interrupted fleet's hosts stopped
CALLBACKS = HERE / "callback"
TICK_S = 60.0                  # how often a long play says how far it is
SSH_ARGS = "-C -o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=15 -o ServerAliveCountMax=4"
HOST_VARS = ("zfsperf_bin", "zfsperf_class")       # what an inventory may say of a host for zfsperf


def tool(name: str) -> str:
    """ansible-inventory or ansible-playbook: beside this Python (the project's .venv installs
    ansible-core), else on PATH."""
    here = Path(sys.executable).parent / name
    if os.access(here, os.X_OK):
        return str(here)
    found = shutil.which(name)
    if found is None:
        raise InputError(f"{name} is missing: ansible-core is one of zfsperf's dependencies (`make run` "
                         "installs it into .venv)", field="fleet")
    return found


def environment(events: Path) -> dict[str, str]:
    """Ansible's settings for zfsperf's runs: its callback, no retry files, an inventory it cannot
    parse is an error (not an empty fleet), the host's Python found without a warning."""
    return os.environ | {
        "ANSIBLE_STDOUT_CALLBACK": "zfsperf_events",
        "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS),
        "ANSIBLE_RETRY_FILES_ENABLED": "0",
        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1",
        "ANSIBLE_PYTHON_INTERPRETER": os.environ.get("ANSIBLE_PYTHON_INTERPRETER", "auto_silent"),
        "ANSIBLE_LOCALHOST_WARNING": "0",
        "ANSIBLE_DEPRECATION_WARNINGS": "0",
        "PYTHONWARNINGS": "ignore",          # cryptography's deprecation, at every ansible start
        "ZFSPERF_FLEET_EVENTS": str(events),
        # Ansible's own ssh arguments, and keepalives: a host that dies mid-run is unreachable after
        # a minute without an answer (a user's ANSIBLE_SSH_ARGS is kept as it is)
        "ANSIBLE_SSH_ARGS": os.environ.get("ANSIBLE_SSH_ARGS", SSH_ARGS),
        # a connection refused or reset once (a loaded host, a busy sshd) is tried again, 1-4 s apart,
        # before the host is called unreachable
        "ANSIBLE_SSH_RETRIES": os.environ.get("ANSIBLE_SSH_RETRIES", "3"),
    }


def inventory(path: Path) -> dict[str, dict[str, Any]]:
    """The inventory's hosts and their variables (ansible-inventory --list), in its order; an input
    error naming the file when Ansible cannot read it or it names no host."""
    if not path.is_file():
        raise InputError(f"{path}: no such inventory file", field="-i")
    res = subprocess.run([tool("ansible-inventory"), "-i", str(path), "--list"], capture_output=True, text=True,
                         env=environment(Path(os.devnull)), stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        why = " ".join(ln.strip() for ln in res.stderr.splitlines() if ln.strip())[-600:]
        raise InputError(f"{path}: Ansible cannot read this inventory: {why}", field="-i")
    data = json.loads(res.stdout)
    hostvars: dict[str, dict[str, Any]] = data.get("_meta", {}).get("hostvars", {})
    order: list[str] = []

    def walk(group: str) -> None:
        g = data.get(group, {})
        for h in g.get("hosts", []):
            if h not in order:
                order.append(h)
        for child in g.get("children", []):
            walk(child)
    walk("all")
    if not order:
        raise InputError(f"{path}: the inventory names no host", field="-i")
    out = {h: dict(hostvars.get(h, {})) for h in order}
    for h, hv in out.items():
        for k in HOST_VARS:
            if k in hv and not (isinstance(hv[k], str) and hv[k].strip() and "\n" not in hv[k]):
                raise InputError(f"{path}: host {h}: {k} must be one line of text, not {hv[k]!r}", field=k)
    return out


@dataclass
class HostResult:
    """What one host did in one play: its last failed or unreachable task and why, else ok."""
    host: str
    status: str = "ok"                 # ok | failed | unreachable | not run
    task: str | None = None
    why: str | None = None
    rc: int | None = None
    stdout: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "task": self.task, "why": self.why, "rc": self.rc}


def outcomes(events: Path, hosts: list[str]) -> dict[str, HostResult]:
    """Each host's outcome from the callback's events: the first task that failed (not one the
    playbook let fail) or the host's being unreachable; a host with no event at all was not run."""
    out = {h: HostResult(h, status="not run", why="Ansible reported nothing of this host") for h in hosts}
    seen: set[str] = set()
    text = events.read_text() if events.exists() else ""
    for ln in text.splitlines():
        ev = json.loads(ln)
        h = ev.get("host")
        if h not in out or ev["status"] == "stats":
            continue
        r = out[h]
        if h not in seen:
            seen.add(h)
            r.status, r.why = "ok", None
        if ev.get("task") == "zfsperf run" and ev["status"] in ("ok", "failed"):
            r.stdout = ev.get("stdout") or ""
            r.rc = ev.get("rc")
        if ev["status"] in ("failed", "unreachable") and not ev.get("ignored") and r.status == "ok":
            r.status, r.task, r.rc = ev["status"], ev.get("task"), ev.get("rc", r.rc)
            r.why = _why(ev)
    return out


def _why(ev: dict[str, Any]) -> str:
    """A failed task's reason in one line: its error output's last lines, else Ansible's message."""
    for key in ("stderr", "msg", "stdout"):
        lines = [ln.strip() for ln in str(ev.get(key) or "").splitlines() if ln.strip()]
        if lines:
            return " ".join(lines[-2:])[-400:]
    return f"exit status {ev.get('rc')}"


def play(inventory_path: Path, variables: dict[str, Any], work: Path, *, forks: int, name: str, playbook: Path = PLAYBOOK, tick: Callable[[float], None] | None = None) -> Path:
    """ansible-playbook with a shipped playbook and these variables over the inventory (its
    output shown as it goes); the events file it wrote. Ctrl-C or a hangup stops Ansible and is
    raised on (the caller stops the hosts' runs)."""
    events = work / f"{name}.events.jsonl"
    varfile = work / f"{name}.vars.json"
    varfile.write_text(json.dumps(variables))
    argv = [tool("ansible-playbook"), "-i", str(inventory_path), str(playbook), "-e", f"@{varfile}",
            "--forks", str(forks)]
    p = subprocess.Popen(argv, env=environment(events), stdin=subprocess.DEVNULL, start_new_session=True)
    t0 = time.monotonic()
    try:
        while True:
            try:
                p.wait(TICK_S)
                break
            except subprocess.TimeoutExpired:
                if tick is not None:        # a host's run prints nothing until it ends: say how long so far
                    tick(time.monotonic() - t0)
    except BaseException:
        with _suppress():
            os.killpg(p.pid, signal.SIGINT)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            with _suppress():
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        raise
    return events


def _suppress():
    import contextlib
    return contextlib.suppress(ProcessLookupError)
