"""Input that can only fail later is refused up front: exit 2, the file, line and field named, and
nothing on disk touched (no results directory).

The defects (each passed validation and failed, or worse passed, later): `vdev_size = "1P"`,
`compression = "superzip9000"`, a misspelled tunable (every case SKIP, exit 0: CI green),
`threads = [1, 1]` (two cases with one id), a corpus far larger than the pool, `--arc-max -5`.
No ZFS is reached: fast."""

from __future__ import annotations

import subprocess

import pytest

from helpers import zfsperf


BASE = '''\
[defaults]
iterations = 1
[defaults.pool]
layout = "stripe"
vdevs = 1
vdev_size = "{vdev}"
[defaults.dataset]
compression = "{comp}"

[[test]]
name = "recv"
workload = "receive"
corpus = {{ kind = "random", size = "{corpus}" }}
threads = {threads}
{extra}
'''


def _run(tmp_path, *flags, vdev="256M", comp="off", corpus="16M", threads="[1, 2]", extra=""):
    rf = tmp_path / "rf.toml"
    rf.write_text(BASE.format(vdev=vdev, comp=comp, corpus=corpus, threads=threads, extra=extra))
    res = zfsperf("run", "-r", str(rf), "-o", str(tmp_path / "res"), "--no-history", *flags, timeout=120)
    return rf, res


@pytest.mark.parametrize("kw, line, words", [
    ({"vdev": "1P"}, 10, "are larger than the filesystem under"),
    ({"comp": "superzip9000"}, 8, "dataset.compression: compression takes on, off, lzjb"),
    ({"extra": "tunables = { zfs_recv_write_bach_size = 1048576 }"}, 15,
     "has a tunable zfs_recv_write_bach_size; did you mean zfs_recv_write_batch_size?"),
    ({"threads": "[1, 1]"}, 10, 'the sweep gives the case "recv threads=1" 2 times'),
    ({"corpus": "900M"}, 10, "its data (900M) can never fit its pool"),
    ({"extra": 'dataset = { recordsize = "96K" }'}, 15, "recordsize takes a power of 2 from 512 to 16M"),
])
def test_refused_before_anything_is_touched(tmp_path, kw, line, words):
    rf, res = _run(tmp_path, **kw)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{rf}:{line}:" in res.stderr and words in res.stderr, res.stderr
    assert not (tmp_path / "res").exists()


def test_arc_max_out_of_range(tmp_path):
    rf, res = _run(tmp_path, "--arc-max", "-5")
    assert res.returncode == 2 and "--arc-max takes zfs-fuse's range, 16 to 16384 MB, not -5" in res.stderr
    assert not (tmp_path / "res").exists()


def test_a_fifo_runfile_is_refused_not_read(tmp_path):
    """The defect: `zfsperf run -r FIFO` blocked reading a named pipe nobody wrote to."""
    import os
    fifo = tmp_path / "rf.toml"
    os.mkfifo(fifo)
    res = zfsperf("run", "-r", str(fifo), "-o", str(tmp_path / "res"), timeout=30)
    assert res.returncode == 2 and f"{fifo}: a runfile must be a regular file" in res.stderr


def test_dry_run_checks_everything_and_touches_nothing(tmp_path):
    rf, res = _run(tmp_path, "--dry-run", comp="superzip9000")
    assert res.returncode == 2 and "compression takes" in res.stderr
    rf, res = _run(tmp_path, "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "dry run: " in res.stdout + res.stderr and "2 case(s) of 1 test(s) checked" in res.stdout + res.stderr
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("argv,said", [
    (["--build", "a=/nonexistent-build", "--build", "b=/nonexistent-build"],
     "--build: build a: /nonexistent-build is not a directory (of built modules, or of OpenZFS source)"),
    (["--build", "a={empty}", "--build", "b={dir}"],
     "--build: build a: {empty} has neither spl.ko and zfs.ko (a directory of built modules) nor a META file"),
    (["--build", "a={repo}@no-such-rev", "--build", "b={dir}"], "--build: 'no-such-rev' is not a commit of {repo}"),
    (["--build", "a={repo}@HEAD", "--build", "b={dir}", "--target", "guest"],
     "--build: build a: {repo}@HEAD is source: `zfsperf guest ab` builds source for the guest"),
    (["--build", "a={repo}@HEAD", "--build", "b={dir}", "--target", "zfs-fuse"],
     "--build: zfs-fuse has no kernel module to swap"),
    (["--build", "a=relative/dir", "--build", "b=/x"], "--build: build a: DIR must be an absolute path"),
    (["--build", "a b=/x", "--build", "b=/x"], "--build: takes NAME=DIR"),
    (["--build", "{dir}"], "--build: two builds or more to compare"),
    (["--build", "a={dir}", "--build", "b={dir}", "--target", "zfs-fuse"],
     "--build: zfs-fuse has no kernel module to swap"),
])
def test_a_build_ab_of_module_directories_is_refused_up_front(argv, said, tmp_path):
    """`zfsperf run --build NAME=DIR` (issue 72, 1): an A/B of builds on kernel OpenZFS from
    directories of their modules, or from OpenZFS source (a tree, or a commit DIR@REV). What cannot
    run is refused before anything is made: a directory neither of modules nor of source, a commit
    the repository has not, a relative one, a malformed NAME, one build alone, source for the guest
    (guest ab's), zfs-fuse (no module to swap); no results directory, nothing built."""
    d = tmp_path / "build"
    d.mkdir()
    for m in ("spl.ko", "zfs.ko"):
        (d / m).write_bytes(b"")
    (tmp_path / "empty").mkdir()
    repo = tmp_path / "zfs"
    repo.mkdir()
    (repo / "META").write_text("Meta: 1\nName: zfs\nVersion: 2.4.99\nRelease: 1\n")
    for args in (["init", "-q"], ["add", "META"], ["commit", "-qm", "import"]):
        subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args], check=True)
    subs = {"{dir}": str(d), "{empty}": str(tmp_path / "empty"), "{repo}": str(repo)}
    argv = [f"a={d}" if a == "{dir}" else a for a in argv]
    for k, v in subs.items():
        argv = [a.replace(k, v) for a in argv]
        said = said.replace(k, v)
    res = zfsperf("run", "-r", "quick", *argv, "-o", str(tmp_path / "res"), "--no-history",
                  env={"ZFSPERF_GUEST_CACHE": str(tmp_path / "cache")})
    assert res.returncode == 2 and said in res.stderr, res.stderr
    assert not (tmp_path / "res").exists() and not (tmp_path / "cache").exists()
