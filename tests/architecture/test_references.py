"""The files the prose names exist.

Docstrings, comments and the developer docs guide a newcomer by naming
files (``values/list.py``, ``tests/commands/list/``); a rename that leaves
them behind sends the reader to nothing. This test reads every such
reference — in the docstrings and comments of the package, tools/, bench/ and
scripts/, and in README.md,
CONTRIBUTING.md, docs/ and tests/README.md — and fails on one that names no
file or folder of the repository. A bare name (``record.py``) may sit
anywhere in the tree; a path must match the end of a real one.
"""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A file name or path with one of the repository's own kinds of file.
REF = re.compile(r"(?<![\w/.$*-])((?:[\w.-]+/)*[\w-]+\.(?:py|pyx|md|lua|json|txt|sh|toml))\b")
# A folder path written as such (``tests/commands/list/``).
FOLDER = re.compile(r"(?<![\w/.$*-])((?:tests|trafikey_server|docs|tools|bench|compat|scripts)(?:/[\w.-]+)*/)")
# What the prose names that a run makes rather than the repository holds.
MADE_BY_RUNS = {"results.md", "results.json", "native.json", "out.json", "report.md"}


def tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split() if (ROOT / f).exists()]


def known(files: list[str]) -> tuple[set[str], set[str]]:
    names = set(files)
    folders = {str(Path(f).parent) + "/" for f in files}
    for f in list(folders):
        parts = f.rstrip("/").split("/")
        folders.update("/".join(parts[:i]) + "/" for i in range(1, len(parts)))
    return names, folders


def exists(ref: str, names: set[str], folders: set[str], where: str = "") -> bool:
    """Whether ref names a file (or, ending in /, a folder) of the tree; a
    ref starting with ../ is taken from the folder of the file ``where``."""
    if ref.startswith("../") and where:
        ref = os.path.normpath(os.path.join(os.path.dirname(where), ref))
        return ref in names or ref + "/" in folders
    ref = ref.removeprefix("./")
    if Path(ref).name in MADE_BY_RUNS or "/out/" in ref:
        return True
    dotted = ref.replace(".", "/")
    if "/" not in ref and (dotted + "/" in folders or dotted + ".py" in names):
        return True  # a dotted module path (``trafikey_server.lua``)
    if ref.endswith("/"):
        return any(f == ref or f.endswith("/" + ref) for f in folders)
    return any(f == ref or f.endswith("/" + ref) for f in names)


def prose_of_module(path: Path) -> Iterator[tuple[int, str]]:
    """The docstrings and comments of a Python source, with their lines."""
    text = path.read_text()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                yield body[0].lineno, body[0].value.value
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string


def prose_of_doc(path: Path) -> Iterator[tuple[int, str]]:
    yield from enumerate(path.read_text().splitlines(), 1)


def sources(files: list[str]) -> Iterator[tuple[str, Iterator[tuple[int, str]]]]:
    for f in files:
        if f.startswith(("trafikey_server/", "tools/", "bench/", "scripts/")) and f.endswith((".py", ".pyx")):
            if f.endswith(".pyx"):
                yield f, (x for x in prose_of_doc(ROOT / f) if x[1].lstrip().startswith(("#", '"""')))
            else:
                yield f, prose_of_module(ROOT / f)
        elif f in ("README.md", "CONTRIBUTING.md", "tests/README.md") or (f.startswith("docs/") and f.endswith(".md")):
            yield f, prose_of_doc(ROOT / f)


def test_the_files_the_prose_names_exist() -> None:
    files = tracked()
    names, folders = known(files)
    bad = []
    for f, prose in sources(files):
        for line, text in prose:
            for pattern in (REF, FOLDER):
                for m in pattern.finditer(text):
                    if not exists(m.group(1), names, folders, f):
                        bad.append(f"{f}:{line}: {m.group(1)}")
    assert not bad, "names of files that do not exist:\n  " + "\n  ".join(sorted(set(bad)))


def test_a_stale_name_is_caught() -> None:
    names, folders = known(["trafikey_server/values/list.py", "tests/commands/list/test_list.py"])
    assert exists("values/list.py", names, folders)
    assert exists("tests/commands/list/", names, folders)
    assert not exists("values/list_type.py", names, folders)
    assert not exists("tests/lists/", names, folders)
