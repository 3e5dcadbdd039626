"""TRAFIKEY.FAULT itself: off by default, its refusals, LIST, DEL, RESET,
HELP, the INFO section, the MONITOR line, and which requests a rule matches.

Refusals follow Valkey's texts for the same mistakes (syntax error, an
integer or float that does not parse, a count that must be positive, an
unknown command name, an immutable option); each is checked with its exact
text and with the rule list unchanged.
"""

from __future__ import annotations

import redis
from helpers.resp_wire import Wire
from helpers.servers import Proc, start_trafikey

DISABLED = b"-ERR TRAFIKEY.FAULT is disabled: start the server with --enable-fault-command yes\r\n"
SYNTAX = b"-ERR syntax error\r\n"
NOT_INT = b"-ERR value is not an integer or out of range\r\n"
NOT_FLOAT = b"-ERR value is not a valid float\r\n"
POSITIVE = b"-ERR value is out of range, must be positive\r\n"


def rules(r: redis.Redis) -> list[dict[bytes, object]]:
    """TRAFIKEY.FAULT LIST as dicts, from either protocol's shape."""
    out = []
    for entry in r.execute_command("TRAFIKEY.FAULT", "LIST"):
        out.append(entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2], strict=True)))
    return out


def info_faults(r: redis.Redis) -> dict[str, int]:
    return {k: int(v) for k, v in r.info("faults").items()}


def test_disabled_by_default(trafikey_server: Proc, valkey_server: Proc) -> None:
    """Every subcommand names the switch; the option shows in CONFIG GET
    and cannot be set at run time (Valkey's immutable-option refusal, the
    name substituted); INFO has no faults section then."""
    v = Wire(valkey_server.port)
    try:
        immutable = v.call("CONFIG", "SET", "daemonize", "yes")
    finally:
        v.close()
    w = Wire(trafikey_server.port)
    try:
        for args in (("ADD", "DROP"), ("LIST",), ("DEL", 1), ("RESET",), ("HELP",)):
            assert w.call("TRAFIKEY.FAULT", *args) == DISABLED, args
        assert w.call("CONFIG", "GET", "enable-fault-command") == (
            b"*2\r\n$20\r\nenable-fault-command\r\n$2\r\nno\r\n")
        assert w.call("CONFIG", "SET", "enable-fault-command", "yes") == immutable.replace(
            b"daemonize", b"enable-fault-command")
        assert b"# Faults" not in w.call("INFO", "everything")
        assert w.call("INFO", "faults") == b"$0\r\n\r\n"
        assert w.call("TRAFIKEY.FAULT", "ADD") == (
            b"-ERR wrong number of arguments for 'trafikey.fault|add' command\r\n")
    finally:
        w.close()


def test_add_list_del_reset(r: redis.Redis, fault_server: Proc) -> None:
    a = r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "LOADING", "COMMAND", "GET", "TIMES", 3)
    b = r.execute_command("TRAFIKEY.FAULT", "ADD", "delay", 250, "command", "client|list", "key", "user:*",
                          "clientname", "worker", "probability", "0.5")
    c = r.execute_command("TRAFIKEY.FAULT", "ADD", "DROP-AFTER")
    assert (a, b, c) == (a, a + 1, a + 2)
    assert rules(r) == [
        {b"id": a, b"kind": b"ERROR", b"arg": b"LOADING", b"command": b"get", b"key": None, b"clientname": None,
         b"times": 3, b"probability": None, b"fired": 0},
        {b"id": b, b"kind": b"DELAY", b"arg": b"250", b"command": b"client|list", b"key": b"user:*",
         b"clientname": b"worker", b"times": None, b"probability": b"0.5", b"fired": 0},
        {b"id": c, b"kind": b"DROP-AFTER", b"arg": None, b"command": None, b"key": None, b"clientname": None,
         b"times": None, b"probability": None, b"fired": 0},
    ]
    assert r.execute_command("TRAFIKEY.FAULT", "DEL", c, c, 999999) == 1
    assert [x[b"id"] for x in rules(r)] == [a, b]
    assert r.execute_command("TRAFIKEY.FAULT", "RESET") == b"OK"
    assert rules(r) == []
    # Ids are never reused.
    assert r.execute_command("TRAFIKEY.FAULT", "ADD", "DROP", "CLIENTNAME", "nobody") == c + 1


