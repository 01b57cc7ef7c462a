"""A test never reaches outside its own pool: the property table, the places zfsperf writes, and
checks that write nothing. Validation only here (no ZFS); the real zfs-fuse pool's cachefile and
mountpoint are checked below it, and the proof on real OpenZFS is in test_openzfs_guest.py."""

import struct
from pathlib import Path

import pytest

from helpers import zfsperf
from zfsperf import props, safepaths
from zfsperf.errors import InputError
from zfsperf.runfile import loads

FIXTURES = Path(__file__).parent / "fixtures"


def captured(kind: str) -> set[str]:
    """Every property name the real `zfs get all` (kind "zfs") or `zpool get all` printed, over
    OpenZFS 2.1.11, 2.3.2 and zfs-fuse."""
    names = set()
    for d in ("openzfs-2.1.11", "openzfs-2.3.2"):
        f = FIXTURES / d / ("zfs_get_-Hp_all_tank_fs.txt" if kind == "zfs" else "zpool_get_-Hp_all_tank.txt")
        names |= {line.split("\t")[1] for line in f.read_text().splitlines() if line.strip()}
    if kind == "zfs":
        f = FIXTURES / "zfs-fuse" / "zfs_get_-H_all_pool.txt"
        names |= {line.split("\t")[1] for line in f.read_text().splitlines() if line.strip()}
    else:
        f = FIXTURES / "zfs-fuse" / "zpool_get_all_pool.txt"
        names |= {line.split()[1] for line in f.read_text().splitlines()[1:] if line.strip()}
    return names


def test_every_captured_property_is_placed_in_the_table():
    zfs, zpool = captured("zfs"), captured("zpool")
    assert len(zfs) > 60 and len(zpool) > 60 and "mountpoint" in zfs and "cachefile" in zpool
    assert [n for n in sorted(zfs) if props.rule(n, pool=False) is None] == []
    assert [n for n in sorted(zpool) if props.rule(n, pool=True) is None] == []
    # a native name no table places is refused, as a newer ZFS's property must be placed first
    assert "zfsperf places" in props.problem("frobnicate", "on")


HOSTILE = ["/etc", "/", "../../etc", "..", "", "x" * 5000, "on\noff", "file:///etc/shadow", "https://example.invalid/k",
           "/etc/zfs/zpool.cache", "rw=@0.0.0.0/0", "on", "off", "none", "legacy", "1", "128K"]
PATHLIKE = {"/etc", "/", "../../etc", "..", "file:///etc/shadow", "https://example.invalid/k", "/etc/zfs/zpool.cache"}
# the properties whose value is free text inside the pool (a path there is only text)
FREE_TEXT = {"comment"}


@pytest.mark.parametrize("pool", [False, True], ids=["dataset", "pool"])
def test_fuzz_every_property_with_hostile_values_is_refused_or_harmless(pool):
    names = captured("zpool" if pool else "zfs") | {"my:tag"}
    for name in sorted(names):
        r = props.rule(name, pool=pool)
        for value in HOSTILE:
            why = props.problem(name, value, pool=pool)
            if why is None:
                # accepted: only where the table calls the property harmless and the value fits it
                assert r is not None and r.place in (props.ALLOWED, props.CONDITIONAL), (name, value)
                assert value not in PATHLIKE or name in FREE_TEXT or ":" in name, (name, value)
                assert "\n" not in value and len(value) <= props.MAX_VALUE
            else:
                assert name in why, (name, value, why)


RUNFILE = """\
[defaults.pool]
vdevs = 1
vdev_size = "256M"
{pool}
[[test]]
name = "t"
workload = "receive"
corpus = {{ kind = "small-records", size = "8M" }}
threads = 1
dataset = {{ {dataset} }}
"""

