"""The compiled kernels, and the switch that forces the pure path.

A few hot spots the profiles in bench/README.md name are written a second
time in Cython, as ``.pyx`` modules of this package (``KERNELS``). A build
with Cython and a C compiler (``pip install .``, or ``python3 setup.py
build_ext --inplace`` in a checkout) compiles them beside their source; the
module that uses a kernel asks ``load()`` for it and keeps its own pure
Python code for when there is none. Both paths answer byte for byte alike:
the whole test suite runs on each.

``load()`` returns None, so the pure code runs, in three cases:

- ``TRAFIKEY_PURE_PYTHON=1`` in the environment (one build then serves the
  test suite on both paths);
- no build: no compiler, no Cython, or ``TRAFIKEY_NO_COMPILE=1`` at install;
- a stale build: the ``.pyx`` beside the extension is not the source it was
  built from (the hash recorded in ``native.json`` at build time differs),
  so an old build never answers for new code.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import json
import os
from pathlib import Path
from types import ModuleType

# Relative to the package; setup.py reads this tuple to know what to compile.
KERNELS: tuple[str, ...] = (
    "protocol.creader",
    "values.cindex",
    "execution.scripting.cbridge",
)

PACKAGE = "trafikey_server"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
MANIFEST = PACKAGE_DIR / "native.json"
PURE_ENV = "TRAFIKEY_PURE_PYTHON"

_loaded: dict[str, ModuleType | None] = {}


def pure_forced() -> bool:
    return os.environ.get(PURE_ENV, "") not in ("", "0")


def source_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _source(name: str) -> Path:
    return PACKAGE_DIR.joinpath(*name.split(".")).with_suffix(".pyx")


def _fresh(name: str) -> bool:
    """Built, and from the source beside it (an installed wheel may ship no
    source: its build is then the only one there is)."""
    src = _source(name)
    if not any((src.parent / (src.stem + s)).exists() for s in importlib.machinery.EXTENSION_SUFFIXES):
        return False
    if not src.exists():
        return True
    try:
        recorded: object = json.loads(MANIFEST.read_text()).get(name)
    except (OSError, ValueError):
        return False
    return recorded == source_hash(src)


def load(name: str) -> ModuleType | None:
    """The compiled kernel ``name`` (one of KERNELS), or None when the pure
    path runs."""
    if name in _loaded:
        return _loaded[name]
    mod = None
    if not pure_forced() and _fresh(name):
        mod = importlib.import_module(f"{PACKAGE}.{name}")
    _loaded[name] = mod
    return mod


def built() -> list[str]:
    """The kernels a server started without TRAFIKEY_PURE_PYTHON would run."""
    return [k for k in KERNELS if _fresh(k)]


def describe() -> str:
    """One line for the start-up log: which path is live."""
    if pure_forced():
        return f"Hot path: pure Python ({PURE_ENV} is set)"
    live = built()
    if live:
        return f"Hot path: compiled kernels {', '.join(live)}"
    return "Hot path: pure Python (no compiled build)"
