"""Shard channels under --cluster-slot-checks, against a real one-node
Valkey cluster: SSUBSCRIBE, SUNSUBSCRIBE and SPUBLISH are routed by their
channels' slot (CROSSSLOT when they differ), plain pub/sub is not."""

from __future__ import annotations

import pytest
from helpers.pubsub_streams import assert_same
from helpers.resp_wire import encode
from helpers.servers import Proc


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_shard_channels_by_slot(cluster_node: Proc, checked_server: Proc, proto: int) -> None:
    assert_same(cluster_node.port, checked_server.port, [proto, 3], [
        (0, "SSUBSCRIBE", "a", "b"),
        (0, "SSUBSCRIBE", "{t}a", "{t}b", "t"),
        (1, "SPUBLISH", "{t}a", "m"),
        (1, "SPUBLISH", "a", "nobody"),
        (0, "SUNSUBSCRIBE", "{t}a", "zz"),
        (0, "SUNSUBSCRIBE", "{t}b", "t"),
        (0, "SUBSCRIBE", "a", "b"),
        (1, "PUBLISH", "b", "plain pub/sub is not routed"),
        (0, "UNSUBSCRIBE", "a", "b"),
        (1, "RAW", encode("MULTI") + encode("SPUBLISH", "a", "x") + encode("SPUBLISH", "b", "y") + encode("EXEC")),
        (1, "RAW", encode("MULTI") + encode("SPUBLISH", "{t}a", "x") + encode("SPUBLISH", "t", "y")
         + encode("EXEC")),
        (1, "RAW", encode("MULTI") + encode("SSUBSCRIBE", "a", "b") + encode("EXEC")),
        (1, "PUBSUB", "SHARDNUMSUB", "{t}a", "t"),
    ])
