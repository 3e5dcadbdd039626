"""COMMANDLOG against Valkey 9.1.2: HELP, the refusals, the three types'
LEN, GET and RESET, its slow type being the very log SLOWLOG reads, and
what the large-request and large-reply types log (the sizes as Valkey
counts them, in EXEC and scripts too)."""

from __future__ import annotations

from collections.abc import Iterator

import hiredis
import pytest
from helpers.pair import Pair
from helpers.resp_wire import Wire

TYPES = ("slow", "large-request", "large-reply")


def _reset(pair: Pair) -> None:
    for w in (pair.v, pair.t):
        for t in TYPES:
            assert w.call("COMMANDLOG", "RESET", t) == b"+OK\r\n"


@pytest.fixture
def quiet(pair23: Pair) -> Iterator[Pair]:
    """Both servers' logs emptied, the slow log off, so LEN is 0 on both."""
    for w in (pair23.v, pair23.t):
        assert w.call("CONFIG", "SET", "commandlog-execution-slower-than", "-1") == b"+OK\r\n"
    _reset(pair23)
    yield pair23
    for w in (pair23.v, pair23.t):
        w.call("CONFIG", "SET", "commandlog-execution-slower-than", "10000", "commandlog-slow-execution-max-len", "128")
    _reset(pair23)


STEPS: list[tuple] = [
    ("COMMANDLOG", "HELP"), ("commandlog", "help"), ("COMMANDLOG", "GET", "1", "slow"),
    ("COMMANDLOG", "GET", "-1", "SLOW"),
    ("COMMANDLOG", "GET", "10", "large-request"), ("COMMANDLOG", "GET", "0", "large-reply"),
    ("COMMANDLOG", "LEN", "slow"), ("COMMANDLOG", "LEN", "Large-Request"), ("COMMANDLOG", "LEN", "large-reply"),
    ("COMMANDLOG", "RESET", "slow"), ("COMMANDLOG", "RESET", "LARGE-REPLY"), ("COMMANDLOG", "RESET", "large-request"),
]
REFUSALS: list[tuple] = [
    ("COMMANDLOG",), ("COMMANDLOG", "GET"), ("COMMANDLOG", "GET", "1"), ("COMMANDLOG", "GET", "1", "slow", "x"),
    ("COMMANDLOG", "GET", "-2", "slow"), ("COMMANDLOG", "GET", "x", "slow"), ("COMMANDLOG", "GET", "x", "foo"),
    ("COMMANDLOG", "GET", "1", "foo"), ("COMMANDLOG", "GET", "1.5", "slow"), ("COMMANDLOG", "LEN"),
    ("COMMANDLOG", "LEN", "foo"), ("COMMANDLOG", "LEN", "slow", "x"), ("COMMANDLOG", "RESET"),
    ("COMMANDLOG", "RESET", "foo"), ("COMMANDLOG", "RESET", "slow", "x"), ("COMMANDLOG", "HELP", "x"),
    ("COMMANDLOG", "foo"), ("COMMANDLOG", "foo", "bar"),
]


def test_replies_and_refusals(quiet: Pair) -> None:
    for step in STEPS:
        quiet.check(*step)
    for step in REFUSALS:
        assert quiet.check(*step).startswith(b"-"), step


def test_command_docs(pair23: Pair) -> None:
    for sub in ("", "|get", "|len", "|reset", "|help"):
        pair23.check("COMMAND", "INFO", "commandlog" + sub)
        pair23.check("COMMAND", "DOCS", "commandlog" + sub)


def _argvs(w: Wire, *request: str) -> list[list[bytes]]:
    """The argument lists of the entries, read on the pair's own connection
    (a new client would log its own hand-shake)."""
    reader = hiredis.Reader()
    reader.feed(w.call(*request))
    return [e[3] for e in reader.gets()]


