"""A module's private names stay its own, checked on the source.

A name with a leading underscore (not a dunder) belongs to the module that
defines it. No module of ``trafikey_server`` may import one from another
module of the package (``from .x import _y``), nor read one off a package
module it imported (``x._y``, ``from . import x`` then ``x._y``); what
another module needs is made public where it lives. A module's own private
names, and those of modules outside the package, are not this test's
business.

Run this file alone to see every offence with its file and line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE_NAME = "trafikey_server"
PACKAGE = Path(__file__).resolve().parents[2] / PACKAGE_NAME


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(path: Path) -> tuple[str, bool]:
    """The dotted name of a source file, and whether it is a package's __init__."""
    parts = [PACKAGE_NAME, *path.relative_to(PACKAGE).with_suffix("").parts]
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _is_module(dotted: str) -> bool:
    """Whether a dotted name is a module or package of the package."""
    if dotted != PACKAGE_NAME and not dotted.startswith(PACKAGE_NAME + "."):
        return False
    rel = Path(*dotted.split(".")[1:]) if "." in dotted else Path()
    base = PACKAGE / rel
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _resolve(node: ast.ImportFrom, here: str, is_init: bool) -> str | None:
    """The absolute module a ``from ... import`` reads from."""
    if node.level == 0:
        return node.module
    parts = here.split(".")
    if not is_init:
        parts = parts[:-1]
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    base = ".".join(parts)
    return f"{base}.{node.module}" if node.module else base


def offences(path: Path, source: str | None = None) -> Iterator[str]:
    """Each private name the module at path (with ``source`` in place of
    the file's text, if given) takes from another module of the package."""
    here, is_init = _module_name(path)
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    where = path.relative_to(PACKAGE.parent)
    # Local names bound to package modules (import x as m, from . import m).
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            src = _resolve(node, here, is_init)
            if src is None or not _is_module(src) or src == here:
                continue
            for alias in node.names:
                full = f"{src}.{alias.name}"
                if _is_module(full):
                    modules[alias.asname or alias.name] = full
                if _private(alias.name):
                    yield f"{where}:{node.lineno}: imports {alias.name} from {src}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and _is_module(alias.name):
                    modules[alias.asname] = alias.name
    if not modules:
        return
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in modules and _private(node.attr)):
            yield f"{where}:{node.lineno}: reads {node.attr} off {modules[node.value.id]}"


def test_no_private_names_across_modules() -> None:
    found = [o for path in sorted(PACKAGE.rglob("*.py")) for o in offences(path)]
    assert not found, "private names used outside their module:\n" + "\n".join(found)


def test_the_check_sees_an_offence() -> None:
    """The check itself: a private import and a private read are both
    caught; a module's own names and dunders are not."""
    probe = PACKAGE / "commands" / "probe.py"
    found = list(offences(probe, "from ..values.string import _copy, __doc__\n"
                                 "from ..values import string\nx = string._digest\n_own = 1\ny = _own\n"))
    assert len(found) == 2, found
    assert found[0].startswith("trafikey_server/commands/probe.py:1: imports _copy")
    assert "reads _digest off trafikey_server.values.string" in found[1]
