"""Client-side caching scenarios run on Valkey and on trafikey-server:
several connections interleaved, everything each one received (replies and
the invalidation pushes between them) compared as one transcript
(``assert_same_transcripts``). ``servers`` is the module-scoped fixture of
the two servers; a module that uses it imports it. Client IDs differ
between the servers, so a scenario writes them as ``<id:name>``."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest

from .resp_wire import Wire, encode
from .servers import Proc, start_trafikey, start_valkey


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[Proc, Proc]]:
    v = start_valkey("--enable-debug-command", "yes")
    t = start_trafikey("--enable-clock-command", "yes", "--enable-debug-command", "yes")
    yield v, t
    v.stop()
    t.stop()


class Env:
    """One server's side of a scenario."""

    def __init__(self, proc: Proc, ours: bool) -> None:
        self.port = proc.port
        self.ours = ours
        self.wires: list[Wire] = []
        self.ids: dict[int, bytes] = {}
        self.log: list[bytes] = []

    def client(self, name: str, proto: int = 2) -> Wire:
        w = Wire(self.port)
        self.wires.append(w)
        if proto == 3:
            w.call("HELLO", "3")
        cid = int(w.call("CLIENT", "ID")[1:-2])
        self.ids[cid] = name.encode()
        w.name = name  # type: ignore[attr-defined]
        return w

    def id(self, name: str) -> int:
        return next(k for k, v in self.ids.items() if v == name.encode())

    def norm(self, b: bytes, ids: bool = False) -> bytes:
        """IDs as names: in CLIENT LIST fields always, as integers in pushes
        (tracking-redir-broken) and where the caller says so."""
        ids = ids or b.startswith(b">")
        if b.startswith((b"$", b"=")) and b"id=" in b:
            # A CLIENT LIST/INFO header counts the digits of ids, addresses
            # and ages, which differ between the servers and between runs.
            b = re.sub(rb"^[$=]\d+\r\n", b"$<n>\r\n", b)
        b = b"\n" + b  # an integer element starts a line ("b:9" inside a key does not)
        for cid, name in self.ids.items():
            for fmt in (b"\n:%d\r\n", b"redir=%d ", b"id=%d ") if ids else (b"redir=%d ", b"id=%d "):
                b = b.replace(fmt % cid, fmt.replace(b"%d", b"<id:" + name + b">"))
        return b[1:]

    def call(self, w: Wire, *args: object) -> bytes:
        """Send a request and wait for its reply; RESP3 pushes that come
        first are logged as received (the request's own reply is never a
        push here), so the next step never overtakes this request."""
        ids = args[:2] in (("CLIENT", "GETREDIR"), ("CLIENT", "TRACKINGINFO"))
        w.send_raw(encode(*args))  # type: ignore[arg-type]
        subscribing = str(args[0]).upper().endswith("SUBSCRIBE")  # answered with a push in RESP3
        while True:
            r = self.norm(w.read_reply(), ids)
            if not r.startswith(b">") or subscribing:
                break
            self.log.append(w.name.encode() + b"< " + r)  # type: ignore[attr-defined]
        self.log.append(w.name.encode() + b"> " + r)  # type: ignore[attr-defined]
        return r

    def read(self, w: Wire) -> bytes:
        r = self.norm(w.read_reply())
        self.log.append(w.name.encode() + b"< " + r)  # type: ignore[attr-defined]
        return r

    def drain(self, w: Wire) -> None:
        """Whatever arrived before a PING's reply, then the PONG."""
        w.send_raw(b"*1\r\n$4\r\nPING\r\n")
        while True:
            r = self.read(w)
            if r in (b"+PONG\r\n", b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"):
                return

    def client_list(self, w: Wire, *names: str) -> None:
        """CLIENT LIST's id, flags and redir fields of the named clients
        (addresses, fds and memory differ between the servers)."""
        lst = self.norm(w.call("CLIENT", "LIST", "ID", *(self.id(n) for n in names)))
        self.log.append(b" ".join(f for f in lst.split() if f.startswith((b"flags=", b"redir=", b"id="))))

    def expire_now(self, w: Wire, key: str) -> None:
        """Give key a TTL that runs out at once, and return once the active
        sweep has removed it: what the expiry sends is then already on its
        way, before anything the scenario does next. The side connection
        that watches reads INFO only, which touches no key."""
        side = Wire(self.port)
        try:
            before = self._expired(side)
            if self.ours:
                w.call("PEXPIRE", key, 10)
                w.call("TRAFIKEY.CLOCK", "ADVANCE", 20)
            else:
                w.call("PEXPIRE", key, 5)
            deadline = time.monotonic() + 10
            while self._expired(side) == before:
                assert time.monotonic() < deadline, f"{key} was not expired by the sweep"
                time.sleep(0.01)
        finally:
            side.close()

    @staticmethod
    def _expired(side: Wire) -> int:
        info = side.call("INFO", "stats")
        return int(re.search(rb"expired_keys:(\d+)", info).group(1))  # type: ignore[union-attr]

    def close(self) -> None:
        for w in self.wires:
            w.close()


Scenario = Callable[[Env], None]


def assert_same_transcripts(servers: tuple[Proc, Proc], scenario: Scenario) -> list[bytes]:
    v_proc, t_proc = servers
    out = []
    for proc, ours in ((v_proc, False), (t_proc, True)):
        admin = Wire(proc.port)
        admin.call("FLUSHALL")
        admin.call("CONFIG", "SET", "tracking-table-max-keys", "1000000")
        if ours:
            admin.call("TRAFIKEY.CLOCK", "FREEZE")
        env = Env(proc, ours)
        try:
            scenario(env)
        finally:
            env.close()
            if ours:
                admin.call("TRAFIKEY.CLOCK", "RELEASE")
            admin.close()
        out.append(env.log)
    v, t = out
    if t != v:
        first = next((i for i, (x, y) in enumerate(zip(v, t, strict=False)) if x != y), min(len(v), len(t)))
        lines = [f"{x!r:70} | {y!r}" for x, y in zip(v[first - 3:first + 8], t[first - 3:first + 8], strict=False)]
        raise AssertionError(f"transcripts differ at {first} (valkey | trafikey):\n" + "\n".join(lines))
    return v