REFUSED = {   # (pool line, dataset table) -> the field the error names, and what it says
    "mountpoint over /etc": ("", 'mountpoint = "/etc"', "test[1].dataset.mountpoint", "mountpoint takes none, legacy"),
    "import cache": ('properties = { cachefile = "/etc/zfs/zpool.cache" }', 'atime = "off"',
                     "defaults.pool.properties.cachefile", "cachefile takes none"),
    "altroot /": ('properties = { altroot = "/" }', 'atime = "off"', "defaults.pool.properties.altroot",
                  "altroot is refused"),
    "sharenfs": ("", 'sharenfs = "rw"', "test[1].dataset.sharenfs", "share the test dataset"),
    "sharesmb": ("", 'sharesmb = "on"', "test[1].dataset.sharesmb", "share the test dataset"),
    "zoned": ("", 'zoned = "on"', "test[1].dataset.zoned", "container or jail"),
    "keylocation": ("", 'keylocation = "file:///etc/shadow"', "test[1].dataset.keylocation", "key"),
    "failmode panic": ('properties = { failmode = "panic" }', 'atime = "off"', "defaults.pool.properties.failmode",
                       "panics the host"),
    "bootfs": ('properties = { bootfs = "rpool/ROOT" }', 'atime = "off"', "defaults.pool.properties.bootfs",
               "boot"),
    "ownership mark": ("", '"zfsperf:owner" = "someone"', "test[1].dataset.zfsperf:owner", "ownership mark"),
    "read-only": ("", 'used = "1G"', "test[1].dataset.used", "read-only"),
    "mountpoint in a sweep": ("", 'mountpoint = ["none", "/usr"]', "test[1].dataset.mountpoint", "/usr"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_host_touching_settings_are_refused_with_file_line_field(name):
    pool_line, dataset, field, said = REFUSED[name]
    text = RUNFILE.format(pool=pool_line, dataset=dataset)
    with pytest.raises(InputError) as e:
        loads(text, "rf.toml").cases()
    line = next(i for i, x in enumerate(text.splitlines(), 1)
                if (pool_line and pool_line in x) or (not pool_line and x.startswith("dataset")))
    assert (e.value.file, e.value.line, e.value.field) == ("rf.toml", line, field), str(e.value)
    assert said in e.value.message, e.value.message


def test_the_worst_accepted_settings_load():
    text = RUNFILE.format(pool='properties = { cachefile = "none", failmode = "continue", comment = "/etc" }',
                          dataset='mountpoint = "none", canmount = "noauto", sharenfs = "off", zoned = "off", '
                                  '"my:note" = "/etc/passwd", compression = ["off", "gzip"]')
    cases = loads(text, "rf.toml").cases()
    assert len(cases) == 2 and cases[0].test.pool.properties["cachefile"] == "none"


def test_system_places_are_refused_and_symlinks_followed(tmp_path):
    for p in ("/proc/x", "/sys", "/dev/shm/x", "/boot/x", "/etc", "/usr/local/x", "/", "/etc/../etc/x"):
        assert safepaths.system_place(p) is not None, p
    for p in ("/tmp/x", "/var/tmp/zfsperf", "/etcetera", "/usrx", str(tmp_path)):
        assert safepaths.system_place(p) is None, p
    link = tmp_path / "sneaky"
    link.symlink_to("/etc")
    assert safepaths.system_place(link / "zfsperf") == "/etc"


def test_a_strangers_directory_is_never_used(tmp_path):
    mine = tmp_path / "results"
    (mine / "20261202T031500").mkdir(parents=True)
    (mine / "current").symlink_to("20261202T031500")
    safepaths.check_own_dir(mine, "--outdir", "the output directory", safepaths.results_entry)
    theirs = tmp_path / "home"
    theirs.mkdir()
    (theirs / "thesis.tex").write_text("x")
    with pytest.raises(InputError, match="already holds 'thesis.tex'"):
        safepaths.check_own_dir(theirs, "--outdir", "the output directory", safepaths.results_entry)
    safepaths.check_own_dir(tmp_path / "new", "--outdir", "the output directory", safepaths.results_entry)
    assert not (tmp_path / "new").exists()                      # checked, not made


def stream_header(tmp_path: Path) -> Path:
    """A file whose first record is a send stream's BEGIN with the backup magic (and nothing else)."""
    hdr = struct.pack("<II", 0, 0) + struct.pack("<Q", 0x2F5BACBAC) + bytes(312 - 16)
    p = tmp_path / "s.zfs"
    p.write_bytes(hdr)
    return p


def run_dry(tmp_path, runfile_text: str, *extra: str):
    rf = tmp_path / "rf.toml"
    rf.write_text(runfile_text)
    env = {"ZFSPERF_STATE": str(tmp_path / "state"), "ZFSPERF_LAB": str(tmp_path / "no-lab"),
           "ZFSPERF_CACHE": str(tmp_path / "cache")}
    return zfsperf("run", "-r", str(rf), "--dry-run", *extra, env=env, timeout=60), rf


FILE_RUNFILE = '[[test]]\nname = "r"\nworkload = "receive"\ncorpus = {{ file = "{path}" }}\n'


def test_a_corpus_file_must_be_a_send_stream_outside_the_system(tmp_path):
    res, rf = run_dry(tmp_path, FILE_RUNFILE.format(path="/etc/shadow"), "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and f"{rf}:4: test[1].corpus: corpus.file: sendfile /etc/shadow is under /etc" \
        in res.stderr, res.stderr
    text = tmp_path / "notes.txt"
    text.write_text("not a stream at all, but long enough " * 20)
    res, rf = run_dry(tmp_path, FILE_RUNFILE.format(path=text), "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "not a ZFS send stream (no BEGIN record with the backup magic)" in res.stderr
    res, rf = run_dry(tmp_path, FILE_RUNFILE.format(path=stream_header(tmp_path)), "-o", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr                     # its header is a stream's: accepted up front


def test_output_and_vdev_directories_in_system_places_are_exit_2(tmp_path):
    text = RUNFILE.format(pool="", dataset='atime = "off"')
    for flag, path, said in (("-o", "/proc/x", "under /proc"), ("-d", "/", "the root directory"),
                             ("-o", str(tmp_path), "already holds 'rf.toml'")):
        res, _rf = run_dry(tmp_path, text, flag, path)
        assert res.returncode == 2 and said in res.stderr, (flag, path, res.stderr)
    res, _rf = run_dry(tmp_path, text, "-o", str(tmp_path / "o"), "--store", "/etc/zfsperf.sqlite")
    assert res.returncode == 2 and "the history store /etc/zfsperf.sqlite is under /etc" in res.stderr, res.stderr


def test_a_dry_run_writes_nothing_not_even_the_store(tmp_path):
    res, _rf = run_dry(tmp_path, RUNFILE.format(pool="", dataset='atime = "off"'), "-o", str(tmp_path / "o"),
                       "-d", str(tmp_path / "v"))
    assert res.returncode == 0, res.stderr
    assert "the store" in res.stdout and "nothing was started or written" in res.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rf.toml"]       # no store, state, output or vdevs


def test_a_dry_run_checks_an_existing_store_and_leaves_it_as_it_was(tmp_path):
    from zfsperf.history.store import Store
    db = tmp_path / "h.sqlite"
    with Store.open(str(db)):
        pass
    before = db.read_bytes()
    res, _rf = run_dry(tmp_path, RUNFILE.format(pool="", dataset='atime = "off"'), "-o", str(tmp_path / "o"),
                       "--store", str(db))
    assert res.returncode == 0, res.stderr
    assert db.read_bytes() == before and not (tmp_path / "o").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h.sqlite", "rf.toml"]


def test_the_table_is_the_one_the_pool_commands_check():
    from zfsperf.pool import check_property
    assert check_property("compression", "gzip") == "compression=gzip"
    with pytest.raises(InputError, match="mountpoint takes none"):
        check_property("mountpoint", "/etc")
    with pytest.raises(InputError, match="altroot is refused"):
        check_property("altroot", "/", pool=True)



def test_a_zfs_fuse_pool_is_kept_out_of_the_import_cache_and_mounted_in_its_run(target, tmp_path):
    """On the real zfs-fuse: cachefile=none and the mountpoint under the run's own directory; a
    `zfs send -p` stream carries its source's mountpoint (/etc here), and a target whose receive
    cannot keep it off the host (an ssh zfs-fuse: no -u, no -x) refuses that stream up front."""
    from zfsperf.pool import PoolManager, PoolSpec
    from zfsperf.targets.ssh import SshZfsFuse
    from zfsperf.units import MIB
    from zfsperf.workloads import WORKLOADS
    pools = PoolManager(target, tmp_path / "v", run_id="safety")
    pool = pools.create(PoolSpec(vdevs=1, vdev_size=128 * MIB), fs_properties={"atime": "off"})
    try:
        # the lab's own cache file (its private /var/lib/zfs, from which a restarted daemon imports its
        # pools), never the host's; zfs-fuse's zpool get has no -H: NAME PROPERTY VALUE SOURCE
        assert target.pool_cachefile(str(tmp_path / "v")) is None
        assert target.run(["zpool", "get", "cachefile", pool.name]).stdout.splitlines()[1].split()[2] == "-"
        host_cache = Path("/var/lib/zfs/zpool.cache")
        assert not host_cache.exists() or pool.name.encode() not in host_cache.read_bytes()
        assert target.txg(pool.name) is not None                     # zdb finds the pool
        mnt = target.run(["zfs", "get", "-H", "-o", "value", "mountpoint", pool.name]).stdout.strip()
        assert mnt == str(tmp_path / "v" / "mnt" / pool.name)
        src = f"{pool.name}/src"
        assert target.run(["zfs", "create", "-o", "canmount=off", "-o", "mountpoint=/etc", src]).ok
        assert target.run(["zfs", "snapshot", f"{src}@s"]).ok
        stream = tmp_path / "p.zfs"
        assert target.run(["zfs", "send", "-p", f"{src}@s"], stdout_file=str(stream)).ok
    finally:
        pools.destroy(pool)
        pools.cleanup_files()
    ssh_fuse = SshZfsFuse.__new__(SshZfsFuse)           # no host behind it: only its declarations are read
    assert ssh_fuse.receive_guard() is None and target.receive_guard() == []
    # a system zfs-fuse's default cache file is the host's: there, one of the run's own
    assert ssh_fuse.pool_cachefile("/var/tmp/zfsperf/run-1") == "/var/tmp/zfsperf/run-1/zpool.cache"
    with pytest.raises(InputError, match="carries its source's properties"):
        WORKLOADS["receive"].prepare({"corpus": {"file": str(stream)}}, ssh_fuse, tmp_path, None)
    assert WORKLOADS["receive"].prepare({"corpus": {"file": str(stream)}}, target, tmp_path, None)


def test_a_tests_own_pool_properties_are_named_at_its_line():
    text = RUNFILE.format(pool="", dataset='atime = "off"') + 'pool = { properties = { altroot = "/" } }\n'
    with pytest.raises(InputError) as e:
        loads(text, "rf.toml").cases()
    assert (e.value.line, e.value.field) == (len(text.splitlines()), "test[1].pool.properties.altroot"), str(e.value)
