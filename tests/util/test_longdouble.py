"""INCRBYFLOAT's long double arithmetic, against Valkey's own results."""

from __future__ import annotations

import random

from helpers.resp_wire import Wire

from trafikey_server.util.errors import CommandError
from trafikey_server.util.longdouble import incr_by_float

EDGES = [
    ("0.1", "0.2"), (None, "1e21"), (None, "1.5e-7"), ("3", "-3"), ("1e300", "1"), (None, "0x1p3"),
    (None, "0x10"), (None, "inf"), (None, "-infinity"), (None, "nan"), (None, " 1"), (None, "1 "),
    (None, "+5"), (None, ".5"), (None, "5."), (None, "1e5000"), (None, "1e-5000"), (None, "-0"),
    ("5", "-5.0"), (None, "1_0"), (None, "1e"), (None, "-.5e3"), (None, "1.7976931348623157e308"),
    (None, "123456789.123456789"), ("abc", "1"), (None, ""), ("1e4932", "1e4932"),
]


def _cases() -> list[tuple[str | None, str]]:
    rnd = random.Random(7)
    out = list(EDGES)
    for _ in range(400):
        a = repr(rnd.uniform(-1e6, 1e6)) if rnd.random() < 0.5 else str(rnd.randint(-10**12, 10**12))
        out.append((a, repr(rnd.uniform(-1, 1) * 10 ** rnd.randint(-15, 15))))
    return out


def test_incr_by_float_matches_valkey(valkey_server) -> None:  # type: ignore[no-untyped-def]
    w = Wire(valkey_server.port)
    for cur, inc in _cases():
        w.call("DEL", "ld")
        if cur is not None:
            w.call("SET", "ld", cur)
        want = w.call("INCRBYFLOAT", "ld", inc)
        try:
            got = incr_by_float(cur.encode() if cur is not None else None, inc.encode())
            mine = b"$%d\r\n%s\r\n" % (len(got), got)
        except CommandError as e:
            mine = e.reply()
        assert mine == want, (cur, inc)
    w.close()
