"""QEMU's machine protocol (QMP) over the guest's unix socket: pause a guest, let it run again, and
read back which it is doing.

QMP is line-delimited JSON: QEMU greets with {"QMP": ...}; the client must send qmp_capabilities
before any other command; each command gets one {"return": ...} or {"error": {"class", "desc"}},
and asynchronous {"event": ...} lines (STOP, RESUME) may come in between, which are skipped.
`stop` pauses the vCPUs (the QEMU process stays, answers QMP and takes signals as before); `cont`
resumes them; `query-status` says {"running": bool, "status": "running" | "paused" | ...}.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from ..errors import TargetError


class Qmp:
    """One QMP connection to one QEMU (a socket per guest: guest/vm.py puts it in the lab)."""

    def __init__(self, path: Path | str, timeout: float = 30) -> None:
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(self.path)
        except OSError as e:
            self.sock.close()
            raise TargetError(f"QMP socket {self.path}: {e}") from None
        self._buf = b""
        try:                          # QEMU greets one client at a time: a second one waits, then times out
            greeting = self._message()
            if "QMP" not in greeting:
                raise TargetError(f"QMP socket {self.path}: no QMP greeting ({greeting})")
            self.execute("qmp_capabilities")
        except BaseException:
            self.close()
            raise

    def _message(self) -> dict[str, Any]:
        while b"\n" not in self._buf:
            try:
                chunk = self.sock.recv(65536)
            except OSError as e:
                raise TargetError(f"QMP socket {self.path}: {e}") from None
            if not chunk:
                raise TargetError(f"QMP socket {self.path}: QEMU closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except ValueError:
            raise TargetError(f"QMP socket {self.path}: not JSON: {line[:200]!r}") from None
        return msg if isinstance(msg, dict) else {}

    def execute(self, command: str, **arguments: Any) -> Any:
        """Run one command; its "return", or TargetError with QEMU's own description."""
        req: dict[str, Any] = {"execute": command}
        if arguments:
            req["arguments"] = arguments
        try:
            self.sock.sendall(json.dumps(req).encode() + b"\n")
        except OSError as e:
            raise TargetError(f"QMP socket {self.path}: {e}") from None
        while True:
            msg = self._message()
            if "return" in msg:
                return msg["return"]
            if "error" in msg:
                err = msg["error"]
                raise TargetError(f"QMP {command}: {err.get('class')}: {err.get('desc')}")
            # an event (STOP, RESUME, ...): not the answer

    def status(self) -> str:
        """"running", "paused", ... as QEMU says (query-status)."""
        return str(self.execute("query-status").get("status"))

    def pause(self) -> None:
        self.execute("stop")

    def resume(self) -> None:
        self.execute("cont")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
