"""Hash-field expiry commands against Valkey 9.1.2, byte for byte in RESP2
and RESP3: every option, every refusal (with the keyspace unchanged after
it), and the existing hash commands on hashes whose fields carry TTLs.

Times are absolute and far away, or relative in whole seconds (HTTL rounds
to the second), so no reply depends on when the request arrives."""

from __future__ import annotations

from typing import Any

import redis
from helpers.emq_model import server_keyspace
from helpers.pair import Pair

FAR = 4102444800000  # 2100-01-01 in ms
FAR_S = FAR // 1000


def _state(port: int) -> Any:
    r = redis.Redis(port=port)
    try:
        data = server_keyspace(r)
        ttls = {}
        for k, v in data.items():
            if isinstance(v, dict) and v:
                fields = sorted(v)
                ttls[k] = r.execute_command("HPEXPIRETIME", k, "FIELDS", len(fields), *fields)
        return data, ttls
    finally:
        r.close()


def assert_steps(pair: Pair, steps: list[tuple]) -> None:
    for step in steps:
        pair.check(*step)
        assert _state(pair.t.port) == _state(pair.v.port), step


SETUP = [("HSET", "h", "a", "1", "b", "2", "c", "3"), ("SET", "s", "x")]

REFUSALS = [
    # HEXPIRE family: options, numfields, times, types.
    ("HEXPIRE", "h", "10", "FIELDS", "2", "a"),
    ("HEXPIRE", "h", "10", "FIELDS", "1"),
    ("HEXPIRE", "h", "x", "FIELDS", "1", "a"),
    ("HEXPIRE", "h", "10", "FIELDZ", "1", "a"),
    ("HEXPIRE", "h", "10", "NX", "XX", "FIELDS", "1", "a"),
    ("HEXPIRE", "h", "10", "GT", "LT", "FIELDS", "1", "a"),
    ("HEXPIRE", "h", "10", "NX", "GT", "FIELDS", "1", "a"),
    ("HEXPIRE", "h", "10", "foo", "FIELDS", "1", "a"),
    ("HEXPIRE", "h", "-1", "FIELDS", "1", "a"),
    ("HEXPIRE", "h", "99999999999999999", "FIELDS", "1", "a"),
    ("HPEXPIRE", "h", "9223372036854775807", "FIELDS", "1", "a"),
    ("HEXPIREAT", "h", "99999999999999999", "FIELDS", "1", "a"),
    ("HPEXPIREAT", "h", "-5", "FIELDS", "1", "a"),
    ("HEXPIRE", "s", "10", "FIELDS", "1", "a"),
    ("HEXPIRE", "s", "x", "FIELDS", "1", "a"),
    ("HEXPIRE", "h", "10", "FIELDS", "x", "a"),
    ("HEXPIRE", "h", "10", "FIELDS", "0", "a"),
    ("HEXPIRE", "h", "10", "FIELDS", "-1", "a"),
    ("HEXPIRE", "h", "10", "FIELDS", "9223372036854775807", "a"),
    ("HEXPIRE", "h", "10", "FIELDS", "2", "a", "b", "c"),
    ("HEXPIRE", "h", "10", "FIELDS", "1", "a", "FIELDS"),
    ("HEXPIRE", "h"),
    # HPERSIST, HTTL family, HGETDEL: the FIELDS word first.
    ("HPERSIST", "h", "FIELDZ", "1", "a"),
    ("HPERSIST", "h", "FIELDS", "x", "a"),
    ("HPERSIST", "h", "FIELDS", "0", "a"),
    ("HPERSIST", "h", "FIELDS", "2", "a"),
    ("HPERSIST", "s", "FIELDS", "1", "a"),
    ("HTTL", "h", "FIELDZ", "x", "a"),
    ("HTTL", "h", "FIELDS", "x", "a"),
    ("HTTL", "h", "FIELDS", "2", "a"),
    ("HTTL", "h", "FIELDS", "-1", "a"),
    ("HTTL", "h", "FIELDS", "0"),
    ("HPTTL", "s", "FIELDS", "1", "a"),
    ("HEXPIRETIME", "s", "FIELDS", "1", "a"),
    ("HPEXPIRETIME", "h", "FIELDS", "3", "a"),
    ("HGETDEL", "h", "FIELDZ", "1", "a"),
    ("HGETDEL", "h", "FIELDS", "x", "a"),
    ("HGETDEL", "h", "FIELDS", "2", "a"),
    ("HGETDEL", "h", "FIELDS", "-1", "a"),
    ("HGETDEL", "h", "FIELDS", "0"),
    ("HGETDEL", "h"),
    ("HGETDEL", "s", "FIELDS", "1", "a"),
    ("HGETDEL", "s", "FIELDS", "2", "a"),
    # HSETEX.
    ("HSETEX", "h", "FIELDS", "2", "a", "1"),
    ("HSETEX", "h", "FIELDS", "0", "a", "1"),
    ("HSETEX", "h", "EX", "10", "PX", "10", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "EX", "10", "KEEPTTL", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "KEEPTTL", "PXAT", "10", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "NX", "XX", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "FNX", "FXX", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "EX", "-1", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "EX", "x", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "foo", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "PERSIST", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "GET", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "EX", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "FIELDS", "x", "a", "1"),
    ("HSETEX", "h", "FIELDS", "1", "a"),
    ("HSETEX", "h", "EX", "10", "a", "1"),
    ("HSETEX", "h", "FIELDS", "1", "a", "1", "FIELDS", "1", "b", "2"),
    ("HSETEX", "h", "EX", "99999999999999999", "FIELDS", "1", "a", "1"),
    ("HSETEX", "h", "PX", "9223372036854775807", "FIELDS", "1", "a", "1"),
    ("HSETEX", "s", "FIELDS", "1", "a", "1"),
    ("HSETEX", "s", "EX", "x", "FIELDS", "1", "a", "1"),
    ("HSETEX", "s", "FIELDS", "2", "a", "1"),
    ("HSETEX", "s", "FNX", "FIELDS", "1", "a", "1"),
    ("HSETEX", "fields", "fields", "1", "a", "1"),
    # HGETEX.
    ("HGETEX", "h", "EX", "10", "PERSIST", "FIELDS", "1", "a"),
    ("HGETEX", "h", "KEEPTTL", "FIELDS", "1", "a"),
    ("HGETEX", "h", "NX", "FIELDS", "1", "a"),
    ("HGETEX", "h", "FNX", "FIELDS", "1", "a"),
    ("HGETEX", "h", "EX", "-1", "FIELDS", "1", "a"),
    ("HGETEX", "h", "EX", "x", "FIELDS", "1", "a"),
    ("HGETEX", "h", "FIELDS", "2", "a"),
    ("HGETEX", "h", "FIELDS", "0"),
    ("HGETEX", "h", "FIELDS", "x", "a"),
    ("HGETEX", "h", "a"),
    ("HGETEX", "s", "FIELDS", "1", "a"),
    ("HGETEX", "s", "EX", "x", "FIELDS", "1", "a"),
    ("HGETEX", "s", "FIELDS", "2", "a"),
]


