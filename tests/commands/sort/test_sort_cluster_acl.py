"""SORT's refusals of BY and GET patterns, against Valkey.

Slots: a one-node Valkey cluster (all slots its own, so it never redirects)
against trafikey-server with ``--cluster-slot-checks yes``. A pattern may
only name keys in the sorted key's slot: one whose hash tag closes before
any wildcard, or a constant (GET) in that slot; ``#`` and a constant BY
(nosort) are always allowed. The STORE key is a key of the request, so a
STORE into another slot is CROSSSLOT.

ACL: BY with ``*`` and every GET (``#`` included) need read access to every
key (allkeys, ``~*`` or ``%R~*``); the sorted and the STORE key are checked
as the keys of any command.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.pair import Pair
from helpers.resp_wire import Wire
from helpers.script import run, words
from helpers.servers import Proc

OK = b"+OK\r\n"


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def cpair(request: pytest.FixtureRequest, cluster_node: Proc, checked_server: Proc) -> Iterator[Pair]:
    v, t = Wire(cluster_node.port), Wire(checked_server.port)
    assert v.call("FLUSHALL") == OK and t.call("FLUSHALL") == OK
    if request.param == 3:
        v.call("HELLO", "3")
        t.call("HELLO", "3")
    pair = Pair(v, t)
    yield pair
    pair.close()


CLUSTER_SCRIPT = r"""
    RPUSH {a}mylist 1 2 3
    MSET {a}by1 20 {a}by2 30 {a}by3 0 {a}get1 200 {a}get2 100 {a}get3 30
    SORT {a}mylist by by*
    SORT {a}mylist by {a}by*
    SORT {a}mylist by {a}by* get #
    SORT {a}mylist by {a}by* get get*
    SORT {a}mylist by {a}by* get {a}get*
    SORT {a}mylist by {a}by* get {a}get* get #
    SORT_RO {a}mylist by by*
    SORT_RO {a}mylist by {a}by* get {a}get* get #
    SORT_RO {a}mylist by {a}by* get get*
    SORT {a}mylist by nosort
    SORT {a}mylist by nosort get #
    SORT {a}mylist by nosort get {a}const
    SORT {a}mylist by nosort get const
    SORT {a}mylist by nosort get {b}get*
    SORT {a}mylist by *{a}
    SORT {a}mylist by {}*{a}
    SORT {a}mylist by {a\}*
    SORT {a}mylist by {?}*
    SORT {a}mylist by {a}x{b}*
    SORT {a}mylist by {a}by*->f
    SORT {a}mylist by {a}by* get #x
    SORT {a}mylist by by* LIMIT x 1
    SORT {a}mylist LIMIT x 1 by by*
    SORT {a}mylist foo by by*
    SORT {a}mylist by by* foo
    SORT {a}mylist get get* by by*
    SORT {a}mylist by {a}by* store {a}dst
    LRANGE {a}dst 0 -1
    SORT {a}mylist store {b}dst
    SORT {a}mylist store {b}dst by by*
    SORT_RO {a}mylist store {b}dst
    EXISTS {b}dst
    SET {a}str x
    SORT {a}str by by*
    SORT {a}str by {a}by*
    MULTI
    SORT {a}mylist by by*
    SORT {a}mylist by {a}by* get {a}get*
    EXEC
    EVAL "return redis.pcall('sort', KEYS[1], 'by', 'by*')" 1 {a}mylist
    EVAL "return redis.call('sort', KEYS[1], 'by', '{a}by*', 'get', '{a}get*')" 1 {a}mylist
"""


def test_sort_slot_refusals(cpair: Pair) -> None:
    replies = [cpair.check(*words(line.strip())) for line in CLUSTER_SCRIPT.strip().splitlines() if line.strip()]
    text = b"".join(replies)
    assert b"-ERR BY option of SORT denied in Cluster mode" in text
    assert b"-ERR GET option of SORT denied in Cluster mode" in text
    assert b"-CROSSSLOT" in text


# -- ACL ----------------------------------------------------------------------------------


@pytest.fixture
def users(pair: Any) -> Iterator[Any]:
    """Users with different key permissions on both servers; each test
    authenticates its own connections."""
    rules = {
        "allkeys": ["on", "nopass", "allkeys", "+@all"],
        "tilde": ["on", "nopass", "~*", "+@all"],
        "readall": ["on", "nopass", "%R~*", "%W~dst*", "+@all"],
        "writeall": ["on", "nopass", "%W~*", "%R~l*", "+@all"],
        "some": ["on", "nopass", "~l*", "~w_*", "~dst*", "+@all"],
        "nosort": ["on", "nopass", "allkeys", "+@all", "-sort"],
    }
    for name, r in rules.items():
        pair.check("ACL", "SETUSER", name, "reset", *r)
    run(pair, r"""
        RPUSH l 3 1 2
        MSET w_1 30 w_2 10 w_3 20
        SET other x
    """)
    yield pair
    for name in rules:
        pair.check("ACL", "DELUSER", name)


ACL_SCRIPT = r"""
    SORT l
    SORT l BY nosort
    SORT l BY w_*
    SORT l GET #
    SORT l BY nosort GET w_*
    SORT l BY w_* GET # STORE dst1
    SORT l STORE dst2
    SORT l STORE other
    SORT_RO l BY w_*
    SORT_RO l GET #
    SORT other
    SORT l foo BY w_*
    SORT l BY w_* foo
    SORT l LIMIT x 1 GET #
    SORT l GET # LIMIT x 1
    EVAL "return redis.pcall('sort', KEYS[1], 'by', 'w_*', 'get', '#')" 1 l
    EVAL "return redis.pcall('sort', KEYS[1], 'by', 'nosort')" 1 l
    EVAL "return redis.pcall('sort', KEYS[1], 'store', 'other')" 1 l
    EVAL "return redis.pcall('sort_ro', KEYS[1], 'get', '#')" 1 l
"""


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("user", ["allkeys", "tilde", "readall", "writeall", "some", "nosort"])
def test_sort_under_acl(users: Any, user: str, proto: int) -> None:
    v = Wire(users.v.port)
    t = Wire(users.t.port)
    try:
        assert v.call("AUTH", user, "x") == OK and t.call("AUTH", user, "x") == OK
        if proto == 3:
            v.call("HELLO", "3")
            t.call("HELLO", "3")
        pair = Pair(v, t)
        replies = [pair.check(*words(line.strip())) for line in ACL_SCRIPT.strip().splitlines()]
        if user in ("writeall", "some"):
            assert b"-ERR BY option of SORT denied due to insufficient ACL permissions.\r\n" in replies
            assert b"-ERR GET option of SORT denied due to insufficient ACL permissions.\r\n" in replies
    finally:
        v.close()
        t.close()
    run(users, r"""
        LRANGE dst1 0 -1
        LRANGE dst2 0 -1
        GET other
        DEL dst1 dst2
        SET other x
    """)
