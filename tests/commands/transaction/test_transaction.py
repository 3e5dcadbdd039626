"""MULTI/EXEC/WATCH against Valkey, byte for byte."""

from __future__ import annotations

import time

from helpers.resp_wire import Wire


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


def test_optimistic_retry_with_two_clients(pair23) -> None:  # type: ignore[no-untyped-def]
    """A reads a watched counter, B changes it, A's EXEC answers the null
    reply; A's retry, with nobody interfering, goes through."""
    ov, ot = _other(pair23)
    pair23.check("SET", "counter", "10")
    pair23.check_all(("WATCH", "counter"), ("GET", "counter"))
    assert ov.call("INCRBY", "counter", "5") == ot.call("INCRBY", "counter", "5") == b":15\r\n"
    aborted = pair23.check_all(("MULTI",), ("SET", "counter", "11"), ("EXEC",))[-1]
    assert aborted in (b"*-1\r\n", b"_\r\n")
    pair23.check_all(("WATCH", "counter"), ("GET", "counter"), ("MULTI",), ("SET", "counter", "16"), ("EXEC",),
                     ("GET", "counter"))
    ov.close()
    ot.close()


def test_redis_py_transaction_helper_retries(trafikey_server, valkey_server) -> None:  # type: ignore[no-untyped-def]
    """redis-py's transaction(): WATCH, read, MULTI, write, EXEC, and on
    WatchError run the function again. Another client changes the key
    during the first attempt only, so the helper needs exactly two."""
    import redis

    def scenario(port: int) -> tuple[int, bytes | None, list[bytes | None]]:
        r = redis.Redis(port=port)
        other = redis.Redis(port=port)
        r.set("balance", 100)
        attempts = 0

        def withdraw(pipe: redis.client.Pipeline) -> None:
            nonlocal attempts
            attempts += 1
            balance = int(pipe.get("balance"))  # type: ignore[arg-type]
            if attempts == 1:
                other.decrby("balance", 30)  # lands between the read and EXEC
            pipe.multi()
            pipe.set("balance", balance - 20)
            pipe.get("balance")

        result = r.transaction(withdraw, "balance")
        final = r.get("balance")
        r.close()
        other.close()
        return attempts, final, result

    assert scenario(trafikey_server.port) == scenario(valkey_server.port) == (2, b"50", [True, b"50"])


def test_redis_py_pipeline_watch_error(trafikey_server, valkey_server) -> None:  # type: ignore[no-untyped-def]
    """pipeline(transaction=True) with WATCH: a change by another client
    between the read and execute() raises WatchError and writes nothing."""
    import redis

    def scenario(port: int) -> tuple[str, bytes | None]:
        r = redis.Redis(port=port)
        other = redis.Redis(port=port)
        r.set("stock", 3)
        with r.pipeline(transaction=True) as pipe:
            pipe.watch("stock")
            left = int(pipe.get("stock"))  # type: ignore[arg-type]
            other.set("stock", 0)
            pipe.multi()
            pipe.set("stock", left - 1)
            try:
                pipe.execute()
                outcome = "committed"
            except redis.WatchError as e:
                outcome = f"WatchError: {e}"
        final = r.get("stock")
        r.close()
        other.close()
        return outcome, final

    assert scenario(trafikey_server.port) == scenario(valkey_server.port)
    assert scenario(trafikey_server.port)[0].startswith("WatchError")


def test_flush_and_swapdb_touch_only_stored_keys(pair) -> None:  # type: ignore[no-untyped-def]
    """FLUSHALL and SWAPDB abort a watcher only when a watched key is stored
    in a database they empty or swap, on either side of the swap."""
    ov, ot = _other(pair)
    in_db1 = [("SELECT", "1"), ("SET", "nokey", "1"), ("SELECT", "0")]
    for setup, change in (
        ([], ("FLUSHALL",)), ([], ("SWAPDB", "0", "1")), ([("SET", "nokey", "1")], ("FLUSHALL",)),
        ([("SET", "nokey", "1")], ("SWAPDB", "0", "1")), ([("SET", "other", "1")], ("SWAPDB", "0", "1")),
        (in_db1, ("SWAPDB", "0", "1")), (in_db1, ("FLUSHDB",)),
    ):
        pair.check("FLUSHALL")
        for cmd in setup:
            assert ov.call(*cmd) == ot.call(*cmd)
        pair.check("WATCH", "nokey")
        assert ov.call(*change) == ot.call(*change)
        pair.check_all(("MULTI",), ("PING",), ("EXEC",))
    ov.close()
    ot.close()


def test_watching_a_key_that_already_expired(pair) -> None:  # type: ignore[no-untyped-def]
    """A key watched after its time ran out (still stored, not yet removed)
    counts as absent: its removal is no change, but a new value is."""
    ov, ot = _other(pair)
    for changes in ([], [("GET", "gone")], [("SET", "gone", "2")], [("GET", "gone"), ("SET", "gone", "3")]):
        pair.check("SET", "gone", "1", "PX", "20")
        time.sleep(0.06)
        pair.check("WATCH", "gone")
        for cmd in changes:
            assert ov.call(*cmd) == ot.call(*cmd)
        pair.check_all(("MULTI",), ("PING",), ("EXEC",))
    ov.close()
    ot.close()


def test_exec_with_arguments_ends_the_transaction(pair23) -> None:  # type: ignore[no-untyped-def]
    """EXEC refused for its arity is execCommandAbort: EXECABORT, and MULTI
    is over (outside MULTI too); DISCARD and MULTI keep the plain error."""
    p = pair23
    p.check_all(("CONFIG", "RESETSTAT"), ("EXEC", "x"), ("EXEC",),
                ("MULTI",), ("SET", "a", "1"), ("EXEC", "x", "y"), ("EXEC",), ("GET", "a"),
                ("MULTI",), ("DISCARD", "x"), ("MULTI", "x"), ("DISCARD",), ("EXEC",))
    p.check("INFO", "errorstats")
