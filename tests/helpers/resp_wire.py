"""A raw RESP connection for tests: requests out, each reply's exact bytes back.

Differential tests compare replies byte for byte, so they need the reply as
it crossed the wire, not as a client library decoded it. ``reply_end``
frames one RESP2/RESP3 reply without interpreting it.
"""

from __future__ import annotations

import socket
import time


def encode(*args: bytes | str | int | float) -> bytes:
    parts = []
    for a in args:
        if isinstance(a, bytes):
            parts.append(a)
        elif isinstance(a, str):
            parts.append(a.encode())
        else:
            parts.append(repr(a).encode() if isinstance(a, float) else str(a).encode())
    return b"*%d\r\n" % len(parts) + b"".join(b"$%d\r\n%s\r\n" % (len(p), p) for p in parts)


def _line_end(buf: bytes, pos: int) -> int:
    i = buf.find(b"\r\n", pos)
    return -1 if i < 0 else i


def reply_end(buf: bytes, pos: int = 0) -> int:
    """Offset just past the reply starting at pos, or -1 if incomplete."""
    if pos >= len(buf):
        return -1
    t = buf[pos : pos + 1]
    eol = _line_end(buf, pos)
    if eol < 0:
        return -1
    head = buf[pos + 1 : eol]
    nxt = eol + 2
    if t in b"+-:,_#(":
        return nxt
    if t in b"$=!":
        n = int(head)
        if n < 0:
            return nxt
        end = nxt + n + 2
        return end if end <= len(buf) else -1
    if t in b"*~>%|":
        n = int(head)
        if n < 0:
            return nxt
        count = n * 2 if t in b"%|" else n
        p = nxt
        for _ in range(count):
            p = reply_end(buf, p)
            if p < 0:
                return -1
        if t == b"|":  # an attribute precedes the real reply
            return reply_end(buf, p)
        return p
    raise ValueError(f"not RESP at {pos}: {buf[pos:pos + 40]!r}")


class Wire:
    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0) -> None:
        self.port = port
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_reply(self) -> bytes:
        while True:
            end = reply_end(self.buf)
            if end >= 0:
                out, self.buf = self.buf[:end], self.buf[end:]
                return out
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError(f"closed with {self.buf!r} pending")
            self.buf += chunk

    def call(self, *args: bytes | str | int | float) -> bytes:
        self.sock.sendall(encode(*args))
        return self.read_reply()

    def pipeline(self, commands: list[tuple]) -> list[bytes]:
        self.sock.sendall(b"".join(encode(*c) for c in commands))
        return [self.read_reply() for _ in commands]

    def send_until_closed(self, data: bytes, timeout: float = 5.0) -> bytes:
        """Send data that the server is expected to refuse by closing, and
        return what it sent before closing. A server that closes before
        the last bytes leave makes the send fail: that is the close too."""
        try:
            self.sock.sendall(data)
        except (ConnectionResetError, BrokenPipeError):
            pass
        return self.read_until_closed(timeout)

    def read_until_closed(self, timeout: float = 5.0) -> bytes:
        """Everything the server sends until it closes the connection."""
        deadline = time.monotonic() + timeout
        out = self.buf
        self.buf = b""
        while time.monotonic() < deadline:
            self.sock.settimeout(max(0.05, deadline - time.monotonic()))
            try:
                chunk = self.sock.recv(1 << 20)
            except TimeoutError:
                raise AssertionError(f"connection still open after {timeout}s; got {out!r}") from None
            except ConnectionResetError:
                # Closing with unread input makes the kernel answer with a
                # reset: that is a close too.
                return out
            if not chunk:
                return out
            out += chunk
        raise AssertionError(f"connection still open after {timeout}s; got {out!r}")


def blocked_clients(w: Wire) -> int:
    """INFO's count of clients waiting in a blocking command."""
    for line in w.call("INFO", "clients").split(b"\r\n"):
        if line.startswith(b"blocked_clients:"):
            return int(line[16:])
    raise AssertionError("INFO clients has no blocked_clients")


def wait_blocked(w: Wire, n: int = 1, timeout: float = 5.0) -> None:
    """Wait (short polls) until the server counts n blocked clients: a
    blocking request sent with ``send_raw`` is known to wait only once the
    server says so."""
    deadline = time.monotonic() + timeout
    while blocked_clients(w) != n:
        assert time.monotonic() < deadline, f"never {n} blocked clients"
        time.sleep(0.005)


class Twin:
    """Numbered connections to Valkey and to trafikey-server, each opened in
    ``proto``'s RESP; ``check`` sends one request on connection ``n`` of each
    and demands identical replies."""

    def __init__(self, valkey_port: int, trafikey_port: int, proto: int = 2) -> None:
        self.ports = (valkey_port, trafikey_port)
        self.proto = proto
        self.conns: dict[int, tuple[Wire, Wire]] = {}

    def conn(self, n: int) -> tuple[Wire, Wire]:
        if n not in self.conns:
            pair = (Wire(self.ports[0]), Wire(self.ports[1]))
            if self.proto == 3:
                for w in pair:
                    w.call("HELLO", "3")
            self.conns[n] = pair
        return self.conns[n]

    def check(self, n: int, *args: object) -> bytes:
        wv, wt = self.conn(n)
        rv, rt = wv.call(*args), wt.call(*args)  # type: ignore[arg-type]
        assert rt == rv, f"conn {n} {args!r}\n valkey:   {rv!r}\n trafikey: {rt!r}"
        return rv

    def both(self, n: int, *args: object) -> tuple[bytes, bytes]:
        wv, wt = self.conn(n)
        return wv.call(*args), wt.call(*args)  # type: ignore[arg-type]

    def close(self) -> None:
        for wv, wt in self.conns.values():
            wv.close()
            wt.close()