def test_slow_type_is_the_slow_log(quiet: Pair) -> None:
    """With every command slow enough, COMMANDLOG's slow type and SLOWLOG
    hold the same entries, as Valkey's do, and resetting either empties both."""
    for w in (quiet.v, quiet.t):
        assert w.call("CONFIG", "SET", "commandlog-execution-slower-than", "0") == b"+OK\r\n"
        w.call("SET", "k", "v")
        w.call("GET", "k")
        w.call("LCS", "k", "k")
    pv, pt = quiet.v, quiet.t
    via_commandlog = _argvs(pt, "COMMANDLOG", "GET", "-1", "slow")
    assert via_commandlog == _argvs(pv, "COMMANDLOG", "GET", "-1", "slow")
    # SLOWLOG reads the same log: the COMMANDLOG GET above is its newest entry.
    assert _argvs(pt, "SLOWLOG", "GET", "-1")[1:] == via_commandlog
    assert _argvs(pv, "SLOWLOG", "GET", "-1")[1:] == via_commandlog
    assert [b"LCS", b"k", b"k"] in via_commandlog
    quiet.check("COMMANDLOG", "LEN", "slow")
    quiet.check("SLOWLOG", "LEN")
    quiet.check("COMMANDLOG", "RESET", "slow")
    quiet.check("SLOWLOG", "LEN")
    quiet.check("SLOWLOG", "RESET")
    quiet.check("COMMANDLOG", "LEN", "slow")
    quiet.check("COMMANDLOG", "LEN", "large-request")


def test_slow_max_len(quiet: Pair) -> None:
    for w in (quiet.v, quiet.t):
        assert w.call("CONFIG", "SET", "commandlog-execution-slower-than", "0",
                      "commandlog-slow-execution-max-len", "4") == b"+OK\r\n"
        for i in range(10):
            w.call("SET", "k", str(i))
    quiet.check("COMMANDLOG", "LEN", "slow")
    assert _argvs(quiet.t, "COMMANDLOG", "GET", "-1", "slow") == _argvs(
        quiet.v, "COMMANDLOG", "GET", "-1", "slow")
    for w in (quiet.v, quiet.t):
        assert w.call("CONFIG", "SET", "slowlog-max-len", "2") == b"+OK\r\n"
    quiet.check("COMMANDLOG", "LEN", "slow")


def test_large_reply_is_logged(quiet: Pair) -> None:
    for w in (quiet.v, quiet.t):
        assert w.call("CONFIG", "SET", "commandlog-reply-larger-than", "10") == b"+OK\r\n"
        w.call("SET", "k", "x" * 50)
        w.call("GET", "k")
        w.call("CONFIG", "SET", "commandlog-reply-larger-than", "1048576")
    try:
        quiet.check("COMMANDLOG", "LEN", "large-reply")
    finally:
        _reset(quiet)


def _entries(w: Wire, kind: str) -> list[tuple]:
    """The entries of one type as (measure, argv, name): ids, times and
    client addresses are each server's own."""
    reader = hiredis.Reader()
    reader.feed(w.call("COMMANDLOG", "GET", "-1", kind))
    return [(e[2], e[3], e[5]) for e in reader.gets()]


def _thresholds(pair: Pair, request: int, reply: int) -> None:
    for w in (pair.v, pair.t):
        assert w.call("CONFIG", "SET", "commandlog-request-larger-than", str(request),
                      "commandlog-reply-larger-than", str(reply)) == b"+OK\r\n"


@pytest.fixture
def sized(quiet: Pair) -> Iterator[Pair]:
    """``quiet``, with the size thresholds put back afterwards."""
    yield quiet
    _thresholds(quiet, 1048576, 1048576)
    for w in (quiet.v, quiet.t):
        w.call("CONFIG", "SET", "commandlog-large-request-max-len", "128", "commandlog-large-reply-max-len", "128")
        w.call("FUNCTION", "FLUSH")
    _reset(quiet)


def assert_same_logs(pair: Pair) -> None:
    _thresholds(pair, 1048576, 1048576)  # the reads below are not logged
    for kind in ("large-request", "large-reply"):
        assert _entries(pair.t, kind) == _entries(pair.v, kind), kind
        pair.check("COMMANDLOG", "LEN", kind)


