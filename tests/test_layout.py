"""The package's layout keeps its promises (docs/architecture.md): no import cycle, no
private name taken from another module, layers that import only downwards, modules of a
readable size.  Read from the source with ``ast``: nothing is imported."""

from __future__ import annotations

import ast
import re
from functools import lru_cache
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
    "amuse": {"run", "gravity"},            # the AMUSE worker drives a Simulation
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


@lru_cache(maxsize=None)
def _parsed(text: str) -> ast.Module:
    """The syntax tree of a file's ``text``, parsed once per text for the whole module
    (each rule reads every module; the trees are only read)."""
    return ast.parse(text)


def parse(path: Path) -> ast.Module:
    """The syntax tree of ``path`` as it is now (a planted file's own text included)."""
    return _parsed(path.read_text())


def resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: Path, top_level_only: bool):
    """(imported module, names, line) of every import of the package's modules."""
    tree = parse(path)
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
        doc = ast.get_docstring(parse(path)) or ""
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


# -- one force pipeline, one owner of device memory (issue 55): the rules below count the
# imports inside functions too (an import that only runs late is still a dependency)

#: the package's root module: ``__version__`` and the lazy ``hybridtree.Simulation``; it
#: is the package itself, not one of its parts
ROOT_MODULE = "hybridtree"


def module_graph() -> dict[str, set[str]]:
    """Every module's imports of the package's modules, inside functions included."""
    return {m: {t for t, _, _ in imports(m, p, top_level_only=False)
                if t in MODULES and t not in (m, ROOT_MODULE)}
            for m, p in MODULES.items()}


def part_graph() -> dict[str, set[str]]:
    """Which parts of the package (``part_of``) each part imports, inside functions
    included; the root module left out (:data:`ROOT_MODULE`)."""
    out: dict[str, set[str]] = {}
    for m, targets in module_graph().items():
        out.setdefault(part_of(m), set()).update(
            part_of(t) for t in targets if part_of(t) != part_of(m))
    return out


