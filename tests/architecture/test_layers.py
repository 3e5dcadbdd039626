"""The package's layers, one way, checked on the source.

Every module of ``trafikey_server`` sits in one layer; a module may import
(at run time: at module level or inside a function, ``if TYPE_CHECKING:``
blocks aside) only modules of its own layer or of lower ones, and the
imports of the whole package form no cycle. A new module must be given a
layer here, or this test fails and names it.

Run this file alone to see every offending import with its line and, for a
cycle, the whole chain.
"""

from __future__ import annotations

import ast
import fnmatch
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "trafikey_server"

# Lowest first; each layer is a folder of the package (its name, then every
# module below it), so the layout on disk is the layering. The package's own
# __init__ and the twin scripts' loader (``lua``, data) sit with the
# utilities; the entry points stand at the top level beside ``server``.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("utilities", ("", "util", "util.*", "lua")),
    ("protocol", ("protocol", "protocol.*")),
    ("value types", ("values", "values.*")),
    ("keyspace", ("keyspace", "keyspace.*")),
    ("services", ("services", "services.*")),
    ("execution", ("execution", "execution.*")),
    ("commands", ("commands", "commands.*")),
    ("network", ("network", "network.*")),
    ("server", ("server", "crash")),
    # Entry points and tools outside the served process: nothing imports them.
    ("entry points", ("cli", "__main__", "check", "connector", "pytest_plugin")),
]
# Checked before LAYERS: modules a wider pattern above would otherwise claim.
EXCEPTIONS: tuple[str, ...] = ()

ENTRY_POINTS = {name for layer, names in LAYERS if layer == "entry points" for name in names}
COMMANDS = LAYERS.index(next(x for x in LAYERS if x[0] == "commands"))


def modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def layer_of(name: str) -> int | None:
    for i, (_, patterns) in enumerate(LAYERS):
        if name in EXCEPTIONS and name not in patterns:
            continue
        if any(fnmatch.fnmatchcase(name, p) for p in patterns):
            return i
    return None


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _package_of(name: str, path: Path) -> list[str]:
    if name == "":
        return []
    return name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]


