"""RESP reply encoding.

Handlers return their reply already encoded, as ``bytes``; the connection
only concatenates. That keeps the hot path to one join and one write per read,
lets MULTI/EXEC splice replies under an array header, and lets a script (or a
test) parse a reply back exactly as a remote client would.

Shapes that differ between RESP2 and RESP3 (nulls, maps, sets, doubles,
verbatim strings) go through an ``Encoder``: a connection holds ``RESP2`` or
``RESP3`` and a handler writes ``c.r.null`` or ``c.r.map(...)`` without
branching on the protocol itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from ..util import native
from ..util.floats import format_double

OK: Final = b"+OK\r\n"
QUEUED: Final = b"+QUEUED\r\n"
PONG: Final = b"+PONG\r\n"
EMPTY_ARRAY: Final = b"*0\r\n"
EMPTY_BULK: Final = b"$0\r\n\r\n"
CRLF: Final = b"\r\n"

_SMALL: Final = 10000
_INTS: Final = [b":%d\r\n" % i for i in range(_SMALL)]
_ONE: Final = _INTS[1]
_ZERO: Final = _INTS[0]
_ARRAY_HEADERS: Final = [b"*%d\r\n" % i for i in range(1024)]
_BULK_HEADS: Final = [b"$%d\r\n" % i for i in range(1024)]


def integer(n: int) -> bytes:
    if 0 <= n < _SMALL:
        return _INTS[n]
    if _integer is not None and -_LL_SAFE < n < _LL_SAFE:
        out: bytes = _integer(n)
        return out
    return b":%d\r\n" % n


ONE: Final = _ONE
ZERO: Final = _ZERO


def bulk(b: bytes | bytearray) -> bytes:
    if _bulk is not None:  # the compiled writer: one allocation
        out: bytes | None = _bulk(b)
        if out is not None:
            return out
    return b"$%d\r\n%s\r\n" % (len(b), b)


def status(s: bytes) -> bytes:
    return b"+" + s + CRLF


def error(msg: bytes) -> bytes:
    return b"-" + msg + CRLF


def array_header(n: int) -> bytes:
    if n < 1024:
        return _ARRAY_HEADERS[n]
    return b"*%d\r\n" % n


# The compiled writer (protocol/cwriter.pyx), when built: the same bytes as
# bulks, bulk_run and scored_run2's callers' pure code, in one buffer.
_k: Final = native.load("protocol.cwriter")
_integer: Final = _k.integer if _k is not None else None
_bulk: Final = _k.bulk if _k is not None else None
_stream_id: Final = _k.stream_id if _k is not None else None
_pairs2: Final = _k.pairs2 if _k is not None else None
_bulks: Final = _k.bulks if _k is not None else None
_bulk_run: Final = _k.bulk_run if _k is not None else None
# The formatter as a name of this module: a C static when compiled, where
# passing the imported function looks it up on its module at every call.
_format_double: Final = format_double
_LL_SAFE: Final = 1 << 62  # a short integer when compiled: the range check needs no object


def stream_id(ms: int, seq: int) -> bytes:
    """The bulk reply of the stream ID ``ms-seq`` (both halves below 2^64)."""
    if _stream_id is not None:
        out: bytes = _stream_id(ms, seq)
        return out
    text = b"%d-%d" % (ms, seq)
    return b"$%d\r\n%s\r\n" % (len(text), text)


def bulks(items: Sequence[bytes]) -> bytes:
    """An array of bulk strings: the most common multi-value reply."""
    if _bulks is not None:
        out: bytes | None = _bulks(items)
        if out is not None:
            return out
    return array_header(len(items)) + bulk_run(items)


def bulk_run(items: Iterable[bytes]) -> bytes:
    """Bulk strings back to back (the body of an array, set or push). A
    short one's header comes from a table: a third cheaper than formatting
    each, which counts in replies of many members (LRANGE, SMEMBERS)."""
    if _bulk_run is not None:
        out: bytes | None = _bulk_run(items)
        if out is not None:
            return out
    heads = _BULK_HEADS
    return b"".join([heads[len(b)] + b + b"\r\n" if len(b) < 1024 else b"$%d\r\n%s\r\n" % (len(b), b)
                     for b in items])


def scored_run2(pairs: list[tuple[float, bytes]]) -> bytes | None:
    """``(score, member)`` pairs as RESP2 writes a WITHSCORES reply (an
    array of member and score bulks), by the compiled writer; None without
    it, for the caller's own code to answer."""
    if _pairs2 is None:
        return None
    out: bytes | None = _pairs2(pairs, _format_double)
    return out


def array(encoded: Sequence[bytes]) -> bytes:
    """An array of already encoded elements."""
    return array_header(len(encoded)) + b"".join(encoded)


class Encoder:
    """The protocol-dependent reply shapes; one instance per protocol."""

    __slots__ = ("proto", "null", "null_array", "_map_prefix", "_set_prefix")

    def __init__(self, proto: int) -> None:
        self.proto = proto
        self.null = b"$-1\r\n" if proto == 2 else b"_\r\n"
        self.null_array = b"*-1\r\n" if proto == 2 else b"_\r\n"
        self._map_prefix = b"*" if proto == 2 else b"%"
        self._set_prefix = b"*" if proto == 2 else b"~"

    def map_header(self, pairs: int) -> bytes:
        if self.proto == 2:
            return array_header(pairs * 2)
        return b"%%%d\r\n" % pairs

    def map(self, encoded_pairs: Sequence[tuple[bytes, bytes]]) -> bytes:
        """A map of already encoded keys and values."""
        out = [self.map_header(len(encoded_pairs))]
        for k, v in encoded_pairs:
            out.append(k)
            out.append(v)
        return b"".join(out)

    def bulk_map(self, items: Iterable[tuple[bytes, bytes]]) -> bytes:
        """A map whose keys and values are bulk strings (HGETALL, CONFIG GET)."""
        out = [b""]
        n = 0
        for k, v in items:
            out.append(b"$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
            n += 1
        out[0] = self.map_header(n)
        return b"".join(out)

    def set_header(self, n: int) -> bytes:
        if self.proto == 2:
            return array_header(n)
        return b"~%d\r\n" % n

    def bulk_set(self, items: Sequence[bytes]) -> bytes:
        out = [self.set_header(len(items))]
        for b in items:
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        return b"".join(out)

    def double(self, x: float) -> bytes:
        s = format_double(x)
        if self.proto == 2:
            return b"$%d\r\n%s\r\n" % (len(s), s)
        return b"," + s + CRLF

    def verbatim(self, text: bytes, fmt: bytes = b"txt") -> bytes:
        if self.proto == 2:
            return b"$%d\r\n%s\r\n" % (len(text), text)
        return b"=%d\r\n%s:%s\r\n" % (len(text) + 4, fmt, text)

    def boolean(self, v: bool) -> bytes:
        if self.proto == 2:
            return _ONE if v else _ZERO
        return b"#t\r\n" if v else b"#f\r\n"


RESP2: Final = Encoder(2)
RESP3: Final = Encoder(3)
ENCODERS: Final = {2: RESP2, 3: RESP3}
