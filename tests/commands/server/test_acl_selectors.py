"""ACL selectors (Valkey's ACL v2): ``(rules)`` beside a user's own rules,
a request allowed when the user's rules or any selector's allow all of it;
their syntax and refusals, GETUSER and LIST, the reason a refusal gives, in
ACL files and ``user`` lines too. Beside valkey-server 9.1.2, RESP2 and
RESP3."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.pair import Pair

SETUPS = [
    ("ACL", "SETUSER", "s", "on", "nopass", "(~a* +get &x)", "(%R~b* +@read)"),
    ("ACL", "SETUSER", "t", "on", "nopass", "-@all", "(+@write", "~write::*)", "(+@read ~read::*)"),
    ("ACL", "SETUSER", "z", "on", "nopass", "(%R~read* +@all)", "(%W~write* +@all)"),
    ("ACL", "SETUSER", "c", "on", "nopass", "+@all", "resetchannels", "(&foo +@all)", "(&bar* ~*)"),
    ("ACL", "SETUSER", "flex", "(~key1 +get )", "( ~key2 +get )", "( ~key3 +get)", "(~key4 +get)"),
]


@pytest.fixture
def users(pair23: Pair) -> Iterator[Pair]:
    pair23.check_all(*SETUPS)
    yield pair23
    pair23.check("ACL", "DELUSER", "s", "t", "z", "c", "flex", "d", "x", "y")


def test_described(users: Pair) -> None:
    users.check_all(("ACL", "GETUSER", "s"), ("ACL", "GETUSER", "t"), ("ACL", "GETUSER", "flex"), ("ACL", "LIST"))


def test_a_selector_allows_all_of_a_request_or_none(users: Pair) -> None:
    users.check_all(
        ("ACL", "DRYRUN", "t", "set", "write::foo", "bar"), ("ACL", "DRYRUN", "t", "get", "read::foo"),
        ("ACL", "DRYRUN", "t", "get", "write::foo"), ("ACL", "DRYRUN", "t", "set", "read::foo", "x"),
        ("ACL", "DRYRUN", "t", "ping"),
        # read and write patterns on different selectors do not add up
        ("ACL", "DRYRUN", "z", "lpush", "writelist", "1"), ("ACL", "DRYRUN", "z", "get", "writestr"),
        ("ACL", "DRYRUN", "z", "copy", "read", "write"), ("ACL", "DRYRUN", "z", "get", "readstr"),
        ("ACL", "DRYRUN", "c", "publish", "foo", "m"), ("ACL", "DRYRUN", "c", "publish", "bar1", "m"),
        ("ACL", "DRYRUN", "c", "publish", "zz", "m"), ("ACL", "DRYRUN", "c", "subscribe", "foo", "zz"),
        # refused by every selector: the gravest reason, then the latest item (what ACL LOG records too)
        ("ACL", "DRYRUN", "t", "mset", "write::a", "1", "read::b", "2"),
        ("ACL", "DRYRUN", "s", "mget", "a1", "b1", "c1"),
    )


def test_syntax_and_refusals(users: Pair) -> None:
    users.check_all(
        ("ACL", "SETUSER", "x", "on", "(this-is-invalid)"), ("ACL", "SETUSER", "x", "on", "(&* &fail)"),
        ("ACL", "SETUSER", "x", "on", "(+PING", "(+SELECT", "(+DEL"),
        ("ACL", "SETUSER", "x", "on", "(+PING", "(+SELECT", "(+DEL", ")", ")", ")"),
        ("ACL", "SETUSER", "x", "on", "(+PING", "(+SELECT", "(+DEL", ")"),
        ("ACL", "SETUSER", "x", " () "), ("ACL", "SETUSER", "x", "("), ("ACL", "SETUSER", "x", ")"),
        ("ACL", "GETUSER", "x"),
        ("ACL", "SETUSER", "y", "on", "(on)"), ("ACL", "SETUSER", "y", "on", "(>pw)"),
        ("ACL", "SETUSER", "y", "on", "(nopass)"), ("ACL", "SETUSER", "y", "on", "(clearselectors)"),
        ("ACL", "SETUSER", "y", "on", "(reset)"), ("ACL", "GETUSER", "y"),
    )


def test_reset_and_clearselectors(users: Pair) -> None:
    users.check_all(("ACL", "SETUSER", "d", "reset", "()"), ("ACL", "GETUSER", "d"),
                    ("ACL", "SETUSER", "d", "on", "(~added)"), ("ACL", "GETUSER", "d"),
                    ("ACL", "SETUSER", "d", "clearselectors"), ("ACL", "GETUSER", "d"),
                    ("ACL", "SETUSER", "d", "(~again)", "reset"), ("ACL", "GETUSER", "d"))


def test_sort_by_and_get_need_a_selector_reading_every_key(users: Pair) -> None:
    """SORT's BY and GET read keys built from patterns: allowed only when a
    selector that lets the SORT run also reads every key."""
    users.check_all(("SET", "v1", "1"), ("LPUSH", "mylist", "1"))
    for rules in (("(+sort ~mylist)",), ("(+sort ~mylist ~v*)",), ("(+sort ~mylist %W~*)",),
                  ("(+sort ~mylist %R~*)",), ("+sort", "~mylist", "%R~*")):
        users.check_all(("ACL", "DELUSER", "sorter"), ("ACL", "SETUSER", "sorter", "on", ">pw", *rules))
        for side in (users.v, users.t):
            assert side.call("AUTH", "sorter", "pw") == b"+OK\r\n"
        users.check_all(("SORT", "mylist", "BY", "v*"), ("SORT", "mylist", "GET", "v*"), ("SORT", "mylist"))
        for side in (users.v, users.t):
            side.call("AUTH", "default", "x")
    users.check_all(("ACL", "DELUSER", "sorter"), ("DEL", "v1", "mylist"))


def test_bitfield_reads_when_every_operation_is_a_get(users: Pair) -> None:
    users.check_all(("ACL", "SETUSER", "bf", "on", ">pw", "%R~read*", "%W~write*", "+@all"))
    for side in (users.v, users.t):
        assert side.call("AUTH", "bf", "pw") == b"+OK\r\n"
    users.check_all(("BITFIELD", "readstr", "GET", "u4", "0"),
                    ("BITFIELD", "readstr", "OVERFLOW", "SAT", "GET", "u4", "0"),
                    ("BITFIELD", "readstr", "SET", "u4", "0", "1"),
                    ("BITFIELD", "readstr", "GET", "u4", "0", "SET", "u4", "0", "1"),
                    ("BITFIELD", "readstr", "INCRBY", "u4", "0", "1"), ("BITFIELD", "readstr", "GET", "u4"),
                    ("BITFIELD", "writestr", "SET", "u4", "0", "1"), ("BITFIELD", "writestr", "GET", "u4", "0"))
    for side in (users.v, users.t):
        side.call("AUTH", "default", "x")
    users.check_all(("ACL", "DELUSER", "bf"), ("DEL", "writestr"))