def _targets(node: ast.Import | ast.ImportFrom, package: list[str], known: set[str]) -> Iterator[str]:
    """The modules of the package an import statement names."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name == "trafikey_server" or alias.name.startswith("trafikey_server."):
                yield alias.name.removeprefix("trafikey_server").lstrip(".")
        return
    if node.level:
        base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
        mod = ".".join(base + ([node.module] if node.module else []))
    elif node.module and (node.module == "trafikey_server" or node.module.startswith("trafikey_server.")):
        mod = node.module.removeprefix("trafikey_server").lstrip(".")
    else:
        return
    for alias in node.names:
        sub = f"{mod}.{alias.name}" if mod else alias.name
        yield sub if sub in known else mod


def run_time_imports(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(module imported, line) for every import of the package that runs,
    wherever it stands, except under ``if TYPE_CHECKING:``."""
    package = _package_of(name, path)

    def target(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
        return _targets(node, package, known)

    def walk(node: ast.AST) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for stmt in child.orelse:
                    yield from walk_one(stmt)
                continue
            yield from walk_one(child)

    def walk_one(node: ast.AST) -> Iterator[tuple[str, int]]:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for mod in target(node):
                yield mod, node.lineno
        else:
            yield from walk(node)

    yield from walk(ast.parse(path.read_text(), str(path)))


def hint_imports(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(module imported, line) for the imports under ``if TYPE_CHECKING:``,
    made for type hints only."""
    package = _package_of(name, path)
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.If) and _type_checking(node):
            for stmt in node.body:
                for inner in ast.walk(stmt):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)):
                        for mod in _targets(inner, package, known):
                            yield mod, inner.lineno


def graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: first line}."""
    mods = modules()
    known = set(mods)
    g: dict[str, dict[str, int]] = {}
    for name, path in mods.items():
        edges: dict[str, int] = {}
        for mod, line in run_time_imports(name, path, known):
            if mod != name and mod in known:
                edges.setdefault(mod, line)
        g[name] = edges
    return g


def _show(name: str) -> str:
    return f"trafikey_server.{name}" if name else "trafikey_server"


def _at(g: dict[str, dict[str, int]], a: str, b: str) -> str:
    path = modules()[a].relative_to(PACKAGE.parent)
    return f"{_show(a)} -> {_show(b)}  ({path}:{g[a][b]})"


def find_cycle(g: dict[str, dict[str, int]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(g[n]):
            if state.get(m) == 1:
                return [*stack[stack.index(m):], m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(g):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_every_module_has_a_layer() -> None:
    missing = [_show(n) for n in modules() if layer_of(n) is None]
    assert not missing, "modules with no layer (add them to LAYERS in this file):\n  " + "\n  ".join(missing)


def test_no_import_cycle() -> None:
    g = graph()
    cycle = find_cycle(g)
    assert cycle is None, "an import cycle:\n  " + "\n  ".join(_at(g, a, b) for a, b in itertools.pairwise(cycle))


def test_nothing_below_commands_imports_a_command_module() -> None:
    g = graph()
    bad = [_at(g, a, b) for a, edges in g.items() for b in edges
           if (layer_of(a) or 0) < COMMANDS and layer_of(b) == COMMANDS]
    assert not bad, "command modules imported from below commands/:\n  " + "\n  ".join(bad)


def test_only_entry_points_import_server() -> None:
    g = graph()
    bad = [_at(g, a, "server") for a, edges in g.items() if "server" in edges and a not in ENTRY_POINTS]
    assert not bad, ("server imported at run time (use a TYPE_CHECKING import for hints):\n  "
                     + "\n  ".join(bad))


# Below the command handlers a type hint may name a higher layer only as
# listed here (module pattern, pattern of what it names): a value type's
# callbacks take the database, the database names its watchers and its
# notifier, and a client carries the whole server up to the handlers. Any
# other module there types what it uses of a higher layer with a Protocol
# of its own (services/host.py, execution/persist/host.py, ...), which mypy
# checks where the real object is handed over.
HINTS_UPWARD: tuple[tuple[str, str], ...] = (
    ("values.*", "keyspace.*"),
    ("keyspace.*", "services.*"),
    ("services.client", "server"),
)


def test_below_the_commands_hints_go_down_the_layers() -> None:
    mods = modules()
    known = set(mods)
    bad = []
    for name, path in mods.items():
        la = layer_of(name)
        if la is None or la >= COMMANDS:
            continue
        for mod, line in hint_imports(name, path, known):
            lb = layer_of(mod)
            if lb is None or lb <= la or LAYERS[lb][0] == "entry points":
                continue
            if any(fnmatch.fnmatchcase(name, a) and fnmatch.fnmatchcase(mod, b) for a, b in HINTS_UPWARD):
                continue
            bad.append(f"{_show(name)} -> {_show(mod)} ({mods[name].relative_to(PACKAGE.parent)}:{line})")
    assert not bad, ("a type hint below the commands names a higher layer (type what is used with a Protocol):\n  "
                     + "\n  ".join(bad))


def test_imports_go_down_the_layers() -> None:
    g = graph()
    bad = []
    for a, edges in g.items():
        la = layer_of(a)
        for b in edges:
            lb = layer_of(b)
            if la is not None and lb is not None and lb > la:
                bad.append(f"{_at(g, a, b)}: {LAYERS[la][0]} imports {LAYERS[lb][0]}")
    assert not bad, "imports from a lower layer to a higher one:\n  " + "\n  ".join(bad)


@pytest.mark.parametrize("source, expected", [
    ("import trafikey_server.db\n", ["db"]),
    ("from .db import Db\n", ["db"]),
    ("from . import db\n", ["db"]),
    ("def f():\n    from .db import Db\n", ["db"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .db import Db\n", []),
    ("import typing\nif typing.TYPE_CHECKING:\n    from .db import Db\nelse:\n    from .resp import OK\n", ["resp"]),
])
def test_the_walk_sees_run_time_imports_only(tmp_path: Path, source: str, expected: list[str]) -> None:
    """The checks above are only as good as this walk: it must see imports
    inside functions and skip those made for type checking only."""
    path = tmp_path / "mod.py"
    path.write_text(source)
    assert [m for m, _ in run_time_imports("mod", path, {"db", "resp"})] == expected


def test_a_cycle_is_found_and_shown() -> None:
    g = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3}, "d": {}}
    assert find_cycle(g) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}}) is None
