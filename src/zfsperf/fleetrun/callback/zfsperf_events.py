"""Ansible's stdout callback for `zfsperf fleet run` (loaded by name from this directory): each
host's task results as JSON lines in $ZFSPERF_FLEET_EVENTS (zfsperf reads them back: which host
failed, at which task, why), and one short progress line a result on the terminal."""

from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: zfsperf_events
    type: stdout
    short_description: zfsperf fleet run's record of each host's tasks
    description: each task result as a JSON line in $ZFSPERF_FLEET_EVENTS, a line of progress on stdout
"""

KEPT = ("rc", "msg", "stdout", "stderr", "path", "dest", "start", "end", "ansible_job_id", "finished")
TAIL = 4000          # the last characters of a long stdout or stderr kept


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "zfsperf_events"

    def __init__(self) -> None:
        super().__init__()
        path = os.environ.get("ZFSPERF_FLEET_EVENTS")
        self._out = open(path, "a", encoding="utf-8") if path else None

    def _event(self, status: str, result, **extra) -> None:
        r = result._result if result is not None else {}
        ev = {"t": time.time(), "status": status, **extra}
        if result is not None:
            ev["host"] = result._host.get_name()
            ev["task"] = result._task.get_name()
            for k in KEPT:
                v = r.get(k)
                if v is not None:
                    ev[k] = v[-TAIL:] if isinstance(v, str) else v
        if self._out is not None:
            self._out.write(json.dumps(ev, default=str) + "\n")
            self._out.flush()
        if result is not None and status != "skipped" and (status != "ok" or str(ev.get("task")).startswith("zfsperf ")):
            why = ev.get("msg") or (ev.get("stderr") or "").strip().splitlines()[-1:] or ""
            why = why[0] if isinstance(why, list) and why else why
            self._display.display(f"  {ev.get('host')}: {ev.get('task')}: {status}" + (f" ({why})" if why and
                                                                                      status != "ok" else ""))

    def v2_runner_on_ok(self, result) -> None:
        self._event("ok", result)

    def v2_runner_on_failed(self, result, ignore_errors=False) -> None:
        self._event("failed", result, ignored=bool(ignore_errors))

    def v2_runner_on_unreachable(self, result) -> None:
        self._event("unreachable", result)

    def v2_runner_on_skipped(self, result) -> None:
        if self._out is not None:
            self._event("skipped", result)

    def v2_runner_on_async_failed(self, result) -> None:
        self._event("failed", result)

    def v2_playbook_on_stats(self, stats) -> None:
        for h in sorted(stats.processed.keys()):
            s = stats.summarize(h)
            if self._out is not None:
                self._out.write(json.dumps({"t": time.time(), "status": "stats", "host": h, **s}) + "\n")
        if self._out is not None:
            self._out.flush()
