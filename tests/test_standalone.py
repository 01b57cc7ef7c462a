"""A plain clone of this repository runs its whole test suite on its own: no test,
benchmark or module reads the steering folder beside the checkout."""

import re
from pathlib import Path



REPO = Path(__file__).resolve().parent.parent
OUTSIDE = re.compile(r"""parent\s*/\s*["']shared["']|\.\./shared|["']shared["']\s*/\s*["'](fixtures|reference|seeds)""")


def test_no_code_reads_the_folder_beside_the_checkout():
    offenders = []
    for top in ("src", "tests", "bench", "scripts"):
        for f in (REPO / top).rglob("*"):
            if f.suffix in (".py", ".sh", ".toml") and f.is_file():
                for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                    if OUTSIDE.search(line) and f.name != "test_standalone.py":
                        offenders.append(f"{f.relative_to(REPO)}:{n}: {line.strip()}")
    assert offenders == []


def test_fixtures_are_in_the_repository():
    from helpers import FIXTURES, VERSIONS
    assert FIXTURES.is_relative_to(REPO)
    for v in VERSIONS:
        d = FIXTURES / v
        assert (d / "commands.txt").is_file() and (d / "README.md").is_file()
        # every capture the commands list names is here
        names = {ln.split()[0] for ln in (d / "commands.txt").read_text().splitlines()
                 if ln.strip() and not ln.startswith("#") and ln.split()[0].endswith((".txt", ".json"))}
        assert names and all((d / n).is_file() for n in names), sorted(n for n in names if not (d / n).is_file())


def test_shared_helpers_live_in_one_module():
    """Tests share helpers through tests/helpers.py only: no test module imports another test
    module or conftest.py (fixtures reach tests through pytest, helpers through one import)."""
    tests = Path(__file__).resolve().parent
    bad = re.compile(r"^\s*(from|import)\s+(conftest|test_\w+|faults)\b", re.M)
    found = [str(p.relative_to(tests)) for p in tests.rglob("*.py") if bad.search(p.read_text())]
    assert found == []
