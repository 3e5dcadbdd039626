"""What ``trafikey-server --version`` reports, in valkey-server's shape:
``v=<version> sha=<commit>:<dirty> malloc=<allocator> bits=<word size> build=<id>``.

A release has no commit to name, so, like a Valkey built outside git, it
reports ``00000000:0``; run from a source checkout it names the checkout's
commit and whether the work tree differs from it. The build id identifies
what the server runs on (interpreter and machine), as Valkey's identifies
its compiler and host.
"""

from __future__ import annotations

import hashlib
import os
import platform
import struct
import subprocess
import sys
from pathlib import Path

from .. import __version__

NO_SHA = "00000000"


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    try:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None


def git_sha() -> tuple[str, int]:
    """(first 8 hex digits of HEAD, 1 if the work tree is dirty) of the
    checkout this package runs from; a package installed elsewhere is not
    a checkout, and reports no commit."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists() or not (root / "pyproject.toml").exists():
        return NO_SHA, 0
    head = _git(root, "rev-parse", "HEAD")
    if head is None or head.returncode != 0:
        return NO_SHA, 0
    diff = _git(root, "diff", "--no-ext-diff", "--quiet", "HEAD", "--")
    dirty = 1 if diff is not None and diff.returncode == 1 else 0
    return head.stdout.strip()[:8], dirty


def malloc_name() -> str:
    """Python's object allocator: pymalloc unless PYTHONMALLOC chose the C library's."""
    return "libc" if os.environ.get("PYTHONMALLOC", "").startswith("malloc") else "pymalloc"


def build_id() -> str:
    what = f"{platform.python_implementation()} {sys.version} {platform.machine()} {platform.system()}"
    return hashlib.sha1(what.encode()).hexdigest()[:16]


def version_line() -> str:
    sha, dirty = git_sha()
    bits = struct.calcsize("P") * 8
    return (f"trafikey-server v={__version__} sha={sha}:{dirty} malloc={malloc_name()} bits={bits} "
            f"build={build_id()}")
