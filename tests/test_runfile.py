import textwrap

import pytest

from helpers import EXAMPLE, zfsperf
from zfsperf.errors import InputError
from zfsperf.runfile import builtin_names, load, loads



def test_issue_example_loads_and_expands():
    rf = loads(EXAMPLE, "example.toml")
    cases = rf.cases()
    assert [c.id for c in cases] == ["recv-threads threads=1", "recv-threads threads=2", "recv-threads threads=4",
                                     "recv-batch zfs_recv_write_batch_size=128K",
                                     "recv-batch zfs_recv_write_batch_size=1M"]
    assert cases[3].tunables == {"zfs_recv_write_batch_size": "131072"}
    assert cases[0].dataset == {"primarycache": "none"}
    assert rf.tests[0].pool.layout == "mirror" and rf.tests[0].pool.vdev_size == 2 << 30
    assert [c.id for c in rf.cases(tags=["tunables"])] == [c.id for c in cases[3:]]
    assert len(rf.cases(test="recv-threads")) == 3


def test_matrix_is_cross_product():
    rf = loads(EXAMPLE.replace('threads = [1, 2, 4]', 'threads = [1, 2]\ndataset = { compression = ["off", "gzip"] }'))
    ids = [c.id for c in rf.cases(test="recv-threads")]
    assert len(ids) == 4 and "recv-threads threads=2 compression=gzip" in ids


def test_builtins_load():
    names = builtin_names()
    assert {"quick", "receive", "receive-batch"} <= set(names)
    for n in names:
        assert load(n).cases()


