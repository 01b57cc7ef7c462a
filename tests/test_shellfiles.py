"""Shell completion and the man page (issue 70) come from the argument parser: every command and
guest action is in them, and bash completes with the generated script."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from zfsperf import shellfiles
from zfsperf.cliargs import build_parser


def _commands() -> list[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "cmd")
    return sorted(a.dest for a in sub._choices_actions)          # the listed ones (`lab` works, unlisted)


def test_the_files_install_where_asked_and_name_every_command(tmp_path):
    places = {"bash": tmp_path / "bash" / "zfsperf", "zsh": tmp_path / "zsh" / "_zfsperf",
              "man": tmp_path / "man1" / "zfsperf.1"}
    assert shellfiles.install(places) == [f"{k}: {v}" for k, v in places.items()]
    man = places["man"].read_text()
    assert man.startswith(".TH ZFSPERF") and all(f"\\fI\\,{c}\\/\\fR" in man for c in _commands()), _commands()
    zsh = places["zsh"].read_text()
    assert zsh.startswith("#compdef zfsperf") and all(c in zsh for c in _commands())
    # again: zfsperf's own files are kept as they are when nothing changed, rewritten when they
    # differ; a file of the same name that is not zfsperf's (a package's, the user's) is never touched
    assert shellfiles.install(places) == [f"{k}: {v} (unchanged)" for k, v in places.items()]
    places["bash"].write_text(places["bash"].read_text().replace("guest", "gust"))
    mine = "# my own completion for another zfsperf\ncomplete -W 'x' zfsperf\n"
    places["zsh"].write_text(mine)
    got = shellfiles.install(places)
    assert got == [f"bash: {places['bash']}", f"zsh: {places['zsh']} left as it is (not zfsperf's)",
                   f"man: {places['man']} (unchanged)"], got
    assert places["zsh"].read_text() == mine and "guest" in places["bash"].read_text()
    if shutil.which("man"):
        text = subprocess.run(["man", "-l", str(places["man"])], capture_output=True, text=True,
                              env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin"}).stdout
        assert "zfsperf - a performance test suite for ZFS" in text and "zfsperf ab" in text


@pytest.mark.parametrize("line, expect", [("zfsperf gu", {"guest"}),
                                          ("zfsperf guest ", {"build", "up", "down", "status", "run", "ab", "bisect"}),
                                          ("zfsperf compare --fail-on", {"--fail-on-regression"})])
def test_bash_completes_with_the_generated_script(line, expect, tmp_path):
    script = tmp_path / "zfsperf.bash"
    script.write_text(shellfiles.completion("bash"))
    words = line.split(" ")
    probe = (f"source {script}; COMP_WORDS=({' '.join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; "
             f"COMP_LINE={line!r}; COMP_POINT={len(line)}; _shtab_zfsperf; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    res = subprocess.run(["bash", "-c", probe], capture_output=True, text=True)
    got = {w.strip() for w in res.stdout.split()}
    assert expect <= got, (res.stdout, res.stderr)