def test_list_shapes_resp2_and_resp3(r: redis.Redis, fault_server: Proc) -> None:
    """RESP2: each rule a flat array of field and value; RESP3: a map, with
    nulls for what the rule leaves out and a double for the probability."""
    rid = r.execute_command("TRAFIKEY.FAULT", "ADD", "CUT", 3, "KEY", "k*", "PROBABILITY", "0.25")
    w = Wire(fault_server.port)
    try:
        assert w.call("TRAFIKEY.FAULT", "LIST") == (
            b"*1\r\n*18\r\n$2\r\nid\r\n:%d\r\n$4\r\nkind\r\n$3\r\nCUT\r\n$3\r\narg\r\n$1\r\n3\r\n"
            b"$7\r\ncommand\r\n$-1\r\n$3\r\nkey\r\n$2\r\nk*\r\n$10\r\nclientname\r\n$-1\r\n"
            b"$5\r\ntimes\r\n$-1\r\n$11\r\nprobability\r\n$4\r\n0.25\r\n$5\r\nfired\r\n:0\r\n" % rid)
        w.call("HELLO", 3)
        assert w.call("TRAFIKEY.FAULT", "LIST") == (
            b"*1\r\n%9\r\n$2\r\nid\r\n:" + b"%d" % rid + b"\r\n$4\r\nkind\r\n$3\r\nCUT\r\n$3\r\narg\r\n$1\r\n3\r\n"
            b"$7\r\ncommand\r\n_\r\n$3\r\nkey\r\n$2\r\nk*\r\n$10\r\nclientname\r\n_\r\n"
            b"$5\r\ntimes\r\n_\r\n$11\r\nprobability\r\n,0.25\r\n$5\r\nfired\r\n:0\r\n")
    finally:
        w.close()


def test_refusals_leave_the_rules_unchanged(r: redis.Redis, fault_server: Proc) -> None:
    kept = r.execute_command("TRAFIKEY.FAULT", "ADD", "DROP", "CLIENTNAME", "nobody")
    before = rules(r)
    w = Wire(fault_server.port)
    try:
        for args, want in [
            (("ADD", "EXPLODE"), SYNTAX),
            (("ADD", "ERROR"), SYNTAX),
            (("ADD", "ERROR", ""), SYNTAX),
            (("ADD", "ERROR", "-"), SYNTAX),
            (("ADD", "MOVED"), SYNTAX),
            (("ADD", "MOVED", "nowhere"), b"-ERR Invalid address 'nowhere': expected <host>:<port>\r\n"),
            (("ADD", "ASK", "host:99999"), b"-ERR Invalid address 'host:99999': expected <host>:<port>\r\n"),
            (("ADD", "CUT", "x"), NOT_INT),
            (("ADD", "CUT", -1), POSITIVE),
            (("ADD", "DELAY", "1.5"), NOT_INT),
            (("ADD", "DELAY", -1), b"-ERR ms is out of range\r\n"),
            (("ADD", "DROP", "TIMES"), SYNTAX),
            (("ADD", "DROP", "TIMES", 0), POSITIVE),
            (("ADD", "DROP", "TIMES", -2), POSITIVE),
            (("ADD", "DROP", "TIMES", "many"), NOT_INT),
            (("ADD", "DROP", "PROBABILITY", "half"), NOT_FLOAT),
            (("ADD", "DROP", "PROBABILITY", "1.5"), b"-ERR probability must be between 0 and 1\r\n"),
            (("ADD", "DROP", "PROBABILITY", "-0.1"), b"-ERR probability must be between 0 and 1\r\n"),
            (("ADD", "DROP", "TIMES", 1, "PROBABILITY", "0.5"), SYNTAX),
            (("ADD", "DROP", "PROBABILITY", "0.5", "TIMES", 1), SYNTAX),
            (("ADD", "DROP", "COMMAND", "nosuch"), b"-ERR Invalid command specified\r\n"),
            (("ADD", "DROP", "COMMAND", "client|nosuch"), b"-ERR Invalid command specified\r\n"),
            (("ADD", "DROP", "KEY"), SYNTAX),
            (("ADD", "DROP", "CLIENTNAME"), SYNTAX),
            (("ADD", "DROP", "EXTRA"), SYNTAX),
            (("ADD", "DROP-AFTER", "5"), SYNTAX),
            (("DEL", "one"), NOT_INT),
            (("DEL", kept, "two"), NOT_INT),
            (("LIST", "x"), b"-ERR wrong number of arguments for 'trafikey.fault|list' command\r\n"),
            (("RESET", "x"), b"-ERR wrong number of arguments for 'trafikey.fault|reset' command\r\n"),
            (("DEL",), b"-ERR wrong number of arguments for 'trafikey.fault|del' command\r\n"),
            (("NOPE",), b"-ERR unknown subcommand 'NOPE'. Try TRAFIKEY.FAULT HELP.\r\n"),
        ]:
            assert w.call("TRAFIKEY.FAULT", *args) == want, args
    finally:
        w.close()
    assert rules(r) == before


