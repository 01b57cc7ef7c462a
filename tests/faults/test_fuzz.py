"""Bad input, fuzzed: every parser of tool output and the runfile loader give a
value or a clear error (InputError, or StreamError for send streams) — never another exception.
Seeds are the real captures in tests/fixtures and real zfs-fuse output; hypothesis mutates them."""

import io
import json
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import VERSIONS, fixture
from helpers import EXAMPLE
from zfsperf.errors import InputError, ZfsperfError
from zfsperf.metrics import fiojson
from zfsperf.metrics.iostat import parse_hp_reports, parse_human_reports
from zfsperf.pool import check_dataset_component, check_pool_name, check_property_name
from zfsperf.results.directory import iter_results
from zfsperf.runfile import loads
from zfsperf.steady import read_series
from zfsperf.targets.kstat import parse_named, parse_sysctl, parse_txgs
from zfsperf.workloads.sendstream import StreamError, walk


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CLEAR = (ZfsperfError, StreamError)


def mutate(seed: str):
    """Text derived from a real capture: cut, spliced, characters replaced or inserted."""
    n = len(seed)
    return st.one_of(
        st.integers(0, n).map(lambda i: seed[:i]),
        st.tuples(st.integers(0, n), st.integers(0, n), st.text(max_size=20)).map(
            lambda t: seed[:min(t[0], t[1])] + t[2] + seed[max(t[0], t[1]):]),
        st.lists(st.tuples(st.integers(0, max(0, n - 1)), st.sampled_from(string.printable + "\x00é€"))
                 , max_size=12).map(lambda edits: _apply(seed, edits)),
        st.text(max_size=300),
    )


def _apply(seed: str, edits):
    s = list(seed)
    for i, ch in edits:
        if s:
            s[i % len(s)] = ch
    return "".join(s)


def _value_or_clear_error(fn, *args):
    try:
        return fn(*args)
    except CLEAR as e:
        assert str(e), "an error must say what is wrong"
        return None


ARC = {v: fixture(v, "kstat_arcstats_final.txt") for v in VERSIONS}
TXGS = {v: fixture(v, "kstat_tank_txgs_during_load.txt") for v in VERSIONS}
HP = fixture("openzfs-2.3.2", "zpool_iostat_-Hp_-y_-l_tank_2_5.txt")
FIO = fixture("openzfs-2.3.2", "fio_randrw_70-30_4k_numjobs2_jsonplus.json")
HUMAN = """               capacity     operations    bandwidth
pool        alloc   free   read  write   read  write
----------  -----  -----  -----  -----  -----  -----
tp           484K   250M      0      2  1.21K  32.3K
tp           484K   250M      0      0      0      0
"""
SYSCTL = "kstat.zfs.misc.arcstats.hits: 1234\nkstat.zfs.misc.arcstats.c_max: 536870912\n"


@FUZZ
@given(mutate(ARC["openzfs-2.3.2"]))
def test_arcstats_named(text):
    out = _value_or_clear_error(parse_named, text)
    assert out is None or all(isinstance(v, (int, float)) for v in out.values())


@FUZZ
@given(mutate(SYSCTL))
def test_arcstats_sysctl(text):
    _value_or_clear_error(parse_sysctl, text, "kstat.zfs.misc.arcstats")


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["hits", "misses", "size", "c_max", "../x", ""]),
                          st.binary(max_size=24)), max_size=6))
def test_arcstats_field_dir(tmp_path_factory, files):
    from zfsperf.targets.kstat import read_field_dir
    d = tmp_path_factory.mktemp("kstat")
    for name, data in files:
        if name and "/" not in name:
            (d / name).write_bytes(data)
    out = read_field_dir(str(d))
    assert all(isinstance(v, (int, float)) for v in out.values())


@FUZZ
@given(mutate(TXGS["openzfs-2.1.11"]))
def test_txgs(text):
    _value_or_clear_error(parse_txgs, text)


@FUZZ
@given(mutate(HP))
def test_zpool_iostat_hp(text):
    _value_or_clear_error(parse_hp_reports, text, "tank")


@FUZZ
@given(mutate(HUMAN))
def test_zpool_iostat_human(text):
    _value_or_clear_error(parse_human_reports, text, "tp")


@FUZZ
@given(mutate(FIO[:6000]) | mutate(FIO))
def test_fio_json(text):
    obj = _value_or_clear_error(fiojson.parse, text)
    if obj is not None:
        _value_or_clear_error(fiojson.result, obj)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                           lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                           max_leaves=20)


@FUZZ
@given(st.dictionaries(st.sampled_from(["jobs", "client_stats", "fio version"]), json_values, min_size=1))
def test_fio_json_structures(obj):
    _value_or_clear_error(fiojson.result, obj)


@FUZZ
@given(st.binary(max_size=2000))
def test_send_stream_headers(data):
    _value_or_clear_error(walk, io.BytesIO(data))


@FUZZ
@given(st.lists(st.text(max_size=80) | json_values.map(json.dumps), max_size=6))
def test_results_jsonl(tmp_path_factory, lines):
    p = tmp_path_factory.mktemp("res") / "results.jsonl"
    p.write_text("\n".join(lines))
    _value_or_clear_error(lambda: list(iter_results(p)))


@FUZZ
@given(st.lists(st.text(max_size=80) | json_values.map(json.dumps), max_size=6))
def test_series_jsonl(tmp_path_factory, lines):
    p = tmp_path_factory.mktemp("ser") / "s.jsonl"
    p.write_text("\n".join(lines))
    _value_or_clear_error(read_series, str(p))


@FUZZ
@given(mutate(EXAMPLE))
def test_runfile_loader(text):
    _value_or_clear_error(loads, text, "fuzz.toml")


HOSTILE = ["a b", "x;rm -rf /", "$(touch /tmp/pwned)", "`id`", "-oops", "--force", "a\nb", "", "a" * 300,
           "../etc", "pool/../x", "tank@snap", "x\x00y"]


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_names_are_refused(name):
    for check in (check_pool_name, check_dataset_component, check_property_name):
        with pytest.raises(InputError):
            check(name)


@pytest.mark.parametrize("name", ["a b", "x;id", "$(id)", "-F"])
def test_hostile_names_in_a_runfile_are_input_errors(name, tmp_path):
    body = EXAMPLE.replace('[[test]]', f'[defaults.dataset]\n"{name}" = "on"\n\n[[test]]', 1) \
        if "[defaults.dataset]" not in EXAMPLE else EXAMPLE.replace("[defaults.dataset]", f'[defaults.dataset]\n"{name}" = "on"')
    with pytest.raises(InputError) as e:
        loads(body, "hostile.toml")
    assert "hostile.toml" in str(e.value)
    tun = EXAMPLE.replace("tunables = {", f'tunables = {{ "{name}" = 1, ', 1)
    if tun != EXAMPLE:
        with pytest.raises(InputError):
            loads(tun, "hostile.toml")
