"""Channel permissions: ACL rules with channels, NOPERM for channels,
acl-pubsub-default, and subscribers closed when their user loses a channel,
compared with Valkey."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from helpers.pubsub_streams import assert_same
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc


@pytest.fixture
def cleanup(valkey_server: Proc, trafikey_server: Proc) -> Iterator[None]:
    yield
    for port in (valkey_server.port, trafikey_server.port):
        w = Wire(port)
        w.call("ACL", "DELUSER", "ch1", "ch2", "ch3")
        w.call("CONFIG", "SET", "acl-pubsub-default", "resetchannels")
        w.close()


def test_channel_rules_and_refusals(valkey_server: Proc, trafikey_server: Proc, cleanup: None) -> None:
    assert_same(valkey_server.port, trafikey_server.port, [2, 3], [
        (1, "ACL", "SETUSER", "ch1", "on", "nopass", "+@all", "~*", "&news.*", "&ex", "&ex"),
        (1, "ACL", "GETUSER", "ch1"),
        (1, "ACL", "LIST"),
        (1, "ACL", "SETUSER", "ch1", "&*"),
        (1, "ACL", "SETUSER", "ch1", "allchannels", "&more"),
        (1, "ACL", "SETUSER", "ch1", "&bad channel"),
        (1, "ACL", "SETUSER", "ch1", "resetchannels", "&news.*", "&ex"),
        (1, "ACL", "DRYRUN", "ch1", "PUBLISH", "other", "x"),
        (1, "ACL", "DRYRUN", "ch1", "PUBLISH", "news.a", "x"),
        (1, "ACL", "DRYRUN", "ch1", "SUBSCRIBE", "news.a", "other"),
        (1, "ACL", "DRYRUN", "ch1", "PSUBSCRIBE", "news.*"),
        (1, "ACL", "DRYRUN", "ch1", "PSUBSCRIBE", "news.a"),
        (1, "ACL", "DRYRUN", "ch1", "SSUBSCRIBE", "ex", "ex2"),
        (1, "ACL", "DRYRUN", "ch1", "SPUBLISH", "news.1", "x"),
        (1, "ACL", "DRYRUN", "ch1", "UNSUBSCRIBE", "anything"),
        (1, "ACL", "DRYRUN", "ch1", "PUBSUB", "NUMSUB", "anything"),
        (0, "AUTH", "ch1", "x"),
        (0, "PUBLISH", "nope", "x"),
        (0, "PUBLISH", "news.1", "x"),
        (0, "SPUBLISH", "ex", "x"),
        (0, "SUBSCRIBE", "news.1", "zzz"),
        (0, "PSUBSCRIBE", "news*"),
        (0, "SSUBSCRIBE", "other"),
        (0, "EVAL", "return redis.call('publish', 'nope', 'x')", "0"),
        (0, "EVAL", "return redis.pcall('publish', 'nope', 'x')", "0"),
        (0, "RAW", encode("MULTI") + encode("PUBLISH", "nope", "x") + encode("EXEC")),
        (0, "SUBSCRIBE", "news.1"),
        (0, "PING"),
        (0, "RESET"),
        (1, "ACL", "SETUSER", "ch1", "resetchannels"),
        (1, "ACL", "GETUSER", "ch1"),
        (1, "ACL", "LIST"),
    ])


def test_subscribers_closed_when_channels_go(valkey_server: Proc, trafikey_server: Proc, cleanup: None) -> None:
    """Valkey closes the user's clients whose subscriptions the new rules no
    longer allow (a pattern must be listed as such), at once, and leaves the
    others subscribed."""
    assert_same(valkey_server.port, trafikey_server.port, [3, 2, 3, 2], [
        (1, "ACL", "SETUSER", "ch1", "on", "nopass", "+@all", "~*", "&news.*", "&sport"),
        (0, "AUTH", "ch1", "x"),
        (0, "SUBSCRIBE", "news.1"),
        (0, "PSUBSCRIBE", "news.*"),
        (2, "AUTH", "ch1", "x"),
        (2, "SUBSCRIBE", "sport"),
        (3, "AUTH", "ch1", "x"),
        (3, "PING"),
        (1, "PUBLISH", "news.1", "m"),
        (1, "ACL", "SETUSER", "ch1", "&more"),
        (1, "PUBLISH", "news.1", "still there"),
        (1, "ACL", "SETUSER", "ch1", "resetchannels", "&news.*", "&sport"),
        (1, "PUBLISH", "news.1", "same rules again"),
        (1, "RAW", b"*6\r\n$3\r\nACL\r\n$7\r\nSETUSER\r\n$3\r\nch1\r\n$13\r\nresetchannels\r\n$7\r\n&news.1"
         b"\r\n$6\r\n&sport\r\n*2\r\n$6\r\nPUBSUB\r\n$6\r\nNUMPAT\r\n"),
        (1, "PUBSUB", "NUMSUB", "news.1", "sport"),
        (1, "PUBLISH", "sport", "goal"),
        (1, "ACL", "DELUSER", "ch1"),
        (1, "PUBSUB", "NUMSUB", "news.1", "sport"),
    ])


def test_acl_pubsub_default(valkey_server: Proc, trafikey_server: Proc, cleanup: None) -> None:
    assert_same(valkey_server.port, trafikey_server.port, [2], [
        (0, "CONFIG", "GET", "acl-pubsub-default"),
        (0, "ACL", "SETUSER", "ch1"),
        (0, "CONFIG", "SET", "acl-pubsub-default", "allchannels"),
        (0, "ACL", "SETUSER", "ch2"),
        (0, "ACL", "SETUSER", "ch3", "&x", "reset"),
        (0, "ACL", "SETUSER", "ch1", "reset"),
        (0, "ACL", "LIST"),
        (0, "ACL", "GETUSER", "ch2"),
        (0, "CONFIG", "SET", "acl-pubsub-default", "resetchannels"),
        (0, "ACL", "SETUSER", "ch2", "reset"),
        (0, "ACL", "LIST"),
    ])


def test_subscriber_closing_itself(valkey_server: Proc, trafikey_server: Proc, cleanup: None) -> None:
    """A RESP3 subscriber that takes its own user's channel away gets its
    reply, then is closed."""
    assert_same(valkey_server.port, trafikey_server.port, [3, 2], [
        (1, "ACL", "SETUSER", "ch1", "on", "nopass", "+@all", "~*", "&a"),
        (0, "AUTH", "ch1", "x"),
        (0, "SUBSCRIBE", "a"),
        (0, "ACL", "SETUSER", "ch1", "resetchannels"),
        (1, "PUBSUB", "NUMSUB", "a"),
    ])
