"""On-CPU profiles per side (`run --profile`, issue 42 items 1-2): perf's samples folded into
stacks, kept apart by the rounds of turns, and the differential view (function table with
intervals and Holm's correction; the differential flame graph).

The parser replays a real `perf script` of the zfs-fuse daemon (tests/fixtures/perf/); the
statistics run on multinomial draws of known profiles; the whole path runs on the real zfs-fuse
daemon with real perf."""

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from helpers import why
from helpers import chromium, console_errors, last_dir, records, write_runfile, zfsperf
from zfsperf.metrics.profile import Sample, fold, named_share, parse_script, read_folded
from zfsperf.report import flamegraph, profilediff

FIXTURE = Path(__file__).parent / "fixtures" / "perf" / "zfs-fuse-gzip9.script"


def test_perf_script_of_the_zfs_fuse_daemon_folds_into_stacks_named_by_symbol_or_object():
    text = FIXTURE.read_text()
    samples = parse_script(text.splitlines())
    assert len(samples) == len(re.findall(r"^zfs-fuse\s+\d+\s+[\d.]+:", text, re.M)) == 120
    assert all(s.stack[0] == "zfs-fuse" for s in samples)
    times = [s.t for s in samples]
    assert times == sorted(times) and times[0] == pytest.approx(62462.140756)
    # stripped objects are named by their file; a named symbol keeps its name; the kernel's too
    first = samples[0].stack
    assert first == ("zfs-fuse", "[unknown]", "[zfs-fuse]")
    assert ("zfs-fuse", "[libz.so.1.2.13]") in [s.stack for s in samples]
    assert any("__memmove_avx_unaligned_erms" in s.stack for s in samples)
    assert any("entry_SYSCALL_64_after_hwframe" in s.stack for s in samples)
    # a run of frames of one object is one frame
    assert not any(a == b for s in samples for a, b in zip(s.stack[1:], s.stack[2:]))
    counts = fold(samples)
    assert sum(counts.values()) == 120
    assert 0.0 < named_share(counts) < 0.5          # Debian's zfs-fuse and libz are stripped


def test_samples_go_to_the_side_whose_rounds_they_fell_in(tmp_path):
    samples = [Sample(t, ("p", f"f{int(t)}")) for t in (1.0, 1.5, 2.5, 3.0, 4.5, 9.0)]
    a = fold(samples, [(1.0, 2.0), (4.0, 5.0)])
    b = fold(samples, [(2.0, 3.0)])
    assert a == Counter({"p;f1": 2, "p;f4": 1}) and b == Counter({"p;f2": 1, "p;f3": 1})
    assert sum(fold(samples).values()) == 6         # no spans: every sample (one side, or a duet at once)
    path = tmp_path / "x.folded"
    from zfsperf.metrics.profile import add_folded, write_folded
    write_folded(path, a)
    add_folded(path, b)
    assert read_folded(path) == a + b


def _draw(rng: np.random.Generator, shares: dict[str, float], n: int) -> Counter[str]:
    names = list(shares)
    p = np.array([shares[k] for k in names])
    got = rng.multinomial(n, p / p.sum())
    return Counter({f"proc;main;{k}": int(c) for k, c in zip(names, got) if c})


PROFILE = {f"fn{i:02d}": 1.0 / (i + 1) for i in range(40)}       # a long tail of 40 functions


def test_an_a_a_of_profiles_calls_a_function_changed_at_most_at_the_stated_rate():
    """Forty functions tested at once: the max-T adjustment keeps the family's false alarms at 5 %
    (seeded A/As, so the figure is fixed; tests without the adjustment called one in most)."""
    for paired in (True, False):
        alarms = 0
        for seed in range(150):
            rng = np.random.default_rng(seed)
            a = {i: _draw(rng, PROFILE, 300) for i in range(1, 7)}
            b = {i: _draw(rng, PROFILE, 300) for i in range(1, 7)}
            d = profilediff.diff("A → B", a, b, paired=paired)
            assert d.tested >= 20
            alarms += bool(d.changed())
        assert alarms / 150 <= 0.08, (paired, alarms)


