"""PUBSUB introspection, shard channels, and pub/sub state in INFO and
CLIENT LIST, compared with Valkey in RESP2 and RESP3."""

from __future__ import annotations

import re

import pytest
from helpers.pubsub_streams import Clients, assert_same, settle
from helpers.resp_wire import encode
from helpers.servers import Proc


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_pubsub_introspection(valkey_server: Proc, trafikey_server: Proc, proto: int) -> None:
    assert_same(valkey_server.port, trafikey_server.port, [proto, 3, 2], [
        (2, "PUBSUB", "CHANNELS"),
        (2, "PUBSUB", "NUMPAT"),
        (2, "PUBSUB", "NUMSUB"),
        (2, "PUBSUB", "SHARDNUMSUB"),
        (0, "SUBSCRIBE", "i.a"),
        (1, "SUBSCRIBE", "i.a", "i.b"),
        (1, "PSUBSCRIBE", "i.*", "x*"),
        (0, "PSUBSCRIBE", "i.*"),
        (1, "SSUBSCRIBE", "i.s"),
        (2, "PUBSUB", "CHANNELS", "i.b"),
        (2, "PUBSUB", "CHANNELS", "i.[b]"),
        (2, "PUBSUB", "CHANNELS", "nomatch*"),
        (2, "PUBSUB", "NUMSUB", "i.a", "i.b", "i.none", "i.a"),
        (2, "PUBSUB", "NUMPAT"),
        (2, "PUBSUB", "SHARDCHANNELS"),
        (2, "PUBSUB", "SHARDCHANNELS", "i.?"),
        (2, "PUBSUB", "SHARDCHANNELS", "z*"),
        (2, "PUBSUB", "SHARDNUMSUB", "i.s", "i.a"),
        (2, "PUBSUB", "HELP"),
        (2, "PUBSUB", "help"),
        (2, "PUBSUB", "CHANNELS", "a", "b"),
        (2, "PUBSUB", "SHARDCHANNELS", "a", "b"),
        (2, "PUBSUB", "NUMPAT", "x"),
        (2, "PUBSUB", "HELP", "x"),
        (2, "PUBSUB", "NOPE"),
        (2, "PUBSUB"),
        (2, "PUBLISH", "i.a"),
        (2, "SPUBLISH", "i.s"),
        (2, "SUBSCRIBE"),
        (2, "PSUBSCRIBE"),
        (2, "SSUBSCRIBE"),
        (0, "UNSUBSCRIBE"),
        (0, "PUNSUBSCRIBE"),
        (2, "PUBSUB", "NUMPAT"),
        (2, "PUBSUB", "NUMSUB", "i.a"),
    ])


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_shard_channels(valkey_server: Proc, trafikey_server: Proc, proto: int) -> None:
    assert_same(valkey_server.port, trafikey_server.port, [proto, 2], [
        (0, "SSUBSCRIBE", "sh.a", "sh.b", "sh.a"),
        (1, "SPUBLISH", "sh.a", "one"),
        (1, "PUBLISH", "sh.a", "not shard"),
        (0, "SUBSCRIBE", "sh.a"),
        (1, "SPUBLISH", "sh.a", "two"),
        (1, "PUBLISH", "sh.a", "plain"),
        (0, "PSUBSCRIBE", "sh.*"),
        (1, "SPUBLISH", "sh.b", "patterns ignore shard messages"),
        (0, "SUNSUBSCRIBE", "sh.a", "sh.zz"),
        (0, "UNSUBSCRIBE"),
        (0, "PUNSUBSCRIBE"),
        (1, "SPUBLISH", "sh.b", "still"),
        (0, "SUNSUBSCRIBE"),
        (0, "SUNSUBSCRIBE"),
        (0, "PING"),
        (1, "SPUBLISH", "sh.b", "none"),
    ])


def test_ssubscribe_in_transaction(valkey_server: Proc, trafikey_server: Proc) -> None:
    """EXEC denies what would block: SSUBSCRIBE fails inside it, SUBSCRIBE
    does not (Valkey keeps that exception for old clients)."""
    assert_same(valkey_server.port, trafikey_server.port, [3, 2], [
        (0, "RAW", encode("MULTI") + encode("SSUBSCRIBE", "t.s") + encode("SUBSCRIBE", "t.c") + encode("EXEC")),
        (1, "SPUBLISH", "t.s", "x"),
        (1, "PUBLISH", "t.c", "y"),
        (0, "RAW", encode("MULTI") + encode("SPUBLISH", "t.s", "m") + encode("PUBLISH", "t.c", "n") + encode("EXEC")),
        (0, "EVAL", "return redis.call('ssubscribe', 'x')", "0"),
        (0, "EVAL", "return redis.call('subscribe', 'x')", "0"),
        (0, "EVAL", "return redis.call('spublish', 't.s', 'from lua')", "0"),
    ])


