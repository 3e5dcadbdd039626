"""The stream structure follows Valkey's nodes: the same seeded sequence of
appends (explicit IDs, same and different fields, integer, long and binary
values), deletions and exact or approximate trims by MAXLEN and MINID is
applied to a ``Stream`` here and by XADD/XDEL/XTRIM to Valkey, under
several stream-node-max-bytes / -entries settings. After every step the
lengths and trim counts agree; at the end XINFO STREAM's radix-tree-keys
and radix-tree-nodes, the entries, and the DUMP payload (every node's
listpack byte for byte, the counters) are Valkey's."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
import redis
from helpers.servers import start_valkey

from trafikey_server.protocol.rdbformat import Reader
from trafikey_server.values.stream import MAX_ID, STREAM, Consumer, Group, Nack, Stream, fmt_id, make_id

LIMITS = [(4096, 100), (200, 5), (0, 7), (100, 0), (1, 1), (0, 300), (20000, 0)]


@pytest.fixture(scope="module")
def valkey() -> Iterator[redis.Redis]:
    v = start_valkey("--rdbcompression", "no")
    r = redis.Redis(port=v.port)
    try:
        yield r
    finally:
        r.close()
        v.stop()


def _value(rnd: random.Random) -> bytes:
    return rnd.choice([b"v", b"12345", b"-7", b"0", b"007", b"x" * rnd.randrange(0, 140),
                       b"%d" % rnd.randrange(-10**15, 10**15), bytes(rnd.randrange(256) for _ in range(9)),
                       b"y" * 5000 if rnd.random() < 0.02 else b""])


def _steps(r: redis.Redis, s: Stream, rnd: random.Random, limits: tuple[int, int], n: int) -> None:
    ms = rnd.randrange(0, 3)
    maxe = limits[1]
    for _ in range(n):
        op = rnd.random()
        if op < 0.7:
            ms += rnd.choice([0, 0, 1, 5, 300, 70000, 1 << 40])
            last_ms, last_seq = s.last_id >> 64, s.last_id & ((1 << 64) - 1)
            seq = rnd.randrange(0, 3) if ms > last_ms else last_seq + 1 + rnd.randrange(3)
            names = rnd.choice([[b"f"], [b"a", b"b"], [b"f", b"g", b"h"], [b"123", b"x"]])
            fields: list[bytes] = []
            for i in range(rnd.choice([1, 1, 2, 3])):
                fields += [names[i % len(names)] + (b"%d" % i if i >= len(names) else b""), _value(rnd)]
            r.execute_command("XADD", "s", b"%d-%d" % (ms, seq), *fields)
            s.add(make_id(ms, seq), fields, limits)
        elif op < 0.85 and len(s):
            sid = rnd.choice(list(s.ids()))
            assert r.execute_command("XDEL", "s", fmt_id(sid)) == 1
            assert s.delete(sid)
            assert not s.delete(sid)
            s.max_deleted_id = max(s.max_deleted_id, sid)
        elif op < 0.95:
            keep = rnd.randrange(0, len(s) + 3)
            approx = rnd.random() < 0.5
            limit = rnd.choice([0, 0, 3, 50]) if approx else 0
            args = ["LIMIT", limit] if approx and limit else []
            got = r.execute_command("XTRIM", "s", "MAXLEN", "~" if approx else "=", keep, *args)
            assert s.trim(keep, None, approx, limit if args else (100 * maxe if approx else 0)) == got
        elif len(s):
            sid = rnd.choice(list(s.ids())) + rnd.choice([0, 1])
            approx = rnd.random() < 0.5
            got = r.execute_command("XTRIM", "s", "MINID", "~" if approx else "=", fmt_id(sid))
            assert s.trim(None, sid, approx, 100 * maxe if approx else 0) == got
        assert r.xlen("s") == len(s)


@pytest.mark.parametrize("limits", LIMITS)
@pytest.mark.parametrize("seed", [1, 2])
def test_nodes_follow_valkey(valkey: redis.Redis, limits: tuple[int, int], seed: int) -> None:
    r = valkey
    r.delete("s")
    r.config_set("stream-node-max-bytes", limits[0])
    r.config_set("stream-node-max-entries", limits[1])
    s = Stream()
    _steps(r, s, random.Random(seed), limits, 300)
    info = r.execute_command("XINFO", "STREAM", "s")
    assert (info[b"radix-tree-keys"], info[b"radix-tree-nodes"]) == (s.node_count(), s.rax_nodes())
    assert info[b"recorded-first-entry-id"] == fmt_id(s.first_id)
    assert r.xrange("s") == [(fmt_id(i), dict(zip(f[0::2], f[1::2], strict=True))) for i, f in s.range(0, MAX_ID)]
    assert r.xrevrange("s") == [(fmt_id(i), dict(zip(f[0::2], f[1::2], strict=True)))
                                for i, f in s.range(0, MAX_ID, rev=True)]
    dump = r.dump("s")
    assert dump is not None
    t, body = STREAM.rdb_save(s)
    assert bytes((t,)) + body == dump[:-10]


def test_ranges_and_lookups(valkey: redis.Redis) -> None:
    r = valkey
    r.delete("s")
    r.config_set("stream-node-max-bytes", 4096)
    r.config_set("stream-node-max-entries", 4)
    s = Stream()
    _steps(r, s, random.Random(7), (4096, 4), 120)
    rnd = random.Random(8)
    ids = list(s.ids())
    for _ in range(60):
        a, b = sorted(rnd.choice(ids) + rnd.choice([-1, 0, 1]) for _ in range(2))
        want = r.xrange("s", fmt_id(a), fmt_id(b))
        assert [(fmt_id(i), dict(zip(f[0::2], f[1::2], strict=True))) for i, f in s.range(a, b)] == want
        assert [fmt_id(i) for i, _ in s.range(a, b, rev=True)] == [e[0] for e in reversed(want)]
        assert list(s.ids(a, b)) == [i for i, _ in s.range(a, b)]
    for sid in ids[:30]:
        got = r.xrange("s", fmt_id(sid), fmt_id(sid))
        f = s.get(sid)
        assert f is not None and got == [(fmt_id(sid), dict(zip(f[0::2], f[1::2], strict=True)))]
        assert s.get(sid + 1) is None or sid + 1 in ids
    assert s.edge_id(True, True) == s.first_id
    assert s.edge_id(False, True) == ids[-1]


def test_pel_keeps_its_ids_sorted() -> None:
    g = Group(0, 0)
    owner = Consumer(b"c", 0)
    rnd = random.Random(3)
    model: set[int] = set()
    for _ in range(2000):
        sid = rnd.randrange(1, 300)
        if rnd.random() < 0.6:
            g.pel[sid] = Nack(1, 1, owner)
            model.add(sid)
        elif rnd.random() < 0.5:
            if sid in model:
                del g.pel[sid]
                model.discard(sid)
        else:
            assert (g.pel.pop(sid, None) is not None) == (sid in model)
            model.discard(sid)
        a, b = sorted((rnd.randrange(300), rnd.randrange(300)))
        assert g.pending(a, b) == sorted(i for i in model if a <= i <= b)
    assert g.pel.ids(rev=True) == sorted(model, reverse=True)
    assert g.pel.after(100, 5) == sorted(i for i in model if i >= 100)[:5]
    assert set(g.pel) == model


def test_copy_is_deep() -> None:
    s = Stream()
    for i in range(1, 300):
        s.add(make_id(i, 0), [b"f", b"%d" % i], (4096, 10))
    g = Group(make_id(5, 0), 5)
    s.groups[b"g"] = g
    c = Consumer(b"c", 10)
    g.consumers[b"c"] = c
    g.pel[make_id(3, 0)] = c.pel[make_id(3, 0)] = Nack(7, 2, c)
    t = s.copy()
    assert STREAM.rdb_save(t) == STREAM.rdb_save(s)
    t.delete(make_id(1, 0))
    t.add(make_id(400, 0), [b"x", b"y"], (4096, 10))
    t.groups[b"g"].pel.pop(make_id(3, 0))
    assert len(s) == 299 and s.get(make_id(1, 0)) == [b"f", b"1"] and s.get(make_id(400, 0)) is None
    assert make_id(3, 0) in s.groups[b"g"].pel and s.groups[b"g"].pel[make_id(3, 0)].consumer is c
    assert t.groups[b"g"].consumers[b"c"] is not c


def test_counters_change_width(valkey: redis.Redis) -> None:
    """A node's live and deleted counters crossing 127/128 and 4095/4096
    change their listpack width (lpReplaceInteger): every entry after them
    moves, and the node's bytes stay Valkey's both ways; a node of more
    than 65,535 elements keeps its header count at "unknown"."""
    r = valkey
    r.delete("s")
    r.config_set("stream-node-max-bytes", 0)
    r.config_set("stream-node-max-entries", 0)
    s = Stream()
    pipe = r.pipeline(transaction=False)
    for i in range(1, 14000):  # past 65,535 listpack elements: the header count stays "unknown"
        fields = [b"f", b"%d" % i] if i % 7 else [b"g", b"x", b"h", b"y"]
        pipe.execute_command("XADD", "s", b"1-%d" % i, *fields)
        s.add(make_id(1, i), fields, (0, 0))
    pipe.execute()
    assert s.nodes()[0].nele > 65535
    t, body = STREAM.rdb_save(s)
    assert bytes((t,)) + body == r.dump("s")[:-10]
    for i in list(range(4000, 4200, 3)) + list(range(1, 140)):
        assert r.execute_command("XDEL", "s", b"1-%d" % i) == 1
        assert s.delete(make_id(1, i))
        s.max_deleted_id = max(s.max_deleted_id, make_id(1, i))
    t, body = STREAM.rdb_save(s)
    assert bytes((t,)) + body == r.dump("s")[:-10]
    assert r.execute_command("XTRIM", "s", "MAXLEN", "=", 100) == s.trim(100, None, False, 0)
    t, body = STREAM.rdb_save(s)
    assert bytes((t,)) + body == r.dump("s")[:-10]
    assert [(fmt_id(i), dict(zip(f[0::2], f[1::2], strict=True))) for i, f in s.range(0, MAX_ID)] == r.xrange("s")


def test_ids_beyond_32_bits_in_one_node(valkey: redis.Redis) -> None:
    """IDs whose ms (above the node's first) or seq pass 32 bits, within
    one node: lookups, ranges, deletions and the node's bytes stay right."""
    r = valkey
    r.delete("s")
    r.config_set("stream-node-max-bytes", 4096)
    r.config_set("stream-node-max-entries", 100)
    s = Stream()
    ids = [make_id(1, 1), make_id(1, 2), make_id(1, 1 << 32), make_id(1, (1 << 64) - 2),
           make_id(1 << 33, 0), make_id((1 << 64) - 1, 5)]
    for n, sid in enumerate(ids):
        r.execute_command("XADD", "s", fmt_id(sid), "f", n)
        s.add(sid, [b"f", b"%d" % n], (4096, 100))
    assert s.node_count() == 1
    assert list(s.ids()) == ids
    assert [s.get(i) for i in ids] == [[b"f", b"%d" % n] for n in range(len(ids))]
    assert [i for i, _ in s.range(ids[2], ids[4], rev=True)] == ids[4:1:-1]
    assert s.delete(ids[3]) and r.execute_command("XDEL", "s", fmt_id(ids[3])) == 1
    s.max_deleted_id = ids[3]
    t, body = STREAM.rdb_save(s)
    assert bytes((t,)) + body == r.dump("s")[:-10]
    loaded = STREAM.rdb_load(Reader(body), t, b"s", None, False)
    assert list(loaded.ids()) == ids[:3] + ids[4:]
