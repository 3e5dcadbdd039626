"""Valkey's request framing, in Python, byte for byte.

The fast path parses requests with ``hiredis.Reader``. This parser is the
exact rulebook behind it: it handles inline requests (``PING\\r\\n`` from
telnet or redis-benchmark's PING_INLINE), and it takes over whenever hiredis
rejects input or cannot say precisely what Valkey would answer, so that
malformed input gets Valkey's own protocol error text. It follows Valkey's
processInlineBuffer / processMultibulkBuffer: the first byte of each request
chooses the form, ``*N`` headers and ``$N`` lengths parse with string2ll, and
every header line and bulk must end with CRLF ("invalid CRLF in request").
"""

from __future__ import annotations

import enum
from typing import Literal

from ..util.errors import ProtocolError
from ..util.parsing import to_int

INLINE_MAX = 64 * 1024
INT_MAX = 2**31 - 1
# Valkey 9.1 checks that every header line and every bulk ends with CRLF.
BAD_CRLF = "invalid CRLF in request"


class PyParser:
    __slots__ = ("buf", "pos", "_argv", "_left", "_bulklen", "max_bulk", "auth_required")

    def __init__(self, max_bulk: int = 512 * 1024 * 1024) -> None:
        self.buf = bytearray()
        self.pos = 0
        self._argv: list[bytes] = []
        self._left = 0  # multibulk elements still to read; 0 = between requests
        self._bulklen = -1
        self.max_bulk = max_bulk
        self.auth_required = False

    def feed(self, data: bytes) -> None:
        if self.pos and self.pos == len(self.buf):
            self.buf = bytearray(data)
            self.pos = 0
        else:
            if self.pos > 65536:
                del self.buf[: self.pos]
                self.pos = 0
            self.buf += data

    def idle(self) -> bool:
        """True when no partial request is buffered."""
        return self.pos == len(self.buf) and self._left == 0

    def open_args(self) -> tuple[int, int]:
        """The arguments of the open request read so far: (count, bytes)."""
        if not self._left:
            return 0, 0
        return len(self._argv), sum(map(len, self._argv))

    def open_bulk(self) -> int:
        """The length of the bulk being read (its header read, its bytes
        not all in), -1 when none is."""
        return self._bulklen if self._left else -1

    def next(self) -> list[bytes] | None:
        """The next complete request (possibly empty, to be skipped), or None
        when more input is needed. Raises ProtocolError as Valkey would."""
        buf = self.buf
        while True:
            if self.pos >= len(buf) and self._left == 0:
                return None
            if self._left == 0:
                r: list[bytes] | _Step | None
                if buf[self.pos] == 42:  # '*'
                    r = self._multibulk_header()
                else:
                    r = self._inline()
                if r is None:
                    return None
                if r is _Step.SKIP:
                    continue
                if r is _Step.BODY:
                    pass
                else:
                    return r
            r2 = self._multibulk_body()
            if r2 is None:
                return None
            return r2

    def _inline(self) -> list[bytes] | Literal[_Step.SKIP] | None:
        buf = self.buf
        nl = buf.find(b"\n", self.pos)
        # Valkey looks for the newline with strchr: a NUL before it hides it,
        # and the request waits until it is too big.
        if nl >= 0 and buf.find(b"\0", self.pos, nl) >= 0:
            nl = -1
        if nl < 0:
            if len(buf) - self.pos > INLINE_MAX:
                raise ProtocolError("too big inline request")
            return None
        end = nl
        if end != self.pos and buf[end - 1] == 13:
            end -= 1
        line = bytes(buf[self.pos : end])
        self.pos = nl + 1
        argv = split_args(line)
        if argv is None:
            raise ProtocolError("unbalanced quotes in request")
        if not argv:
            return _Step.SKIP
        return argv

    def _multibulk_header(self) -> Literal[_Step.SKIP, _Step.BODY] | None:
        buf = self.buf
        cr = buf.find(b"\r", self.pos)
        if cr < 0:
            if len(buf) - self.pos > INLINE_MAX:
                raise ProtocolError("too big mbulk count string")
            return None
        if cr + 1 >= len(buf):  # the \n after \r has not arrived
            return None
        if buf[cr + 1] != 10:
            raise ProtocolError(BAD_CRLF)
        ll = to_int(bytes(buf[self.pos + 1 : cr]))
        if ll is None or ll > INT_MAX:
            raise ProtocolError("invalid multibulk length")
        if ll > 10 and self.auth_required:
            raise ProtocolError("unauthenticated multibulk length")
        self.pos = cr + 2
        if ll <= 0:
            return _Step.SKIP
        self._left = ll
        self._argv = []
        self._bulklen = -1
        return _Step.BODY

    def _multibulk_body(self) -> list[bytes] | None:
        buf = self.buf
        while self._left:
            if self._bulklen == -1:
                cr = buf.find(b"\r", self.pos)
                if cr < 0:
                    if len(buf) - self.pos > INLINE_MAX:
                        raise ProtocolError("too big bulk count string")
                    return None
                if cr + 1 >= len(buf):
                    return None
                if buf[self.pos] != 36:  # '$'
                    # Valkey's addReplyErrorFormat turns CR and LF into spaces.
                    got = buf[self.pos]
                    raise ProtocolError("expected '$', got '%s'" % (" " if got in (10, 13) else chr(got)))
                if buf[cr + 1] != 10:
                    raise ProtocolError(BAD_CRLF)
                ll = to_int(bytes(buf[self.pos + 1 : cr]))
                if ll is None or ll < 0 or ll > self.max_bulk:
                    raise ProtocolError("invalid bulk length")
                if ll > 16384 and self.auth_required:
                    raise ProtocolError("unauthenticated bulk length")
                self.pos = cr + 2
                self._bulklen = ll
            end = self.pos + self._bulklen
            if len(buf) < end + 2:
                return None
            if buf[end] != 13 or buf[end + 1] != 10:
                raise ProtocolError(BAD_CRLF)
            self._argv.append(bytes(buf[self.pos : end]))
            self.pos = end + 2
            self._bulklen = -1
            self._left -= 1
        argv = self._argv
        self._argv = []
        return argv


