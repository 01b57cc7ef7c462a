"""Shell completion (bash, zsh) and the man page, generated from the argument parser itself with
shtab and argparse-manpage, so that neither can drift from `cli.py`; `make run` and `make test`
install them (scripts/install-deps.sh runs `python -m zfsperf.shellfiles install`)."""

from __future__ import annotations

import sys
from pathlib import Path

from . import __version__
from .cliargs import build_parser

# where a root set-up puts them on Debian (bash-completion reads the first, zsh's fpath holds the
# second, man's MANPATH the third)
PLACES = {"bash": Path("/etc/bash_completion.d/zfsperf"),
          "zsh": Path("/usr/local/share/zsh/site-functions/_zfsperf"),
          "man": Path("/usr/local/share/man/man1/zfsperf.1")}


def completion(shell: str) -> str:
    """The completion script for bash or zsh: every command, guest action and option."""
    import shtab
    return shtab.complete(build_parser(), shell)


# zfsperf's exit statuses, the same for every command (errors.py, runner.py, compare's gate)
EXIT_STATUS = [("0", "success: every case passed; compare and history found no regression beyond the gate"),
               ("1", "a case FAILED or was KILLED, or a gate (--fail-on-regression, --fail-on-change) failed"),
               ("2", "bad input or a refusal (the file, line and field named); nothing was touched"),
               ("3", "interrupted (Ctrl-C, a hangup, TERM): every tunable restored, nothing left running"),
               ("4", "the run passed, but it could not be added to the history store")]


def manpage() -> str:
    """zfsperf(1) in roff: the usage, each command's description, options and examples, then the
    EXAMPLES of every command and the EXIT STATUS."""
    from argparse_manpage.manpage import Manpage
    from .cliargs import EXAMPLES
    page = Manpage(build_parser(), _data={"project_name": "zfsperf", "version": __version__,
                                          "description": "a performance test suite for ZFS"})
    examples = [ln.split("#")[0].rstrip() for name, lines in EXAMPLES.items() if name != "lab" for ln in lines]
    page.add_section("EXAMPLES", "=", ".nf\n" + "\n".join(_roff(e) for e in examples) + "\n.fi")
    page.add_section("EXIT STATUS", "=", "\n".join(f".TP\n.B {code}\n{_roff(what)}" for code, what in EXIT_STATUS))
    return str(page)


def _roff(text: str) -> str:
    """A line of text as roff shows it literally (a backslash doubled, a leading dot escaped)."""
    text = text.replace("\\", "\\e")
    return "\\&" + text if text.startswith((".", "'")) else text


def _ours(text: str) -> bool:
    """Whether a file at one of the places is one zfsperf wrote (shtab's completion of zfsperf, or
    argparse-manpage's zfsperf(1)): another's (a package's, the user's own) is never overwritten."""
    return ("shtab" in text and "_zfsperf" in text) or text.startswith(".TH ZFSPERF")


def install(places: dict[str, Path] | None = None) -> list[str]:
    """Write the three files (their directories made) where none is, or where zfsperf's own is and
    differs; a file of the same name that is not zfsperf's is left as it is. Returns, per file, where
    it went and what was done."""
    out = []
    for what, path in (places or PLACES).items():
        text = manpage() if what == "man" else completion(what)
        try:
            old: str | None = path.read_text(errors="replace")
        except FileNotFoundError:
            old = None
        if old is not None and not _ours(old):
            out.append(f"{what}: {path} left as it is (not zfsperf's)")
            continue
        if old == text:
            out.append(f"{what}: {path} (unchanged)")
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        out.append(f"{what}: {path}")
    return out


if __name__ == "__main__":
    if sys.argv[1:] == ["install"]:
        for line in install():
            print(f"zfsperf shell files: {line}")
    elif len(sys.argv) == 2 and sys.argv[1] in ("bash", "zsh", "man"):
        print(manpage() if sys.argv[1] == "man" else completion(sys.argv[1]), end="")
    else:
        print("usage: python -m zfsperf.shellfiles install | bash | zsh | man", file=sys.stderr)
        sys.exit(2)