def test_refusals_change_nothing(pair23: Pair) -> None:
    assert_steps(pair23, [*SETUP, ("HPEXPIREAT", "h", str(FAR), "FIELDS", "1", "c"), *REFUSALS])


def test_hexpire_conditions(pair23: Pair) -> None:
    far, later, sooner = str(FAR), str(FAR + 5000), str(FAR - 5000)
    assert_steps(pair23, [*SETUP,
        ("OBJECT", "ENCODING", "h"),
        # A listpack field has no TTL: XX and GT fail without converting.
        ("HPEXPIREAT", "h", far, "XX", "FIELDS", "2", "a", "zz"),
        ("HPEXPIREAT", "h", far, "GT", "FIELDS", "2", "a", "zz"),
        ("OBJECT", "ENCODING", "h"),
        ("HPEXPIREAT", "h", far, "NX", "NX", "FIELDS", "2", "a", "zz"),
        ("OBJECT", "ENCODING", "h"),
        ("HPEXPIREAT", "h", later, "GT", "FIELDS", "2", "a", "b"),
        ("HPEXPIREAT", "h", sooner, "GT", "FIELDS", "1", "a"),
        ("HPEXPIREAT", "h", later, "LT", "FIELDS", "2", "a", "b"),
        ("HPEXPIREAT", "h", sooner, "LT", "FIELDS", "2", "a", "b"),
        ("HPEXPIREAT", "h", far, "NX", "FIELDS", "3", "a", "b", "c"),
        ("HPEXPIREAT", "h", far, "XX", "FIELDS", "3", "a", "b", "c"),
        ("HEXPIREAT", "h", str(FAR_S), "FIELDS", "1", "a"),
        ("HEXPIRETIME", "h", "FIELDS", "4", "a", "b", "c", "zz"),
        ("HPEXPIRETIME", "h", "FIELDS", "4", "a", "b", "c", "zz"),
        ("HEXPIRE", "h", "100", "FIELDS", "1", "b"),
        ("HTTL", "h", "FIELDS", "3", "a", "b", "zz"),
        ("HPEXPIRE", "h", "100000", "FIELDS", "1", "b"),
        ("HTTL", "h", "FIELDS", "1", "b"),
        ("HPERSIST", "h", "FIELDS", "4", "a", "b", "c", "zz"),
        ("HPERSIST", "h", "FIELDS", "1", "a"),
        ("OBJECT", "ENCODING", "h"),
        ("HPEXPIREAT", "h", "9223372036854775807", "FIELDS", "1", "a"),
        ("HEXPIREAT", "h", "9223372036854775", "FIELDS", "1", "b"),
        ("HPEXPIRETIME", "h", "FIELDS", "2", "a", "b"),
        ("HEXPIRE", "nokey", "10", "FIELDS", "2", "a", "b"),
        ("HTTL", "nokey", "FIELDS", "2", "a", "b"),
        ("HPERSIST", "nokey", "FIELDS", "1", "a"),
    ])


