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
