"""The pubsub class of client-output-buffer-limit: a subscriber that stops
reading is disconnected once the messages waiting for it pass the hard
limit, on Valkey and on trafikey-server alike; a client that is not
subscribed is held to the normal class (unlimited by default)."""

from __future__ import annotations

import socket
import time

from helpers.resp_wire import Wire, encode
from helpers.servers import Proc

MESSAGE = b"m" * (1 << 20)


def _stat(w: Wire, name: bytes) -> int:
    for line in w.call("INFO", "stats").split(b"\r\n"):
        if line.startswith(name + b":"):
            return int(line.split(b":")[1])
    raise AssertionError(name)


def _slow_subscriber(port: int, channel: bytes) -> socket.socket:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(encode("SUBSCRIBE", channel))
    got = b""
    while not got.endswith(b":1\r\n"):
        got += s.recv(100)
    return s


def _disconnects_slow_subscriber(port: int) -> tuple[int, bytes]:
    w = Wire(port)
    assert w.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1048576 0 0") == b"+OK\r\n"
    try:
        before = _stat(w, b"client_output_buffer_limit_disconnections")
        sub = _slow_subscriber(port, b"ob.slow")
        assert w.call("PUBSUB", "NUMSUB", "ob.slow") == b"*2\r\n$7\r\nob.slow\r\n:1\r\n"
        for _ in range(64):
            w.call("PUBLISH", "ob.slow", MESSAGE)
            if w.call("PUBSUB", "NUMSUB", "ob.slow").endswith(b":0\r\n"):
                break
        deadline = time.monotonic() + 10
        while not w.call("PUBSUB", "NUMSUB", "ob.slow").endswith(b":0\r\n"):
            assert time.monotonic() < deadline, "the slow subscriber was never disconnected"
            time.sleep(0.01)
        sub.close()
        return _stat(w, b"client_output_buffer_limit_disconnections") - before, w.call("PUBLISH", "ob.slow", "x")
    finally:
        w.call("CONFIG", "SET", "client-output-buffer-limit", "pubsub 33554432 8388608 60")
        w.close()


def test_slow_subscriber_disconnected(valkey_server: Proc, trafikey_server: Proc) -> None:
    v = _disconnects_slow_subscriber(valkey_server.port)
    t = _disconnects_slow_subscriber(trafikey_server.port)
    assert v == (1, b":0\r\n")
    assert t == v
