"""MULTI/EXEC/WATCH against Valkey, byte for byte."""

from __future__ import annotations

import time

from resp_wire import Wire


def test_errors_outside_and_inside(pair23) -> None:  # type: ignore[no-untyped-def]
    p = pair23
    p.check_all(("EXEC",), ("DISCARD",), ("MULTI",), ("MULTI",), ("WATCH", "a"), ("SET", "a", "1"),
                ("INCR", "a"), ("HSET", "a", "f", "v"), ("GET", "a"), ("EXEC",), ("GET", "a"))


def test_queued_rejection_aborts(pair) -> None:  # type: ignore[no-untyped-def]
    pair.check_all(("MULTI",), ("SET", "a", "1"), ("NOSUCH",), ("GET",), ("EXEC",), ("GET", "a"))


def test_discard(pair) -> None:  # type: ignore[no-untyped-def]
    pair.check_all(("MULTI",), ("SET", "a", "1"), ("DISCARD",), ("GET", "a"), ("EXEC",))


def _other(pair):  # type: ignore[no-untyped-def]
    return Wire(pair.v.port), Wire(pair.t.port)


def test_watch_invalidated_by_another_client(pair) -> None:  # type: ignore[no-untyped-def]
    ov, ot = _other(pair)
    for mod in (("SET", "w", "2"), ("DEL", "w"), ("FLUSHALL",), ("EXPIRE", "w", "100"), ("HSET", "w2", "f", "v")):
        pair.check("SET", "w", "1")
        pair.check("WATCH", "w", "w2")
        assert ov.call(*mod) == ot.call(*mod)
        pair.check_all(("MULTI",), ("SET", "w", "3"), ("EXEC",), ("GET", "w"))
    ov.close()
    ot.close()


def test_unmodified_watch_and_unwatch(pair) -> None:  # type: ignore[no-untyped-def]
    ov, ot = _other(pair)
    pair.check_all(("SET", "w", "1"), ("WATCH", "w"), ("GET", "w"), ("MULTI",), ("INCR", "w"), ("EXEC",))
    pair.check_all(("WATCH", "w"), ("UNWATCH",))
    assert ov.call("SET", "w", "9") == ot.call("SET", "w", "9")
    pair.check_all(("MULTI",), ("INCR", "w"), ("EXEC",))
    # A write by the watching client itself also invalidates.
    pair.check_all(("WATCH", "w"), ("SET", "w", "5"), ("MULTI",), ("INCR", "w"), ("EXEC",))
    ov.close()
    ot.close()


def test_watched_key_that_expires(pair) -> None:  # type: ignore[no-untyped-def]
    pair.check_all(("SET", "e", "1", "PX", "50"), ("WATCH", "e"))
    time.sleep(0.2)
    pair.check_all(("MULTI",), ("SET", "e", "2"), ("EXEC",), ("GET", "e"))
