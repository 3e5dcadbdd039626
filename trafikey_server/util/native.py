"""The compiled core and kernels, and the switch that forces the pure path.

The typed core (``CORE``) is compiled by mypyc from the modules' own
source: the same ``.py`` files, their annotations read as C types, so that
an attribute of ``Client``, ``Command`` or ``Db`` read in compiled code is a
C field read. All of it is one group (``core__mypyc``): compiled modules
call each other directly and trust each other's classes, so the core runs
compiled whole or not at all. ``install()``, run when the package is first
imported, sends every core module to its ``.py`` source when the pure path
is forced or the build is stale (any core source differs from the one built).

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
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

# Relative to the package; setup.py reads these tuples to know what to compile.
KERNELS: tuple[str, ...] = (
    "protocol.creader",
    "protocol.cwriter",
    "values.cindex",
    "values.cstream",
    "execution.scripting.cbridge",
    "util.cbits",
)
CORE: tuple[str, ...] = (
    "services.client",
    "protocol.table",
    "protocol.resp",
    "execution.dispatch",
    "keyspace.db",
    "keyspace.access",
    "values.record",
    "values.zset",
    "values.list",
    "values.hash",
    "values.set",
    "commands.string",
    "commands.list",
    "commands.zset",
    "commands.hash",
    "commands.set",
    "values.stream",
    "commands.stream",
    "values.hyperloglog",
    "commands.hyperloglog",
    "commands.keys",
    "commands.scripting",
    "commands.emq.core",
    "commands.emq.admit",
    "commands.emq.claim",
    "commands.emq.lease",
    "commands.emq.move",
    "commands.emq.settle",
    "commands.emq.sweep",
    "execution.scripting.engine",
    "util.geohash",
    "commands.geo",
    "commands.bitmap",
    "util.floats",
    "util.parsing",
    "values.listpack",
    "values.string",
    "protocol.args",
    "services.pubsub",
    "commands.pubsub",
    "services.blocking",
    "execution.persist.aof",
    "services.tracking",
    "util.clock",
    "util.glob",
    "network.connection",
    "server",
)
CORE_GROUP = "core__mypyc"  # the shared library of the core: trafikey_server/core__mypyc.*.so

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


def _built(path: Path) -> bool:
    """An extension module for ``path`` (a source path, its suffix ignored)."""
    return any(path.with_name(path.stem + s).exists() for s in importlib.machinery.EXTENSION_SUFFIXES)


def _recorded() -> dict[str, object]:
    try:
        recorded = json.loads(MANIFEST.read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def core_source(name: str) -> Path:
    return PACKAGE_DIR.joinpath(*name.split(".")).with_suffix(".py")


def _core_state() -> str:
    """``live``, ``pure`` (forced), ``stale`` (built from other sources) or ``none`` (not built)."""
    if not any(_built(core_source(m)) for m in CORE):
        return "none"
    if pure_forced():
        return "pure"
    recorded = _recorded()
    if not _built(PACKAGE_DIR / CORE_GROUP):
        return "stale"
    for m in CORE:
        src = core_source(m)
        if not _built(src):
            return "stale"
        if src.exists() and recorded.get(m) != source_hash(src):
            return "stale"
    return "live"


class _SourceFirst(importlib.abc.MetaPathFinder):
    """Imports the core's modules from their ``.py`` source, past the
    extensions beside them (which the path finder would take first)."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname not in self.names:
            return None
        return importlib.util.spec_from_file_location(fullname, core_source(fullname[len(PACKAGE) + 1:]))


core_state = "none"


def install() -> None:
    """Choose the core's path, once, before any core module is imported."""
    global core_state
    if any(isinstance(f, _SourceFirst) for f in sys.meta_path):
        return
    core_state = _core_state()
    if core_state in ("pure", "stale"):
        sys.meta_path.insert(0, _SourceFirst(frozenset(f"{PACKAGE}.{m}" for m in CORE)))


def core_live() -> bool:
    return core_state == "live"


def _fresh(name: str) -> bool:
    """Built, and from the source beside it (an installed wheel may ship no
    source: its build is then the only one there is)."""
    src = _source(name)
    if not any((src.parent / (src.stem + s)).exists() for s in importlib.machinery.EXTENSION_SUFFIXES):
        return False
    if not src.exists():
        return True
    return _recorded().get(name) == source_hash(src)


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
    parts = []
    if core_state == "live":
        parts.append(f"compiled core ({len(CORE)} modules)")
    elif core_state == "stale":
        parts.append("pure Python core (its build is stale: python3 setup.py build_ext --inplace)")
    if live:
        parts.append(f"compiled kernels {', '.join(live)}")
    if parts:
        return "Hot path: " + "; ".join(parts)
    return "Hot path: pure Python (no compiled build)"
