"""The harness itself: both servers answer, and replies compare as bytes."""

from __future__ import annotations


def test_ping_echo(pair23) -> None:
    pair23.check("PING")
    pair23.check("PING", "hello")
    pair23.check("ECHO", "")
    pair23.check("ECHO", b"\x00\xff binary")


def test_unknown_command_and_arity(pair) -> None:
    pair.check("NOSUCHCOMMAND", "a", "b")
    pair.check("NOSUCHCOMMAND", "x" * 200, "y")
    pair.check("ECHO")
    pair.check("ping", "a", "b")


def test_hello(pair) -> None:
    for args in [("HELLO", "4"), ("HELLO", "x"), ("HELLO", "3", "SETNAME", "a b"),
                 ("HELLO", "3", "SETNAME", "ok", "foo"), ("HELLO", "2", "AUTH", "a", "b")]:
        pair.check(*args)
    v, t = pair.both("HELLO", "3")
    # The client id differs between the two servers; the rest must not.
    assert v.replace(b":%d\r\n" % _id(v), b":ID\r\n") == t.replace(b":%d\r\n" % _id(t), b":ID\r\n")


def _id(reply: bytes) -> int:
    after = reply.split(b"$2\r\nid\r\n:", 1)[1]
    return int(after.split(b"\r\n", 1)[0])


def test_select_swapdb_flush(pair) -> None:
    for args in [("SELECT", "99"), ("SELECT", "-1"), ("SELECT", "x"), ("SELECT", "1"),
                 ("SWAPDB", "0", "99"), ("SWAPDB", "a", "1"), ("SWAPDB", "0", "b"), ("SWAPDB", "0", "1"),
                 ("FLUSHALL", "x"), ("FLUSHALL", "sync", "async"), ("FLUSHDB", "ASYNC"), ("DBSIZE",)]:
        pair.check(*args)