def test_help(r: redis.Redis) -> None:
    lines = r.execute_command("TRAFIKEY.FAULT", "HELP")
    assert lines[0] == b"TRAFIKEY.FAULT <subcommand> [<arg> ...]. Subcommands are:"
    heads = [ln.split(b" ")[0] for ln in lines[1:] if not ln.startswith(b" ")]
    assert heads == [b"ADD", b"LIST", b"DEL", b"RESET", b"HELP"]
    assert lines[-2:] == [b"HELP", b"    Print this help."]


def test_info_section(r: redis.Redis, fault_server: Proc) -> None:
    """A ``# Faults`` section after Valkey's own, in the default INFO too:
    the rules now, every firing, and the firings per kind."""
    w = Wire(fault_server.port)
    try:
        text = w.call("INFO").decode()
    finally:
        w.close()
    assert "\r\n\r\n# Faults\r\n" in text
    assert text.index("# Keyspace") < text.index("# Faults")
    start = info_faults(r)
    assert start["fault_rules"] == 0
    r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "LOADING", "CLIENTNAME", "victim", "TIMES", 2)
    r.execute_command("TRAFIKEY.FAULT", "ADD", "CUT", 1, "CLIENTNAME", "victim")
    assert info_faults(r)["fault_rules"] == 2
    w = Wire(fault_server.port)
    try:
        w.call("CLIENT", "SETNAME", "victim")
        assert w.call("PING").startswith(b"-LOADING ")
        assert w.call("PING").startswith(b"-LOADING ")
        w.send_raw(b"PING\r\n")
        assert w.read_until_closed() == b"+"
    finally:
        w.close()
    now = info_faults(r)
    assert now["fault_rules"] == 1  # the TIMES 2 rule is spent
    assert now["faults_fired"] - start["faults_fired"] == 3
    assert now["faults_fired_error"] - start["faults_fired_error"] == 2
    assert now["faults_fired_cut"] - start["faults_fired_cut"] == 1
    assert now["faults_fired_drop"] == start["faults_fired_drop"]
    # The refusals count as errors, under their own code, as Valkey counts them.
    assert r.info("errorstats")["errorstat_LOADING"]["count"] >= 2
    # CONFIG RESETSTAT zeroes the firings; the rules stay.
    r.config_resetstat()
    assert info_faults(r) == {"fault_rules": 1, "faults_fired": 0, "faults_fired_error": 0, "faults_fired_moved": 0,
                              "faults_fired_ask": 0, "faults_fired_drop": 0, "faults_fired_drop_after": 0,
                              "faults_fired_cut": 0, "faults_fired_delay": 0}


