"""One real zfs-fuse daemon per test session, in zfsperf's own private mount namespace.

The CLI runs the tests start find it through ZFSPERF_LAB, corpora go to a session cache
(ZFSPERF_CACHE), and the tunables journal to a session state dir (ZFSPERF_STATE).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from helpers import DEFAULT_BATCH

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


@pytest.fixture
def params(tmp_path):
    """A directory laid out like /sys/module/zfs/parameters (zfs-fuse has no tunables at run time)."""
    d = tmp_path / "params"
    d.mkdir()
    (d / "zfs_recv_write_batch_size").write_text(DEFAULT_BATCH + "\n")
    (d / "zfs_vdev_async_write_max_active").write_text("10\n")
    return d
