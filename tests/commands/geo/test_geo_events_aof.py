"""Geo writes' keyspace events, append-only log and WATCH, against Valkey.

GEOADD is ZADD underneath: it raises ``zadd`` (and ``new`` for a new key)
and is logged as the ZADD it became, with the computed scores, only when it
changed the set. A search with STORE raises ``georadiusstore`` or
``geosearchstore`` on the destination (``del`` when an empty result deletes
it) and is logged as sent, only when it changed the keyspace; GEORADIUS
without STORE and the read-only forms log nothing. Every read of a missing
key raises ``keymiss``. A refused request raises and logs nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.aof_util import assert_replays, keyspace, logged_beside_valkey
from helpers.keyevents import assert_same_events, streams_with_flags
from helpers.resp_wire import Wire, encode, wait_blocked
from helpers.servers import Proc, own_pair

WORKLOAD: list[tuple[Any, ...]] = [
    ("GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"),
    ("GEOADD", "g", "13.361389", "38.115556", "Palermo"),
    ("GEOADD", "g", "NX", "1", "1", "Palermo"), ("GEOADD", "g", "ch", "XX", "1", "1", "Palermo", "2", "2", "new"),
    ("GEOADD", "g", "5", "5", "Palermo", "1", "1", "Palermo"),
    ("GEOADD", "nokey", "XX", "1", "1", "a"), ("GEOADD", "g", "200", "1", "bad"),
    ("GEOPOS", "g", "Palermo"), ("GEOPOS", "miss", "a"), ("GEOHASH", "miss", "a"), ("GEODIST", "miss", "a", "b"),
    ("GEORADIUS", "g", "15", "37", "300", "km"), ("GEORADIUS", "miss", "15", "37", "300", "km"),
    ("GEORADIUS", "g", "15", "37", "300", "km", "STORE", "dst"),
    ("GEORADIUS", "g", "15", "37", "300", "km", "STOREDIST", "dst"),
    ("GEORADIUSBYMEMBER", "g", "Catania", "300", "km", "STORE", "dst2"),
    ("GEORADIUS_RO", "g", "15", "37", "300", "km"),
    ("GEOSEARCH", "g", "FROMLONLAT", "15", "37", "BYRADIUS", "300", "km"),
    ("GEOSEARCHSTORE", "dst3", "g", "FROMLONLAT", "15", "37", "BYBOX", "600", "600", "km", "STOREDIST"),
    ("GEOSEARCHSTORE", "dst3", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
    ("GEOSEARCHSTORE", "dst3", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
    ("GEOSEARCHSTORE", "dst4", "miss", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"),
    ("GEORADIUS", "g", "0", "0", "1", "km", "STORE", "dst2"),
    ("GEORADIUS", "miss", "0", "0", "1", "km", "STORE", "dst"),
    ("GEOSEARCHSTORE", "dst5", "g", "BYPOLYGON", "3", "12", "36", "16", "36", "14", "40"),
    ("GEOSEARCHSTORE", "dst5", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "WITHDIST"),
    ("MULTI",), ("GEOADD", "g", "3", "3", "m1"), ("GEORADIUS", "g", "3", "3", "1", "km"), ("EXEC",),
    ("EVAL", "return redis.call('geoadd', KEYS[1], 4, 4, 'm2')", "1", "g"),
    ("SELECT", "2"), ("GEOADD", "g2", "5", "5", "x"),
]


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    with own_pair() as pair:
        yield pair


@pytest.mark.parametrize("proto", [2, 3], ids=["resp2", "resp3"])
def test_geo_events_match_valkey(servers: tuple[Proc, Proc], proto: int) -> None:
    steps = [s for s in WORKLOAD if s[0] not in ("MULTI", "EXEC", "SELECT")]
    streams = streams_with_flags((servers[0].port, servers[1].port), "AKEmn", steps, proto)
    assert_same_events(*streams)
    events = [e for _, _, es in streams[0] for e in es]
    for name in (b"zadd", b"georadiusstore", b"geosearchstore", b"keymiss", b"del"):
        assert any(name in e for e in events), name
    assert keyspace(servers[0].port) == keyspace(servers[1].port)






def test_geo_writes_are_logged_as_valkey_logs_them() -> None:
    v, t = logged_beside_valkey(WORKLOAD)
    assert t.replies == v.replies
    assert t.keyspace == v.keyspace
    assert t.log == v.log
    assert any(c[0] == b"ZADD" for c in v.log)  # GEOADD is logged as its ZADD
    assert_replays(t.dir, v.keyspace)

def test_watch_sees_geo_writes(pair) -> None:
    """A write through a geo command aborts a transaction watching its key;
    a GEOADD that changes nothing, a search without STORE and a STORE of
    nothing over no key do not."""
    cases = [
        (("GEOADD", "g", "1.5", "1.5", "a"), True),
        (("GEOADD", "g", "NX", "1", "1", "a"), False),
        (("GEOADD", "g", "1", "1", "a"), True),
        (("GEOADD", "g", "5", "5", "a", "1", "1", "a"), True),
        (("GEORADIUS", "g", "1", "1", "10", "km"), False),
        (("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "1", "1", "BYRADIUS", "10", "km"), True),
        (("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "50", "50", "BYRADIUS", "10", "km"), True),
        (("GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "50", "50", "BYRADIUS", "10", "km"), False),
        (("GEORADIUS", "g", "1", "1", "10", "km", "STORE", "d"), True),
    ]
    for w in (pair.v, pair.t):
        w.call("GEOADD", "g", "1", "1", "a")
    for cmd, aborted in cases:
        watched = "d" if cmd[1] == "d" or "STORE" in cmd else "g"
        pair.check("WATCH", watched)
        pair.check(*cmd)
        pair.check("MULTI")
        pair.check("PING")
        assert (pair.check("EXEC") == b"*-1\r\n") == aborted, cmd




def test_geo_writes_wake_blocked_pops(valkey_server: Proc, trafikey_server: Proc) -> None:
    """A sorted set that GEOADD or a STORE creates serves a client blocked
    in BZPOPMIN on it, as on Valkey."""
    writes = [
        ("GEOSEARCHSTORE", "dst", "src", "FROMLONLAT", "1", "1", "BYRADIUS", "1", "km"),
        ("GEOADD", "g", "2", "2", "y"),
        ("GEORADIUS", "src", "1", "1", "1", "km", "STORE", "dst2"),
        ("GEORADIUSBYMEMBER", "src", "x", "1", "km", "STOREDIST", "dst3"),
    ]
    replies = []
    for p in (valkey_server, trafikey_server):
        a, b = Wire(p.port), Wire(p.port)
        try:
            a.call("FLUSHALL")
            a.call("GEOADD", "src", "1", "1", "x")
            got = []
            for cmd in writes:
                key = cmd[1] if cmd[0] in ("GEOSEARCHSTORE", "GEOADD") else cmd[-1]
                b.send_raw(encode("BZPOPMIN", key, "5"))
                wait_blocked(a, timeout=2)
                got.append(a.call(*cmd))
                got.append(b.read_reply())
            replies.append(got)
        finally:
            a.close()
            b.close()
    assert replies[1] == replies[0]
    assert all(r.startswith(b"*3\r\n") for r in replies[0][1::2])