def components(graph: dict[str, set[str]]) -> dict[str, int]:
    """The strongly connected component of each node of ``graph`` (a number; nodes that
    reach each other share it): Kosaraju's two passes, iterative."""
    nodes = sorted(set(graph) | {t for ts in graph.values() for t in ts})
    done, order = set(), []
    for root in nodes:
        if root in done:
            continue
        done.add(root)
        stack = [(root, iter(sorted(graph.get(root, ()))))]
        while stack:
            node, rest = stack[-1]
            t = next(rest, None)
            if t is None:
                stack.pop()
                order.append(node)
            elif t not in done:
                done.add(t)
                stack.append((t, iter(sorted(graph.get(t, ())))))
    back: dict[str, set[str]] = {}
    for node, ts in graph.items():
        for t in ts:
            back.setdefault(t, set()).add(node)
    comp: dict[str, int] = {}
    for root in reversed(order):
        if root in comp:
            continue
        comp[root], todo = len(comp), [root]
        while todo:
            for t in back.get(todo.pop(), ()):
                if t not in comp:
                    comp[t] = comp[root]
                    todo.append(t)
    return comp


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every simple circle of ``graph``, each once, starting at its least node.  A circle
    stays inside one strongly connected component (:func:`components`), so the search
    follows only edges within the start's: the same circles, without walking every path
    of the acyclic rest (3 of the layout tests' 17 CPU s)."""
    found = []
    comp = components(graph)

    def walk(start: str, node: str, path: list[str]) -> None:
        for t in sorted(graph.get(node, ())):
            if comp[t] != comp[start]:
                continue
            if t == start:
                found.append(path + [start])
            elif t > start and t not in path:
                walk(start, t, path + [t])

    for start in sorted(graph):
        walk(start, start, [start])
    return found


def test_no_module_imports_in_a_circle_counting_imports_in_functions():
    """An import inside a function does not make a circle of modules harmless: it only
    hides it from the module-level check (io had gadget_units -> gadget2_read -> box_ics
    -> box_hdf5 -> gadget_binary -> gadget_units)."""
    found = [" -> ".join(c) for c in circles(module_graph())]
    assert not found, "\n".join(found)


def test_no_two_packages_import_each_other():
    """Two parts that import each other are one part in two folders: one of them holds
    what both need, or the shared thing moves below both."""
    graph = part_graph()
    bad = [f"{a} <-> {b}" for a in sorted(graph) for b in sorted(graph[a])
           if a < b and a in graph.get(b, ())]
    assert not bad, "\n".join(bad)


def test_no_circle_of_packages():
    """No circle through three parts or more (two: the test above)."""
    found = [" -> ".join(c) for c in circles(part_graph()) if len(c) > 3]
    assert not found, "\n".join(found)


#: the one module that compares parts of a force by name (the part type's own)
PART_MODULE = "hybridtree.gravity.parts"


def part_comparisons(path: Path) -> list[int]:
    """Lines of ``path`` comparing something named ``part`` (a name or an attribute) with
    ``==`` or ``!=``."""
    lines = []
    for node in ast.walk(parse(path)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left] + node.comparators
        for i, op in enumerate(node.ops):
            if isinstance(op, (ast.Eq, ast.NotEq)) and any(
                    (isinstance(x, ast.Name) and x.id == "part")
                    or (isinstance(x, ast.Attribute) and x.attr == "part")
                    for x in sides[i:i + 2]):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_parts_are_compared_only_by_their_type():
    """What a part of a force means (short, long, hard, soft, full) is its type's to say
    (``gravity/parts.py``), not a string comparison in each caller."""
    bad = [f"{m}:{line} compares part with == or !="
           for m, path in MODULES.items() if m != PART_MODULE
           for line in part_comparisons(path)]
    assert not bad, "\n".join(bad)


#: calls whose value cannot change: a module-level name bound to one is a constant
IMMUTABLE_CALLS = {"re.compile", "logging.getLogger", "np.dtype", "MappingProxyType",
                   "tuple", "frozenset", "float", "int", "str", "bool", "bytes"}
#: return annotations of a module's own functions whose values cannot change
IMMUTABLE_RETURNS = ("int", "float", "str", "bool", "bytes", "tuple", "frozenset")

#: module-level names that hold mutable objects or are rebound by ``global``, each with
#: the reason it is one: everything else mutable (a cache, a registry, a switch) is a
#: field of the object that owns it (a runtime, a workspace, an options value), and a
#: read-only table is a ``MappingProxyType`` or a tuple
MUTABLE_GLOBALS = {
    ("hybridtree.config.schema", "SCHEMA"):
        "the settings' table (nested dicts), written once here; every reader only reads "
        "it (config/settings.py builds its own dicts)",
    ("hybridtree.analysis.figure_maps", "CMAP"):
        "a matplotlib colormap, made once; the figures only read it",
    ("hybridtree.analysis.halos.massfunction", "_COLOSSUS_LOCK"):
        "a lock around colossus's own per-process cosmology, which is global in colossus",
    ("hybridtree.device.choice", "PROCESS_DEVICES"):
        "the process's devices (probes, choices, one runtime per device, the slot): an "
        "OpenCL context belongs to the process and every part of a run shares it",
    ("hybridtree.device.drivers", "_UNREGISTERED"):
        "why the pip drivers could not be registered when device/ was imported (the ICD "
        "loader reads its configuration once per process), said once by list_devices",
    ("hybridtree.device.kernels", "_OPTION_SETS"):
        "the declarations of @option_sets, written when their modules are imported "
        "(like a class's methods), never during a run",
    ("hybridtree.faults", "_SPEC"):
        "the fault-injection hook of the failure tests: HYBRIDTREE_FAULT's text and its "
        "parse, parsed again when the text changes",
    ("hybridtree.faults", "_STEPS_DONE"):
        "the fault-injection hook: the last step a run passed, for kill_after",
}


def module_statements(body: list[ast.stmt]):
    """The statements a module runs when imported (inside if, try and with too; not
    those of its functions and classes)."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody"):
            if isinstance(node, (ast.If, ast.Try, ast.With)):
                yield from module_statements(getattr(node, field, []))
        for handler in getattr(node, "handlers", []):
            yield from module_statements(handler.body)


def frozen_types() -> set[str]:
    """Names of the package's classes whose instances cannot change: frozen dataclasses,
    NamedTuples."""
    out = set()
    for path in MODULES.values():
        for node in ast.walk(parse(path)):
            if isinstance(node, ast.ClassDef) and (
                    any("frozen=True" in ast.unparse(d) for d in node.decorator_list)
                    or any(ast.unparse(b) in ("NamedTuple", "typing.NamedTuple")
                           for b in node.bases)):
                out.add(node.name)
    return out


def mutable_globals(path: Path, frozen: set[str]) -> list[tuple[str, int, str]]:
    """(name, line, what) of the module-level names of ``path`` bound to a list, dict or
    set (a literal, a comprehension) or to a call that may give a mutable object, and of
    those rebound with ``global``."""
    tree = parse(path)
    returns = {n.name: ast.unparse(n.returns) for n in tree.body
               if isinstance(n, ast.FunctionDef) and n.returns is not None}

    def mutable(value: ast.expr) -> bool:
        if isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp,
                              ast.SetComp)):
            return True
        if isinstance(value, ast.Call):
            name = ast.unparse(value.func)
            base = name.rsplit(".", 1)[-1]
            return not (name in IMMUTABLE_CALLS or base in frozen
                        or returns.get(name, "").startswith(IMMUTABLE_RETURNS))
        return False

    out = []
    for node in module_statements(tree.body):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if isinstance(node, ast.AugAssign) or mutable(value):
            out += [(name, node.lineno, ast.unparse(value)[:60]) for name in names
                    if name != "__all__"]
    out += [(name, node.lineno, "rebound with global") for node in ast.walk(tree)
            if isinstance(node, ast.Global) for name in node.names]
    return out


def test_no_mutable_module_level_globals():
    """A module-level cache, registry or switch is state no object owns: two runs of one
    process share it and a test can only change it by patching the module."""
    frozen = frozen_types()
    bad = [f"{m}:{line} {name} = {what}"
           for m, path in MODULES.items()
           for name, line, what in mutable_globals(path, frozen)
           if (m, name) not in MUTABLE_GLOBALS]
    assert not bad, "\n".join(bad)


def test_every_documented_mutable_global_exists():
    """An entry of MUTABLE_GLOBALS whose name is gone (or no longer mutable) goes too."""
    frozen = frozen_types()
    found = {(m, name) for m, path in MODULES.items()
             for name, _, _ in mutable_globals(path, frozen)}
    assert not set(MUTABLE_GLOBALS) - found, sorted(set(MUTABLE_GLOBALS) - found)


def test_the_layout_test_sees_late_imports_parts_and_globals(tmp_path, monkeypatch):
    """The rules above can fail: planted parts that import each other (inside a function),
    a circle of three parts, a module circle closed inside a function, a comparison of
    parts by name and module-level state are found."""
    files = {
        "px/a.py": "def f():\n    from ..py import b\n",
        "py/b.py": "from ..px import a\n",
        "pu/c.py": "from ..pv import d\n",
        "pv/d.py": "from ..pw import e\n",
        "pw/e.py": "def g():\n    from ..pu import c\n"
                   "def h(part):\n    return part != 'soft'\n",
        "pw/f.py": "CACHE = {}\nKEYS = dict(a=1)\nCONST = tuple(KEYS)\n"
                   "def g():\n    global FLAG\n    FLAG = True\n",
    }
    for name, text in files.items():
        path = tmp_path / "hybridtree" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        monkeypatch.setitem(MODULES, "hybridtree." + name[:-3].replace("/", "."), path)
    with pytest.raises(AssertionError, match="hybridtree.pu.c -> hybridtree.pv.d -> "
                                             "hybridtree.pw.e -> hybridtree.pu.c"):
        test_no_module_imports_in_a_circle_counting_imports_in_functions()
    with pytest.raises(AssertionError, match="px <-> py"):
        test_no_two_packages_import_each_other()
    with pytest.raises(AssertionError, match="pu -> pv -> pw -> pu"):
        test_no_circle_of_packages()
    with pytest.raises(AssertionError, match="hybridtree.pw.e:4 compares part"):
        test_parts_are_compared_only_by_their_type()
    with pytest.raises(AssertionError) as err:
        test_no_mutable_module_level_globals()
    found = set(re.findall(r"hybridtree\.pw\.f:\d+ (\w+) =", str(err.value)))
    assert found == {"CACHE", "KEYS", "FLAG"}


#: the tests' patches of a private or upper-case name (a module's private function, a
#: constant), each with why it stays; every other test passes an option or wraps a
#: documented public seam instead (``Comm.chunk_bytes``, ``transfer.wait_for``,
#: ``hdf5_write.unit_dataset``, ``plot.save_figure``, HYBRIDTREE_FAULT read when it changes)
PATCHED_NAMES = {
    ("tests/gravity/test_device_build.py", "PACK_UNION"):
        "the build's packing rule is a constant of the device build's kernels' arguments; "
        "the test loosens it to show the rule matters (no run chooses it)",
    ("tests/io/test_snapshot_streams.py", "TYPE_ROWS"):
        "the device state's chunk of rows per type count: 4 Mi rows, lowered so that "
        "1000 particles take several chunks (no run chooses it)",
    ("tests/io/test_snapshot_streams.py", "ROWS"):
        "the snapshot writer's rows per streamed chunk, lowered so that a small run "
        "streams in several chunks (no run chooses it)",
    ("tests/parallel/test_let_model.py", "CHUNK"):
        "scripts/model/let_model.py's particles per random stream (2^20), lowered for "
        "several streams at N = 8000; a script's constant, read by its helpers",
    ("tests/tools/test_vendor_compile.py", "WALK_AXES"):
        "the table of walk options the kernel-build tools read: the tests plant a bad "
        "or a single-valued axis to see the tools follow the table",
}


def _patched_name(name: str) -> bool:
    return (name.startswith("_") and not name.endswith("__")) or name.isupper()


def patched_names(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every private or upper-case name ``path`` patches: with
    ``monkeypatch.setattr(obj, "NAME", ...)`` (or the builtin ``setattr``), with
    ``monkeypatch.setattr("module.NAME", ...)`` or by assigning ``obj.NAME = ...``
    (attributes of ``self`` apart)."""
    out = []
    for node in ast.walk(parse(path)):
        names = []
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("setattr"):
            texts = [a.value for a in node.args if isinstance(a, ast.Constant)
                     and isinstance(a.value, str)]
            names = [t.rsplit(".", 1)[-1] for t in texts[:1]]
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.attr for t in targets if isinstance(t, ast.Attribute)
                     and not (isinstance(t.value, ast.Name) and t.value.id in ("self", "cls"))]
        out += [(node.lineno, n) for n in names if _patched_name(n)]
    return sorted(out)


