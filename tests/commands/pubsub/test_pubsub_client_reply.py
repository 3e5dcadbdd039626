"""CLIENT REPLY OFF / SKIP silence replies but not pushed messages, nor the
subscribe family's confirmations (pushes in Valkey), compared with Valkey."""

from __future__ import annotations

import pytest
from helpers.pubsub_streams import assert_same
from helpers.resp_wire import Wire, encode
from helpers.servers import Proc


def _serves_client_reply(port: int) -> bool:
    w = Wire(port)
    try:
        return w.call("CLIENT", "REPLY", "ON") == b"+OK\r\n"
    finally:
        w.close()


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_client_reply_with_pubsub(valkey_server: Proc, trafikey_server: Proc, proto: int) -> None:
    if not _serves_client_reply(trafikey_server.port):
        pytest.skip("CLIENT REPLY is served with client tracking, not by pub/sub alone")
    assert_same(valkey_server.port, trafikey_server.port, [proto, 2], [
        (0, "CLIENT", "REPLY", "ON"),
        (0, "CLIENT", "REPLY", "MAYBE"),
        ("QUIET", {0}),
        (0, "RAW", encode("CLIENT", "REPLY", "OFF") + encode("SET", "cr", "1") + encode("GET", "cr")
         + encode("NOSUCHCOMMAND") + encode("SUBSCRIBE", "cr.a") + encode("PSUBSCRIBE", "cr.*"), 2),
        (1, "PUBLISH", "cr.a", "heard"),
        ("QUIET", set()),
        (0, "RAW", encode("UNSUBSCRIBE", "cr.a") + encode("PUNSUBSCRIBE") + encode("CLIENT", "REPLY", "ON")
         + encode("GET", "cr")),
        (0, "RAW", encode("CLIENT", "REPLY", "SKIP") + encode("GET", "cr") + encode("ECHO", "shown")),
        (0, "RAW", encode("CLIENT", "REPLY", "SKIP") + encode("CLIENT", "REPLY", "SKIP") + encode("ECHO", "a")
         + encode("ECHO", "b")),
        (0, "RAW", encode("CLIENT", "REPLY", "OFF") + encode("CLIENT", "REPLY", "SKIP") + encode("ECHO", "c")
         + encode("CLIENT", "REPLY", "ON") + encode("ECHO", "d")),
        (0, "RAW", encode("CLIENT", "REPLY", "SKIP") + encode("CLIENT", "REPLY", "ON") + encode("ECHO", "e")),
        (0, "RAW", encode("CLIENT", "REPLY", "SKIP") + encode("SUBSCRIBE", "cr.b") + encode("PING")),
        (1, "PUBLISH", "cr.b", "x"),
        (0, "RAW", encode("CLIENT", "REPLY", "OFF") + encode("PING") + encode("UNSUBSCRIBE")
         + encode("CLIENT", "REPLY", "ON")),
        (0, "RAW", encode("CLIENT", "REPLY", "OFF") + encode("RESET") + encode("ECHO", "f")),
        (0, "RAW", encode("CLIENT", "REPLY", "SKIP") + encode("RESET") + encode("ECHO", "g")),
        (0, "RAW", encode("CLIENT", "REPLY", "SKIP") + encode("MULTI") + encode("ECHO", "h") + encode("EXEC")),
        (0, "DEL", "cr"),
    ])
