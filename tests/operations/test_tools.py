"""Debian's redis-cli and redis-benchmark against trafikey-server."""

from __future__ import annotations

import subprocess


def cli(port: int, *args: str, stdin: str | None = None) -> str:
    return subprocess.run(["redis-cli", "-p", str(port), *args], input=stdin, capture_output=True,
                          text=True, timeout=30, check=True).stdout


def test_redis_cli_output_matches_valkey(trafikey_server, valkey_server) -> None:  # type: ignore[no-untyped-def]
    script = "FLUSHALL\nSET a 1\nINCR a\nHSET h f v\nHGETALL h\nZADD z 1.5 m 2 n\nZRANGE z 0 -1 WITHSCORES\n" \
             "GET nosuch\nHGET a f\nECHO \"quoted words\"\n"
    for flags in ([], ["--no-raw"], ["--raw"], ["-3"]):
        assert cli(trafikey_server.port, *flags, stdin=script) == cli(valkey_server.port, *flags, stdin=script)
    assert cli(trafikey_server.port, "PING") == "PONG\n"


def test_redis_benchmark_completes(trafikey_server) -> None:  # type: ignore[no-untyped-def]
    for pipeline in ("1", "16"):
        out = subprocess.run(["redis-benchmark", "-p", str(trafikey_server.port), "-t", "ping,set,get,incr,hset,zadd",
                              "-n", "2000", "-c", "10", "-P", pipeline, "-q", "--csv"],
                             capture_output=True, text=True, timeout=120, check=True)
        rows = [line for line in out.stdout.splitlines() if line and not line.startswith('"test"')]
        names = {row.split(",")[0].strip('"') for row in rows}
        assert {"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "HSET", "ZADD"} <= names, out.stdout
        assert "error" not in out.stderr.lower(), out.stderr


def test_redis_cli_ldb_matches_valkey(trafikey_server, valkey_server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """redis-cli --ldb (a forked session, changes rolled back) and
    --ldb-sync-mode (changes kept) print the same session from both."""
    script = tmp_path / "debugged.lua"
    script.write_text("local a = 1\nredis.call('set', KEYS[1], a)\nreturn redis.call('incr', KEYS[1])\n")
    steps = "s\np\ns\nr get ldb:key\nhelp\nc\n"
    for mode in ("--ldb", "--ldb-sync-mode"):
        outs = [cli(p, mode, "--eval", str(script), "ldb:key", stdin=steps)
                for p in (trafikey_server.port, valkey_server.port)]
        assert outs[0] == outs[1]
        assert ("rolled back" in outs[0]) == (mode == "--ldb")
    assert cli(trafikey_server.port, "GET", "ldb:key") == cli(valkey_server.port, "GET", "ldb:key") == "2\n"
    cli(trafikey_server.port, "DEL", "ldb:key")
    cli(valkey_server.port, "DEL", "ldb:key")
