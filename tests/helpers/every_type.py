"""A dataset holding every value type in its every encoding, as commands.

For tests that need a keyspace no shortcut could copy right by accident:
strings (integers, raw bytes grown in place, HyperLogLogs), hashes (small,
large, with field TTLs), lists, sets (intset, listpack, hashtable), sorted
sets, streams with consumer groups and pending entries, the job core's
keys, and keys with expiry times, spread over several databases.
"""

from __future__ import annotations

from .resp_wire import Wire, encode

# An absolute expiry far ahead of any clock a test sets.
FAR = 4_000_000_000_000


def commands(n: int, db: int = 0) -> list[tuple[object, ...]]:
    """About ``n`` keys in database ``db`` (SELECT first), every type."""
    out: list[tuple[object, ...]] = [("SELECT", db)]
    for i in range(n):
        kind = i % 8
        if kind == 0:
            key = f"str:{i}"
            out.append(("SET", key, f"value-{i}" if i % 16 else str(i)))
        elif kind == 1:
            key = f"hash:{i}"
            out.append(("HSET", key, "name", f"n{i}", "count", i))
            if i % 3 == 1:
                out.append(("HPEXPIREAT", key, FAR + i, "FIELDS", 1, "count"))
        elif kind == 2:
            key = f"list:{i}"
            out.append(("RPUSH", key, "a", f"b{i}", "c"))
        elif kind == 3:
            key = f"set:{i}"
            out.append(("SADD", key, *(range(i % 5 + 1) if i % 2 else ("x", f"y{i}"))))
        elif kind == 4:
            key = f"zset:{i}"
            out.append(("ZADD", key, 1, "a", i, f"m{i}", -0.5, "neg"))
        elif kind == 5:
            key = f"stream:{i}"
            out.append(("XADD", key, f"{i + 1}-1", "f", f"v{i}"))
            out.append(("XADD", key, f"{i + 1}-2", "g", "w"))
            if i % 4 == 1:
                out.append(("XGROUP", "CREATE", key, "grp", "0"))
                out.append(("XREADGROUP", "GROUP", "grp", "alice", "COUNT", 1, "STREAMS", key, ">"))
        elif kind == 6:
            key = f"hll:{i}"
            out.append(("PFADD", key, "a", "b", f"c{i}"))
        else:
            key = f"raw:{i}"
            out.append(("SET", key, "grown"))
            out.append(("APPEND", key, f"-{i}"))
        if i % 5 == 0:
            out.append(("PEXPIREAT", key, FAR + i))
    # Large encodings, once each.
    out.append(("HSET", "big:hash", *[x for j in range(200) for x in (f"f{j}", j)]))
    out.append(("HPEXPIREAT", "big:hash", FAR, "FIELDS", 2, "f1", "f2"))
    out.append(("ZADD", "big:zset", *[x for j in range(200) for x in (j / 3, f"m{j}")]))
    out.append(("RPUSH", "big:list", *[f"e{j}" * 8 for j in range(300)]))
    out.append(("SADD", "big:intset", *range(600)))
    out.append(("SADD", "big:set", *[f"s{j}" for j in range(200)]))
    # The job core's keys: a pending, an active (claimed) and a scheduled job.
    q = "emq:{snap}:"
    out.append(("EMQ.ENQUEUE", 2, q + "pending", q, "job-1", "p1"))
    out.append(("EMQ.ENQUEUE", 2, q + "pending", q, "job-2", "p2"))
    out.append(("EMQ.CLAIM", 3, q + "pending", q + "active", q, 30_000))
    out.append(("EMQ.SCHEDULE", 2, q + "schedule", q, "job-3", "p3", FAR))
    out.append(("SELECT", 0))
    return out


def load(w: Wire, cmds: list[tuple[object, ...]], chunk: int = 5000) -> None:
    """Send the commands pipelined; every reply must be a success."""
    for start in range(0, len(cmds), chunk):
        part = cmds[start:start + chunk]
        w.send_raw(b"".join(encode(*c) for c in part))  # type: ignore[arg-type]
        for c in part:
            reply = w.read_reply()
            assert not reply.startswith(b"-"), (c, reply)
