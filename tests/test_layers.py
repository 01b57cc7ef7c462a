"""The layers of docs/architecture.md, enforced: every import of every module (those inside
functions too) points down the table or stays in its row, and no import closes a circle.

The table is read from the document itself, so the map and the code cannot drift apart silently.
Behavioural, not spelling: the checker is tested below on small trees that break each rule."""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path



ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
DOC = ROOT / "docs" / "architecture.md"


def layers_table(text: str) -> list[tuple[str, list[str]]]:
    """(layer, module names) top to bottom, from the table under "## Layers"."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and "`" in cells[1]:
            rows.append((cells[0], re.findall(r"`([\w.]+)`", cells[1])))
    return rows


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, src: Path, known: set[str]) -> set[str]:
    """The package's modules that `path` imports, wherever the import statement stands."""
    name = module_name(path, src)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            for alias in node.names:
                sub = f"{mod}.{alias.name}"
                out.add(sub if sub in known else mod)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    # `import a.b.c` loads a, a.b and a.b.c: the deepest known one is what the module uses
    return {m for m in out if m in known and m != name and not name.startswith(m + ".")}


def layer_of(mod: str, table: list[tuple[str, list[str]]], root: str = "zfsperf") -> int | None:
    """The row of the table that places a module (the longest name that matches), None if none."""
    rel = mod[len(root) + 1:] if mod != root else root
    best = None
    for i, (_, names) in enumerate(table):
        for n in names:
            if (rel == n or rel.startswith(n + ".")) and (best is None or len(n) > best[1]):
                best = (i, len(n))
    return None if best is None else best[0]


def check(src: Path, table: list[tuple[str, list[str]]]) -> list[str]:
    """Every rule the layers table states, broken: one line per finding."""
    root = next(p.name for p in src.iterdir() if (p / "__init__.py").exists())
    paths = {module_name(p, src): p for p in (src / root).rglob("*.py")}
    known = set(paths)

    def layer(mod: str) -> int | None:
        return layer_of(mod, table, root)

    found = [f"{m}: not placed in any layer of the table" for m in sorted(known) if layer(m) is None]
    graph = {m: imports(p, src, known) for m, p in paths.items()}
    for m, deps in sorted(graph.items()):
        for d in sorted(deps):
            lm, ld = layer(m), layer(d)
            if lm is not None and ld is not None and ld < lm:
                found.append(f"{m} ({table[lm][0]}) imports {d} ({table[ld][0]}): an import that points up")
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        found.append("an import circle: " + " -> ".join(e.args[1]))
    return found


def test_the_code_keeps_the_layers_of_the_architecture_document():
    table = layers_table(DOC.read_text())
    assert [name for name, _ in table][:2] == ["application", "orchestration"] and len(table) >= 6, table
    assert check(SRC, table) == []


CORE = ("orchestration", "case", "analysis", "measurement", "results", "target interface")


def guest_importers(src: Path, table: list[tuple[str, list[str]]]) -> list[str]:
    """The core's modules (CORE's rows, but the composition root `opentarget`) that import from
    `guest`: the rule "the core names no guest" of docs/architecture.md, broken."""
    root = next(p.name for p in src.iterdir() if (p / "__init__.py").exists())
    paths = {module_name(p, src): p for p in (src / root).rglob("*.py")}
    core = [n for layer, names in table if layer in CORE for n in names if n != "opentarget"]
    out = []
    for m, p in sorted(paths.items()):
        rel = m[len(root) + 1:]
        if any(rel == n or rel.startswith(n + ".") for n in core):
            bad = sorted(d for d in imports(p, src, set(paths)) if d == f"{root}.guest" or d.startswith(f"{root}.guest."))
            out += [f"{m} imports {d}" for d in bad]
    return out


def test_the_core_names_no_guest():
    """Issue 85: runner, case and plan imported guest modules (the module switch, the twin guest and
    its pair, the build reference); the core now reaches the guest only through the composition
    root, so that builds on a host (issue 72) add a target, not a third copy."""
    table = layers_table(DOC.read_text())
    assert guest_importers(SRC, table) == []
    assert "the core names no guest" in DOC.read_text()


def test_a_core_module_that_imports_the_guest_is_found(tmp_path):
    """The core's module is found; the composition root and the application may import the guest."""
    src = _tree(tmp_path, {"pkg/guest/__init__.py": "", "pkg/guest/vm.py": "",
                           "pkg/run.py": "from .guest import vm\n", "pkg/opentarget.py": "from .guest import vm\n",
                           "pkg/app.py": "from .guest import vm\n"})
    table = [("application", ["app"]), ("orchestration", ["run", "opentarget"]), ("targets", ["guest"])]
    assert guest_importers(src, table) == ["pkg.run imports pkg.guest.vm"]


# ---------------------------------------------------------------- the checker, on trees that break it
TABLE = [("top", ["app"]), ("middle", ["mid"]), ("bottom", ["pkg", "low"])]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "src"
    for rel, text in {"pkg/__init__.py": "", **files}.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    return src


def test_a_tree_that_keeps_its_layers_passes(tmp_path):
    src = _tree(tmp_path, {"pkg/app.py": "from . import mid\nfrom .low import x\n",
                           "pkg/mid.py": "from .low import x\n", "pkg/low.py": "x = 1\n"})
    assert check(src, TABLE) == []


def test_an_import_inside_a_function_that_points_up_is_found(tmp_path):
    src = _tree(tmp_path, {"pkg/app.py": "", "pkg/mid.py": "",
                           "pkg/low.py": "def f():\n    from .mid import g\n    return g\n"})
    assert check(src, TABLE) == ["pkg.low (bottom) imports pkg.mid (middle): an import that points up"]


def test_a_circle_within_one_layer_is_found(tmp_path):
    src = _tree(tmp_path, {"pkg/low.py": "from . import sub\n", "pkg/sub/__init__.py": "",
                           "pkg/sub/a.py": "import pkg.low\n"})
    assert check(src, [("bottom", ["pkg", "low", "sub"])]) == []          # a imports low, low imports sub: no circle yet
    (src / "pkg" / "sub" / "__init__.py").write_text("from . import a\n")
    found = check(src, [("bottom", ["pkg", "low", "sub"])])
    assert len(found) == 1 and found[0].startswith("an import circle: ") and "pkg.low" in found[0], found


def test_a_module_no_row_places_is_found(tmp_path):
    src = _tree(tmp_path, {"pkg/stray.py": ""})
    assert check(src, [("top", ["app"]), ("bottom", ["low"])]) == [
        "pkg: not placed in any layer of the table", "pkg.stray: not placed in any layer of the table"]


def test_the_table_is_read_from_the_document_rows():
    text = "# x\n\n## Layers\n\n| layer | modules | what |\n|---|---|---|\n| top | `app`, `cli` | a |\n" \
           "| bottom | `low` | b |\n\n## Next\n| other | `x` | c |\n"
    assert layers_table(text) == [("top", ["app", "cli"]), ("bottom", ["low"])]
