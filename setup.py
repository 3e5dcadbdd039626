"""The optional compiled layer: the typed core (mypyc) and the kernels (Cython).

pyproject.toml holds the project's metadata; this file only adds the
extension modules. The modules named in trafikey_server/util/native.py's
CORE are compiled by mypyc from their own .py source, as one group; each
kernel in KERNELS is compiled by Cython from its .pyx. The hash of every
source compiled is written to trafikey_server/native.json beside them: the
package runs compiled code only while its source is unchanged (util/native.py).

With no mypy, no Cython, no C compiler, or TRAFIKEY_NO_COMPILE=1, the build
goes on without the extensions it cannot make: pure Python, the same source.

    pip install .                          # compiled where it can be
    python3 setup.py build_ext --inplace   # compile a checkout in place
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
PACKAGE = "trafikey_server"


def _names(tuple_name: str) -> list[str]:
    # Read a list without importing the package (its dependencies may not
    # be installed in the build environment).
    ns: dict[str, object] = {}
    text = (ROOT / PACKAGE / "util" / "native.py").read_text()
    start = text.index(f"{tuple_name}: tuple[str, ...] = (")
    end = text.index(")\n", start)
    exec(text[start:end + 2], ns)  # the tuple literal alone
    return list(ns[tuple_name])  # type: ignore[arg-type]


def _core() -> list[object]:
    """The typed core: mypyc over the modules' own source, one group."""
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("trafikey-server: mypy (mypyc) is not installed; the core stays pure Python", file=sys.stderr)
        return []
    paths = [f"{PACKAGE}/{m.replace('.', '/')}.py" for m in _names("CORE")]
    try:
        return list(mypycify(paths, opt_level="3", group_name=f"{PACKAGE}.core"))
    except BaseException as e:  # a type error stops mypyc with SystemExit
        print(f"trafikey-server: the core was not compiled ({e!r}); it stays pure Python", file=sys.stderr)
        return []


def _extensions() -> list[object]:
    if os.environ.get("TRAFIKEY_NO_COMPILE", "") not in ("", "0"):
        return []
    core = _core()
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("trafikey-server: Cython is not installed; the kernels stay pure Python", file=sys.stderr)
        return core
    sources = [f"{PACKAGE}/{m.replace('.', '/')}.pyx" for m in _names("KERNELS")]
    if not sources:
        return core
    exts = cythonize(
        sources,
        build_dir="build/cython",
        quiet=True,
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
        },
    )
    exts = [*core, *exts]
    if sys.platform.startswith("linux"):
        for ext in exts:
            ext.extra_link_args = [*ext.extra_link_args, "-s"]  # no debug symbols: a tenth of the size
    return exts


class OptionalBuildExt(build_ext):
    """Compile what can be compiled; a failure leaves the pure modules."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1  # the modules compile independently

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:  # no compiler, no Python headers
            print(f"trafikey-server: compiled layer not built ({e}); pure Python only", file=sys.stderr)
            return
        self._write_manifest()

    def build_extension(self, ext: object) -> None:
        try:
            super().build_extension(ext)  # type: ignore[arg-type]
        except Exception as e:
            print(f"trafikey-server: {ext.name} not compiled ({e}); the pure path stays",  # type: ignore[attr-defined]
                  file=sys.stderr)

    def _write_manifest(self) -> None:
        built = {}
        for ext in self.extensions:
            rel = ext.name[len(PACKAGE) + 1:]
            target = Path(self.get_ext_fullpath(ext.name))
            src = ROOT / PACKAGE / Path(*rel.split(".")).with_suffix(".pyx")
            if not src.exists():  # a module of the typed core
                src = src.with_suffix(".py")
            if target.exists() and src.exists():
                built[rel] = hashlib.sha256(src.read_bytes()).hexdigest()
        text = json.dumps(built, indent=1, sort_keys=True) + "\n"
        dest = Path(self.get_ext_fullpath(f"{PACKAGE}.native")).parent / "native.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
