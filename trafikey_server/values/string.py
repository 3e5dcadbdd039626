"""The string type, and which of Valkey's encodings each stored value has.

A string value is ``bytes`` or, where Valkey would hold it in the ``raw``
encoding, a ``bytearray``. OBJECT ENCODING then reads the encoding off the
value: a ``bytearray`` is raw; ``bytes`` is int when it is a canonical
integer of at most 20 characters, embstr otherwise. To keep that true, every
string write stores what Valkey's object would be:

- APPEND and SETRANGE change a value in place, which Valkey does on a raw
  copy: the value becomes a ``bytearray`` (amortized O(1) appends, too).
- Valkey 9 embeds the key, an optional expire field and the value in one
  128-byte allocation when they fit (embstr), and uses raw otherwise. The
  measured rule: embstr when ``len(key) + len(value) + 8 * ttl`` is at most
  113 for keys shorter than 32 bytes (1-byte sds header) and 111 for longer
  ones (3-byte header). ``ttl`` counts when the write overwrites a key that
  has an expire (the new object inherits it); an expire added later (EX on a
  fresh key, EXPIRE, GETEX) fits in place, except under keys of 108 bytes
  or more, where it makes the value raw. A value past the limit is stored
  as a ``bytearray``. Most writes are far below it and pay one length
  comparison.
- INCRBYFLOAT stores text that may look like an integer ("3") but is embstr
  in Valkey. Those values are remembered by the keyspace (``Db.float_ints``)
  rather than given a type of their own, so that every other piece of code
  keeps seeing plain ``bytes``.

The writes themselves (which of these a value becomes when stored, and the
marks) are the keyspace's: ``Db.set_string``, ``Db.add_string`` and the
rest. This module keeps the rules, and takes no database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from ..protocol.rdbformat import T_STRING, encode_string
from ..util.parsing import to_int
from .record import ValueHost, ValueType, alloc_size, sds_size

if TYPE_CHECKING:
    from ..protocol.rdbformat import Reader

# -- encodings -------------------------------------------------------------------

# Below this key + value length every non-integer value is embstr whatever
# the key length and TTL (111 - 8).
SURELY_EMBSTR: Final = 103


def is_int_text(v: bytes | bytearray) -> bool:
    """Valkey's tryObjectEncoding test for the int encoding."""
    return len(v) <= 20 and to_int(bytes(v)) is not None


def embstr_fits(key: bytes, n: int, ttl: bool) -> bool:
    """Whether an n-byte value under key is embstr in Valkey 9."""
    limit = (113 if len(key) < 32 else 111) - (8 if ttl else 0)
    return len(key) + n <= limit


def stored(key: bytes, v: bytes, ttl: bool) -> bytes | bytearray:
    """v as Valkey's object would be when created under key: a bytearray
    where Valkey would use the raw encoding."""
    if len(key) + len(v) <= SURELY_EMBSTR or is_int_text(v) or embstr_fits(key, len(v), ttl):
        return v
    return bytearray(v)


def rekeyed(key: bytes, v: bytes | bytearray) -> bytes | bytearray:
    """v moved under a new key (RENAME, COPY): Valkey re-creates an embstr
    with the new key embedded, which may no longer fit; raw and int stay."""
    if type(v) is bytes and len(key) + len(v) > SURELY_EMBSTR and not is_int_text(v):
        if not embstr_fits(key, len(v), False):
            return bytearray(v)
    return v


# Adding an expire to an embstr that has none re-creates it as raw when the
# key is this long (measured on Valkey 9; shorter keys leave room for it).
EXPIRE_NEEDS_ROOM: Final = 108


def encoding(v: bytes | bytearray) -> bytes:
    """OBJECT ENCODING of a string value, as its own bytes tell it. An
    INCRBYFLOAT result that reads as an integer is embstr in Valkey: the
    keyspace remembers those (``Db.float_ints``) and answers for them
    (``Db.string_encoding``)."""
    if type(v) is bytearray:
        return b"raw"
    return b"int" if is_int_text(v) else b"embstr"


# -- the type's record (record.py) ------------------------------------------------------


def _copy(v: bytes | bytearray) -> bytes | bytearray:
    return bytearray(v) if type(v) is bytearray else v


def _memory(v: bytes | bytearray, samples: int) -> int:
    n = len(v)
    return 0 if n <= 20 and v.lstrip(b"-").isdigit() else alloc_size(sds_size(n))


def _digest(v: bytes | bytearray) -> bytes:
    return b"s" + bytes(v)


