"""The job core as Lua scripts: the scripted twins of the EMQ.* verbs.

On EchoMQ's default ``wire: 4`` connection the job core runs on a plain
Valkey as Lua scripts evaluated with EVALSHA. This package ships those
scripts -- one per twinned verb, with exactly the verb's numkeys, KEYS and
ARGV -- and the two declared reads of ``EchoMQ.Metrics`` (``counts`` and
``state``), which also run on a ``wire: 6`` connection and start with the
shebang ``#!lua flags=no-writes``.

``SCRIPTS`` maps a verb name (``"enqueue"``, ..., ``"stalled.check"``,
``"counts"``, ``"state"``) to a ``Script``: its source bytes exactly as
shipped, the SHA1 that ``SCRIPT LOAD`` answers for them, its numkeys, the
roles of its KEYS and whether it is read-only. Where the scripts and the
native verbs behave differently is written down in ``docs/executors.md``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SCRIPTS", "Script"]

_HERE = Path(__file__).resolve().parent
_READ_ONLY_SHEBANG = b"#!lua flags=no-writes"


@dataclass(frozen=True)
class Script:
    """One script as a connector loads and calls it."""

    name: str  # the verb name, e.g. "stalled.check"
    source: bytes  # the file's bytes, exactly as SCRIPT LOAD receives them
    sha1: str  # lowercase hex SHA1 of ``source``, as SCRIPT LOAD replies
    numkeys: int
    read_only: bool  # starts with ``#!lua flags=no-writes``
    keys: tuple[str, ...]  # the role of each KEY; "prefix" is the queue's prefix P

    def key_names(self, prefix: bytes) -> list[bytes]:
        """The KEYS of a call on the queue whose prefix is ``prefix``:
        ``P + role`` for a set, ``P`` itself for the prefix."""
        return [prefix if role == "prefix" else prefix + role.encode() for role in self.keys]


# name -> (file, the roles of its KEYS, in order)
_TABLE: dict[str, tuple[str, tuple[str, ...]]] = {
    "enqueue": ("enqueue.lua", ("pending", "prefix")),
    "claim": ("claim.lua", ("pending", "active", "prefix")),
    "extend": ("extend.lua", ("active", "prefix")),
    "extends": ("extends.lua", ("active", "prefix")),
    "complete": ("complete.lua", ("active", "prefix")),
    "schedule": ("schedule.lua", ("schedule", "prefix")),
    "promote": ("promote.lua", ("schedule", "pending", "prefix")),
    "delay": ("delay.lua", ("active", "schedule", "prefix")),
    "fail": ("fail.lua", ("active", "pending", "schedule", "dead", "prefix")),
    "reprocess": ("reprocess.lua", ("dead", "pending", "prefix")),
    "stalled.check": ("stalled_check.lua", ("active", "pending", "dead", "prefix")),
    "counts": ("counts.lua", ("pending", "active", "schedule", "dead")),
    "state": ("state.lua", ("prefix",)),
}


def _load(name: str, file: str, keys: tuple[str, ...]) -> Script:
    source = (_HERE / file).read_bytes()
    return Script(
        name=name,
        source=source,
        sha1=hashlib.sha1(source).hexdigest(),
        numkeys=len(keys),
        read_only=source.split(b"\n", 1)[0].rstrip(b"\r") == _READ_ONLY_SHEBANG,
        keys=keys,
    )


SCRIPTS: dict[str, Script] = {name: _load(name, file, keys) for name, (file, keys) in _TABLE.items()}
