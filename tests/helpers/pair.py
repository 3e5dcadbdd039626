"""The same requests to Valkey (the oracle) and trafikey-server, replies
compared byte for byte: the ``pair`` fixtures' class, and the pairs tests
make of their own servers."""

from __future__ import annotations

from .resp_wire import Wire


class Pair:
    """The same requests to Valkey (the oracle) and trafikey-server."""

    def __init__(self, valkey: Wire, trafikey: Wire) -> None:
        self.v = valkey
        self.t = trafikey

    def both(self, *args: object) -> tuple[bytes, bytes]:
        return self.v.call(*args), self.t.call(*args)  # type: ignore[arg-type]

    def check(self, *args: object) -> bytes:
        """Send to both; the replies must be identical bytes."""
        v, t = self.both(*args)
        assert t == v, f"{args!r}\n valkey:   {v!r}\n trafikey: {t!r}"
        return v

    def check_all(self, *commands: tuple) -> list[bytes]:
        return [self.check(*cmd) for cmd in commands]

    def close(self) -> None:
        self.v.close()
        self.t.close()


def string_key(pair: Pair, key: str = "str") -> bool:
    """A string key on both servers, once trafikey serves SET."""
    t = pair.t.call("SET", key, "x")
    if t.startswith(b"-"):
        return False
    assert pair.v.call("SET", key, "x") == t
    return True


def fresh(port: int, proto: int = 2) -> Wire:
    """A new connection, every database flushed, in RESP ``proto``."""
    w = Wire(port)
    assert w.call("FLUSHALL") == b"+OK\r\n"
    if proto == 3:
        w.call("HELLO", "3")
    return w


def fresh_pair(valkey_port: int, trafikey_port: int, proto: int = 2) -> Pair:
    """A ``Pair`` of fresh connections (see ``fresh``)."""
    return Pair(fresh(valkey_port, proto), fresh(trafikey_port, proto))