def _pubsub_info(w) -> list[bytes]:  # type: ignore[no-untyped-def]
    info = w.call("INFO", "everything")
    return [line for line in info.split(b"\r\n") if line.startswith(b"pubsub")]


# The bulk (or RESP3 verbatim) header goes too: its length counts the masked values (an id or
# fd of another number of digits on one server after a long run).
_VOLATILE = re.compile(rb"^[$=]\d+\r\n|\b(id|addr|laddr|fd|age|idle|tot-net-in|tot-net-out|tot-mem|rbp)=\S*")


def test_info_and_client_list(valkey_server: Proc, trafikey_server: Proc) -> None:
    """INFO's pub/sub counters, and CLIENT LIST / INFO's sub=, psub=, ssub=
    and the P flag (tot-mem is left out: it counts Valkey's hash tables; so is
    rbp, the reply buffer's peak)."""
    seen = []
    for port in (valkey_server.port, trafikey_server.port):
        settle(port)
        cl = Clients(port, [2, 3, 2])
        a, b, adm = cl.wires
        out = [_pubsub_info(adm)]
        cl.step(0, "SUBSCRIBE", "n.a", "n.b")
        cl.step(1, "PSUBSCRIBE", "n.*")
        cl.step(1, "SSUBSCRIBE", "n.s", "n.t")
        cl.step(1, "SUBSCRIBE", "n.a")
        out.append(_pubsub_info(adm))
        ids = [w.call("CLIENT", "ID") for w in (a, b)]
        for i in ids:
            out.append(_VOLATILE.sub(rb"\1=", adm.call("CLIENT", "LIST", "ID", i[1:-2])))
        out.append(_VOLATILE.sub(rb"\1=", b.call("CLIENT", "INFO")))
        cl.step(1, "RESET")
        cl.step(0, "UNSUBSCRIBE", "n.a")
        out.append(_pubsub_info(adm))
        out.append(_VOLATILE.sub(rb"\1=", adm.call("CLIENT", "LIST", "ID", ids[0][1:-2])))
        cl.step(0, "UNSUBSCRIBE")
        out.append(_pubsub_info(adm))
        out.append(_VOLATILE.sub(rb"\1=", adm.call("CLIENT", "LIST", "ID", ids[0][1:-2])))
        cl.close()
        seen.append(out)
    assert seen[1] == seen[0]


def test_client_type_pubsub(valkey_server: Proc, trafikey_server: Proc) -> None:
    """A subscribed client is of type pubsub for CLIENT LIST and CLIENT KILL."""
    seen = []
    for port in (valkey_server.port, trafikey_server.port):
        cl = Clients(port, [2, 3, 2])
        a, b, adm = cl.wires
        out = []
        ids = [w.call("CLIENT", "ID")[1:-2] for w in (a, b)]
        cl.step(0, "CLIENT", "SETNAME", "ty-a")
        cl.step(1, "CLIENT", "SETNAME", "ty-b")
        cl.step(0, "SUBSCRIBE", "ty.a")
        cl.step(1, "SSUBSCRIBE", "ty.s")
        # Only this test's clients are counted: others may still be closing.
        for t in ("pubsub", "normal"):
            listed = adm.call("CLIENT", "LIST", "TYPE", t)
            out.append(sorted(n for n in (b"name=ty-a", b"name=ty-b") if n in listed))
        cl.step(1, "SUNSUBSCRIBE")
        out.append(adm.call("CLIENT", "KILL", "ID", ids[1], "TYPE", "pubsub"))
        out.append(adm.call("CLIENT", "KILL", "ID", ids[0], "TYPE", "pubsub"))
        out.append(cl.step(2, "PUBSUB", "NUMSUB", "ty.a"))
        out.append(cl.step(1, "PING"))
        cl.close()
        seen.append(out)
    assert seen[1] == seen[0]
