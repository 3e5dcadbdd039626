"""The compiled kernels and the pure path: which runs, and why.

A checkout built with ``python3 setup.py build_ext --inplace`` (or an install
built with a C compiler) runs the kernels of
``trafikey_server.util.native.KERNELS``; ``TRAFIKEY_PURE_PYTHON=1`` forces
the pure code, and a kernel built from another version of its ``.pyx`` is
never loaded. Each kernel's own tests compare it with the pure code on the
same inputs; the whole suite runs once on each path (scripts/test.sh).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.servers import start_trafikey

from trafikey_server.util import native

ROOT = Path(__file__).resolve().parents[2]
BUILT = native.built()
needs_build = pytest.mark.skipif(not BUILT, reason="no compiled build in this checkout "
                                 "(python3 setup.py build_ext --inplace)")


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
    assert lines["describe"] == f"Hot path: compiled kernels {', '.join(BUILT)}"


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
        assert f"Hot path: compiled kernels {', '.join(BUILT)}" in log
    else:
        assert "Hot path: pure Python (no compiled build)" in log
