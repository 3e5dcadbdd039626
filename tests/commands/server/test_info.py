"""INFO: Valkey's sections and field names, with our values."""

from __future__ import annotations


def _sections(text: bytes) -> list[bytes]:
    return [line for line in text.split(b"\r\n") if line.startswith(b"#")]


def _fields(text: bytes) -> dict[bytes, bytes]:
    out = {}
    for line in text.split(b"\r\n"):
        if line and not line.startswith(b"#") and b":" in line:
            k, _, v = line.partition(b":")
            out[k] = v
    return out


def _body(reply: bytes) -> bytes:
    _, _, rest = reply.partition(b"\r\n")
    if reply.startswith(b"="):
        rest = rest[4:]  # "txt:"
    return rest


def test_default_and_named_sections_match_valkey(pair23) -> None:  # type: ignore[no-untyped-def]
    for args in [(), ("default",), ("server",), ("keyspace", "clients"), ("tls",), ("nosuchsection",)]:
        v, t = pair23.both("INFO", *args)
        assert v[:1] == t[:1]  # bulk string in RESP2, verbatim string in RESP3
        assert _sections(_body(t)) == _sections(_body(v)), args


def test_fields_clients_parse(pair) -> None:  # type: ignore[no-untyped-def]
    pair.check("SET", "a", "1")
    pair.check("HSET", "h", "f", "v")
    v, t = (_fields(_body(x)) for x in pair.both("INFO"))
    for field in (b"redis_version", b"server_name", b"valkey_version", b"server_mode", b"role", b"db0"):
        assert t[field] == v[field], field
    for field in (b"run_id", b"tcp_port", b"process_id", b"connected_clients", b"used_memory", b"uptime_in_seconds"):
        assert field in t
    assert len(t[b"run_id"]) == 40 and int(t[b"run_id"], 16) >= 0
    assert int(t[b"tcp_port"]) == pair.t.port


def test_commandstats_and_errorstats_count(pair) -> None:  # type: ignore[no-untyped-def]
    pair.check("CONFIG", "RESETSTAT")
    pair.check("GET", "x")
    pair.check("GET", "x")
    pair.check("NOSUCH")
    v, t = (_fields(_body(x)) for x in pair.both("INFO", "commandstats", "errorstats"))
    assert t[b"cmdstat_get"].split(b",usec=")[0] == v[b"cmdstat_get"].split(b",usec=")[0] == b"calls=2"
    assert t[b"errorstat_ERR"] == v[b"errorstat_ERR"] == b"count=1"


def test_all_sections_in_valkeys_order(pair) -> None:  # type: ignore[no-untyped-def]
    v, t = pair.both("INFO", "all")
    assert _sections(_body(t)) == _sections(_body(v))


def _stats(port: int, section: str = "everything") -> dict[bytes, bytes]:
    from helpers.resp_wire import Wire

    w = Wire(port)
    try:
        return _fields(_body(w.call("INFO", section)))
    finally:
        w.close()


def test_event_loop_and_instantaneous_metrics_move_as_valkeys() -> None:
    """Cycles and their durations grow with each cron tick and request;
    the 100 ms samples give ops, bytes and cycles per second under load;
    the network totals stay cumulative when a client leaves; CONFIG
    RESETSTAT starts them all again. Both servers, the same checks."""
    import time

    from helpers.resp_wire import Wire
    from helpers.servers import own_pair

    with own_pair() as pair:
        for p in pair:
            a = _stats(p.port)
            time.sleep(0.25)
            b = _stats(p.port)
            assert 0 < int(a[b"eventloop_cycles"]) < int(b[b"eventloop_cycles"]), p.argv[0]
            assert int(a[b"eventloop_duration_sum"]) < int(b[b"eventloop_duration_sum"])
            d = _stats(p.port, "debug")
            assert int(d[b"eventloop_duration_cron_sum"]) > 0 and int(d[b"eventloop_duration_max"]) > 0
            assert int(d[b"eventloop_cmd_per_cycle_max"]) > 0
            w = Wire(p.port)
            w.call("CONFIG", "RESETSTAT")
            deadline = time.monotonic() + 1.0
            while time.monotonic() < deadline:
                w.sock.sendall(encode_pings(50))
                for _ in range(50):
                    w.read_reply()
            s = _stats(p.port)
            for field in (b"instantaneous_ops_per_sec", b"instantaneous_eventloop_cycles_per_sec",
                          b"instantaneous_eventloop_duration_usec"):
                assert int(s[field]) > 0, (field, p.argv[0])
            assert float(s[b"instantaneous_input_kbps"]) > 0 and float(s[b"instantaneous_output_kbps"]) > 0
            before = int(s[b"total_net_input_bytes"])
            w.close()
            time.sleep(0.1)
            assert int(_stats(p.port)[b"total_net_input_bytes"]) > before  # the gone client's bytes stay
            w = Wire(p.port)
            w.call("CONFIG", "RESETSTAT")
            after = _stats(p.port)
            assert int(after[b"total_net_input_bytes"]) < 200 and int(after[b"eventloop_cycles"]) < 10
            w.close()


def encode_pings(n: int) -> bytes:
    return b"*1\r\n$4\r\nPING\r\n" * n


def test_script_error_codes_overflow_as_valkeys() -> None:
    """Past 128 codes, a script's own error codes count together as
    ERRORSTATS_OVERFLOW; the server's codes (ERR here) and codes already
    tracked go on counting apart."""
    from helpers.resp_wire import Wire
    from helpers.servers import own_pair

    seen = []
    with own_pair() as pair:
        for p in pair:
            r = Wire(p.port)
            r.call("CONFIG", "RESETSTAT")
            for j in range(1, 140):
                r.call("EVAL", "return server.error_reply(string.format('%s my error message', ARGV[1]))", "0", j)
            r.call("SET", "a", "b", "c", "d")
            r.call("EVAL", "return server.error_reply('1 again')", "0")
            r.call("EVAL", "return {err = 'My error message'}", "0")
            body = "server.register_function('f', function() return server.call('get', 'x', 'x') end)"
            r.call("FUNCTION", "LOAD", "REPLACE", "#!lua name=mylib\n" + body)
            r.call("FCALL", "f", "0")
            seen.append(_body(r.call("INFO", "errorstats")))
            r.close()
    assert seen[0] == seen[1]
    fields = _fields(seen[1])
    assert (fields[b"errorstat_ERRORSTATS_OVERFLOW"], fields[b"errorstat_ERR"], fields[b"errorstat_1"]) == (
        b"count=12", b"count=2", b"count=2")
