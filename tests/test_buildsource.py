"""`run --build NAME=SRC` (issue 72, 1): a side given as OpenZFS source, a tree or a commit,
compiled for the running kernel of the machine zfsperf runs on. Here without compiling: a real git
repository and a build cache holding that commit's build for a kernel, so the side is found cached
(nothing exported, nothing compiled), and a kernel without headers is refused before anything is
made. The compile itself is guest/source.py's (tests/test_guest_builds.py builds with it)."""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers import RECV, meta_repo
from zfsperf import buildsource
from zfsperf.buildref import BuildRef
from zfsperf.errors import InputError


def test_a_commit_built_for_the_running_kernel_is_found_in_the_cache(tmp_path, monkeypatch):
    src = tmp_path / "zfs"
    full = meta_repo(src)
    cache = tmp_path / "cache"
    monkeypatch.setenv("ZFSPERF_GUEST_CACHE", str(cache))
    monkeypatch.setattr(buildsource, "running_kernel", lambda: "6.1.0-57-amd64")
    ref = buildsource.source_ref("base", f"{src}@HEAD", "auto")
    assert ref.modules is None and ref.info["rev"] == full and ref.info["version"] == "2.4.99-1"
    assert not cache.exists()                               # validated, nothing written
    built = cache / f"src-{full[:12]}-6.1.0-57-amd64"
    (built / "modules").mkdir(parents=True)
    for m in ("spl.ko", "zfs.ko"):
        (built / "modules" / m).write_bytes(b"\x7fELF")
    (built / "build.json").write_text(json.dumps({
        "format": 1, "kind": "source", "label": f"OpenZFS 2.4.99-1 @ {full[:12]}", "kernel": "6.1.0-57-amd64",
        "dir": str(built), "path": "/elsewhere", "version": "2.4.99-1", "series": "2.4", "commit": full,
        "dirty": False, "content_hash": None, "rebuilt": False}))
    said: list[str] = []
    builds = {"base": ref, "pr": BuildRef("pr", "the modules in /m", "/m")}
    buildsource.compile_sources(builds, said.append)
    assert ref.modules == str(built / "modules") and builds["pr"].modules == "/m"
    assert ref.info["commit"] == full and ref.info["kernel"] == "6.1.0-57-amd64" and ref.info["path"] == str(src)
    assert any("is cached in" in s for s in said), said
    assert not (cache / "stage").exists() and not (cache / "trees").exists()   # nothing exported or compiled


def test_rebuild_compiles_the_second_side_of_one_source_into_a_cache_entry_of_its_own(tmp_path, monkeypatch):
    """run --rebuild (the A/A′ of the rebuild floor on a kernel-OpenZFS machine): two sides of one
    commit, the second looked up (and compiled) as a second build, never the first's cache entry;
    refused before anything is written (exit 2, --rebuild named) for two different sources, a
    directory of modules, or no --build at all."""
    from zfsperf import cli
    src = tmp_path / "zfs"
    full = meta_repo(src)
    cache = tmp_path / "cache"
    monkeypatch.setenv("ZFSPERF_GUEST_CACHE", str(cache))
    monkeypatch.setattr(buildsource, "running_kernel", lambda: "6.1.0-57-amd64")
    mods = tmp_path / "m"
    mods.mkdir()
    for m in ("spl.ko", "zfs.ko"):
        (mods / m).write_bytes(b"\x7fELF")
    for bad in ([f"a={src}@HEAD", f"b={mods}"], [f"a={src}@HEAD", f"b={src}"], []):
        with pytest.raises(InputError) as e:
            cli._builds(bad, "auto", rebuild=True)
        assert e.value.field == "--rebuild", (bad, e.value)
    assert not cache.exists()
    builds = cli._builds([f"a={src}@HEAD", f"b={src}@{full[:8]}"], "auto", rebuild=True)
    assert "rebuilt" not in builds["a"].info and builds["b"].info["rebuilt"] is True
    for again in ("", "-rebuilt"):
        built = cache / f"src-{full[:12]}{again}-6.1.0-57-amd64"
        (built / "modules").mkdir(parents=True)
        for m in ("spl.ko", "zfs.ko"):
            (built / "modules" / m).write_bytes(b"\x7fELF" + again.encode())
        (built / "build.json").write_text(json.dumps({
            "format": 1, "kind": "source", "label": f"OpenZFS 2.4.99-1 @ {full[:12]}", "kernel": "6.1.0-57-amd64",
            "dir": str(built), "path": str(src), "version": "2.4.99-1", "series": "2.4", "commit": full,
            "dirty": False, "content_hash": None, "rebuilt": bool(again)}))
    buildsource.compile_sources(builds, lambda _m: None)
    assert builds["a"].modules == str(cache / f"src-{full[:12]}-6.1.0-57-amd64" / "modules")
    assert builds["b"].modules == str(cache / f"src-{full[:12]}-rebuilt-6.1.0-57-amd64" / "modules")
    assert builds["b"].info["rebuilt"] is True and "second time" in builds["b"].label


