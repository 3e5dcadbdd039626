"""Which stream commands touch what, against Valkey: a consumer's seen
time (any attempt) and active time (a read or claim that delivered),
the delivery times of its pending entries, and WATCH (which writes dirty
a watched stream, which leave it clean).

Valkey's clock cannot be frozen, so times are compared by their
relations: each step waits until the server's clock has moved on (a
short poll of TIME), so a time a step set differs from one an earlier
step set, and "equal", "later" and "never" say which step set it.
"""

from __future__ import annotations

import time

import pytest
from helpers.resp_wire import Wire
from helpers.stream_diff import same, tree

SETUP = [
    ("XADD", "s", "1-0", "f", "1"), ("XADD", "s", "2-0", "f", "2"), ("XADD", "s", "3-0", "f", "3"),
    ("XGROUP", "CREATE", "s", "g", "0"), ("XGROUP", "CREATECONSUMER", "s", "g", "alice"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "bob"),
    ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">"),
]

ACTIONS = [
    ("XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "0"),
    ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", "99"),
    ("XREADGROUP", "GROUP", "g", "bob", "NOACK", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "bob", "BLOCK", "1", "STREAMS", "s", ">"),
    ("XCLAIM", "s", "g", "bob", "0", "1-0"),
    ("XCLAIM", "s", "g", "bob", "0", "1-0", "JUSTID"),
    ("XCLAIM", "s", "g", "bob", "3600000", "1-0"),
    ("XCLAIM", "s", "g", "bob", "0", "99-0"),
    ("XCLAIM", "s", "g", "bob", "0", "2-0", "FORCE", "JUSTID"),
    ("XCLAIM", "s", "g", "bob", "0", "1-0", "IDLE", "500000"),
    ("XCLAIM", "s", "g", "carol", "3600000", "1-0"),
    ("XAUTOCLAIM", "s", "g", "bob", "0", "0"),
    ("XAUTOCLAIM", "s", "g", "bob", "0", "0", "JUSTID"),
    ("XAUTOCLAIM", "s", "g", "bob", "3600000", "0"),
    ("XAUTOCLAIM", "s", "g", "carol", "3600000", "0"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "bob"),
    ("XACK", "s", "g", "1-0"),
    ("XPENDING", "s", "g", "-", "+", "10", "bob"),
    ("XINFO", "CONSUMERS", "s", "g"),
]


def _now(w: Wire) -> int:
    node = tree(w.call("TIME"))
    return int(node[1][0][1]) * 1000 + int(node[1][1][1]) // 1000


def _tick(w: Wire) -> None:
    """Wait (short polls) until the server's millisecond clock has moved on by two."""
    start = _now(w)
    deadline = time.monotonic() + 5
    while _now(w) < start + 2:
        assert time.monotonic() < deadline
        time.sleep(0.0005)


def _times(w: Wire) -> dict[bytes, list[object]]:
    """Each consumer's seen and active time and its pending entries'
    delivery times, ranked: the distinct times in order, -1 as never."""
    full = tree(w.call("XINFO", "STREAM", "s", "FULL"))
    info = dict(zip([x[1] for x in full[1][0::2]], full[1][1::2], strict=True))
    raw: dict[bytes, list[int]] = {}
    for g in info[b"groups"][1]:
        gi = dict(zip([x[1] for x in g[1][0::2]], g[1][1::2], strict=True))
        for c in gi[b"consumers"][1]:
            ci = dict(zip([x[1] for x in c[1][0::2]], c[1][1::2], strict=True))
            raw[ci[b"name"][1]] = [int(ci[b"seen-time"][1]), int(ci[b"active-time"][1])] + [
                int(e[1][1][1]) for e in ci[b"pending"][1]]
    ranks = sorted({t for ts in raw.values() for t in ts if t >= 0})
    return {name: [ranks.index(t) if t >= 0 else "never" for t in ts] for name, ts in raw.items()}


def _run(port: int, action: tuple) -> tuple[bytes, dict]:
    w = Wire(port)
    try:
        assert w.call("FLUSHALL") == b"+OK\r\n"
        for cmd in SETUP:
            w.call(*cmd)
            _tick(w)
        reply = w.call(*action)
        _tick(w)
        return reply, _times(w)
    finally:
        w.close()


@pytest.mark.parametrize("action", ACTIONS, ids=[" ".join(a[:1] + a[4:]) for a in ACTIONS])
def test_seen_and_active_times(valkey_server, trafikey_server, action: tuple) -> None:  # type: ignore[no-untyped-def]
    want = _run(valkey_server.port, action)
    got = _run(trafikey_server.port, action)
    assert same(action, want[0], got[0]), f"{action}\n valkey:   {want[0]!r}\n trafikey: {got[0]!r}"
    assert got[1] == want[1], (f"{action}: consumers' [seen, active, deliveries...] ranked\n"
                               f" valkey:   {want[1]}\n trafikey: {got[1]}")


WATCHED = [
    ("XADD", "s", "9-0", "f", "v"), ("XADD", "s", "1-0", "f", "v"), ("XADD", "s", "NOMKSTREAM", "9-0", "f", "v"),
    ("XDEL", "s", "2-0"), ("XDEL", "s", "99-0"), ("XTRIM", "s", "MAXLEN", "1"), ("XTRIM", "s", "MAXLEN", "10"),
    ("XSETID", "s", "3-0"), ("XSETID", "s", "5-0"), ("XGROUP", "CREATE", "s", "h", "0"),
    ("XGROUP", "CREATE", "s", "g", "0"), ("XGROUP", "SETID", "s", "g", "0"), ("XGROUP", "DESTROY", "s", "g"),
    ("XGROUP", "DESTROY", "s", "nog"), ("XGROUP", "CREATECONSUMER", "s", "g", "new"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "alice"), ("XGROUP", "DELCONSUMER", "s", "g", "alice"),
    ("XGROUP", "DELCONSUMER", "s", "g", "nobody"),
    ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">"),
    ("XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"),
    ("XREADGROUP", "GROUP", "g", "new", "STREAMS", "s", "0"),
    ("XREADGROUP", "GROUP", "g", "alice", "NOACK", "STREAMS", "s", ">"),
    ("XACK", "s", "g", "1-0"), ("XACK", "s", "g", "3-0"), ("XCLAIM", "s", "g", "bob", "0", "1-0"),
    ("XCLAIM", "s", "g", "bob", "3600000", "1-0"), ("XCLAIM", "s", "g", "alice", "0", "99-0"),
    ("XAUTOCLAIM", "s", "g", "bob", "0", "0"), ("XAUTOCLAIM", "s", "g", "bob", "3600000", "0"),
    ("XRANGE", "s", "-", "+"), ("XREAD", "STREAMS", "s", "0"), ("XINFO", "STREAM", "s", "FULL"),
    ("XPENDING", "s", "g"), ("XLEN", "s"),
]


