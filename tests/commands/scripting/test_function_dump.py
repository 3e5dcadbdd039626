"""FUNCTION DUMP and FUNCTION RESTORE against Valkey 9.1.2, in RESP2 and RESP3.

The payload (each library's code after RDB_OPCODE_FUNCTION2, LZF as
rdbcompression writes it, the RDB version and the CRC-64) is compared byte
for byte for one library; with several, Valkey walks its libraries in the
order of a dict seeded at random per process, so payloads are compared by
what they restore: a payload from Valkey is restored here and one from here
on Valkey, and FUNCTION LIST of each library (one function each, so its
reply has one order) is then the same bytes on both servers. Every refusal
is compared with its exact text and leaves the libraries as they were.
"""

from __future__ import annotations

from collections.abc import Iterator

import hiredis
import pytest
from helpers.pair import Pair

from trafikey_server.util.crc64 import crc64

LIB_A = ("#!lua name=liba\n"
         "server.register_function{function_name='fa', callback=function(keys, args) return args[1] end, "
         "flags={'no-writes'}, description='the first'}")
LIB_B = "#!lua name=libb\nredis.register_function('fb', function(keys, args) return 'b' end)"
LIB_B2 = "#!lua name=libb\nredis.register_function('fb2', function(keys, args) return 'b2' end)"
LIB_C = "#!lua name=libc\nredis.register_function('fa', function(keys, args) return 'c' end)"
SHORT = "#!lua name=s\nredis.register_function('s', function() return 1 end)"


@pytest.fixture
def fp(pair23: Pair) -> Iterator[Pair]:
    """A pair with no libraries, before and after."""
    pair23.check("FUNCTION", "FLUSH")
    yield pair23
    pair23.check("FUNCTION", "FLUSH")


def _bulk(reply: bytes) -> bytes:
    reader = hiredis.Reader()
    reader.feed(reply)
    value = reader.gets()
    assert isinstance(value, bytes), reply
    return value


def _libraries(p: Pair) -> None:
    """Each library listed alone, with its code: the same bytes on both."""
    p.check("FUNCTION", "STATS")  # how many libraries and functions
    for name in ("liba", "libb", "libc", "s"):
        p.check("FUNCTION", "LIST", "LIBRARYNAME", name, "WITHCODE")


def test_one_library_dumps_the_same_bytes(fp: Pair) -> None:
    fp.check("FUNCTION", "DUMP")  # no libraries: the footer alone
    fp.check("FUNCTION", "LOAD", LIB_A)
    fp.check("FUNCTION", "DUMP")
    fp.check("FUNCTION", "FLUSH")
    fp.check("FUNCTION", "LOAD", SHORT)  # short enough not to be compressed
    fp.check("FUNCTION", "DUMP")


def test_one_library_uncompressed(fp: Pair) -> None:
    try:
        fp.check("CONFIG", "SET", "rdbcompression", "no")
        fp.check("FUNCTION", "LOAD", LIB_A)
        fp.check("FUNCTION", "DUMP")
    finally:
        fp.check("CONFIG", "SET", "rdbcompression", "yes")


@pytest.mark.parametrize("direction", ["valkey-to-here", "here-to-valkey"])
def test_payloads_restore_on_the_other_server(fp: Pair, direction: str) -> None:
    src, dst = (fp.v, fp.t) if direction == "valkey-to-here" else (fp.t, fp.v)
    for lib in (LIB_A, LIB_B):
        src.call("FUNCTION", "LOAD", lib)
    payload = _bulk(src.call("FUNCTION", "DUMP"))
    assert dst.call("FUNCTION", "RESTORE", payload) == b"+OK\r\n"
    if direction == "valkey-to-here":
        fp.v.call("FUNCTION", "RESTORE", payload, "FLUSH")
    else:
        fp.t.call("FUNCTION", "RESTORE", payload, "FLUSH")
    _libraries(fp)
    fp.check("FCALL", "fa", "0", "x")
    fp.check("FCALL_RO", "fa", "0", "y")
    fp.check("FCALL", "fb", "0")


def test_policies(fp: Pair) -> None:
    for lib in (LIB_A, LIB_B):
        fp.check("FUNCTION", "LOAD", lib)
    both = _bulk(fp.v.call("FUNCTION", "DUMP"))
    fp.check("FUNCTION", "DELETE", "libb")
    fp.check("FUNCTION", "LOAD", LIB_B2)
    # Only libb may clash: with two clashes Valkey names whichever its hash
    # table meets first, an order that changes with each start's seed.
    fp.check("FUNCTION", "DELETE", "liba")
    # APPEND (the default) refuses a library that exists; nothing changes.
    fp.check("FUNCTION", "RESTORE", both)
    fp.check("FUNCTION", "RESTORE", both, "append")
    _libraries(fp)
    fp.check("FCALL", "fb2", "0")
    # REPLACE swaps libb for the payload's; fb2 leaves with it.
    fp.check("FUNCTION", "RESTORE", both, "REPLACE")
    _libraries(fp)
    fp.check("FCALL", "fb2", "0")
    fp.check("FCALL", "fb", "0")
    # FLUSH: only the payload's libraries remain.
    fp.check("FUNCTION", "LOAD", LIB_C.replace("'fa'", "'fc'"))
    fp.check("FUNCTION", "RESTORE", both, "Flush")
    _libraries(fp)
    # APPEND of libraries that are all new.
    fp.check("FUNCTION", "FLUSH")
    fp.check("FUNCTION", "LOAD", SHORT)
    fp.check("FUNCTION", "RESTORE", both, "APPEND")
    _libraries(fp)


