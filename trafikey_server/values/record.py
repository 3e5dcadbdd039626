"""What the server must know of a value type, as one record.

A value type (string, hash, sorted set, ...) is one ``ValueType``, defined in
the type's own module and listed in the registry (``registry.py``).
Everything that treats values by their type without being a command of that
type (TYPE, SCAN TYPE, COPY, named snapshots, OBJECT ENCODING, MEMORY USAGE, DEBUG DIGEST,
the RDB file, the AOF rewrite, the listpack thresholds) asks the registry
for the record of ``type(value)`` and calls it; none of them names a type.

Also here: the allocator arithmetic the MEMORY USAGE estimates share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

if TYPE_CHECKING:
    from ..protocol.rdbformat import Reader
    from ..util.clock import Clock


class Settings(Protocol):
    """The server's configuration (services/config.py), read by name."""

    @property
    def values(self) -> Mapping[str, Any]: ...


class ValueHost(Protocol):
    """What the value types read of the server (server.py): the listpack
    thresholds (``listpack_limits`` below names them), the clock and the
    settings."""

    hash_limits: tuple[int, int]
    list_limits: tuple[int, int]
    set_limits: tuple[int, int]
    zset_limits: tuple[int, int]
    clock: Clock

    @property
    def config(self) -> Settings: ...


# How many elements one command of an AOF rewrite carries (Valkey's
# AOF_REWRITE_ITEMS_PER_CMD).
ITEMS_PER_CMD: Final = 64


@dataclass(frozen=True)
class ValueType:
    # TYPE's answer, and the name SCAN TYPE matches.
    name: bytes
    # The Python classes a stored value of this type has: the registry's keys.
    classes: tuple[type, ...]
    # Every answer OBJECT ENCODING can give for this type, Valkey's words.
    encodings: tuple[bytes, ...]
    # OBJECT ENCODING: value -> one of ``encodings``. The rules that move a
    # value from one encoding to the next live with the writes. (A string
    # that INCRBYFLOAT wrote is the keyspace's to answer for:
    # ``Db.string_encoding``.)
    encoding: Callable[[Any], bytes]
    # COPY, and a named snapshot's SAVE and RESTORE (TRAFIKEY.SNAPSHOT): a
    # value that shares nothing mutable with the given one. A snapshot copies
    # every key on each restore, so this is built from the parts directly
    # (no serialisation, no re-validation): time proportional to the value.
    copy: Callable[[Any], Any]
    # MEMORY USAGE: (value, samples) -> bytes on top of the key's own object,
    # sampling at most ``samples`` elements of a collection.
    memory: Callable[[Any, int], int]
    # DEBUG DIGEST / DIGEST-VALUE: bytes that depend on the contents only,
    # never on the order they were written in.
    digest: Callable[[Any], bytes]
    # RDB: the type byte and the encoded value this server writes.
    rdb_save: Callable[[Any], tuple[int, bytes]]
    # RDB: every type byte this type's loader reads (Valkey's and older forms).
    rdb_types: tuple[int, ...]
    # RDB: (reader, type byte, key, server, has_ttl) -> the value as Valkey
    # would hold it once loaded, or None for a value Valkey drops on load (an
    # empty collection). ``server`` gives the listpack thresholds.
    rdb_load: Callable[[Reader, int, bytes, ValueHost, bool], Any]
    # AOF rewrite: (key, value) -> the commands that rebuild the value.
    aof_rewrite: Callable[[bytes, Any], Iterator[list[bytes]]]
    # The listpack thresholds writes consult, kept on the server as an
    # attribute: (attribute, entries option, value-size option), or None.
    listpack_limits: tuple[str, str, str] | None = None


def alloc_size(n: int) -> int:
    """The size class jemalloc rounds an allocation of n bytes up to."""
    if n <= 8:
        return 8
    if n <= 128:
        return (n + 15) // 16 * 16
    step = 1 << (n.bit_length() - 3)
    return (n + step - 1) // step * step


def sds_size(n: int) -> int:
    """An sds string of n bytes: header, bytes and terminator."""
    return n + (3 if n < 256 else 5 if n < 65536 else 9) + 1