def _rdb_save(v: bytes | bytearray) -> tuple[int, bytes]:
    return T_STRING, encode_string(v)


def _rdb_load(r: Reader, t: int, key: bytes, server: ValueHost, has_ttl: bool) -> bytes | bytearray:
    """A loaded string as Valkey's object ends up: embstr or raw by size,
    and raw when an expire is attached under a long key."""
    out = stored(key, r.string(), False)
    if has_ttl and type(out) is bytes and len(key) >= EXPIRE_NEEDS_ROOM and not is_int_text(out):
        return bytearray(out)
    return out


def _aof_rewrite(key: bytes, v: bytes | bytearray) -> Iterator[list[bytes]]:
    yield [b"SET", key, bytes(v)]


STRING: Final = ValueType(
    name=b"string",
    classes=(bytes, bytearray),
    encodings=(b"int", b"embstr", b"raw"),
    encoding=encoding,
    copy=_copy,
    memory=_memory,
    digest=_digest,
    rdb_save=_rdb_save,
    rdb_types=(T_STRING,),
    rdb_load=_rdb_load,
    aof_rewrite=_aof_rewrite,
)


# -- LCS ---------------------------------------------------------------------------

_ZEROS: Final = bytes(0x30 for _ in range(256))


def _match_masks(a: bytes | bytearray, b: bytes | bytearray) -> dict[int, int]:
    """For each byte value of a, the positions of b that hold it, as an int
    whose bit j stands for b[j] (built per byte value with translate, O(m)
    each, rather than bit by bit)."""
    masks: dict[int, int] = {}
    rb = bytes(b[::-1])
    for ch in frozenset(a):
        table = bytearray(_ZEROS)
        table[ch] = 0x31
        masks[ch] = int(rb.translate(table), 2) if rb else 0
    return masks


class LcsTable:
    """Valkey's LCS table (lcsCommand: LCS(i, j), the length of the longest
    common subsequence of a[:i] and b[:j]) kept as one m-bit row per i, with
    the bit-parallel recurrence of Hyyrö: in row i, a zero bit at j marks
    where LCS(i, j + 1) grows over LCS(i, j), so LCS(i, j) is j minus the
    ones among the low j bits. That is (n + 1) * m bits instead of Valkey's
    (n + 1) * (m + 1) 32-bit cells, and each row costs a few big-int
    operations instead of m Python steps."""

    __slots__ = ("rows",)

    def __init__(self, a: bytes | bytearray, b: bytes | bytearray, keep_rows: bool) -> None:
        m = len(b)
        full = (1 << m) - 1
        masks = _match_masks(a, b)
        v = full
        rows = [v] if keep_rows else []
        for ch in a:
            u = v & masks[ch]
            v = ((v + u) | (v - u)) & full
            if keep_rows:
                rows.append(v)
        if not keep_rows:
            rows.append(v)
        self.rows = rows

    def at(self, i: int, j: int) -> int:
        return j - (self.rows[i] & ((1 << j) - 1)).bit_count()

    def length(self, m: int) -> int:
        return m - self.rows[-1].bit_count()


def lcs_walk(a: bytes | bytearray, b: bytes | bytearray, table: LcsTable,
             minmatchlen: int) -> tuple[bytes, list[tuple[int, int, int, int]]]:
    """The common subsequence and its matching ranges, walked back from the
    end the way Valkey walks its table: on a mismatch it steps in a when
    that keeps a longer LCS, in b otherwise, and a range closes at each
    mismatch or when it reaches the start of either string. Ranges shorter
    than minmatchlen (if non-zero) are left out."""
    alen = len(a)
    i, j = alen, len(b)
    out = bytearray()
    ranges: list[tuple[int, int, int, int]] = []
    a_start = alen  # alen: no range open
    a_end = b_start = b_end = 0
    at = table.at
    while i > 0 and j > 0:
        emit = False
        if a[i - 1] == b[j - 1]:
            out.append(a[i - 1])
            if a_start == alen:
                a_start = a_end = i - 1
                b_start = b_end = j - 1
            elif a_start == i and b_start == j:
                a_start -= 1
                b_start -= 1
            else:
                emit = True
            if a_start == 0 or b_start == 0:
                emit = True
            i -= 1
            j -= 1
        else:
            if at(i - 1, j) > at(i, j - 1):
                i -= 1
            else:
                j -= 1
            if a_start != alen:
                emit = True
        if emit:
            if minmatchlen == 0 or a_end - a_start + 1 >= minmatchlen:
                ranges.append((a_start, a_end, b_start, b_end))
            a_start = alen
    out.reverse()
    return bytes(out), ranges
