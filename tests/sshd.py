"""An sshd of a test's own on 127.0.0.1 (the ssh target's tests, the fleet's hosts)."""

import contextlib
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from zfsperf import proc

SSHD = "/usr/sbin/sshd"


@contextlib.contextmanager
def sshd_running(prefix: list[str], d: Path, extra: str = ""):
    """An sshd on 127.0.0.1 (in the namespace prefix enters), with a key made for it: its ssh:// URL
    and its listening process while it runs (ZFSPERF_SSH_OPTS set to reach it), stopped by pid
    afterwards, its whole process group."""
    if not os.path.exists(SSHD):
        pytest.fail("sshd is missing: `make test` installs openssh-server (scripts/install-deps.sh --test)")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "id")], check=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "host")], check=True)
    (d / "authorized_keys").write_text((d / "id.pub").read_text())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (d / "sshd_config").write_text(f"""Port {port}
ListenAddress 127.0.0.1
HostKey {d}/host
AuthorizedKeysFile {d}/authorized_keys
PidFile none
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
{extra}
""")
    # sshd's privilege separation directory (the package's tmpfiles make it at boot), kept: two
    # tests' sshds run at once in two lanes, and the first to end removed it under the other's
    os.makedirs("/run/sshd", exist_ok=True)
    p = subprocess.Popen(prefix + [SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
                         stdout=subprocess.DEVNULL, stderr=open(d / "sshd.log", "w"), start_new_session=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert p.poll() is None, (d / "sshd.log").read_text()
        time.sleep(0.1)
    opts = f"-i {d}/id -o UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -o LogLevel=ERROR"
    old = os.environ.get("ZFSPERF_SSH_OPTS")
    os.environ["ZFSPERF_SSH_OPTS"] = opts
    try:
        yield f"ssh://root@127.0.0.1:{port}", p
    finally:
        if old is None:
            os.environ.pop("ZFSPERF_SSH_OPTS", None)
        else:
            os.environ["ZFSPERF_SSH_OPTS"] = old
        proc.stop_pid(p.pid, proc=p, group=True)
        assert p.poll() is not None
        with contextlib.suppress(ProcessLookupError):      # sessions left when the listener went first
            os.killpg(p.pid, signal.SIGKILL)
