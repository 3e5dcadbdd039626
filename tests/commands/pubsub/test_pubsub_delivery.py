"""Delivery of published messages, compared with Valkey frame for frame:
who receives what, in which order, in RESP2 and RESP3, with the publisher
and the subscribers interleaved."""

from __future__ import annotations

import pytest
from helpers.pubsub_streams import assert_same
from helpers.resp_wire import encode
from helpers.servers import Proc

PROTOS = [(2, 2), (3, 3), (2, 3), (3, 2)]


@pytest.mark.parametrize("sub,pub", PROTOS, ids=lambda p: f"resp{p}")
def test_subscribe_publish_unsubscribe(valkey_server: Proc, trafikey_server: Proc, sub: int, pub: int) -> None:
    assert_same(valkey_server.port, trafikey_server.port, [sub, pub], [
        (0, "SUBSCRIBE", "d1.news", "d1.sport", "d1.news"),
        (1, "PUBLISH", "d1.news", "hello"),
        (1, "PUBLISH", "d1.none", "nobody"),
        (0, "PSUBSCRIBE", "d1.*", "d1.s?ort", "d1.[ns]*"),
        (1, "PUBLISH", "d1.sport", "goal"),
        (1, "PUBLISH", "d1.news", "x" * 300),
        (1, "PUBLISH", "d1.other", ""),
        (0, "UNSUBSCRIBE", "d1.news", "d1.never"),
        (1, "PUBLISH", "d1.news", "after"),
        (0, "PUNSUBSCRIBE", "d1.*"),
        (1, "PUBLISH", "d1.news", "again"),
        (0, "PUNSUBSCRIBE", "d1.s?ort"),
        (0, "PUNSUBSCRIBE", "d1.[ns]*"),
        (0, "UNSUBSCRIBE"),
        (1, "PUBLISH", "d1.sport", "gone"),
        (0, "UNSUBSCRIBE"),
        (0, "PUNSUBSCRIBE"),
        (0, "PUBLISH", "d1.sport", "free again"),
    ])


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_three_clients_interleaved(valkey_server: Proc, trafikey_server: Proc, proto: int) -> None:
    other = 5 - proto
    assert_same(valkey_server.port, trafikey_server.port, [proto, other, proto], [
        (0, "SUBSCRIBE", "d2.a"),
        (1, "PSUBSCRIBE", "d2.*"),
        (1, "SUBSCRIBE", "d2.a"),
        (2, "PUBLISH", "d2.a", "one"),
        (2, "PUBLISH", "d2.b", "two"),
        (0, "SUBSCRIBE", "d2.b"),
        (2, "RAW", encode("PUBLISH", "d2.a", "p1") + encode("PUBLISH", "d2.b", "p2") + encode("GET", "d2")),
        (1, "PUNSUBSCRIBE", "d2.*"),
        (2, "PUBLISH", "d2.b", "three"),
        (0, "RAW", encode("UNSUBSCRIBE", "d2.a") + encode("PING") + encode("PING", "m")),
        (2, "PUBLISH", "d2.a", "four"),
        (2, "PUBSUB", "NUMSUB", "d2.a", "d2.b", "d2.c"),
        (2, "PUBSUB", "NUMPAT"),
    ])


def test_publish_to_itself_resp3(valkey_server: Proc, trafikey_server: Proc) -> None:
    """A RESP3 client gets the messages it publishes to itself after the
    reply to PUBLISH, after the whole EXEC reply in a transaction, and
    after the reply of the script that published them."""
    assert_same(valkey_server.port, trafikey_server.port, [3, 3], [
        (0, "SUBSCRIBE", "d3.me"),
        (0, "PSUBSCRIBE", "d3.*"),
        (0, "PUBLISH", "d3.me", "solo"),
        (0, "RAW", encode("PUBLISH", "d3.me", "a") + encode("PUBLISH", "d3.x", "b") + encode("ECHO", "c")),
        (0, "RAW", encode("MULTI") + encode("PUBLISH", "d3.me", "m1") + encode("ECHO", "mid")
         + encode("PUBLISH", "d3.y", "m2") + encode("EXEC")),
        (0, "EVAL", "redis.call('publish', 'd3.me', 's1'); redis.call('publish', 'd3.z', 's2'); return 7", "0"),
        (1, "EVAL", "return redis.call('publish', KEYS[1], ARGV[1])", "1", "d3.me", "from-script"),
        (1, "RAW", encode("MULTI") + encode("PUBLISH", "d3.me", "tx") + encode("EXEC")),
        (0, "SUBSCRIBE", "d3.me", "d3.new"),
        (0, "RESET"),
        (1, "PUBLISH", "d3.me", "after reset"),
    ])


