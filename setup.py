"""The optional compiled kernels: Cython modules of this package.

pyproject.toml holds the project's metadata; this file only adds the
extension modules. Each kernel named in trafikey_server/util/native.py's
KERNELS is compiled from its .pyx source, and the hash of every source
compiled is written to trafikey_server/native.json beside them: the package
loads a kernel only while its source is unchanged (util/native.py).

With no Cython, no C compiler, or TRAFIKEY_NO_COMPILE=1, the build goes on
without the extensions: the package is then pure Python, as before.

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


def _kernel_names() -> list[str]:
    # Read the list without importing the package (its dependencies may not
    # be installed in the build environment).
    ns: dict[str, object] = {}
    text = (ROOT / PACKAGE / "util" / "native.py").read_text()
    start = text.index("KERNELS: tuple[str, ...] = (")
    end = text.index(")\n", start)
    exec(text[start:end + 2], ns)  # the tuple literal alone
    return list(ns["KERNELS"])  # type: ignore[arg-type]


def _extensions() -> list[object]:
    if os.environ.get("TRAFIKEY_NO_COMPILE", "") not in ("", "0"):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print("trafikey-server: Cython is not installed; building pure Python only", file=sys.stderr)
        return []
    sources = [f"{PACKAGE}/{m.replace('.', '/')}.pyx" for m in _kernel_names()]
    if not sources:
        return []
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
            if target.exists():
                src = ROOT / PACKAGE / Path(*rel.split(".")).with_suffix(".pyx")
                built[rel] = hashlib.sha256(src.read_bytes()).hexdigest()
        text = json.dumps(built, indent=1, sort_keys=True) + "\n"
        dest = Path(self.get_ext_fullpath(f"{PACKAGE}.native")).parent / "native.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
