"""Comparing stream replies with Valkey's where the clock shows through.

Most stream replies are exact functions of the requests and compare byte
for byte. A few carry the server's clock: consumers' seen and active
times and the PEL's delivery times (XINFO STREAM FULL), idle and inactive
durations (XINFO CONSUMERS, XPENDING's extended form). Valkey's clock
cannot be frozen, so those numbers are compared within a tolerance (a
duration with a duration, an absolute time near now with one near now;
-1, "never", only with -1), and everything else in the same reply still
byte for byte: the parsed replies must have the same types, lengths,
strings and every other integer.

``state`` reads every key of a database back through commands (TYPE, and
for a stream its entries, XINFO STREAM FULL, groups, consumers and PEL),
so two servers' keyspaces can be compared after a step or a restart.
"""

from __future__ import annotations

import time
from typing import Any

from .resp_wire import Wire
from .script import words

# Fields whose value is a duration, and fields holding an absolute time.
DURATIONS = {b"idle", b"inactive"}
ABSOLUTE = {b"seen-time", b"active-time"}
TOLERANCE_MS = 15_000  # both servers ran the same steps within this
BRAND_KEY = b"{emq}:version"  # trafikey-server writes it at start-up: not part of a workload


class Approx:
    """A clock-dependent integer: equal to another of its kind within the
    tolerance, -1 (never) only to -1."""

    def __init__(self, value: int, absolute: bool) -> None:
        self.value = value
        self.absolute = absolute

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Approx) or other.absolute != self.absolute:
            return False
        a, b = self.value, other.value
        if a == b:
            return True
        if a < 0 or b < 0:
            return False
        if self.absolute:
            now = int(time.time() * 1000)
            if abs(a - now) > 600_000 or abs(b - now) > 600_000:
                return False  # a time set explicitly must match exactly
        return abs(a - b) <= TOLERANCE_MS

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"~{self.value}"


Node = Any  # (type byte, bytes) for scalars, (type byte, list) for aggregates


def parse(buf: bytes, pos: int = 0) -> tuple[Node, int]:
    """One RESP2/RESP3 reply as a tree: (type, payload)."""
    t = buf[pos:pos + 1]
    eol = buf.index(b"\r\n", pos)
    head = buf[pos + 1:eol]
    nxt = eol + 2
    if t in b"+-:,_#(":
        return (t, head), nxt
    if t in b"$=!":
        n = int(head)
        if n < 0:
            return (t, None), nxt
        return (t, buf[nxt:nxt + n]), nxt + n + 2
    if t in b"*~>%|":
        n = int(head)
        if n < 0:
            return (t, None), nxt
        count = n * 2 if t in b"%|" else n
        items = []
        for _ in range(count):
            item, nxt = parse(buf, nxt)
            items.append(item)
        if t == b"|":
            real, nxt = parse(buf, nxt)
            return (b"|", items, real), nxt
        return (t, items), nxt
    raise ValueError(f"not RESP: {buf[pos:pos + 40]!r}")


def tree(reply: bytes) -> Node:
    node, end = parse(reply)
    assert end == len(reply), reply
    return node


def _int(node: Node, absolute: bool) -> Node:
    if node[0] == b":":
        return Approx(int(node[1]), absolute)
    return node


def _is_key(node: Node) -> bool:
    return isinstance(node, tuple) and node[0] in (b"$", b"+") and isinstance(node[1], bytes)


def mask_info(node: Node) -> Node:
    """XINFO replies: the named time fields, and the delivery times of the
    PEL lists under a ``pending`` key (an entry of four: id, consumer,
    time, count; of three in a consumer's: id, time, count)."""
    kind, payload = node[0], node[1]
    if not isinstance(payload, list):
        return node
    items = [mask_info(x) for x in payload]
    if len(items) % 2 == 0 and (kind == b"%" or all(_is_key(items[i]) for i in range(0, len(items), 2))):
        for i in range(0, len(items), 2):
            key = items[i][1]
            if key in DURATIONS:
                items[i + 1] = _int(items[i + 1], False)
            elif key in ABSOLUTE:
                items[i + 1] = _int(items[i + 1], True)
            elif key == b"pending" and isinstance(items[i + 1][1], list):
                entries = []
                for e in items[i + 1][1]:
                    if isinstance(e[1], list) and len(e[1]) in (3, 4):
                        sub = list(e[1])
                        at = 2 if len(sub) == 4 else 1
                        sub[at] = _int(sub[at], True)
                        e = (e[0], sub)
                    entries.append(e)
                items[i + 1] = (items[i + 1][0], entries)
    return (kind, items)


def mask_pending(node: Node) -> Node:
    """XPENDING's extended form: each entry's idle time (the third)."""
    if not isinstance(node[1], list):
        return node
    out = []
    for e in node[1]:
        if isinstance(e[1], list) and len(e[1]) == 4:
            sub = list(e[1])
            sub[2] = _int(sub[2], False)
            e = (e[0], sub)
        out.append(e)
    return (node[0], out)


def masked(command: tuple, reply: bytes) -> Node:
    """The reply as a tree with its clock-dependent numbers made Approx."""
    node = tree(reply)
    if node[0] == b"-":
        return node
    name = str(command[0]).upper() if not isinstance(command[0], bytes) else command[0].decode().upper()
    if name == "XINFO":
        return mask_info(node)
    if name == "XPENDING" and len(command) > 3:
        return mask_pending(node)
    return node


def timed(command: tuple) -> bool:
    """Whether a command's reply may carry the clock."""
    name = (command[0].decode() if isinstance(command[0], bytes) else str(command[0])).upper()
    return name == "XINFO" or (name == "XPENDING" and len(command) > 3)