def test_monitor_sees_the_request_then_the_rule(r: redis.Redis, fault_server: Proc) -> None:
    rid = r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "TRYAGAIN", "COMMAND", "GET", "CLIENTNAME", "victim")
    mon = Wire(fault_server.port)
    w = Wire(fault_server.port)
    try:
        assert mon.call("MONITOR") == b"+OK\r\n"
        w.call("CLIENT", "SETNAME", "victim")
        assert w.call("GET", "k") == b"-TRYAGAIN Multiple keys request during rehashing of slot\r\n"
        assert w.call("SET", "k", "v") == b"+OK\r\n"
        cut = r.execute_command("TRAFIKEY.FAULT", "ADD", "CUT", 2, "COMMAND", "INCR", "CLIENTNAME", "victim")
        w.send_raw(b"INCR n\r\n")
        assert w.read_until_closed() == b":1"
        lines = [mon.read_reply() for _ in range(6)]
    finally:
        w.close()
        mon.close()
    assert lines[0].endswith(b'"CLIENT" "SETNAME" "victim"\r\n')
    assert lines[1].endswith(b'"GET" "k"\r\n')
    assert lines[2].endswith(b'"TRAFIKEY.FAULT" "FIRED" "%d" "ERROR" "TRYAGAIN"\r\n' % rid)
    assert lines[3].endswith(b'"SET" "k" "v"\r\n')
    assert lines[4].endswith(b'"INCR" "n"\r\n')  # it ran, then the rule cut its reply
    assert lines[5].endswith(b'"TRAFIKEY.FAULT" "FIRED" "%d" "CUT" "2"\r\n' % cut)
    assert r.mget("k", "n") == [b"v", b"1"]


def test_matching(r: redis.Redis, fault_server: Proc) -> None:
    """COMMAND names a command (all its subcommands) or one subcommand;
    KEY any key of the request; CLIENTNAME the client; the first rule added
    that matches fires; TRAFIKEY.FAULT itself never matches."""
    w = Wire(fault_server.port)
    try:
        w.call("CLIENT", "SETNAME", "victim")
        r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "A first", "COMMAND", "mset", "KEY", "user:*")
        r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "B second", "KEY", "user:*", "CLIENTNAME", "victim")
        r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "C client", "COMMAND", "client", "CLIENTNAME",
                          "victim")
        r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "D getname", "COMMAND", "CLIENT|GETNAME")
        r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "E all", "CLIENTNAME", "victim")
        assert w.call("MSET", "a", 1, "user:1", 2) == b"-A first\r\n"
        assert w.call("MSET", "a", 1, "b", 2) == b"-E all\r\n"
        assert w.call("GET", "user:9") == b"-B second\r\n"
        assert w.call("CLIENT", "ID") == b"-C client\r\n"
        assert w.call("TRAFIKEY.FAULT", "LIST").startswith(b"*5\r\n")
        # Another client: only the rules without CLIENTNAME.
        assert r.execute_command("CLIENT", "ID") > 0
        try:
            r.execute_command("CLIENT", "GETNAME")
            raise AssertionError("CLIENT GETNAME not refused")
        except redis.ResponseError as e:
            assert str(e) == "D getname"
        try:
            r.mset({"x": 1, "user:2": 1})
            raise AssertionError("MSET not refused")
        except redis.ResponseError as e:
            assert str(e) == "A first"
        r.execute_command("TRAFIKEY.FAULT", "RESET")
        assert r.keys("*") == []
        assert w.call("MSET", "a", 1, "user:1", 2) == b"+OK\r\n"
    finally:
        w.close()