def test_no_test_patches_a_private_or_upper_case_name():
    """A test changes what the code does through an option, a field or a documented seam
    (issue 55: a private name or a constant patched from outside is a contract nobody
    wrote down); the few that stay are in PATCHED_NAMES with their reason."""
    found = {(str(p.relative_to(ROOT)), line, name)
             for p in sorted((ROOT / "tests").rglob("*.py")) for line, name in patched_names(p)}
    bad = sorted(f"{f}:{line} patches {name}" for f, line, name in found
                 if (f, name) not in PATCHED_NAMES)
    assert not bad, "\n".join(bad)
    stale = set(PATCHED_NAMES) - {(f, name) for f, _, name in found}
    assert not stale, f"PATCHED_NAMES lists patches no test makes: {sorted(stale)}"


def test_the_layout_test_sees_a_patched_private_name(tmp_path):
    """The check above can fail: planted patches of a private name, a constant and a
    dotted path are found; a public name, a dunder and self's fields are not."""
    path = tmp_path / "test_x.py"
    path.write_text("def test(monkeypatch):\n"
                    "    monkeypatch.setattr(mod, '_wait', f)\n"
                    "    monkeypatch.setattr('a.b.CHUNK', 3)\n"
                    "    mod.LIMIT = 4\n"
                    "    monkeypatch.setattr(mod, 'wait_for', f)\n"
                    "    monkeypatch.setattr(Cls, '__call__', f)\n"
                    "    self._x = 1\n")
    assert patched_names(path) == [(2, "_wait"), (3, "CHUNK"), (4, "LIMIT")]
