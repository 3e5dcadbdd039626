"""Doubles printed as Valkey 9 prints them, for many kinds of value."""

from __future__ import annotations

import random
import struct

from resp_wire import Wire, encode

from trafikey_server.floats import format_double


def _values() -> list[float]:
    rnd = random.Random(11)
    out = [0.1, 1.5e-7, 1e21, 1e20, 5e-324, 1.7976931348623157e308, 2.0**53, 2.0**53 + 2, 4.6e18, 4.7e18,
           -3.39916778826608e-23, 720889748556924.2, 225320880960098.12, 1e-7, 1e-6, 123e-9]
    out += [10.0**e for e in range(-30, 30)]
    while len(out) < 20000:
        kind = rnd.random()
        if kind < 0.4:
            x = struct.unpack("<d", struct.pack("<Q", rnd.getrandbits(64)))[0]
            if x != x or x in (float("inf"), float("-inf")):
                continue
        elif kind < 0.7:
            x = rnd.uniform(-1, 1) * 10 ** rnd.randint(-30, 30)
        else:
            x = float(f"{rnd.randint(-10**9, 10**9)}e{rnd.randint(-20, 20)}")
        out.append(x)
    return out


def test_format_double_matches_valkey(valkey_server) -> None:  # type: ignore[no-untyped-def]
    w = Wire(valkey_server.port)
    values = _values()
    for start in range(0, len(values), 2000):
        chunk = values[start : start + 2000]
        w.send_raw(b"".join(encode("ZADD", "fz", repr(x), "m") + encode("ZSCORE", "fz", "m") for x in chunk))
        for x in chunk:
            w.read_reply()
            reply = w.read_reply()
            got = reply.split(b"\r\n")[1]
            assert format_double(x) == got, repr(x)
    w.close()
