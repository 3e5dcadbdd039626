"""The compiled core and kernels and the pure path: which runs, and why.

A checkout built with ``python3 setup.py build_ext --inplace`` (or an install
built with a C compiler) runs the typed core of
``trafikey_server.util.native.CORE`` compiled and the kernels of
``KERNELS``; ``TRAFIKEY_PURE_PYTHON=1`` forces the pure code, and nothing
built from another version of its source is ever loaded: a silent fallback
cannot pass for the compiled path, nor a stale build for the new code.
Each kernel's own tests compare it with the pure code on the same inputs;
the whole suite runs once on each path (scripts/test.sh).
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.servers import start_trafikey

from trafikey_server.util import native

ROOT = Path(__file__).resolve().parents[2]
BUILT = native.built()
CORE_BUILT = native._core_state() in ("live", "pure")  # built from the sources beside it
needs_core = pytest.mark.skipif(not CORE_BUILT, reason="the core is not compiled in this checkout")
needs_build = pytest.mark.skipif(not BUILT, reason="no compiled build in this checkout "
                                 "(python3 setup.py build_ext --inplace)")


# What a build of the whole compiled layer says it runs.
LIVE = (f"compiled core ({len(native.CORE)} modules); " if CORE_BUILT else "") + f"compiled kernels {', '.join(BUILT)}"


def _run(code: str, pure: bool) -> str:
    env = dict(os.environ)
    env.pop(native.PURE_ENV, None)
    if pure:
        env[native.PURE_ENV] = "1"
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=str(ROOT), capture_output=True, text=True,
                          check=True).stdout


LOADS = ("from trafikey_server.util import native\n"
         "for k in native.KERNELS:\n"
         "    print(k, native.load(k) is not None)\n"
         "print('describe', native.describe())\n")


CORE_FILES = ("import sys\nfrom trafikey_server.util import native\n"
              "for m in native.CORE:\n"
              "    __import__('trafikey_server.' + m)\n"
              "    print(m, sys.modules['trafikey_server.' + m].__file__)\n")


def _kinds(out: str) -> dict[str, str]:
    """Each core module: ``ext`` when its extension was loaded, ``py`` for its source."""
    kinds = {}
    for line in out.splitlines():
        name, path = line.split(" ", 1)
        ext = any(path.endswith(s) for s in importlib.machinery.EXTENSION_SUFFIXES)
        kinds[name] = "ext" if ext else "py" if path.endswith(".py") else path
    return kinds


@needs_core
def test_every_built_core_module_is_the_one_loaded() -> None:
    """Not one module of a compiled core may come from its .py: compiled
    modules trust each other's classes, and a fallback would pass as compiled."""
    assert _kinds(_run(CORE_FILES, pure=False)) == {m: "ext" for m in native.CORE}


def test_pure_forced_loads_the_core_from_source() -> None:
    assert _kinds(_run(CORE_FILES, pure=True)) == {m: "py" for m in native.CORE}


@needs_core
def test_a_stale_core_runs_whole_from_source(tmp_path: Path) -> None:
    """One core source edited after the build: every core module runs from
    its source (a copy of the package; the checkout stays untouched)."""
    pkg = tmp_path / "trafikey_server"
    shutil.copytree(native.PACKAGE_DIR, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    edited = pkg / "execution" / "dispatch.py"
    edited.write_text(edited.read_text() + "\n# edited after the build\n")
    env = dict(os.environ)
    env.pop(native.PURE_ENV, None)
    env["PYTHONPATH"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", CORE_FILES + "print('describe', native.describe())"], env=env,
                         cwd=str(tmp_path), capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[-1].startswith("describe Hot path: pure Python core (its build is stale")
    assert _kinds("\n".join(lines[:-1])) == {m: "py" for m in native.CORE}
    for path in lines[:-1]:
        assert str(tmp_path) in path  # the copy, not the checkout


def test_every_kernel_has_its_source() -> None:
    assert native.KERNELS, "no kernel is named"
    for k in native.KERNELS:
        assert native.PACKAGE_DIR.joinpath(*k.split(".")).with_suffix(".pyx").is_file(), k


def test_pure_forced_loads_no_kernel() -> None:
    lines = dict(line.split(" ", 1) for line in _run(LOADS, pure=True).splitlines())
    for k in native.KERNELS:
        assert lines[k] == "False", k
    assert lines["describe"] == "Hot path: pure Python (TRAFIKEY_PURE_PYTHON is set)"


@needs_build
def test_a_build_runs_its_kernels() -> None:
    lines = dict(line.split(" ", 1) for line in _run(LOADS, pure=False).splitlines())
    for k in BUILT:
        assert lines[k] == "True", k
    assert lines["describe"] == f"Hot path: {LIVE}"


@needs_build
def test_a_stale_build_is_not_loaded(tmp_path: Path) -> None:
    """A kernel whose recorded hash is not its source's: the pure path runs.
    The checkout's own manifest stays untouched (a run of the suite on the
    other path may be reading it): a copy with one hash changed stands in."""
    name = BUILT[0]
    stale = json.loads(native.MANIFEST.read_text())
    stale[name] = "0" * 64
    manifest = tmp_path / "native.json"
    manifest.write_text(json.dumps(stale))
    code = ("from pathlib import Path\nfrom trafikey_server.util import native\n"
            f"native.MANIFEST = Path({str(manifest)!r})\n" + LOADS)
    lines = dict(line.split(" ", 1) for line in _run(code, pure=False).splitlines())
    assert lines[name] == "False"
    for k in BUILT[1:]:
        assert lines[k] == "True", k


def test_the_start_up_log_names_the_path() -> None:
    """The server says at start which path it runs (the environment is the
    suite's: this run's path)."""
    p = start_trafikey()
    try:
        log = p.output()
    finally:
        p.stop()
    if native.pure_forced():
        assert "Hot path: pure Python (TRAFIKEY_PURE_PYTHON is set)" in log
    elif BUILT:
        assert f"Hot path: {LIVE}" in log
    else:
        assert "Hot path: pure Python (no compiled build)" in log