BAD = {
    "unknown field": ('threads = [1, 2, 4]', 'threads = [1, 2, 4]\ncolour = "blue"', 17, "colour"),
    "wrong type": ('threads = [1, 2, 4]', 'threads = "four"', 16, "threads"),
    "bad size suffix": ('vdev_size = "2G"', 'vdev_size = "2Q"', 7, "pool.vdev_size"),
    "empty sweep": ('threads = [1, 2, 4]', 'threads = []', 16, "threads"),
    "unknown workload": ('workload = "receive"\ncorpus = { kind = "small-records", size = "256M" }\nthreads = [1',
                         'workload = "dance"\ncorpus = { kind = "small-records", size = "256M" }\nthreads = [1',
                         14, "workload"),
    "duplicate test name": ('name = "recv-batch"', 'name = "recv-threads"', 19, "name"),
    "bad layout": ('layout = "mirror"', 'layout = "raid5"', 5, "pool.layout"),
    "bad iterations": ("iterations = 3", "iterations = 0", 2, "iterations"),
    "bad timeout": ('timeout = "20m"', 'timeout = "soon"', 3, "timeout"),
    "bad corpus kind": ('corpus = { kind = "small-records", size = "256M" }\nthreads = [1',
                        'corpus = { kind = "huge", size = "256M" }\nthreads = [1', 15, "corpus"),
    "bad tunable value": ('["128K", "1M"]', '["128K", "lots"]', 24, "tunables"),
    "not toml": ('threads = 1\n', 'threads = = 1\n', 23, None),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_malformed_runfiles_name_file_line_field(name, tmp_path):
    old, new, line, field = BAD[name]
    assert old in EXAMPLE
    path = tmp_path / "bad.toml"
    path.write_text(EXAMPLE.replace(old, new, 1))
    with pytest.raises(InputError) as e:
        load(str(path)).cases()
    err = e.value
    assert err.file == str(path)
    assert err.line == line, str(err)
    if field:
        assert field in (err.field or ""), str(err)


def test_malformed_runfile_cli_exit_2_touches_nothing(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(EXAMPLE.replace('threads = [1, 2, 4]', 'threads = "four"'))
    out = tmp_path / "results"
    vdevs = tmp_path / "vdevs"
    res = zfsperf("run", "-r", str(path), "-o", str(out), "-d", str(vdevs))
    assert res.returncode == 2
    assert f"{path}:16: test[1].threads: expected an integer" in res.stderr
    assert not out.exists() and not vdevs.exists()


def test_missing_sendfile_is_exit_2_before_anything_starts(tmp_path):
    """A corpus file that is not there is bad input, named with its line, and
    nothing starts (no daemon, no results directory, no vdev files)."""
    path = tmp_path / "rf.toml"
    path.write_text(textwrap.dedent("""\
        [[test]]
        name = "r"
        workload = "receive"
        corpus = { file = "/nonexistent/stream.zfs" }
        """))
    out, vdevs = tmp_path / "results", tmp_path / "vdevs"
    res = zfsperf("run", "-r", str(path), "-o", str(out), "-d", str(vdevs),
                  env={"ZFSPERF_LAB": str(tmp_path / "no-lab")}, timeout=60)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{path}:4: test[1].corpus: corpus.file: sendfile /nonexistent/stream.zfs does not exist" in res.stderr
    assert not out.exists() and not vdevs.exists() and not (tmp_path / "no-lab").exists()
    assert "Starting ZFS target" not in res.stdout


def test_steady_method_and_tolerance_fields(tmp_path):
    """The runfile chooses the detector; a wrong method is exit 2 naming file, line, field."""
    from zfsperf.runfile import load
    ok = tmp_path / "ok.toml"
    ok.write_text('[[test]]\nname = "t"\nworkload = "fio"\nsteady = { method = "snia", tolerance = 0.1 }\n')
    t = load(str(ok)).tests[0]
    assert t.steady.criteria.method == "snia" and t.steady.criteria.tolerance == 0.1
    bad = tmp_path / "bad.toml"
    bad.write_text('[[test]]\nname = "t"\nworkload = "fio"\nsteady = { method = "pelt" }\n')
    res = zfsperf("run", "-r", str(bad), "-o", str(tmp_path / "out"))
    assert res.returncode == 2 and f"{bad}:4" in res.stderr and "method" in res.stderr
    assert not (tmp_path / "out").exists()


def test_the_guides_runfiles_load():
    """Every TOML runfile the user guide shows loads as written (the manual's examples are tests):
    its A/B (`ab = true`) and turns duet included."""
    import re
    from pathlib import Path
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text()
    blocks = [(guide[:m.start()].count("\n") + 1, m.group(1)) for m in re.finditer(r"```toml\n(.*?)```", guide, re.S)]
    assert len(blocks) >= 2
    tests = {t.name: t for line, text in blocks for t in loads(text, f"docs/guide.md:{line}").tests}
    assert tests["recv-batch"].ab and tests["recv-checksum"].turns and tests["recv-checksum"].duet


def test_a_load_scope_tunable_and_a_pool_scope_one_in_turns_are_refused_with_their_line(tmp_path):
    """The scope comes from the captured releases (their zfs.4 and sysfs modes), before a target
    is open: a tunable read only at module load can be set only where the module may be loaded
    again with it (zfsperf's guest), and never in turns; one that applies only to pools created
    after the write cannot take turns on one pool (it can be swept: a fresh pool per case)."""
    from zfsperf.runfile import refuse_load_scope
    head = ('[[test]]\nname = "t"\nworkload = "receive"\ncorpus = { kind = "random", size = "4M" }\n')
    load_rf = tmp_path / "load.toml"
    load_rf.write_text(head + 'tunables = { zfs_dirty_data_max_max = ["1G", "2G"] }\n')
    rf = load(str(load_rf))
    assert len(rf.cases()) == 2
    refuse_load_scope(rf.tests, reload=True)                 # the guest: the module is loaded with each value
    with pytest.raises(InputError) as e:
        refuse_load_scope(rf.tests, reload=False)           # anywhere else
    assert e.value.line == 5 and "zfs_dirty_data_max_max" in (e.value.field or "")
    assert "read only when the zfs module loads" in str(e.value) and "zfs.4" in str(e.value)
    assert "--target guest" in str(e.value)
    load_turns = tmp_path / "load-turns.toml"
    load_turns.write_text(head + 'duet = "turns"\ntunables = { zfs_dirty_data_max_max = ["1G", "2G"] }\n')
    with pytest.raises(InputError) as e:
        load(str(load_turns))
    assert e.value.line == 5 and "cannot take turns" in str(e.value) and "module loaded again" in str(e.value)
    turns = tmp_path / "turns.toml"
    turns.write_text(head + 'duet = "turns"\ntunables = { spa_num_allocators = [1, 4] }\n')
    with pytest.raises(InputError) as e:
        load(str(turns)).cases()
    assert e.value.line == 5 and "applies only to pools created or imported" in str(e.value)
    assert "cannot take turns" in str(e.value)
    swept = tmp_path / "swept.toml"
    swept.write_text(head + 'tunables = { spa_num_allocators = [1, 4] }\n')
    assert len(load(str(swept)).cases()) == 2


def test_scope_from_live_mode_bits_and_the_captured_releases():
    from zfsperf.tunables.scope import Scope, documented, scope_of
    assert scope_of("zfs_txg_timeout", 0o644)[0] is Scope.RUNTIME
    assert scope_of("zfs_txg_timeout", 0o444)[0] is Scope.LOAD               # the live system's word first
    assert scope_of("spa_num_allocators", 0o644)[0] is Scope.POOL            # writable; the manual says pool
    assert scope_of("spa_num_allocators")[0] is Scope.POOL
    assert scope_of("zfs_dirty_data_max_max", 0o644)[0] is Scope.LOAD       # the manual: load time only
    assert {d.scope for d in documented().values()} <= set(Scope)
    assert all(d.source.startswith(("zfs.4 of ", "sysfs mode ")) for d in documented().values())


@pytest.mark.parametrize("line, shown", [
    ("iterations = true", "got true"),                       # Python said True
    ("threads = {a=1}", "got { a = 1 }"),                    # Python said {'a': 1}
    ('threads = [1, "x"]', 'got "x"'),                       # Python said 'x'
    ('corpus = { kind = ["a"], size = "1M" }', 'got ["a"]'),  # Python said ['a']
])
def test_a_refused_value_is_shown_as_the_runfile_spells_it(line, shown, tmp_path):
    rf = tmp_path / "r.toml"
    rf.write_text('[[test]]\nname = "t"\nworkload = "receive"\ncorpus = { kind = "random", size = "1M" }\n'
                  .replace('corpus = { kind = "random", size = "1M" }\n', "" if line.startswith("corpus") else
                           'corpus = { kind = "random", size = "1M" }\n') + line + "\n")
    with pytest.raises(InputError) as e:
        load(str(rf))
    assert shown in str(e.value) and "True" not in str(e.value) and "'" not in str(e.value), str(e.value)


def test_the_guides_key_tables_are_the_loaders():
    """The guide's reference tables and `zfsperf list --keys` come from one declaration, and what it
    says (each default, each least value) is what the loader does."""
    import re
    from pathlib import Path
    from zfsperf.pool import PoolSpec
    from zfsperf.runfile import POOL_KEYS_TABLE, TEST_KEYS, keys_text
    from zfsperf.units import format_size
    guide = (Path(__file__).resolve().parent.parent / "docs" / "guide.md").read_text()
    rows = re.findall(r"^\| `([a-z_]+)` \| (.+?) \| (.+?) \| (.+?) \|$", guide, re.M)
    shown = {name: (tp, default) for name, tp, default, _help in rows}
    for k in (*TEST_KEYS, *POOL_KEYS_TABLE):
        assert shown.get(k.name) == (k.type_text(), k.default), k.name
        assert k.name in keys_text()
    rf = loads('[[test]]\nname = "t"\nworkload = "receive"\ncorpus = { kind = "random", size = "1M" }\n')
    (t,) = rf.tests
    default = {k.name: k.default for k in TEST_KEYS}
    assert str(t.iterations) == default["iterations"] and str(t.warmup) == default["warmup"]
    assert t.timeout == 20 * 60 and t.budget == 30 * 60 and default["timeout"] == "20m"
    assert default["max_iterations"].startswith(str(t.max_iterations))
    spec = PoolSpec()
    assert default["pool"] == f"{spec.layout} of {spec.vdevs} × {format_size(spec.vdev_size)}"
    pool_default = {k.name: k.default for k in POOL_KEYS_TABLE}
    assert pool_default["vdev_size"] == format_size(spec.vdev_size) and pool_default["vdevs"] == str(spec.vdevs)
    assert pool_default["cache_size"] == format_size(spec.cache_size)
    for k in (*TEST_KEYS, *POOL_KEYS_TABLE):                  # every least value is enforced
        if k.minimum is None:
            continue
        body = (f"pool = {{ {k.name} = {k.minimum - 1} }}" if k in POOL_KEYS_TABLE else f"{k.name} = {k.minimum - 1}")
        with pytest.raises(InputError, match=f"expected a whole number >= {k.minimum}|>= iterations"):
            loads('[[test]]\nname = "t"\nworkload = "receive"\ncorpus = { kind = "random", size = "1M" }\n'
                  + body + "\n")


def test_a_load_scope_sweep_off_the_guest_is_exit_2_with_its_line_before_anything(tmp_path):
    """zfs-fuse (or a host's kernel OpenZFS) is never reloaded: the run refuses before it starts."""
    rf = tmp_path / "load.toml"
    rf.write_text('[[test]]\nname = "t"\nworkload = "receive"\ncorpus = { kind = "random", size = "4M" }\n'
                  'tunables = { zfs_dirty_data_max_percent = [1, 2] }\n')
    res = zfsperf("run", "-r", str(rf), "--target", "zfs-fuse", "-o", str(tmp_path / "o"))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{rf}:5" in res.stderr and "zfs_dirty_data_max_percent" in res.stderr and "--target guest" in res.stderr
    assert not (tmp_path / "o").exists()


def test_an_empty_selection_names_it_in_words(tmp_path):
    """`run -T nosuch` said `(tags ['nosuch'], test None)`: Python's spelling of a list and of nothing."""
    res = zfsperf("run", "-T", "nosuch", "--dry-run", "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "(tags: nosuch; test: any)" in res.stderr, res.stderr
    assert "None" not in res.stderr and "[" not in res.stderr