def test_sizes_at_the_thresholds(sized: Pair) -> None:
    """A request or reply of exactly the threshold is logged; one byte
    less is not; the CONFIG SET that changes a threshold is measured
    against the new one."""
    for w in (sized.v, sized.t):
        w.call("CONFIG", "SET", "commandlog-request-larger-than", "30", "commandlog-reply-larger-than", "10")
        w.call("SET", "k", "x" * 50)  # a 77-byte request
        w.call("SET", "s", "abcde")  # 31 bytes
        w.call("SET", "t", "abcd")  # 30 bytes
        w.call("SET", "u", "abc")  # 29 bytes
        w.call("GET", "k")  # a 57-byte reply
        w.call("GET", "s")  # 11 bytes
        w.call("GET", "t")  # 10 bytes
        w.call("GET", "u")  # 9 bytes
        w.call("ECHO", "1234567890123456")
        w.call("GET", "nokey")
        w.call("SET", "k", "y" * 500, "GET")
        w.call("AUTH", "nosuchuser", "x" * 40)  # logged with its arguments hidden
        w.call("HSET", "h", *("f%d" % i for i in range(40)), "v")  # refused: the error is logged as a reply
        w.call("CONFIG", "SET", "commandlog-reply-larger-than", "1")
    assert_same_logs(sized)


def test_transactions_and_scripts(sized: Pair) -> None:
    """In EXEC a command is logged with EXEC's request and the
    transaction's reply so far (EXEC itself is not logged); a script's
    command has no request and its own reply."""
    _thresholds(sized, 0, 0)
    for w in (sized.v, sized.t):
        w.pipeline([("MULTI",), ("SET", "a", "1" * 30), ("INCR", "a"), ("GET", "a"), ("LPUSH", "a", "x"),
                    ("EXEC",)])
        w.call("EVAL", "server.call('set', KEYS[1], ARGV[1]); return server.call('get', KEYS[1])", "1", "k",
               "v" * 40)
        w.call("FUNCTION", "LOAD", "#!lua name=cl\nserver.register_function('f', function(k, a) "
                                   "return server.call('echo', a[1]) end)")
        w.call("FCALL", "f", "0", "z" * 70)
    assert_same_logs(sized)


def test_large_requests_in_pieces_and_pipelines(sized: Pair) -> None:
    """A request cut into many reads, and many small requests in one
    read, are each measured whole."""
    _thresholds(sized, 1000, 2000)
    big = b"*3\r\n$3\r\nSET\r\n$3\r\nbig\r\n$3000\r\n" + b"b" * 3000 + b"\r\n"
    for w in (sized.v, sized.t):
        for i in range(0, len(big), 700):
            w.send_raw(big[i:i + 700])
        assert w.read_reply() == b"+OK\r\n"
        w.pipeline([("SET", "p%d" % i, "v" * 100) for i in range(20)] + [("GET", "big"), ("MGET", "big", "big")])
        w.pipeline([("SET", "q", "w" * 990), ("APPEND", "q", "w" * 1000), ("GETRANGE", "q", "0", "-1")])
    assert_same_logs(sized)


@pytest.mark.parametrize("setting", ["max-len", "disabled"])
def test_lengths_and_switching_off(sized: Pair, setting: str) -> None:
    for w in (sized.v, sized.t):
        if setting == "max-len":
            w.call("CONFIG", "SET", "commandlog-large-request-max-len", "3", "commandlog-large-reply-max-len", "2")
            w.call("CONFIG", "SET", "commandlog-request-larger-than", "0", "commandlog-reply-larger-than", "0")
        else:
            w.call("CONFIG", "SET", "commandlog-request-larger-than", "-1", "commandlog-reply-larger-than", "-1")
        for i in range(6):
            w.call("SET", "k%d" % i, "v" * i)
            w.call("GET", "k%d" % i)
    assert_same_logs(sized)
    sized.check("COMMANDLOG", "RESET", "large-request")
    sized.check("COMMANDLOG", "LEN", "large-request")
