"""One real zfs-fuse daemon per test session, in zfsperf's own private mount namespace.

The CLI runs the tests start find it through ZFSPERF_LAB, corpora go to a session cache
(ZFSPERF_CACHE), and the tunables journal to a session state dir (ZFSPERF_STATE).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"     # captured real OpenZFS output (README there)
VERSIONS = ("openzfs-2.1.11", "openzfs-2.3.2")


def fixture(version: str, name: str) -> str:
    return (FIXTURES / version / name).read_text()


@pytest.fixture(scope="session")
def session_env(tmp_path_factory):
    base = tmp_path_factory.mktemp("zfsperf-session")
    env = {
        "ZFSPERF_LAB": f"/run/zfsperf/test-{os.getpid()}",
        "ZFSPERF_CACHE": str(base / "cache"),
        "ZFSPERF_STATE": str(base / "state"),
    }
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    yield base
    for k, v in old.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def lab(session_env):
    from zfsperf.zfsfuse.daemon import Lab, lab_dir_from_env
    lab = Lab.start(lab_dir_from_env(), owner="lab")
    yield lab
    lab.stop()


@pytest.fixture(scope="session")
def target(lab):
    from zfsperf.zfsfuse.target import ZfsFuseTarget
    return ZfsFuseTarget(lab, owns_lab=False)


@pytest.fixture(scope="session")
def vdev_root(session_env):
    d = Path("/var/tmp") / f"zfsperf-test-{os.getpid()}"
    d.mkdir(parents=True, exist_ok=True)
    yield d
    subprocess.run(["rm", "-rf", str(d)], check=False)


@pytest.fixture(scope="session")
def small_corpus(target, vdev_root):
    from zfsperf.workloads import corpus
    return corpus.make(target, "random", "24M", seed=7, vdev_dir=vdev_root / "corpus")


DEFAULT_BATCH = "1048576"


@pytest.fixture
def params(tmp_path):
    """A directory laid out like /sys/module/zfs/parameters (zfs-fuse has no tunables at run time)."""
    d = tmp_path / "params"
    d.mkdir()
    (d / "zfs_recv_write_batch_size").write_text(DEFAULT_BATCH + "\n")
    (d / "zfs_vdev_async_write_max_active").write_text("10\n")
    return d


def zfsperf(*args: str, env: dict | None = None, timeout: float = 600, cwd: str | None = None
            ) -> subprocess.CompletedProcess:
    """Run the real CLI as a user would."""
    return subprocess.run([sys.executable, "-m", "zfsperf.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})}, cwd=cwd)


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of each live child of pid, from /proc (the fault tests' way of finding
    the processes a zfsperf run started)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if int((d / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append((int(d.name), (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    assert found, f"no PostgreSQL {name}: make test installs the postgresql package"
    return found[-1]


@dataclass
class PgCluster:
    """A throwaway PostgreSQL server on a private socket (no TCP listener)."""
    base: Path
    sock: Path
    port: int
    as_pg: list[str]

    def url(self, user: str, db: str, password: str | None = None) -> str:
        cred = user + (f":{password}" if password is not None else "")
        return f"postgresql://{cred}@/{db}?host={self.sock}&port={self.port}"

    def sql(self, statement: str, db: str = "postgres") -> None:
        subprocess.run([*self.as_pg, _pg_bin("psql"), "-h", str(self.sock), "-p", str(self.port), "-U", "postgres",
                        "-d", db, "-v", "ON_ERROR_STOP=1", "-c", statement], check=True, capture_output=True,
                       env={**os.environ, "PGPASSWORD": self.superpass})

    superpass: str = "superpass-not-under-test"

    def stop(self) -> None:
        subprocess.run([*self.as_pg, _pg_bin("pg_ctl"), "-D", str(self.base / "data"), "-m", "fast", "-w", "stop"],
                       capture_output=True)


@contextlib.contextmanager
def pg_cluster(auth: str = "trust") -> Iterator[PgCluster]:
    """initdb + pg_ctl, as the postgres user when root (the server refuses to run as root),
    outside pytest's root-only temporary folders; auth "scram-sha-256" makes every role need its
    password. A database "zfsperf" exists."""
    base = Path(tempfile.mkdtemp(prefix="zfsperf-pg-"))
    data, sock = base / "data", base / "sock"
    sock.mkdir()
    as_pg: list[str] = []
    if os.geteuid() == 0:
        as_pg = ["runuser", "-u", "postgres", "--"]
        for d in (base, sock):
            shutil.chown(d, "postgres", "postgres")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = PgCluster(base, sock, port, as_pg)
    pwfile = base / "pw"
    pwfile.write_text(c.superpass + "\n")
    if as_pg:
        shutil.chown(pwfile, "postgres", "postgres")
    subprocess.run([*as_pg, _pg_bin("initdb"), "-D", str(data), "-A", auth, "-U", "postgres",
                    f"--pwfile={pwfile}"], check=True, capture_output=True)
    subprocess.run([*as_pg, _pg_bin("pg_ctl"), "-D", str(data), "-l", str(base / "log"), "-w", "-o",
                    f"-k {sock} -p {port} -c listen_addresses=''", "start"], check=True, capture_output=True)
    try:
        subprocess.run([*as_pg, _pg_bin("createdb"), "-h", str(sock), "-p", str(port), "-U", "postgres", "zfsperf"],
                       check=True, capture_output=True, env={**os.environ, "PGPASSWORD": c.superpass})
        yield c
    finally:
        c.stop()
        shutil.rmtree(base, ignore_errors=True)