def test_resp2_subscribed_mode(valkey_server: Proc, trafikey_server: Proc) -> None:
    assert_same(valkey_server.port, trafikey_server.port, [2, 2], [
        (0, "PING"),
        (0, "SUBSCRIBE", "d4"),
        (0, "PING"),
        (0, "PING", "hello"),
        (0, "GET", "k"),
        (0, "PUBLISH", "d4", "x"),
        (0, "CLIENT", "LIST"),
        (0, "MULTI"),
        (0, "HELLO", "3"),
        (0, "PSUBSCRIBE", "d4*"),
        (1, "PUBLISH", "d4", "y"),
        (0, "UNSUBSCRIBE", "d4"),
        (0, "GET", "k"),
        (0, "PUNSUBSCRIBE"),
        (0, "GET", "k"),
        (0, "SUBSCRIBE", "d4"),
        (0, "RESET"),
        (0, "GET", "k"),
        (1, "PUBLISH", "d4", "nobody"),
    ])


def test_resp3_subscriber_runs_anything(valkey_server: Proc, trafikey_server: Proc) -> None:
    assert_same(valkey_server.port, trafikey_server.port, [3, 2], [
        (0, "SUBSCRIBE", "d5"),
        (0, "SET", "d5k", "v"),
        (0, "GET", "d5k"),
        (0, "PING"),
        (1, "PUBLISH", "d5", "m"),
        (0, "HELLO", "2"),
        (0, "GET", "d5k"),
        (1, "PUBLISH", "d5", "now resp2"),
        (0, "PING"),
        (0, "DEL", "d5k"),
        (0, "RESET"),
        (0, "DEL", "d5k"),
    ])


def test_subscribe_in_multi(valkey_server: Proc, trafikey_server: Proc) -> None:
    assert_same(valkey_server.port, trafikey_server.port, [3, 2], [
        (0, "RAW", encode("MULTI") + encode("SUBSCRIBE", "d6", "d6b") + encode("PUBLISH", "d6", "x")
         + encode("EXEC")),
        (1, "PUBLISH", "d6b", "y"),
        (0, "RAW", encode("MULTI") + encode("UNSUBSCRIBE", "d6") + encode("EXEC")),
        (1, "PUBLISH", "d6", "z"),
        (1, "RAW", encode("MULTI") + encode("SUBSCRIBE", "d6c") + encode("EXEC")),
        (0, "PUBLISH", "d6c", "to resp2"),
    ])


def test_disconnect_drops_subscriptions(pair) -> None:  # type: ignore[no-untyped-def]
    from helpers.resp_wire import Wire

    for w in (pair.v, pair.t):
        sub = Wire(w.port)
        sub.call("SUBSCRIBE", "d7")
        sub.call("PSUBSCRIBE", "d7*")
        assert w.call("PUBSUB", "NUMSUB", "d7") == b"*2\r\n$2\r\nd7\r\n:1\r\n"
        sub.close()
        for _ in range(200):  # the server sees the close on its next turn
            if w.call("PUBSUB", "NUMSUB", "d7") == b"*2\r\n$2\r\nd7\r\n:0\r\n":
                break
        assert w.call("PUBSUB", "NUMSUB", "d7") == b"*2\r\n$2\r\nd7\r\n:0\r\n"
        assert w.call("PUBSUB", "NUMPAT") == b":0\r\n"
        assert w.call("PUBLISH", "d7", "x") == b":0\r\n"


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_edges(valkey_server: Proc, trafikey_server: Proc, proto: int) -> None:
    """Odd names and patterns, refusals that come before the subscribed-mode
    check, and QUIT while subscribed."""
    assert_same(valkey_server.port, trafikey_server.port, [proto, 2], [
        (0, "SUBSCRIBE", "", "e\x00bin\r\n", "e" * 1000),
        (0, "PSUBSCRIBE", "e\\*", "e[a-c]?", "e[^x]", "e[", "**"),
        (1, "PUBLISH", "", "empty channel"),
        (1, "PUBLISH", "e\x00bin\r\n", "binary"),
        (1, "PUBLISH", "e*", "literal star"),
        (1, "PUBLISH", "ebz", "class"),
        (1, "PUBLISH", "e[", "open class"),
        (1, "PUBLISH", "e" * 1000, "y" * 100000),
        (0, "NOSUCHCOMMAND", "x"),
        (0, "GET"),
        (0, "PING", "a", "b"),
        (0, "CLIENT", "NOSUCH"),
        (0, "SUBSCRIBE"),
        (0, "RAW", encode("UNSUBSCRIBE", "", "e" * 1000) + encode("PING") + encode("PUNSUBSCRIBE", "e\\*", "**")),
        (1, "RAW", encode("PUBLISH", "e\x00bin\r\n", "1") + encode("PUBLISH", "eaq", "2")),
        (0, "QUIT"),
        (1, "PUBSUB", "NUMSUB", "e\x00bin\r\n"),
    ])