def test_function_name_collision(fp: Pair) -> None:
    fp.check("FUNCTION", "LOAD", LIB_A)
    payload = _bulk(fp.v.call("FUNCTION", "DUMP"))
    fp.check("FUNCTION", "FLUSH")
    fp.check("FUNCTION", "LOAD", LIB_C)  # another library with a function named fa
    fp.check("FUNCTION", "RESTORE", payload)
    fp.check("FUNCTION", "RESTORE", payload, "REPLACE")
    _libraries(fp)
    fp.check("FCALL", "fa", "0")
    # A library replaced by the payload frees its function names for it.
    fp.check("FUNCTION", "FLUSH")
    fp.check("FUNCTION", "LOAD", "#!lua name=liba\nredis.register_function('FA', function() return 'old' end)")
    fp.check("FUNCTION", "RESTORE", payload, "REPLACE")
    _libraries(fp)
    fp.check("FCALL", "fa", "0", "new")


def _payload(body: bytes) -> bytes:
    """Any body with a valid footer (version 80 and its CRC-64), so the
    refusal is about the body."""
    out = body + (80).to_bytes(2, "little")
    return out + crc64(out).to_bytes(8, "little")


def _op(code: bytes) -> bytes:
    """A library's code after the FUNCTION2 opcode, uncompressed, with
    the RDB length of up to 16383 bytes."""
    n = len(code)
    return b"\xf5" + (bytes((n,)) if n < 64 else bytes((0x40 | n >> 8, n & 0xFF))) + code


def test_refusals_change_nothing(fp: Pair) -> None:
    fp.check("FUNCTION", "LOAD", LIB_A)
    good = _bulk(fp.v.call("FUNCTION", "DUMP"))
    dup = _op(SHORT.encode())
    bad_name = b"#!lua name=a-b\nredis.register_function('x', function() return 1 end)"
    refusals: list[tuple] = [
        ("FUNCTION", "RESTORE"), ("FUNCTION", "RESTORE", good, "FLUSH", "x"),
        ("FUNCTION", "RESTORE", good, "bad"), ("FUNCTION", "RESTORE", good, "\0flush"),
        ("FUNCTION", "RESTORE", "short"), ("FUNCTION", "RESTORE", ""),
        ("FUNCTION", "RESTORE", good[:-1] + bytes((good[-1] ^ 1,))),
        ("FUNCTION", "RESTORE", good[:-10] + (81).to_bytes(2, "little") + good[-8:]),
        ("FUNCTION", "RESTORE", _payload(b"\x00\x01a"), "FLUSH"),
        ("FUNCTION", "RESTORE", _payload(b"\xf6\x01a"), "FLUSH"),
        ("FUNCTION", "RESTORE", _payload(b"\xf5\x3fabc"), "FLUSH"),
        ("FUNCTION", "RESTORE", _payload(dup + dup), "FLUSH"),
        ("FUNCTION", "RESTORE", _payload(_op(bad_name)), "FLUSH"),
        ("FUNCTION", "RESTORE", _payload(_op(b"#!lua name=e\nreturn 1")), "FLUSH"),
        ("FUNCTION", "RESTORE", _payload(_op(b"no metadata")), "FLUSH"),
        ("FUNCTION", "RESTORE", _payload(_op(b"#!lua name=z\nsyntax error(")), "FLUSH"),
        ("FUNCTION", "RESTORE", _payload(_op(b"#!nosuch name=z\nreturn 1")), "FLUSH"),
        ("FUNCTION", "RESTORE", _payload(_op(SHORT.encode()) + b"\xf5\x3f"), "FLUSH"),
        ("FUNCTION", "RESTORE", good),
    ]
    for step in refusals:
        assert fp.check(*step).startswith(b"-"), step
        _libraries(fp)
    fp.check("FUNCTION", "DUMP", "extra")
    fp.check("FUNCTION", "RESTORE", good, "flush\0")  # the policy is read as a C string
    _libraries(fp)
    fp.check("FUNCTION", "RESTORE", _payload(b""), "FLUSH")  # nothing in it: no libraries at all
    _libraries(fp)


def test_stats_and_command_rows(fp: Pair) -> None:
    fp.check("FUNCTION", "LOAD", LIB_A)
    payload = _bulk(fp.v.call("FUNCTION", "DUMP"))
    fp.check("FUNCTION", "RESTORE", payload, "REPLACE")
    fp.check("FUNCTION", "STATS")
    for sub in ("dump", "restore"):
        fp.check("COMMAND", "INFO", "function|" + sub)
        fp.check("COMMAND", "DOCS", "function|" + sub)
