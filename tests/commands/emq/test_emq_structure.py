"""Check-then-write is structural: the job-core verbs never write to the
keyspace themselves; every write goes through ``Plan.apply``.

This reads the verb modules' code instead of running them, so it holds for
every path, including ones no behavioural test reaches."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

EMQ = Path(__file__).resolve().parents[3] / "trafikey_server" / "commands" / "emq"
# Db's writing methods, and the dict/set writers a verb could reach through it.
WRITERS = {"set", "add", "delete", "touch", "set_expire", "persist", "clear", "_expire",
           "remove", "pop", "pop_min", "pop_max", "update", "setdefault", "discard"}


def _verb_modules() -> list[Path]:
    return sorted(p for p in EMQ.glob("*.py") if p.name not in ("core.py", "__init__.py"))


def test_there_are_verb_modules() -> None:
    assert len(_verb_modules()) >= 6


@pytest.mark.parametrize("path", _verb_modules(), ids=lambda p: p.name)
def test_verbs_only_write_through_a_plan(path: Path) -> None:
    tree = ast.parse(path.read_text())
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in WRITERS:
            receiver = node.func.value
            if isinstance(receiver, ast.Name) and receiver.id == "plan":
                continue  # by convention the Plan is always named "plan"
            bad.append(f"{path.name}:{node.lineno} .{node.func.attr}()")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript):
                    bad.append(f"{path.name}:{node.lineno} item assignment or deletion")
    assert bad == []
