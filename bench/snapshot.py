"""Section: named snapshots, TRAFIKEY.SNAPSHOT SAVE and RESTORE.

What it measures: how long a test suite waits to put a dataset back. Both
servers are filled with the same keys of every type (strings, HyperLogLogs,
hashes, some with field TTLs, lists, sets, sorted sets, streams, some with a
consumer group and a pending entry, about one key in five with an expiry).
trafikey-server then times ``TRAFIKEY.SNAPSHOT SAVE`` and ``RESTORE``; Valkey
has no named snapshot, and the nearest thing it does is ``DEBUG RELOAD``
(save the dataset to its RDB file, empty the keyspace, load the file back),
timed on the same keys. Wall milliseconds per call, as the client waits for
the reply, and server CPU milliseconds. No target: reported.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from .cpu import Window
from .servers import ReplyError, Server

FAR = 4_000_000_000_000  # an absolute expiry well in the future


def _cmd(*parts: bytes | str | int) -> bytes:
    enc = [p if isinstance(p, bytes) else str(p).encode() for p in parts]
    return b"*%d\r\n" % len(enc) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in enc)


def fill_commands(keys: int) -> list[bytes]:
    """One request per key (two or three for the keys that get an expiry,
    a field TTL or a consumer group), every type in turn."""
    out: list[bytes] = []
    for i in range(keys):
        kind = i % 7
        if kind == 0:
            key = f"s:{i}"
            out.append(_cmd("SET", key, f"value-{i}"))
        elif kind == 1:
            key = f"h:{i}"
            out.append(_cmd("HSET", key, "name", f"n{i}", "count", i, "tag", "x"))
            if i % 10 == 1:
                out.append(_cmd("HPEXPIREAT", key, FAR, "FIELDS", 1, "tag"))
        elif kind == 2:
            key = f"l:{i}"
            out.append(_cmd("RPUSH", key, "a", f"b{i}", "c", "d"))
        elif kind == 3:
            key = f"t:{i}"
            out.append(_cmd("SADD", key, i, i + 1, f"m{i}"))
        elif kind == 4:
            key = f"z:{i}"
            out.append(_cmd("ZADD", key, 1, "a", 2, "b", i, f"m{i}"))
        elif kind == 5:
            key = f"x:{i}"
            out.append(_cmd("XADD", key, "1-1", "f", f"v{i}"))
            if i % 10 == 5:
                out.append(_cmd("XGROUP", "CREATE", key, "g", "0"))
                out.append(_cmd("XREADGROUP", "GROUP", "g", "c", "STREAMS", key, ">"))
        else:
            key = f"p:{i}"
            out.append(_cmd("PFADD", key, "a", "b", f"c{i}"))
        if i % 5 == 0:
            out.append(_cmd("PEXPIREAT", key, FAR + i))
    return out


def fill(server: Server, keys: int, batch: int = 2000) -> None:
    conn = server.conn
    server.execute("FLUSHALL")
    cmds = fill_commands(keys)
    for start in range(0, len(cmds), batch):
        part = cmds[start:start + batch]
        conn.send(b"".join(part))
        for c in part:
            reply = conn.read()
            assert not isinstance(reply, ReplyError), (server.label, c, reply)
    size = int(server.execute("DBSIZE"))
    assert size >= keys, (server.label, size)


def _timed(server: Server, *parts: bytes | str | int) -> dict[str, float]:
    win = Window({"server": server.pid}).start()
    t0 = time.perf_counter()
    reply = server.execute(*parts)
    wall = time.perf_counter() - t0
    win.stop()
    assert reply in (b"OK", "OK"), reply
    return {"wall_ms": wall * 1000, "cpu_ms": win.cpu["server"] * 1000}


def run_snapshot(trafikey: Server, valkey: Server, rounds: int, keys: int,
                 record: Callable[[str, tuple[str, ...], dict[str, float]], None],
                 log: Callable[[str], None]) -> None:
    fill(trafikey, keys)
    fill(valkey, keys)
    digest = trafikey.execute("DEBUG", "DIGEST")
    for r in range(rounds):
        save = _timed(trafikey, "TRAFIKEY.SNAPSHOT", "SAVE", "bench")
        trafikey.execute("FLUSHALL")
        restore = _timed(trafikey, "TRAFIKEY.SNAPSHOT", "RESTORE", "bench")
        assert trafikey.execute("DEBUG", "DIGEST") == digest, "the restore did not give the saved keyspace back"
        reload = _timed(valkey, "DEBUG", "RELOAD")
        record("snapshot", ("save", trafikey.label), save)
        record("snapshot", ("restore", trafikey.label), restore)
        record("snapshot", ("reload", valkey.label), reload)
        log(f"  round {r + 1}: SAVE {save['wall_ms']:8.1f} ms  RESTORE {restore['wall_ms']:8.1f} ms  "
            f"Valkey DEBUG RELOAD {reload['wall_ms']:8.1f} ms  ({keys:,} keys)")