def _watch(port: int, cmd: tuple) -> list[bytes]:
    a, b = Wire(port), Wire(port)
    try:
        assert a.call("FLUSHALL") == b"+OK\r\n"
        for c in [("XADD", "s", "1-0", "f", "v"), ("XADD", "s", "2-0", "f", "v"), ("XADD", "s", "3-0", "f", "v"),
                  ("XGROUP", "CREATE", "s", "g", "0"),
                  ("XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "s", ">")]:
            a.call(*c)
        return [a.call("WATCH", "s"), b.call(*cmd), a.call("MULTI"), a.call("PING"), a.call("EXEC")]
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("cmd", WATCHED, ids=[" ".join(c[:2]) + " " + " ".join(c[-2:]) for c in WATCHED])
def test_watch_is_dirtied_as_in_valkey(valkey_server, trafikey_server, cmd: tuple) -> None:  # type: ignore[no-untyped-def]
    want = _watch(valkey_server.port, cmd)
    got = _watch(trafikey_server.port, cmd)
    assert same(cmd, want[1], got[1]), f"{cmd}\n valkey:   {want[1]!r}\n trafikey: {got[1]!r}"
    assert got[:1] + got[2:] == want[:1] + want[2:], f"{cmd}\n valkey:   {want}\n trafikey: {got}"


BUSY = "local x = 0 for j = 1, 300000 do x = x + j end return 1"  # a few milliseconds of work


def _id_shapes(reply: bytes) -> list[object]:
    """The IDs of a reply as (same ms as the first?, seq); other items as they are."""
    out: list[object] = []
    first = None
    for item in tree(reply)[1]:
        if item[0] == b"$" and b"-" in item[1]:
            ms, seq = (int(x) for x in item[1].split(b"-"))
            first = ms if first is None else first
            out.append((ms == first, seq))
        else:
            out.append(item)
    return out


def _clock_in_transaction(port: int) -> list[object]:
    w = Wire(port)
    try:
        assert w.call("FLUSHALL") == b"+OK\r\n"
        w.call("XGROUP", "CREATE", "g", "g", "$", "MKSTREAM")
        w.call("XADD", "g", "1-0", "f", "v")
        w.call("XADD", "g", "2-0", "f", "v")
        for cmd in [("MULTI",), ("XADD", "s", "*", "f", "v"), ("EVAL", BUSY, "0"), ("XADD", "s", "*", "f", "v"),
                    ("XADD", "t", "*", "f", "v"),
                    ("XREADGROUP", "GROUP", "g", "a", "COUNT", "1", "STREAMS", "g", ">"), ("EVAL", BUSY, "0"),
                    ("XREADGROUP", "GROUP", "g", "b", "COUNT", "1", "STREAMS", "g", ">")]:
            w.call(*cmd)
        shapes = _id_shapes(w.call("EXEC"))
        shapes = [s for s in shapes if not (isinstance(s, tuple) and s[0] in (b"*", b":"))]
        # The two reads' delivery times and the consumers' times: one reading of the clock, or several.
        times = sorted({t for t in _times_of(w)})
        return [shapes, len(times)]
    finally:
        w.close()


def _times_of(w: Wire) -> list[int]:
    full = tree(w.call("XINFO", "STREAM", "g", "FULL"))
    info = dict(zip([x[1] for x in full[1][0::2]], full[1][1::2], strict=True))
    out = []
    for g in info[b"groups"][1]:
        gi = dict(zip([x[1] for x in g[1][0::2]], g[1][1::2], strict=True))
        out += [int(e[1][2][1]) for e in gi[b"pending"][1]]
        for c in gi[b"consumers"][1]:
            ci = dict(zip([x[1] for x in c[1][0::2]], c[1][1::2], strict=True))
            out += [int(ci[b"seen-time"][1]), int(ci[b"active-time"][1])]
    return out


def test_a_transaction_reads_the_clock_once(valkey_server, trafikey_server) -> None:  # type: ignore[no-untyped-def]
    """Auto IDs, delivery times and consumers' times within one MULTI all
    come from one reading of the clock, however long the transaction runs."""
    want = _clock_in_transaction(valkey_server.port)
    got = _clock_in_transaction(trafikey_server.port)
    assert got == want, f"\n valkey:   {want}\n trafikey: {got}"
