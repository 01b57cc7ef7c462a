"""The path a user takes first (issue 70): a bare `zfsperf` helps and runs nothing, `--version`
names the commit, and a history gate that cannot fail says so."""

import random
import subprocess
import sys

from helpers import command_lines, level_run, stored_results, zfsperf


def test_zfsperf_alone_prints_usage_and_starts_nothing(tmp_path):
    """It started the default benchmark (2 × 2 GiB vdevs, a zfs-fuse daemon, two minutes of I/O)."""
    env = {"ZFSPERF_STATE": str(tmp_path / "state"), "ZFSPERF_LAB": str(tmp_path / "lab")}
    res = zfsperf(env=env, cwd=tmp_path, timeout=60)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ln.strip().startswith("zfsperf ")]
    assert len(lines) == 6 and "zfsperf run" in lines[0] and "zfsperf compare BASE NEW" in res.stdout
    assert any(ln.strip().startswith("zfsperf ab ") for ln in lines)           # issue 83: ab was left out
    assert "Starting ZFS target" not in res.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []           # no results, state or lab


def test_version_names_the_commit():
    res = zfsperf("--version", timeout=60)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert res.returncode == 0 and res.stdout.startswith("zfsperf 0.") and f"commit {head[:12]}" in res.stdout


def test_version_loads_no_statistics_or_runfile_model():
    """`zfsperf --version` reads the checkout, nothing else: inside the OpenZFS guest under TCG
    every module imported costs (15 s there, of it 12 s for the run's model and numpy, 2026-12-07)."""
    code = ("import sys; from zfsperf import cli; cli.main(['--version']); "
            "print(sorted(m for m in ('numpy', 'rich', 'zfsperf.runfile', 'zfsperf.results.record', "
            "'importlib.metadata') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.startswith("zfsperf 0."), res.stdout + res.stderr
    assert res.stdout.splitlines()[-1] == "[]", res.stdout


def test_history_gate_says_how_many_runs_a_change_point_needs(tmp_path):
    """Three runs with a −40 % drop printed `0 change point(s)`, exit 0."""
    rng = random.Random(3)
    runs = [stored_results(tmp_path / f"r{i}", level_run(v, rng), start=i) for i, v in enumerate((100, 100, 60))]
    store = str(tmp_path / "h.sqlite")
    assert zfsperf("history", "import", *map(str, runs), "--store", store).returncode == 0
    res = zfsperf("history", "--store", store, "--fail-on-change", "5")
    assert res.returncode == 2 and "a change point needs at least 4 runs" in res.stderr, res.stdout + res.stderr


def test_every_command_in_the_readme_and_the_docs_parses():
    """The manual's examples are tests (benchstat): each parses with today's argument parser."""
    import shlex
    from pathlib import Path
    from zfsperf import cli
    root = Path(__file__).resolve().parents[1]
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    seen = 0
    for doc in docs:
        for cmd in command_lines(doc.read_text()):
            argv = shlex.split(cmd)[1:]
            try:
                cli.build_parser().parse_args(argv)
            except SystemExit as e:
                raise AssertionError(f"{doc.name}: `{cmd}` does not parse (exit {e.code})") from None
            seen += 1
    assert seen >= 40, seen


def test_every_subcommand_has_examples_that_parse():
    """No subcommand had an example (issue 70): each has one to three now, and each parses."""
    import shlex
    from zfsperf import cli
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction))
    for name, p in sub.choices.items():
        assert p.epilog and p.epilog.startswith("examples:"), name
        text = p.epilog.replace("\\\n", " ")            # a long example continues on the next line
        examples = [ln.strip().split(" # ", 1)[0].strip() for ln in text.splitlines()[1:] if ln.strip()]
        assert 1 <= len(examples) <= 3, (name, examples)
        for ex in examples:
            try:
                cli.build_parser().parse_args(shlex.split(ex)[1:])
            except SystemExit as e:
                raise AssertionError(f"{name}: example `{ex}` does not parse (exit {e.code})") from None


def test_each_guest_action_has_its_own_help_and_examples():
    """`guest ab --help` and `guest bisect --help` printed the same 53 lines for all seven actions,
    and a bare `guest` said `required: guest_action, inside`."""
    import argparse
    import shlex
    from zfsperf import cli
    guest = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["guest"]
    actions = next(a for a in guest._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert sorted(actions) == ["ab", "bisect", "build", "down", "run", "status", "up"]
    helps = {name: p.format_help() for name, p in actions.items()}
    assert len(set(helps.values())) == len(helps)
    assert "--good" in helps["bisect"] and "--good" not in helps["ab"] and "--rebuild" not in helps["bisect"]
    assert "--a BUILD" not in helps["up"] and "inside" in helps["run"]
    for name, p in actions.items():
        text = p.epilog.replace("\\\n", " ")            # a long example continues on the next line
        examples = [ln.strip().split(" # ", 1)[0].strip() for ln in text.splitlines()[1:] if ln.strip()]
        assert examples, name
        for ex in examples:
            cli.build_parser().parse_args(shlex.split(ex)[1:])
    args = cli.build_parser().parse_args(["guest", "run", "--", "run", "-r", "receive-batch", "-o", "res"])
    assert args.inside == ["--", "run", "-r", "receive-batch", "-o", "res"]
    res = zfsperf("guest")
    assert res.returncode == 2 and "guest takes an action: build | up | down | status | run | ab | bisect" in res.stderr


def test_info_says_what_it_starts():
    from zfsperf import cli
    p = next(a for a in cli.build_parser()._actions if a.dest == "cmd").choices["info"]
    assert "starts the embedded zfs-fuse daemon for a moment" in " ".join(p.description.split())


def test_every_help_describes_itself_fits_100_columns_and_shows_examples(monkeypatch):
    """Issue 83: `list`, `report`, `steady`, `corpus` and `corpus make` had no description, six
    descriptions were unwrapped lines of 229-354 characters, options had no help, the top-level
    help and `corpus make` no example, and the legacy `lab` and `--params-dir` were listed."""
    import argparse
    from zfsperf.cliargs import _parsers, build_parser
    monkeypatch.setenv("COLUMNS", "100")
    ap = build_parser()
    for p in _parsers(ap):
        text = p.format_help()
        assert p.description, p.prog
        assert max(len(ln) for ln in text.splitlines()) <= 100, (p.prog, text)
        assert not [a.dest for a in p._actions if a.help is None and not isinstance(a, argparse._SubParsersAction)], p.prog
        if not any(isinstance(a, argparse._SubParsersAction) for a in p._actions) or p is ap:
            assert "examples:\n  zfsperf " in text, p.prog
    top = ap.format_help()
    assert "\n    lab " not in top and "\n    ab " in top
    run = next(p for p in _parsers(ap) if p.prog == "zfsperf run").format_help()
    assert "--tunables-dir" in run and "--params-dir" not in run
    assert build_parser().parse_args(["run", "--params-dir", "/x"]).tunables_dir == "/x"    # still taken


def test_the_man_page_has_examples_and_exit_status():
    from zfsperf import shellfiles
    page = shellfiles.manpage()
    assert ".SH EXAMPLES" in page and "zfsperf ab recordsize=8K,128K" in page.split(".SH EXAMPLES")[1]
    status = page.split(".SH EXIT STATUS")[1]
    assert all(f".B {code}\n" in status for code in "01234"), status
