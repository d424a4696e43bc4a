"""The package's layout keeps its promises (docs/architecture.md): no import cycle, no
private name taken from another module, layers that import only downwards, modules of a
readable size.  Read from the source with ``ast``: nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "hybridtree"
MAX_LINES = 400
#: a module longer than MAX_LINES says why in its docstring with these words
LONG_REASON = "longer than 400 lines because"

#: what each part of the package may import from the package (besides itself and the
#: bottom: particles, errors, faults, config)
BOTTOM = {"particles", "errors", "faults", "config"}
ALLOWED = {
    "device": set(),
    "io": set(),
    "cosmo": set(),
    "ics": {"cosmo"},
    "state": {"device"},
    "gravity": {"device", "state"},         # the engine fills the run state's fields
    "integrate": {"device", "gravity", "state"},
    "parallel": {"device", "gravity", "integrate", "state", "io", "ics", "cosmo"},
    "analysis": {"device", "gravity", "io", "cosmo", "ics", "integrate", "state"},
    "run": {"device", "gravity", "integrate", "state", "parallel", "io", "ics", "cosmo",
            "analysis"},
    "cli": {"device", "gravity", "integrate", "state", "parallel", "io", "ics", "cosmo",
            "analysis", "run"},
    "config": set(),
    "particles": set(),
    "errors": set(),
    "faults": set(),
    "__main__": {"cli"},
    "__init__": {"run"},
}


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = modules()


def resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: Path, top_level_only: bool):
    """(imported module, names, line) of every import of the package's modules."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            target = resolve(module, path, node)
            if not target.startswith("hybridtree"):
                continue
            names = [a.name for a in node.names]
            for name in names:          # ``from . import reduce``: a module by name
                if f"{target}.{name}" in MODULES:
                    yield f"{target}.{name}", [], node.lineno
            plain = [n for n in names if f"{target}.{n}" not in MODULES]
            if plain:
                yield target, plain, node.lineno
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("hybridtree"):
                    yield a.name, [], node.lineno


def part_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_private_name_is_imported_from_another_module():
    bad = [f"{m}:{line} imports {name} from {target}"
           for m, path in MODULES.items()
           for target, names, line in imports(m, path, top_level_only=False)
           for name in names
           if name.startswith("_") and not name.endswith("__") and target != m]
    assert not bad, "\n".join(bad)


def test_no_import_cycle_at_module_level():
    graph = {m: {t for t, _, _ in imports(m, p, top_level_only=True) if t in MODULES and t != m}
             for m, p in MODULES.items()}
    # a package's __init__ runs before its modules: importing a.b imports a first
    for m in list(graph):
        parent = m.rsplit(".", 1)[0]
        for t in list(graph[m]):
            while "." in t:
                t = t.rsplit(".", 1)[0]
                if t in MODULES and t != m and not m.startswith(t + "."):
                    graph[m].add(t)
    state: dict[str, int] = {}
    cycles = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append(" -> ".join(stack[stack.index(t):] + [t]) if t in stack
                              else f"{m} -> {t}")
            elif t not in state:
                visit(t, stack + [t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert not cycles, "\n".join(cycles)


def test_layers_import_only_downwards():
    bad = []
    for m, path in MODULES.items():
        part = part_of(m)
        allowed = ALLOWED.get(part)
        assert allowed is not None, f"{m}: a new part of the package; add it to ALLOWED"
        for target, _, line in imports(m, path, top_level_only=False):
            other = part_of(target)
            if target == "hybridtree":      # the package itself: __version__
                continue
            if other != part and other not in BOTTOM and other not in allowed:
                bad.append(f"{m}:{line} ({part}) imports {target} ({other})")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_are_of_a_readable_size(module):
    path = MODULES[module]
    lines = len(path.read_text().splitlines())
    if lines > MAX_LINES:
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert LONG_REASON in doc.replace("\n", " "), (
            f"{path.relative_to(ROOT)}: {lines} lines; split it, or say in its docstring "
            f"why it is '{LONG_REASON} ...'")


def test_the_layout_test_sees_a_private_import_and_a_cycle(tmp_path, monkeypatch):
    """The checks above can fail: a planted private import and cycle are found."""
    a = tmp_path / "hybridtree" / "a.py"
    b = tmp_path / "hybridtree" / "b.py"
    a.parent.mkdir()
    a.write_text("from .b import _hidden\n")
    b.write_text("from . import a\n_hidden = 1\n")
    found = list(imports("hybridtree.a", a, True))
    assert ("hybridtree.b", ["_hidden"], 1) in found
    monkeypatch.setitem(MODULES, "hybridtree.a", a)
    monkeypatch.setitem(MODULES, "hybridtree.b", b)
    with pytest.raises(AssertionError, match="_hidden"):
        test_no_private_name_is_imported_from_another_module()
    with pytest.raises(AssertionError, match="hybridtree.a -> hybridtree.b"):
        test_no_import_cycle_at_module_level()