def test_times_in_the_past_delete_at_once(pair23: Pair) -> None:
    assert_steps(pair23, [*SETUP,
        ("HEXPIRE", "h", "0", "FIELDS", "2", "a", "zz"),
        ("HPEXPIREAT", "h", "1", "XX", "FIELDS", "1", "b"),
        ("HPEXPIREAT", "h", "1", "FIELDS", "1", "b"),
        ("HGETALL", "h"),
        ("HPEXPIREAT", "h", str(FAR), "FIELDS", "1", "c"),
        ("HPEXPIREAT", "h", "1", "GT", "FIELDS", "1", "c"),
        ("HPEXPIREAT", "h", "1", "LT", "FIELDS", "1", "c"),
        ("EXISTS", "h"),
        ("HSET", "g", "a", "1", "b", "2"),
        ("HSETEX", "g", "PX", "0", "FIELDS", "2", "a", "zz", "1", "2"),
        ("HSETEX", "g", "EXAT", "1", "FIELDS", "1", "b", "2"),
        ("EXISTS", "g"),
        ("HSETEX", "new", "PXAT", "1", "FIELDS", "1", "a", "1"),
        ("EXISTS", "new"),
        ("HSET", "k", "a", "1", "b", "2"),
        ("HGETEX", "k", "EXAT", "1", "FIELDS", "2", "a", "zz"),
        ("HGETEX", "k", "PX", "0", "FIELDS", "1", "b"),
        ("EXISTS", "k"),
    ])


