"""COMMANDLOG against Valkey 9.1.2: HELP, the refusals, the three types'
LEN, GET and RESET, and its slow type being the very log SLOWLOG reads.

The large-request and large-reply logs are served (empty) but not filled:
measuring every request and reply would put work on every command's path.
``test_large_reply_is_logged`` records that gap against Valkey (xfail).
"""

from __future__ import annotations

from collections.abc import Iterator

import hiredis
import pytest
from helpers.resp_wire import Wire

from tests.conftest import Pair

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


@pytest.mark.xfail(strict=True, reason="large-request and large-reply entries are not recorded")
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
