"""The set type: its class and its record (see ``record.py``).

A ``SetValue`` is a dict of member -> None with Valkey's encoding beside it
(``enc``): ``INTSET`` while every member is an integer Valkey's string2ll
accepts and there are at most set-max-intset-entries of them, ``LISTPACK``
while small, ``HASHTABLE`` after. The moves are t_set.c's and one-way except
that an intset can become a listpack. The order a reply shows follows the
encoding: an intset answers in numeric order (``members`` sorts), a listpack
in insertion order with a removal closing its gap (a dict's own order; an
intset turning into a listpack is rebuilt in numeric order first, as Valkey
copies it). A hashtable's order is Valkey's hash table's and cannot match.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from itertools import islice, pairwise
from typing import TYPE_CHECKING, Final

from mypy_extensions import mypyc_attr

from ..protocol.rdbformat import (
    LISTPACK_SAFE,
    T_SET,
    RdbError,
    encode_len,
    encode_string,
    listpack_entries,
)
from ..util.parsing import to_int
from ..util.rand import rng
from .listpack import blob, enc_str
from .record import ITEMS_PER_CMD, ValueHost, ValueType, alloc_size, sds_size

if TYPE_CHECKING:
    from ..protocol.rdbformat import Reader

INTSET, LISTPACK, HASHTABLE = 0, 1, 2
T_SET_INTSET, T_SET_LISTPACK = 11, 20
_NAMES: Final[tuple[bytes, ...]] = (b"intset", b"listpack", b"hashtable")  # indexed by a variable: see commands/list.py
# Bound once: the seeded generator is re-seeded in place, never replaced.
randrange: Final = rng.randrange


@mypyc_attr(native_class=False)
class SetValue(dict[bytes, None]):
    """A set: member -> None, in the order a listpack keeps; ``enc`` is
    Valkey's encoding (INTSET, LISTPACK, HASHTABLE).

    ``pool`` serves random draws (SPOP, SRANDMEMBER) without copying the
    members each time, as a dict cannot be indexed: a list holding every
    member and perhaps some removed since (drawn, those are dropped and the
    draw repeated, which keeps it uniform). ``add`` drops the pool, since a
    new member would be missing from it; it is rebuilt when half stale.
    Built from the dict and changed only by draws, its order follows the
    commands, never the string hash, so a seeded draw repeats in any process."""

    __slots__ = ("enc", "pool")

    def __init__(self, enc: int = INTSET) -> None:
        super().__init__()
        self.enc = enc
        self.pool: list[bytes] | None = None

    def pick(self, remove: bool) -> bytes:
        """A member drawn uniformly (the set must not be empty), removed
        from the set when ``remove``."""
        pool = self.pool
        if pool is None or len(pool) > 2 * len(self) + 16:
            pool = self.pool = list(self)
        while True:
            i = randrange(len(pool))
            m = pool[i]
            live = m in self
            if remove or not live:
                pool[i] = pool[-1]
                pool.pop()
            if live:
                if remove:
                    del self[m]
                return m

    def members(self) -> list[bytes]:
        """The members in the order Valkey's iterator gives them (numeric
        for an intset)."""
        if self.enc == INTSET:
            return sorted(self, key=int)
        return list(self)


def intset_max(limits: tuple[int, int, int]) -> int:
    """intsetMaxEntries: the configured bound, capped at 2**30."""
    return min(limits[0], 1 << 30)


def create(first: bytes, hint: int, limits: tuple[int, int, int]) -> SetValue:
    """setTypeCreate: the encoding a new set starts in, from its first
    member and the number of members about to be added."""
    if to_int(first) is not None and hint <= limits[0]:
        return SetValue(INTSET)
    if hint <= limits[1]:
        return SetValue(LISTPACK)
    return SetValue(HASHTABLE)


def maybe_convert(s: SetValue, hint: int, limits: tuple[int, int, int]) -> None:
    """setTypeMaybeConvert, before adding ``hint`` members."""
    if (s.enc == LISTPACK and hint > limits[1]) or (s.enc == INTSET and hint > limits[0]):
        s.enc = HASHTABLE


def _to_listpack(s: SetValue) -> None:
    """An intset becoming a listpack: the listpack holds the numeric order."""
    ordered = sorted(s, key=int)
    s.clear()
    s.update(dict.fromkeys(ordered))
    s.enc = LISTPACK


def add(s: SetValue, m: bytes, limits: tuple[int, int, int]) -> bool:
    """setTypeAdd: True if m was not a member."""
    if m in s:
        return False
    s.pool = None
    enc = s.enc
    if enc == HASHTABLE:
        s[m] = None
    elif enc == LISTPACK:
        if len(s) < limits[1] and len(m) <= limits[2]:
            s[m] = None
        else:
            s.enc = HASHTABLE
            s[m] = None
    elif to_int(m) is not None:
        s[m] = None
        if len(s) > intset_max(limits):
            s.enc = HASHTABLE
    else:
        maxlen = max((len(x) for x in s), default=0)
        if len(s) < limits[1] and len(m) <= limits[2] and maxlen <= limits[2]:
            _to_listpack(s)
        else:
            s.enc = HASHTABLE
        s[m] = None
    return True


def all_ints(s: Iterable[bytes]) -> bool:
    return all(to_int(m) is not None for m in s)


def maybe_to_intset(s: SetValue, limits: tuple[int, int, int]) -> None:
    """maybeConvertToIntset, for a result whose members are all integers."""
    if s.enc != INTSET and len(s) <= intset_max(limits):
        s.enc = INTSET


def limits_of(server: ValueHost) -> tuple[int, int, int]:
    """(set-max-intset-entries, set-max-listpack-entries, -value)."""
    entries, value = server.set_limits
    return (server.config.values["set-max-intset-entries"], entries, value)


# -- the record -----------------------------------------------------------------------


def _encoding(v: SetValue) -> bytes:
    return _NAMES[v.enc]


def _copy(v: SetValue) -> SetValue:
    s = SetValue(v.enc)
    s.update(v)
    return s


def _memory(v: SetValue, samples: int) -> int:
    if v.enc == INTSET:
        width = max((_width(int(m)) for m in v), default=2)
        return alloc_size(8 + width * len(v))
    if v.enc == LISTPACK:
        return alloc_size(7 + sum(len(m) + 2 for m in v))
    members = list(islice(v, samples))
    per = sum(alloc_size(sds_size(len(m))) + 8 for m in members) / max(len(members), 1)
    return 64 + int(per * len(v))


def _digest(v: SetValue) -> bytes:
    return b"s" + b"\0".join(sorted(v))


def _width(n: int) -> int:
    return 2 if -(2**15) <= n < 2**15 else 4 if -(2**31) <= n < 2**31 else 8


def _intset_blob(v: SetValue) -> bytes:
    nums = sorted(int(m) for m in v)
    width = max((_width(n) for n in nums), default=2)
    fmt = {2: "<h", 4: "<i", 8: "<q"}[width]
    return struct.pack("<II", width, len(nums)) + b"".join(struct.pack(fmt, n) for n in nums)


def _listpack_blob(members: Iterable[bytes]) -> bytes:
    """The set's listpack as Valkey holds it: members in insertion order,
    integer-looking ones integer-encoded (lpAppend)."""
    members = list(members)
    return blob(b"".join(enc_str(m) for m in members), len(members))


def _rdb_save(v: SetValue) -> tuple[int, bytes]:
    if v.enc == INTSET:
        return T_SET_INTSET, encode_string(_intset_blob(v))
    if v.enc == LISTPACK:
        return T_SET_LISTPACK, encode_string(_listpack_blob(v))
    return T_SET, encode_len(len(v)) + b"".join(encode_string(m) for m in v)


def _intset_members(blob: bytes, key: bytes) -> list[bytes]:
    if len(blob) < 8:
        raise RdbError(f"key {key!r}: intset shorter than its header")
    width, n = struct.unpack_from("<II", blob)
    if width not in (2, 4, 8) or len(blob) != 8 + width * n:
        raise RdbError(f"key {key!r}: intset integrity check failed")
    fmt = {2: "h", 4: "i", 8: "q"}[width]
    nums = struct.unpack_from("<%d%s" % (n, fmt), blob, 8)
    if any(a >= b for a, b in pairwise(nums)):
        raise RdbError(f"key {key!r}: intset integrity check failed")
    return [b"%d" % x for x in nums]


def _rdb_load(r: Reader, t: int, key: bytes, server: ValueHost, has_ttl: bool) -> SetValue | None:
    limits = limits_of(server)
    if t == T_SET:
        n = r.plain_len()
        if n == 0:
            return None
        s = SetValue(HASHTABLE if n > intset_max(limits) else INTSET)
        maxlen = total = 0
        for _ in range(n):
            m = r.string()
            maxlen = max(maxlen, len(m))
            total += len(m)
            if s.enc == INTSET and to_int(m) is None:
                if len(s) < limits[1] and maxlen <= limits[2] and total < LISTPACK_SAFE:
                    _to_listpack(s)
                else:
                    s.enc = HASHTABLE
            if s.enc == LISTPACK and not (len(s) < limits[1] and len(m) <= limits[2]):
                s.enc = HASHTABLE
            if m in s:
                raise RdbError(f"key {key!r}: duplicate set members detected")
            s[m] = None
        return s
    if t == T_SET_INTSET:
        s = SetValue(INTSET)
        s.update(dict.fromkeys(_intset_members(r.string(), key)))
        if len(s) > limits[0]:
            s.enc = HASHTABLE
        return s if s else None
    items = listpack_entries(r.string())
    s = SetValue(LISTPACK)
    s.update(dict.fromkeys(items))
    if len(s) != len(items):
        raise RdbError(f"key {key!r}: set listpack has duplicate members")
    if not s:
        return None
    if len(s) > limits[1]:
        s.enc = HASHTABLE
    return s


def _aof_rewrite(key: bytes, v: SetValue) -> Iterator[list[bytes]]:
    items = v.members()
    for i in range(0, len(items), ITEMS_PER_CMD):
        yield [b"SADD", key, *items[i:i + ITEMS_PER_CMD]]


SET: Final = ValueType(
    name=b"set",
    classes=(SetValue,),
    encodings=_NAMES,
    encoding=_encoding,
    copy=_copy,
    memory=_memory,
    digest=_digest,
    rdb_save=_rdb_save,
    rdb_types=(T_SET, T_SET_INTSET, T_SET_LISTPACK),
    rdb_load=_rdb_load,
    aof_rewrite=_aof_rewrite,
    listpack_limits=("set_limits", "set-max-listpack-entries", "set-max-listpack-value"),
)