def test_source_for_a_kernel_without_headers_here_is_refused(tmp_path, monkeypatch):
    src = tmp_path / "zfs"
    meta_repo(src)
    monkeypatch.setattr(buildsource, "running_kernel", lambda: "0.0.0-no-such-kernel")
    builds = {"a": buildsource.source_ref("a", str(src), "auto"), "b": BuildRef("b", "m", "/m")}
    with pytest.raises(InputError) as e:
        buildsource.check_headers(builds)
    assert e.value.field == "--build" and "/lib/modules/0.0.0-no-such-kernel/build" in str(e.value)
    buildsource.check_headers({"b": builds["b"]})        # directories of modules need none


def _tree(root, *files: str):
    for f in files:
        (root / f).parent.mkdir(parents=True, exist_ok=True)
        (root / f).write_text("#!/bin/sh\n")
        (root / f).chmod(0o755)
    return root


def test_a_builds_own_userland_is_found_in_an_install_tree_and_bad_ones_are_refused(tmp_path):
    """`run --userland NAME=DIR` (issue 72, 1): a `dpkg -x` tree (sbin, lib/x86_64-linux-gnu) and a
    `make install DESTDIR=` one (usr/local/sbin, usr/local/lib) are taken; a build not given, a
    userland given twice, a relative or missing DIR, one without zpool and zfs or without libzfs,
    and an ssh target are refused, exit 2 and --userland named, before anything is touched."""
    from zfsperf import cli
    deb = _tree(tmp_path / "deb", "sbin/zpool", "sbin/zfs", "sbin/zdb", "lib/x86_64-linux-gnu/libzfs.so.4",
                "lib/x86_64-linux-gnu/libnvpair.so.3", "usr/share/doc/x")
    local = _tree(tmp_path / "inst", "usr/local/sbin/zpool", "usr/local/sbin/zfs", "usr/local/lib/libzfs.so.6.0.0",
                  "usr/local/lib/libzpool.so.6")
    mods = _tree(tmp_path / "m", "spl.ko", "zfs.ko")

    def builds():
        return cli._builds([f"old={mods}", f"new={mods}"], "auto")
    b = builds()
    cli._userlands([f"old={deb}", f"new={local}/"], b, "auto")
    assert b["old"].userland is not None and b["old"].userland.bin == f"{deb}/sbin"
    assert b["old"].userland.libs == (f"{deb}/lib/x86_64-linux-gnu",)
    assert b["new"].userland is not None and b["new"].userland.root == str(local)
    assert b["new"].userland.bin == f"{local}/usr/local/sbin" and b["new"].userland.libs == (f"{local}/usr/local/lib",)
    assert b["old"].userland.argv(["zpool", "list", "-H"]) == [
        "env", f"LD_LIBRARY_PATH={deb}/lib/x86_64-linux-gnu", f"{deb}/sbin/zpool", "list", "-H"]
    assert b["old"].userland.argv(["fio", "--version"]) == ["fio", "--version"]
    no_lib = _tree(tmp_path / "nolib", "sbin/zpool", "sbin/zfs")
    no_zfs = _tree(tmp_path / "nozfs", "sbin/zpool", "lib/libzfs.so.4")
    for items, target, said in (
            ([f"other={deb}"], "auto", "no build named 'other'"),
            ([f"old={deb}", f"old={local}"], "auto", "given twice"),
            (["old=rel/dir"], "auto", "absolute path"),
            ([f"old={tmp_path}/none"], "auto", "is not a directory"),
            ([f"old={no_lib}"], "auto", "no libzfs.so"),
            ([f"old={no_zfs}"], "auto", "holds no zpool and zfs"),
            (["old"], "auto", "takes NAME=DIR"),
            ([f"old={deb}"], "ssh://root@host", "a directory on this machine")):
        with pytest.raises(InputError) as e:
            cli._userlands(items, builds(), target)
        assert e.value.field == "--userland" and e.value.exit_status == 2 and said in str(e.value), (items, e.value)
    with pytest.raises(InputError) as e:
        cli._userlands([f"old={deb}"], {}, "auto")
    assert "no --build given" in str(e.value)