def test_times_and_probability(r: redis.Redis, fault_server: Proc) -> None:
    """TIMES n fires on the next n matches and the rule goes; PROBABILITY 0
    never fires, 1 always (the draws between are the seeded generator's)."""
    w = Wire(fault_server.port)
    try:
        w.call("CLIENT", "SETNAME", "victim")
        never = r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "NEVER x", "CLIENTNAME", "victim",
                                  "PROBABILITY", 0)
        rid = r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "TWICE x", "CLIENTNAME", "victim", "TIMES", 2)
        assert [x[b"times"] for x in rules(r)] == [None, 2]
        assert w.call("INCR", "n") == b"-TWICE x\r\n"
        assert [x[b"times"] for x in rules(r)] == [None, 1]
        assert w.call("INCR", "n") == b"-TWICE x\r\n"
        assert [x[b"id"] for x in rules(r)] == [never]
        assert w.call("INCR", "n") == b":1\r\n"
        assert r.execute_command("TRAFIKEY.FAULT", "DEL", rid) == 0
        r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "ALWAYS x", "CLIENTNAME", "victim", "PROBABILITY", 1)
        assert w.call("INCR", "n") == b"-ALWAYS x\r\n"
        assert rules(r)[0][b"fired"] == 0 and rules(r)[1][b"fired"] == 1
    finally:
        w.close()
    assert r.get("n") == b"1"


def test_a_rule_without_options_matches_every_command(fault_server: Proc) -> None:
    """No COMMAND, KEY or CLIENTNAME: the next request of anyone fires it
    (a raw connection is the only client here, TIMES 1 ends it)."""
    w = Wire(fault_server.port)
    try:
        assert w.call("FLUSHALL") == b"+OK\r\n"
        w.call("TRAFIKEY.FAULT", "ADD", "ERROR", "READONLY", "TIMES", 1)
        assert w.call("SET", "k", "v") == b"-READONLY You can't write against a read only replica.\r\n"
        assert w.call("EXISTS", "k") == b":0\r\n"
        assert w.call("TRAFIKEY.FAULT", "LIST") == b"*0\r\n"
    finally:
        w.close()


def test_the_fast_path_returns_with_the_last_rule(r: redis.Redis, fault_server: Proc) -> None:
    """Rules take every request off the fast path while they exist; once
    the last one goes, plain commands are served again as before (and a
    CLIENT PAUSE that ends meanwhile does not bring the fast path back
    under a rule)."""
    w = Wire(fault_server.port)
    try:
        w.call("CLIENT", "SETNAME", "victim")
        rid = r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "ERR held", "COMMAND", "get")
        assert r.execute_command("CLIENT", "PAUSE", 1, "WRITE") == b"OK"
        assert r.execute_command("CLIENT", "UNPAUSE") == b"OK"
        assert w.call("GET", "k") == b"-ERR held\r\n"
        assert w.call("get", "k") == b"-ERR held\r\n"
        r.execute_command("TRAFIKEY.FAULT", "DEL", rid)
        assert w.call("GET", "k") == b"$-1\r\n"
    finally:
        w.close()


def test_config_and_a_server_of_its_own() -> None:
    """``--enable-fault-command yes`` shows in CONFIG GET."""
    p = start_trafikey("--enable-fault-command", "yes")
    try:
        w = Wire(p.port)
        try:
            assert w.call("CONFIG", "GET", "enable-fault-command") == (
                b"*2\r\n$20\r\nenable-fault-command\r\n$3\r\nyes\r\n")
            assert w.call("TRAFIKEY.FAULT", "LIST") == b"*0\r\n"
        finally:
            w.close()
    finally:
        p.stop()


def test_probability_fires_on_some_matches(r: redis.Redis, fault_server: Proc) -> None:
    """PROBABILITY 0.5 over 400 matches: some fire and some do not (bounds
    loose enough that a fair draw misses them with odds below 1e-20; the
    draws themselves are the seeded generator's, not checked here)."""
    rid = r.execute_command("TRAFIKEY.FAULT", "ADD", "ERROR", "ERR coin", "COMMAND", "ping", "CLIENTNAME", "victim",
                            "PROBABILITY", "0.5")
    w = Wire(fault_server.port)
    try:
        w.call("CLIENT", "SETNAME", "victim")
        replies = w.pipeline([("PING",)] * 400)
    finally:
        w.close()
    errors = replies.count(b"-ERR coin\r\n")
    assert errors + replies.count(b"+PONG\r\n") == 400
    assert 100 < errors < 300
    assert rules(r)[0][b"fired"] == errors and rules(r)[0][b"id"] == rid