def test_a_function_that_appears_in_b_is_on_top_with_a_positive_change():
    rng = np.random.default_rng(7)
    planted = dict(PROFILE, deflate=sum(PROFILE.values()) * 0.25)     # a fifth of B's CPU
    a = {i: _draw(rng, PROFILE, 300) for i in range(1, 7)}
    b = {i: _draw(rng, planted, 300) for i in range(1, 7)}
    for paired in (True, False):
        d = profilediff.diff("off → gzip-9", a, b, paired=paired)
        top = d.rows[0]
        assert top.name == "deflate" and top.changed and top.a_share == 0.0
        assert 15.0 < top.change < 25.0 and top.ci[0] > 0
        assert d.changed()[0] is top
    # inclusive shares raise the callers with it (main holds every sample on both sides); the self
    # share tells the function that burns the CPU: deflate's own, main's none
    rows = {r.name: r for r in d.rows}
    assert rows["main"].a_share == rows["main"].b_share == 100.0 and rows["main"].self_shares == (0.0, 0.0)
    assert rows["deflate"].self_shares[0] == 0.0 and 15.0 < rows["deflate"].self_shares[1] < 25.0
    head, table = d.table()
    assert head[-1] == "self A → B" and table[0][-1].startswith("0.0 → ") and table[0][-1].endswith(" %")
    assert d.as_dict()["functions"][0]["self_pct"][0] == 0.0
    # with too few iterations the shares are shown and nothing is called
    d = profilediff.diff("x", {1: a[1], 2: a[2]}, {1: b[1], 2: b[2]}, paired=True)
    assert d.rows and not d.changed() and "fewer than 6" in d.note


def test_the_differential_flame_graph_is_svg_with_widths_and_colours_of_b_against_a():
    a = Counter({"p;main;read": 60, "p;main;write": 40})
    b = Counter({"p;main;read": 30, "p;main;write": 20, "p;main;deflate": 50})
    root = ET.fromstring(flamegraph.svg(b, a, "t"))
    ns = "{http://www.w3.org/2000/svg}"
    boxes = {}
    for g in root.iter(f"{ns}g"):
        title, rect = g.find(f"{ns}title").text, g.find(f"{ns}rect")
        boxes[title.split(":")[0]] = (float(rect.get("width")), rect.get("fill"))
    assert boxes["all"][0] == pytest.approx(flamegraph.WIDTH)
    assert boxes["deflate"][0] == pytest.approx(flamegraph.WIDTH / 2)
    assert boxes["deflate"][1] == "rgb(255,51,51)"                     # the largest rise: full red
    assert boxes["read"][1].endswith(",255)") and boxes["write"][1].endswith(",255)")   # fell: blue
    assert boxes["main"][1] == "rgb(255,255,255)"                      # the same share: white


RUNFILE = """
[defaults]
iterations = 6
warmup = 0
timeout = "5m"
[defaults.pool]
layout = "stripe"
vdevs = 1
vdev_size = "512M"
[defaults.steady]
mode = "off"
[[test]]
name = "gz"
workload = "receive"
corpus = { kind = "compressible", size = "16M" }
threads = 1
duration = "1s"
duet = "turns"
dataset = { compression = ["off", "gzip-9"] }
"""