def test_a_module_of_another_series_than_the_userland_is_said():
    from zfsperf.tunables.modswitch import series, userland_note
    assert series("zfs-2.3.2-2~bpo12+2") == "2.3" and series("2.4.99-1") == "2.4" and series("unknown") is None
    assert userland_note("2.3.2-2~bpo12+2", "zfs-2.3.2-2~bpo12+2") is None
    assert userland_note("2.3.4-1", "zfs-2.3.2-1") is None                    # one series
    assert userland_note("", "zfs-2.3.2-1") is None                          # not known: nothing said
    note = userland_note("2.4.99-1", "zfs-2.3.2-2~bpo12+2")
    assert note and "series 2.4 against 2.3" in note and "fails" in note and "--userland NAME=DIR" in note


# ------------------------------------------------------------------ zfsperf bisect on this machine
def test_bisect_on_a_machine_without_kernel_openzfs_is_refused_before_anything(tmp_path, capsys, monkeypatch):
    """`zfsperf bisect` swaps this machine's zfs module: here (zfs-fuse only) exit 2 naming where it
    can run, nothing written; a missing option is named first."""
    from zfsperf import cli
    src = tmp_path / "zfs"
    meta_repo(src)
    monkeypatch.chdir(tmp_path)
    argv = ["bisect", "--zfs-src", str(src), "--good", "HEAD", "--bad", "HEAD", "-r", "receive", "--case", "recv",
            "--figure", "throughput"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "no kernel OpenZFS module to swap" in err and "zfsperf guest bisect" in err, err
    assert cli.main(argv[:3] + argv[5:]) == 2
    assert "bisect needs --good" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["zfs"]         # no zfsperf-bisect, no cache


def _local(monkeypatch, tmp_path, kernel="6.1.0-57-amd64"):
    from zfsperf.targets import openzfs_linux
    monkeypatch.setattr(openzfs_linux, "present", lambda root="/": True)
    monkeypatch.setattr(buildsource, "running_kernel", lambda: kernel)
    monkeypatch.setenv("ZFSPERF_GUEST_CACHE", str(tmp_path / "cache"))


def test_bisect_here_needs_the_running_kernels_headers(tmp_path, monkeypatch):
    _local(monkeypatch, tmp_path, "0.0.0-no-such-kernel")
    with pytest.raises(InputError) as e:
        buildsource.LocalBench()
    assert "/lib/modules/0.0.0-no-such-kernel/build" in str(e.value)


def test_bisect_here_finds_a_cached_commit_and_is_never_resumed_as_a_guest_bisect(tmp_path, monkeypatch):
    """A step's side is the commit compiled for this machine's kernel (found cached: nothing
    compiled); bisect.json keeps where it measured, so a guest bisect's state is not taken for it."""
    from zfsperf import buildab
    if buildsource.kernel_headers("6.1.0-57-amd64") is None:
        pytest.skip("the guest kernel's headers are fetched by `zfsperf guest build`")
    _local(monkeypatch, tmp_path)
    src = tmp_path / "zfs"
    full = meta_repo(src)
    built = tmp_path / "cache" / f"src-{full[:12]}-6.1.0-57-amd64"
    (built / "modules").mkdir(parents=True)
    for m in ("spl.ko", "zfs.ko"):
        (built / "modules" / m).write_bytes(b"\x7fELF")
    (built / "build.json").write_text(json.dumps({
        "format": 1, "kind": "source", "label": f"OpenZFS 2.4.99-1 @ {full[:12]}", "kernel": "6.1.0-57-amd64",
        "dir": str(built), "path": str(src), "version": "2.4.99-1", "series": "2.4", "commit": full,
        "dirty": False, "content_hash": None, "rebuilt": False}))
    bench = buildsource.LocalBench(say=lambda s: None)
    side = bench.side(src, full, "good", "--good")
    assert side.ref.modules == str(built / "modules") and side.series == "2.4"
    assert "compiled for this machine's kernel" in side.ref.label and side.ref.info["commit"] == full
    assert bench.good_series(src, "HEAD") == "2.4"
    (src / "README").write_text("a second commit\n")
    for args in (["add", "README"], ["commit", "-qm", "readme"]):
        subprocess.run(["git", "-C", str(src), "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args], check=True)
    out = tmp_path / "bis"
    out.mkdir()
    guest_state = {"settings": {"repo": str(src), "good": full, "bad": "HEAD", "runfile": "x", "case": "recv",
                                "figure": "throughput", "blocks": 6}, "steps": {}}
    (out / "bisect.json").write_text(json.dumps(guest_state))
    rf = tmp_path / "rf.toml"
    rf.write_text(RECV)
    with pytest.raises(InputError) as e:
        buildab.bisect(bench, str(src), full, "HEAD", str(rf), "recv", "throughput", outdir=str(out))
    assert "other settings" in str(e.value) and e.value.field == "-o", e.value
    assert json.loads((out / "bisect.json").read_text()) == guest_state            # left as it was
