"""Several connections to one server, and what each of them receives.

A scenario is a list of steps, each a request sent by one of the clients.
After every step each client is synchronised with a PING carrying a unique
token: everything it received before the PING's answer (replies, pushed
messages) is that step's record for the client. Since a message is delivered
before the publisher gets its reply, the records say exactly who received
what and in which order, without waiting on timers; the same scenario run on
Valkey and on trafikey-server must give the same records byte for byte.

Two orders are Valkey's hash-table order, which changes from run to run
(its hash seed is random): the pattern messages one publish sends to one
client, and the confirmations of an UNSUBSCRIBE (PUNSUBSCRIBE, SUNSUBSCRIBE)
without arguments. ``unordered`` compares those runs as the set of frames
(for the confirmations: the set of names, and the counts in order), every
other frame in place.
"""

from __future__ import annotations

import itertools
import re
import time

from .resp_wire import Wire, encode, reply_end

_tokens = itertools.count()
_HELLO_ID = re.compile(rb"\$2\r\nid\r\n:\d+\r\n")
Step = tuple  # (client index, *request) or (client index, "RAW", bytes)


CLOSED = b"<closed>"


def _frames(buf: bytes) -> list[bytes]:
    out = []
    while buf:
        end = reply_end(buf)
        if end < 0:
            out.append(buf)
            break
        out.append(buf[:end])
        buf = buf[end:]
    return out


class Clients:
    def __init__(self, port: int, protos: list[int]) -> None:
        self.wires = [Wire(port) for _ in protos]
        self.closed: set[Wire] = set()
        self.quiet: set[int] = set()
        for w, proto in zip(self.wires, protos, strict=True):
            if proto == 3:
                assert w.call("HELLO", "3").startswith(b"%")

    def close(self) -> None:
        for w in self.wires:
            w.close()

    def sync(self, w: Wire) -> list[bytes]:
        """What w received since the last sync; a connection the server
        closed records what came before the close, then CLOSED, and is
        left alone afterwards."""
        if w in self.closed:
            return []
        token = b"sync-%d" % next(_tokens)
        ends = (b"$%d\r\n%s\r\n" % (len(token), token),
                b"*2\r\n$4\r\npong\r\n$%d\r\n%s\r\n" % (len(token), token))
        got = []
        try:
            w.send_raw(encode("PING", token))
            while True:
                frame = w.read_reply()
                if frame in ends:
                    return got
                # A HELLO reply names the connection's id, which differs.
                got.append(_HELLO_ID.sub(b"$2\r\nid\r\n:ID\r\n", frame))
        except OSError:  # ConnectionError included
            got.extend(_frames(w.buf))
            got.append(CLOSED)
            self.closed.add(w)
            return got

    def step(self, i: int, *request: object) -> list[list[bytes]]:
        """``(i, *request)``, ``(i, "RAW", bytes)``, or for a quiet client
        ``(i, "RAW", bytes, n)``: read the n frames it is known to get (its
        last request must be answered), since it cannot be synchronised."""
        got: dict[int, list[bytes]] = {}
        if request[0] == "RAW":
            self.wires[i].send_raw(request[1])  # type: ignore[arg-type]
            if len(request) == 3:
                got[i] = [self.wires[i].read_reply() for _ in range(request[2])]  # type: ignore[call-overload]
        else:
            self.wires[i].send_raw(encode(*request))  # type: ignore[arg-type]
        # The sender first: its PING is answered once its request has run, so
        # the others' PINGs cannot overtake a request still in transit.
        for n in [i] + [n for n in range(len(self.wires)) if n != i]:
            if n not in got:
                got[n] = [] if n in self.quiet else self.sync(self.wires[n])
        return [got[n] for n in range(len(self.wires))]

    def run(self, steps: list[Step]) -> list[list[list[bytes]]]:
        """A step ``("QUIET", {indexes})`` stops synchronising those clients
        (one whose replies are off cannot answer a PING) until the next
        such step; what they receive meanwhile shows in their next record."""
        out = []
        for s in steps:
            if s[0] == "QUIET":
                self.quiet = s[1]
                out.append([])
            else:
                out.append(self.step(s[0], *s[1:]))
        return out


def settle(port: int) -> None:
    """Wait (short polls) until no subscription is left on the server:
    connections closed by an earlier test may still be going away, and a
    scenario that counts channels or patterns must start from none."""
    w = Wire(port)
    try:
        for _ in range(500):
            if (w.call("PUBSUB", "NUMPAT") == b":0\r\n" and w.call("PUBSUB", "CHANNELS") == b"*0\r\n"
                    and w.call("PUBSUB", "SHARDCHANNELS") == b"*0\r\n"):
                return
            time.sleep(0.002)
        raise AssertionError("subscriptions left over on the server")
    finally:
        w.close()


def transcripts(valkey_port: int, trafikey_port: int, protos: list[int],
                steps: list[Step]) -> tuple[list, list]:
    out = []
    for port in (valkey_port, trafikey_port):
        settle(port)
        cl = Clients(port, protos)
        try:
            out.append(cl.run(steps))
        finally:
            cl.close()
    return out[0], out[1]


_RUNS = (b"pmessage", b"unsubscribe", b"punsubscribe", b"sunsubscribe")


def _kind(frame: bytes) -> bytes | None:
    parts = frame.split(b"\r\n")
    if len(parts) > 2 and parts[0] in (b"*3", b">3", b"*4", b">4") and parts[2] in _RUNS:
        return parts[2]
    return None


def unordered(frames: list[bytes]) -> list[object]:
    out: list[object] = []
    i = 0
    while i < len(frames):
        kind = _kind(frames[i])
        j = i + 1
        while kind is not None and j < len(frames) and _kind(frames[j]) == kind:
            j += 1
        run = frames[i:j]
        if kind is None or len(run) == 1:
            out.extend(run)
        elif kind == b"pmessage":
            out.append(sorted(run))
        else:  # the names as a set, the counts in order
            parts = [f.split(b"\r\n") for f in run]
            out.append((kind, sorted(p[4] for p in parts), [p[5] for p in parts]))
        i = j
    return out


def assert_same(valkey_port: int, trafikey_port: int, protos: list[int], steps: list[Step]) -> list:
    v, t = transcripts(valkey_port, trafikey_port, protos, steps)
    for n, (sv, st) in enumerate(zip(v, t, strict=True)):
        if sv != st:
            sv = [unordered(frames) for frames in sv]
            st = [unordered(frames) for frames in st]
        assert st == sv, f"step {n} {steps[n]!r}\n valkey:   {sv!r}\n trafikey: {st!r}"
    return v