def test_profiles_of_the_zfs_fuse_daemon_per_side_of_turns_and_the_differential_view(lab, tmp_path):
    """A real zfs-fuse daemon profiled with real perf while compression=off and gzip-9 take turns:
    each side's folded stacks hold the samples of its own rounds (libz's deflate is gzip-9's, so
    the split is seen), and compare puts libz on top of the differential table, changed."""
    res = zfsperf("run", "-r", str(write_runfile(tmp_path, RUNFILE)), "-o", str(tmp_path / "o"), "--no-history",
                  "--profile")
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    libz = {}
    for rec in records(d):
        prof = rec["profile"]
        assert prof["event"] == "cpu-clock" and prof["rate_hz"] == 99 and "zfs-fuse daemon" in prof["scope"]
        counts = read_folded(d / prof["folded"])
        assert prof["samples"] == sum(counts.values()) > 0 and prof["rounds"] >= 2
        z = sum(n for s, n in counts.items() if "[libz.so" in s) / prof["samples"]
        libz.setdefault(rec["sweep"]["compression"], []).append(z)
    assert max(libz["off"]) < 0.05 and min(libz["gzip-9"]) > 0.3, libz
    for side in ("off", "gzip-9"):                  # the case's merged file is its iterations' sum
        merged = read_folded(d / "profiles" / f"gz__compression={side}.folded")
        parts = sum((read_folded(p) for p in (d / "profiles").glob(f"gz__compression={side}.i*.folded")), Counter())
        assert merged == parts and not list((d / "profiles").glob("*.perf.data"))
    js = json.loads(zfsperf("compare", str(d), "--json").stdout)
    (prof,) = js["profiles"]
    top = prof["functions"][0]
    assert top["function"].startswith("[libz.so") and top["changed"] and top["change_points"] > 30
    md = zfsperf("compare", str(d), "--format", "md").stdout
    assert "#### Profile gz compression=off → gz compression=gzip-9" in md and "| [libz.so" in md
    page = (d / "report.html").read_text()
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg" class="flame"') == 1 and "[libz.so" in page
    # the page in a real browser: every image loads, the flame graph is drawn, nothing on the console
    n_img = page.count("<img ")
    dom = chromium(f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=5000", "--dump-dom",
                   (d / "report.html").as_uri())
    assert re.search(r"<body[^>]*>", dom.stdout).group(0) == f'<body data-images="{n_img}/{n_img}">'
    assert dom.stdout.count("<rect ") > 10 and console_errors(dom.stderr) == []


@pytest.mark.parametrize("how", ["ssh", "no-perf"])
def test_profile_is_refused_before_anything_is_touched_where_it_cannot_be_taken(tmp_path, how):
    args = ["run", "--profile", "--dry-run", "-o", str(tmp_path / "o"), "--no-history"]
    env = None
    if how == "ssh":
        args += ["--target", "ssh://root@127.0.0.1:1"]
    else:
        env = {"PATH": str(tmp_path)}              # a PATH without perf
    res = zfsperf(*args, env=env)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "--profile" in res.stderr and ("linux-perf" if how == "no-perf" else "zfsperf guest run") in res.stderr
    assert not (tmp_path / "o").exists()


DUET_AT_ONCE = RUNFILE.replace('iterations = 6', 'iterations = 1').replace(
    'duet = "turns"', 'duet = true').replace('compression = ["off", "gzip-9"]', '"zfsperf:arm" = ["a", "b"]')


def test_a_duet_at_once_has_one_profile_for_both_sides_and_no_differential(lab, tmp_path):
    """Both sides at the same time on one pool: their samples cannot be told apart, so one profile
    is kept, both records name it as shared, and compare says why there is no differential view."""
    res = zfsperf("run", "-r", str(write_runfile(tmp_path, DUET_AT_ONCE)), "-o", str(tmp_path / "o"), "--no-history",
                  "--profile")
    assert res.returncode == 0, why(res)
    d = last_dir(res.stdout)
    profs = [r["profile"] for r in records(d)]
    assert len(profs) == 2 and all(p["shared"] for p in profs) and profs[0]["folded"] == profs[1]["folded"]
    assert "rounds" not in profs[0] and sum(read_folded(d / profs[0]["folded"]).values()) == profs[0]["samples"] > 0
    js = json.loads(zfsperf("compare", str(d), "--json").stdout)
    assert js["profiles"][0]["note"].startswith("the sides ran at the same time") and not js["profiles"][0]["functions"]


def test_paired_iterations_stay_paired_when_a_side_has_an_empty_iteration():
    """An iteration without samples on one side drops that pair; the others keep their partners
    (paired by position, an empty A in iteration 2 and an empty B in 5 paired 3 with 2)."""
    rng = np.random.default_rng(11)
    planted = dict(PROFILE, deflate=sum(PROFILE.values()) * 0.25)
    a = {i: _draw(rng, PROFILE, 300) for i in range(1, 9)}
    b = {i: _draw(rng, planted, 300) for i in range(1, 9)}
    a[2], b[5] = Counter(), Counter()
    d = profilediff.diff("x", a, b, paired=True)
    assert d.paired and d.iterations == (6, 6) and d.rows[0].name == "deflate" and d.rows[0].changed