class _Step(enum.Enum):
    """What a header step found short of a request: a line to skip, or a
    multibulk body to read next."""

    SKIP = 0
    BODY = 1

_ESCAPES = {ord("n"): 10, ord("r"): 13, ord("t"): 9, ord("b"): 8, ord("a"): 7}
_HEX = b"0123456789abcdefABCDEF"


def split_args(line: bytes) -> list[bytes] | None:
    """Valkey's sdssplitargs: words, "double quoted" with escapes, or
    'single quoted'; None on unbalanced quotes."""
    out: list[bytes] = []
    i, n = 0, len(line)
    while True:
        while i < n and line[i] in b" \n\r\t\v\f\x00":
            i += 1
        if i >= n:
            return out
        cur = bytearray()
        inq = insq = False
        while True:
            if inq:
                if i >= n:
                    return None
                c = line[i]
                if (
                    c == 92 and i + 3 < n and line[i + 1] == 120
                    and line[i + 2] in _HEX and line[i + 3] in _HEX
                ):
                    cur.append(int(line[i + 2 : i + 4], 16))
                    i += 3
                elif c == 92 and i + 2 < n:
                    # Valkey 9.1 escapes a character only if one more
                    # follows it: '"a\"' ends in a backslash and a closing quote.
                    i += 1
                    cur.append(_ESCAPES.get(line[i], line[i]))
                elif c == 34:
                    # Valkey 9 lets a word go on after its closing quote.
                    inq = False
                else:
                    cur.append(c)
            elif insq:
                if i >= n:
                    return None
                c = line[i]
                if c == 92 and i + 2 < n and line[i + 1] == 39:
                    i += 1
                    cur.append(39)
                elif c == 39:
                    insq = False
                else:
                    cur.append(c)
            else:
                if i >= n:
                    break
                c = line[i]
                # isspace() skips between words, but only these end one.
                if c in b" \n\r\t\x00":
                    break
                if c == 34:
                    inq = True
                elif c == 39:
                    insq = True
                else:
                    cur.append(c)
            i += 1
        out.append(bytes(cur))