def test_hsetex_options(pair23: Pair) -> None:
    far = str(FAR)
    assert_steps(pair23, [
        ("HSETEX", "h", "FIELDS", "2", "a", "1", "b", "2"),
        ("OBJECT", "ENCODING", "h"),
        ("HSETEX", "h", "PXAT", far, "FIELDS", "1", "a", "1"),
        ("OBJECT", "ENCODING", "h"),
        ("HSETEX", "h", "KEEPTTL", "FIELDS", "1", "a", "2"),
        ("HSETEX", "h", "FIELDS", "1", "a", "3"),
        ("HSETEX", "h", "EX", "100", "FIELDS", "1", "b", "3"),
        ("HTTL", "h", "FIELDS", "2", "a", "b"),
        ("HSETEX", "h", "NX", "FIELDS", "1", "a", "1"),
        ("HSETEX", "h", "XX", "FIELDS", "1", "a", "4"),
        ("HSETEX", "nokey", "XX", "FIELDS", "1", "a", "4"),
        ("HSETEX", "nokey2", "NX", "FIELDS", "1", "a", "4"),
        ("HSETEX", "h", "FNX", "FIELDS", "1", "a", "1"),
        ("HSETEX", "h", "FNX", "FIELDS", "2", "c", "1", "d", "2"),
        ("HSETEX", "h", "FXX", "FIELDS", "2", "a", "1", "zz", "2"),
        ("HSETEX", "h", "FXX", "PXAT", far, "FIELDS", "2", "a", "5", "b", "6"),
        ("HSETEX", "nokey3", "FXX", "FIELDS", "1", "a", "1"),
        ("HSETEX", "nokey3", "FNX", "FIELDS", "1", "a", "1"),
        ("HSETEX", "h", "EX", "10", "EX", "100", "FIELDS", "1", "a", "1"),
        ("HSETEX", "h", "nx", "nx", "FIELDS", "1", "a", "1"),
        ("HSETEX", "l", "FIELDS", "1", "f", "v"),
        ("OBJECT", "ENCODING", "l"),
        ("HSETEX", "l", "FIELDS", "1", "f", "v" * 100),
        ("OBJECT", "ENCODING", "l"),
        ("HGETALL", "h"),
    ])


def test_hgetex_and_hgetdel(pair23: Pair) -> None:
    far = str(FAR)
    assert_steps(pair23, [*SETUP,
        ("HGETEX", "h", "FIELDS", "2", "a", "zz"),
        ("HGETEX", "h", "PERSIST", "FIELDS", "1", "a"),
        ("OBJECT", "ENCODING", "h"),
        ("HGETEX", "h", "PXAT", far, "FIELDS", "2", "a", "zz"),
        ("OBJECT", "ENCODING", "h"),
        ("HGETEX", "h", "EX", "100", "FIELDS", "1", "b"),
        # a's TTL in seconds ticks on a second boundary that the two servers
        # may read either side of: its time is read absolute, b's and c's as TTLs.
        ("HPEXPIRETIME", "h", "FIELDS", "1", "a"),
        ("HTTL", "h", "FIELDS", "2", "b", "c"),
        ("HGETEX", "h", "PERSIST", "FIELDS", "3", "a", "c", "zz"),
        ("HGETEX", "nokey", "EX", "10", "FIELDS", "1", "a"),
        ("HGETDEL", "h", "FIELDS", "2", "a", "zz"),
        ("HGETDEL", "h", "FIELDS", "2", "a", "b"),
        ("HGETDEL", "nokey", "FIELDS", "1", "a"),
        ("HGETDEL", "h", "FIELDS", "1", "c"),
        ("EXISTS", "h"),
    ])


def test_hash_commands_on_fields_with_ttls(pair23: Pair) -> None:
    far = str(FAR)
    assert_steps(pair23, [
        ("HSET", "h", "a", "1", "b", "2", "n", "10"),
        ("HPEXPIREAT", "h", far, "FIELDS", "2", "a", "n"),
        ("HGET", "h", "a"),
        ("HMGET", "h", "a", "b", "zz"),
        ("HEXISTS", "h", "a"),
        ("HSTRLEN", "h", "a"),
        ("HLEN", "h"),
        ("HINCRBY", "h", "n", "5"),
        ("HPEXPIRETIME", "h", "FIELDS", "1", "n"),
        ("HINCRBYFLOAT", "h", "n", "1.5"),
        ("HPEXPIRETIME", "h", "FIELDS", "1", "n"),
        ("HSET", "h", "a", "9"),
        ("HPEXPIRETIME", "h", "FIELDS", "1", "a"),
        ("HSETNX", "h", "n", "1"),
        ("HDEL", "h", "n"),
        ("HRANDFIELD", "h", "5"),
        ("HSCAN", "h", "0"),
        ("COPY", "h", "h2"),
        ("HPEXPIRETIME", "h2", "FIELDS", "2", "a", "b"),
        ("RENAME", "h2", "h3"),
        ("OBJECT", "ENCODING", "h3"),
        ("TYPE", "h3"),
    ])