def same(command: tuple, valkey: bytes, trafikey: bytes) -> bool:
    if valkey == trafikey:
        return True
    if not timed(command):
        return False
    try:
        return masked(command, valkey) == masked(command, trafikey)
    except (ValueError, AssertionError, IndexError):
        return False


def first_difference(command: tuple, a: bytes, b: bytes) -> str:
    """Where two replies first differ (a path into the parsed replies), for
    readable failures."""
    try:
        x, y = masked(command, a), masked(command, b)
    except (ValueError, AssertionError, IndexError):
        return "unparsable"

    def walk(p: Any, q: Any, path: str) -> str | None:
        if isinstance(p, Approx) or isinstance(q, Approx):
            return None if p == q else f"{path}: {p!r} != {q!r}"
        if p[0] != q[0] or not isinstance(p[1], list) or not isinstance(q[1], list):
            return None if p == q else f"{path}: {p!r} != {q!r}"
        if len(p[1]) != len(q[1]):
            return f"{path}: length {len(p[1])} != {len(q[1])}"
        items = p[1]
        keyed = len(items) % 2 == 0 and all(_is_key(items[i]) for i in range(0, len(items), 2))
        for i, (u, v) in enumerate(zip(items, q[1], strict=True)):
            step = f"/{items[i - 1][1].decode(errors='replace')}" if keyed and i % 2 else f"[{i}]"
            found = walk(u, v, path + step)
            if found:
                return found
        return None

    return walk(x, y, "") or "no difference"


def assert_alike(pair: Any, *command: object) -> bytes:
    """Send to both servers of a pair: identical replies, or for a reply
    carrying the clock, identical but for its times (within tolerance)."""
    v, t = pair.both(*command)
    assert same(command, v, t), (
        f"{command!r}\n first difference: {first_difference(command, v, t)}\n valkey:   {v!r}\n trafikey: {t!r}")
    return v


def script(pair: Any, text: str) -> None:
    """One command a line (shell words; # comments), each checked."""
    for line in text.strip().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            assert_alike(pair, *words(line))


def _bulks(reply: bytes) -> list[bytes]:
    node = tree(reply)
    return [x[1] for x in node[1]]


def state(port: int, db: int = 0) -> list[tuple[tuple, bytes]]:
    """Every key of one database read back, as (probe, reply) in key order;
    a stream's groups and consumers each probed too."""
    w = Wire(port)
    try:
        if db:
            w.call("SELECT", db)
        out: list[tuple[tuple, bytes]] = []
        for key in sorted(_bulks(w.call("KEYS", "*"))):
            if key == BRAND_KEY:
                continue
            probes: list[tuple] = [("TYPE", key), ("PEXPIRETIME", key)]
            kind = w.call("TYPE", key)
            if kind == b"+stream\r\n":
                probes += [("XRANGE", key, "-", "+"), ("XINFO", "STREAM", key, "FULL"), ("XINFO", "GROUPS", key)]
                groups = tree(w.call("XINFO", "GROUPS", key))[1]
                for g in groups:
                    name = g[1][1][1]
                    probes += [("XINFO", "CONSUMERS", key, name), ("XPENDING", key, name),
                               ("XPENDING", key, name, "-", "+", "1000")]
            elif kind == b"+string\r\n":
                probes.append(("GET", key))
            elif kind == b"+list\r\n":
                probes.append(("LRANGE", key, "0", "-1"))
            elif kind == b"+hash\r\n":
                probes.append(("HGETALL", key))
            elif kind == b"+zset\r\n":
                probes.append(("ZRANGE", key, "0", "-1", "WITHSCORES"))
            elif kind == b"+set\r\n":
                probes.append(("SORT", key, "ALPHA"))
            out.extend((p, w.call(*p)) for p in probes)
        return out
    finally:
        w.close()


def assert_states_equal(a: list[tuple[tuple, bytes]], b: list[tuple[tuple, bytes]], what: str = "") -> None:
    """Two states (of two servers, or of one before and after a step)
    equal, clock-dependent numbers within tolerance."""
    assert [p for p, _ in b] == [p for p, _ in a], f"{what} keys differ\n {[p for p, _ in a]}\n {[p for p, _ in b]}"
    for (probe, ar), (_, br) in zip(a, b, strict=True):
        assert same(probe, ar, br), (f"{what} {probe!r}\n first difference: {first_difference(probe, ar, br)}"
                                     f"\n valkey/before: {ar!r}\n trafikey/after: {br!r}")


def assert_same_state(valkey_port: int, trafikey_port: int, db: int = 0) -> None:
    assert_states_equal(state(valkey_port, db), state(trafikey_port, db))


def assert_refused(pair: Any, *command: object) -> bytes:
    """An error on both servers, identical, and nothing written on either."""
    before_v, before_t = state(pair.v.port), state(pair.t.port)
    reply = assert_alike(pair, *command)
    assert reply.startswith(b"-"), (command, reply)
    assert_states_equal(before_v, state(pair.v.port), f"valkey changed by {command!r}")
    assert_states_equal(before_t, state(pair.t.port), f"trafikey changed by {command!r}")
    return reply


def attempt(pair: Any, *command: object) -> bytes:
    """Identical replies; an error writes nothing; either way the
    keyspaces agree afterwards."""
    before_v, before_t = state(pair.v.port), state(pair.t.port)
    reply = assert_alike(pair, *command)
    if reply.startswith(b"-"):
        assert_states_equal(before_v, state(pair.v.port), f"valkey changed by {command!r}")
        assert_states_equal(before_t, state(pair.t.port), f"trafikey changed by {command!r}")
    assert_same_state(pair.v.port, pair.t.port)
    return reply

