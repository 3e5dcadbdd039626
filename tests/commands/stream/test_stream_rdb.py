"""Streams through the RDB file, DUMP payloads and the AOF rewrite, against
Valkey 9.1.2: a file Valkey saves (several nodes, deleted entries, a node
holding only deleted entries, groups with consumers and pending entries, an
empty stream) loads here, and the file this server then saves loads into
Valkey with the same replies and the same DUMP bytes: the nodes' listpacks,
the counters and the groups go through unchanged. The older forms
(STREAM_LISTPACKS and _2, built here from Valkey's own payload) load here
as Valkey loads them. The AOF rewrite emits Valkey's commands."""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from helpers.aof_util import aof_server
from helpers.servers import start_trafikey, start_valkey

from trafikey_server.protocol.rdbformat import RdbError, Reader, encode_len, encode_string
from trafikey_server.util.crc64 import crc64
from trafikey_server.values.stream import STREAM, T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2, Stream, fmt_id

KEYS = (b"s", b"wide", b"tomb", b"empty", b"counted")
_U64 = (1 << 64) - 1


def build(r: redis.Redis) -> None:
    """Streams covering what the RDB form carries."""
    r.config_set("stream-node-max-entries", 5)
    for i in range(1, 41):
        fields: dict[str, Any] = {"f": "v%d" % i, "n": i * 7}
        if i % 9 == 0:
            fields["extra"] = "-%d" % (i * 1000003)
        r.xadd("s", fields, id="%d-%d" % (1000 + i // 3, i))
    # 1005-16 ... 1006-20 fill one node: deleting them all drops it.
    r.xdel("s", "1001-3", "1002-7", "1004-13", "1005-16", "1005-17", "1006-18", "1006-19", "1006-20")
    r.xtrim("s", maxlen=36, approximate=False)
    r.xgroup_create("s", "g1", id="0")
    r.xreadgroup("g1", "alice", {"s": ">"}, count=7)
    r.xreadgroup("g1", "bob", {"s": ">"}, count=3)
    r.xclaim("s", "g1", "carol", 0, ["1003-9"], retrycount=5, force=True)
    r.xack("s", "g1", "1002-6")
    r.xgroup_create("s", "g2", id="1006-20")  # mid-stream: entries-read unknown
    r.xgroup_createconsumer("s", "g2", "idle")
    r.xgroup_create("s", "g3", id="$")
    r.xgroup_create("s", "7", id="0")  # a name that is an integer
    r.xreadgroup("7", "42", {"s": ">"}, count=2)
    r.config_set("stream-node-max-entries", 100)
    r.config_set("stream-node-max-bytes", 300)
    for i in range(30):
        r.xadd("wide", {"k%d" % (i % 4): "x" * (i * 9), "bin": b"\x00\xff" * i, "int": -i * 4099}, id="5-%d" % (i + 1))
    r.xadd("wide", {"big": "B" * 5000}, id="6-0")
    r.xadd("wide", {"big": "b" * 70}, id="18446744073709551615-0")
    r.config_set("stream-node-max-bytes", 4096)
    r.config_set("stream-node-max-entries", 3)
    for i in range(1, 8):
        r.xadd("tomb", {"a": i}, id="1-%d" % i)
    r.xdel("tomb", "1-3")
    r.xtrim("tomb", minid="1-3", approximate=False)  # the first node keeps only deleted entries
    r.config_set("stream-node-max-entries", 100)
    r.xadd("empty", {"x": "y"}, id="3-3")
    r.xdel("empty", "3-3")
    r.xgroup_create("empty", "g", id="$")
    for _ in range(250):
        r.xadd("counted", {"f": "same"})
    r.xtrim("counted", maxlen=120, approximate=True)


def state(port: int, dump: bool = True) -> dict[bytes, Any]:
    """Every reply that shows a stream's contents and bookkeeping, the
    time-dependent ones (idle times) left out; with ``dump``, the DUMP
    payload too."""
    r = redis.Redis(port=port)
    out: dict[bytes, Any] = {}
    try:
        for k in KEYS:
            groups = r.xinfo_groups(k)
            pending = {}
            for g in groups:
                name = g["name"]
                ext = r.xpending_range(k, name, "-", "+", 1000)
                pending[name] = (r.xpending(k, name),
                                 [(e["message_id"], e["consumer"], e["times_delivered"]) for e in ext])
            out[k] = {
                "type": r.type(k),
                "xlen": r.xlen(k),
                "range": r.xrange(k),
                "revrange": r.xrevrange(k, count=5),
                "full": r.execute_command("XINFO", "STREAM", k, "FULL", "COUNT", "0"),
                "info": r.execute_command("XINFO", "STREAM", k),
                "groups": groups,
                "pending": pending,
            }
            if dump:
                out[k]["dump"] = r.dump(k)
    finally:
        r.close()
    return out


@pytest.fixture(scope="module")
def valkey_file() -> Iterator[tuple[Path, dict[bytes, Any]]]:
    """A directory holding Valkey's dump.rdb of the streams, and the
    replies Valkey gives once it has loaded that file."""
    d = Path(tempfile.mkdtemp(prefix="rdb-streams-"))
    v = start_valkey("--dir", str(d))
    try:
        r = redis.Redis(port=v.port)
        build(r)
        r.save()
        r.close()
    finally:
        v.stop()
    v = start_valkey("--dir", str(d))
    try:
        theirs = state(v.port)
    finally:
        v.stop()
    yield d, theirs
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def d(valkey_file: tuple[Path, dict[bytes, Any]]) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rdb-streams-"))
    shutil.copy(valkey_file[0] / "dump.rdb", path / "dump.rdb")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_fixture_covers_the_edges(valkey_file: tuple[Path, dict[bytes, Any]]) -> None:
    theirs = valkey_file[1]
    assert theirs[b"s"]["info"][b"radix-tree-keys"] > 3
    assert theirs[b"s"]["info"][b"max-deleted-entry-id"] != b"0-0"
    assert theirs[b"empty"]["xlen"] == 0
    assert theirs[b"tomb"]["info"][b"radix-tree-keys"] == 3  # one node of tombstones only
    assert any(g["entries-read"] is None for g in theirs[b"s"]["groups"])
    assert theirs[b"counted"]["xlen"] > 120  # ~ left whole nodes


def test_valkey_file_loads_here_and_ours_loads_into_valkey(
        d: Path, valkey_file: tuple[Path, dict[bytes, Any]]) -> None:
    t = start_trafikey("--dir", str(d), "--emq-brand", "none")
    try:
        here = state(t.port, dump=False)
        r = redis.Redis(port=t.port)
        assert sorted(r.keys("*")) == sorted(KEYS)
        assert {r.type(k) for k in KEYS} == {b"stream"}
        assert {r.object("encoding", k) for k in KEYS} == {b"stream"}
        assert r.memory_usage("s") > 0
        # A copy is deep: saving both gives Valkey two equal streams.
        assert r.copy("s", "s-copy")
        (d / "dump.rdb").unlink()
        r.save()
        r.close()
    finally:
        t.stop()
    v = start_valkey("--dir", str(d))
    try:
        ours = state(v.port)
        vr = redis.Redis(port=v.port)
        copy_full = vr.execute_command("XINFO", "STREAM", "s-copy", "FULL", "COUNT", "0")
        vr.close()
    finally:
        v.stop()
    theirs = valkey_file[1]
    for k in KEYS:
        assert here[k] == {x: y for x, y in theirs[k].items() if x != "dump"}, k
        assert ours[k] == theirs[k], k
    assert copy_full == theirs[b"s"]["full"]


@pytest.mark.parametrize("limits", [("4096", "100"), ("100", "0"), ("0", "2")])
def test_node_limits_do_not_change_a_loaded_file(d: Path, valkey_file: tuple[Path, dict[bytes, Any]],
                                                  limits: tuple[str, str]) -> None:
    """A file's nodes are kept as they are, whatever the node limits of
    the server loading it (rdbLoadObject inserts each listpack whole)."""
    opts = ("--stream-node-max-bytes", limits[0], "--stream-node-max-entries", limits[1])
    t = start_trafikey("--dir", str(d), "--emq-brand", "none", "--enable-debug-command", "yes", *opts)
    try:
        r = redis.Redis(port=t.port)
        r.execute_command("DEBUG", "RELOAD")
        r.save()
        r.close()
    finally:
        t.stop()
    v = start_valkey("--dir", str(d), *opts)
    try:
        ours = state(v.port)
    finally:
        v.stop()
    assert ours == valkey_file[1]


def _payload(t: int, body: bytes, footer: bytes) -> bytes:
    head = bytes((t,)) + body + footer
    return head + crc64(head).to_bytes(8, "little")


def _old_form(s: Stream, t: int) -> bytes:
    """A stream in the older RDB forms: STREAM_LISTPACKS_2 lacks the
    consumers' active times; STREAM_LISTPACKS also the first and deleted
    IDs, the entries-added and entries-read counters."""
    def ids(sid: int) -> bytes:
        return encode_len(sid >> 64) + encode_len(sid & _U64)

    nodes = s.nodes()
    parts = [encode_len(len(nodes))]
    for n in nodes:
        parts += [encode_string(n.key.to_bytes(16, "big")), encode_string(n.blob())]
    parts += [encode_len(len(s)), ids(s.last_id)]
    if t == T_STREAM_LISTPACKS_2:
        parts += [ids(s.first_id), ids(s.max_deleted_id), encode_len(s.entries_added)]
    parts.append(encode_len(len(s.groups)))
    for name in sorted(s.groups):
        g = s.groups[name]
        parts += [encode_string(name), ids(g.last_id)]
        if t == T_STREAM_LISTPACKS_2:
            parts.append(encode_len(g.entries_read & _U64))
        parts.append(encode_len(len(g.pel)))
        for sid in g.pending():
            n = g.pel[sid]
            parts.append(sid.to_bytes(16, "big") + n.delivery_time.to_bytes(8, "little") + encode_len(n.delivery_count))
        parts.append(encode_len(len(g.consumers)))
        for cname in g.consumer_names():
            c = g.consumers[cname]
            parts += [encode_string(cname), c.seen_time.to_bytes(8, "little"), encode_len(len(c.pel))]
            parts += [sid.to_bytes(16, "big") for sid in c.pending()]
    return b"".join(parts)


@pytest.mark.parametrize("t", [T_STREAM_LISTPACKS, T_STREAM_LISTPACKS_2])
def test_older_forms_load_as_valkey_loads_them(t: int) -> None:
    """Valkey restores the older form; this server loads it and writes its
    own form; Valkey restores that too: both streams answer alike."""
    v = start_valkey()
    try:
        r = redis.Redis(port=v.port)
        build(r)
        for k in (b"s", b"tomb", b"empty", b"counted"):
            dump = r.dump(k)
            footer = dump[-10:-8]
            s = STREAM.rdb_load(Reader(dump[1:-10]), dump[0], k, None, False)
            old = _old_form(s, t)
            r.restore(k + b"-old", 0, _payload(t, old, footer))
            mine = STREAM.rdb_load(Reader(old), t, k, None, False)
            rt, body = STREAM.rdb_save(mine)
            r.restore(k + b"-ours", 0, _payload(rt, body, footer))
            assert r.dump(k + b"-ours") == r.dump(k + b"-old"), k
            full = r.execute_command("XINFO", "STREAM", k + b"-old", "FULL")
            assert r.execute_command("XINFO", "STREAM", k + b"-ours", "FULL") == full
            assert r.xinfo_groups(k + b"-ours") == r.xinfo_groups(k + b"-old")
        r.close()
    finally:
        v.stop()


def test_digest_depends_on_entries_only() -> None:
    v = start_valkey("--enable-debug-command", "yes")
    try:
        r = redis.Redis(port=v.port)
        build(r)
        a = STREAM.rdb_load(Reader(r.dump("s")[1:-10]), r.dump("s")[0], b"s", None, False)
        # Valkey's digest of a stream mixes its entries only: a group does not change it.
        before = r.execute_command("DEBUG", "DIGEST-VALUE", "s")
        r.xgroup_create("s", "later", id="0")
        assert r.execute_command("DEBUG", "DIGEST-VALUE", "s") == before
        b = STREAM.rdb_load(Reader(r.dump("s")[1:-10]), r.dump("s")[0], b"s", None, False)
        assert STREAM.digest(a) == STREAM.digest(b)
        r.xdel("s", fmt_id(next(iter(a.ids()))))
        assert r.execute_command("DEBUG", "DIGEST-VALUE", "s") != before
        c = STREAM.rdb_load(Reader(r.dump("s")[1:-10]), r.dump("s")[0], b"s", None, False)
        assert STREAM.digest(c) != STREAM.digest(a)
        r.close()
    finally:
        v.stop()


def _commands(data: bytes) -> list[list[bytes]]:
    """The commands of a RESP append-only file."""
    out = []
    p = 0
    while p < len(data):
        assert data[p:p + 1] == b"*"
        e = data.index(b"\r\n", p)
        n = int(data[p + 1:e])
        p = e + 2
        argv = []
        for _ in range(n):
            e = data.index(b"\r\n", p)
            ln = int(data[p + 1:e])
            argv.append(data[e + 2:e + 2 + ln])
            p = e + 4 + ln
        out.append(argv)
    return out


def _stream_commands(base: bytes) -> dict[bytes, list[list[bytes]]]:
    by_key: dict[bytes, list[list[bytes]]] = {}
    for argv in _commands(base):
        name = argv[0].upper()
        if name in (b"XADD", b"XSETID", b"XCLAIM"):
            by_key.setdefault(argv[1], []).append(argv)
        elif name == b"XGROUP":
            by_key.setdefault(argv[2], []).append(argv)
    return by_key


def _rewrite_base(port: int, d: Path) -> bytes:
    r = redis.Redis(port=port)
    r.config_set("appendonly", "yes")
    deadline = time.monotonic() + 30
    while True:
        p = r.info("persistence")
        if not (p["aof_rewrite_in_progress"] or p["aof_rewrite_scheduled"]) and list(d.glob("appendonlydir/*.base.*")):
            break
        assert time.monotonic() < deadline, "the rewrite did not finish"
        time.sleep(0.02)
    r.close()
    return next(d.glob("appendonlydir/*.base.*")).read_bytes()


def test_aof_rewrite_emits_valkeys_commands(d: Path, valkey_file: tuple[Path, dict[bytes, Any]]) -> None:
    vdir = Path(tempfile.mkdtemp(prefix="aof-streams-"))
    try:
        shutil.copy(d / "dump.rdb", vdir / "dump.rdb")
        v = start_valkey("--dir", str(vdir), "--aof-use-rdb-preamble", "no")
        try:
            theirs = _stream_commands(_rewrite_base(v.port, vdir))
        finally:
            v.stop()
        t = start_trafikey("--dir", str(d), "--emq-brand", "none", "--aof-use-rdb-preamble", "no")
        try:
            ours = _stream_commands(_rewrite_base(t.port, d))
        finally:
            t.stop()
    finally:
        shutil.rmtree(vdir, ignore_errors=True)
    assert sorted(theirs) == sorted(KEYS)
    assert any(a[0] == b"XCLAIM" for a in theirs[b"s"])
    assert any(a[:2] == [b"XGROUP", b"CREATECONSUMER"] for a in theirs[b"s"])
    assert ours == theirs
    # Replayed here, the log rebuilds the streams: the consumers' seen and
    # active times (the replayed XCLAIMs set them) and the node layout
    # (the entries are added again under the current node limits) aside.
    t = aof_server(str(d), "--emq-brand", "none")
    try:
        replayed = state(t.port, dump=False)
    finally:
        t.stop()

    def comparable(st: dict[str, Any]) -> dict[str, Any]:
        out = {x: y for x, y in st.items() if x not in ("dump", "full")}
        out["info"] = {x: y for x, y in st["info"].items() if x not in (b"radix-tree-keys", b"radix-tree-nodes")}
        return out

    for k in KEYS:
        assert comparable(replayed[k]) == comparable(valkey_file[1][k]), k


def test_broken_nodes_are_load_errors() -> None:
    """A node whose listpack does not hold what a stream node holds is a
    load error naming the key, never a half-loaded stream."""
    s = Stream()
    for i in range(1, 6):
        s.add(i << 64, [b"f", b"v%d" % i], (4096, 100))
    blob = s.nodes()[0].blob()
    key = encode_string((1 << 64).to_bytes(16, "big"))
    tail = encode_len(5) + b"".join(encode_len(x) for x in (5, 0, 1, 0, 0, 0, 5, 0))

    def load(listpack: bytes) -> None:
        STREAM.rdb_load(Reader(encode_len(1) + key + encode_string(listpack) + tail), 21, b"k", None, False)

    load(blob)  # the untouched node loads
    body = blob[6:-1]

    def lp(b: bytes) -> bytes:
        return (len(b) + 7).to_bytes(4, "little") + blob[4:6] + b + b"\xff"

    assert body[-2:] == b"\x04\x01"  # the last entry's element count
    for bad in (blob[:-1],  # no end byte
                lp(b"\x04\x01" + body[2:]),  # the live counter does not match the entries
                lp(body[:-2] + b"\x05\x01"),  # an entry's element count is wrong
                lp(body[:-2]),  # the last entry is cut short
                lp(body[:-14])):
        with pytest.raises(RdbError, match="'k'"):
            load(bad)


def test_writes_after_loading_follow_the_files_nodes(d: Path) -> None:
    """Entries added to, deleted from and trimmed off loaded streams land
    in the file's nodes as they land in Valkey's: after the same writes on
    both servers, this server's file gives Valkey the same DUMP bytes."""
    writes = [("XADD", k, "*", "f", "new") for k in ("s", "wide", "tomb", "empty", "counted") for _ in range(7)]
    writes += [("XDEL", "s", "1013-39", "1013-40"), ("XTRIM", "counted", "MAXLEN", "~", "50"),
               ("XTRIM", "tomb", "MINID", "=", "1-6"), ("XADD", "wide", "*", "big", "z" * 300)]
    vdir = Path(tempfile.mkdtemp(prefix="rdb-streams-"))
    try:
        shutil.copy(d / "dump.rdb", vdir / "dump.rdb")
        v = start_valkey("--dir", str(vdir))
        t = start_trafikey("--dir", str(d), "--emq-brand", "none")
        try:
            vr, tr = redis.Redis(port=v.port), redis.Redis(port=t.port)
            for w in writes:
                got = vr.execute_command(*w)
                if w[0] == "XADD":  # the same IDs on both
                    w = (*w[:2], got, *w[3:])
                assert tr.execute_command(*w) == got, w
            want = {k: vr.dump(k) for k in KEYS}
            (d / "dump.rdb").unlink()
            tr.save()
            vr.close()
            tr.close()
        finally:
            v.stop()
            t.stop()
    finally:
        shutil.rmtree(vdir, ignore_errors=True)
    v = start_valkey("--dir", str(d))
    try:
        vr = redis.Redis(port=v.port)
        assert {k: vr.dump(k) for k in KEYS} == want
        vr.close()
    finally:
        v.stop()
