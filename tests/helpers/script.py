"""Differential scripts: one command a line, sent to both servers of a pair."""

from __future__ import annotations

import shlex


def words(line: str) -> list[bytes]:
    r"""Split like a shell; ``\xNN``, ``\t`` and ``\0`` escapes give raw bytes."""
    return [w.encode().decode("unicode_escape").encode("latin-1") for w in shlex.split(line)]


def run(pair, script: str) -> None:  # type: ignore[no-untyped-def]
    """Each non-blank, non-comment line must get identical replies."""
    for line in script.strip().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            pair.check(*words(line))
