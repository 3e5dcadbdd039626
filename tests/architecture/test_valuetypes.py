"""The value-type registry is the one place that teaches the server a type.

A toy type registered here, and nowhere else, is served by TYPE, SCAN TYPE,
OBJECT ENCODING, COPY, MEMORY USAGE, DEBUG DIGEST, the RDB file and the AOF
rewrite; and the modules behind those never name a type's class.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from test_layers import graph

from trafikey_server.execution.dispatch import execute
from trafikey_server.execution.persist import rdb
from trafikey_server.execution.persist.rewrite import snapshot_records
from trafikey_server.keyspace.db import Db
from trafikey_server.protocol.rdbformat import Reader, encode_len, encode_string
from trafikey_server.protocol.resp import bulks
from trafikey_server.server import Server
from trafikey_server.services.client import Client
from trafikey_server.services.config import parse_args
from trafikey_server.values import registry as valuetypes
from trafikey_server.values.record import ValueType


class Toy(list):  # type: ignore[type-arg]
    """A list of byte strings, standing in for a type added later."""

    __slots__ = ()


# An RDB type byte no Valkey type uses.
T_TOY = 8


def _load(r: Reader, t: int, key: bytes, server: Any, has_ttl: bool) -> Toy | None:
    items = Toy(r.string() for _ in range(r.plain_len()))
    return items or None


def _rewrite(key: bytes, v: Toy) -> Iterator[list[bytes]]:
    yield [b"RPUSH", key, *v]


TOY = ValueType(
    name=b"toy",
    classes=(Toy,),
    encodings=(b"toypack",),
    encoding=lambda v: b"toypack",
    copy=lambda v: Toy(v),
    memory=lambda v, samples: 1000 * len(v),
    digest=lambda v: b"t" + b"\0".join(v),
    rdb_save=lambda v: (T_TOY, encode_len(len(v)) + b"".join(encode_string(x) for x in v)),
    rdb_types=(T_TOY,),
    rdb_load=_load,
    aof_rewrite=_rewrite,
)


@pytest.fixture
def toy() -> Iterator[ValueType]:
    valuetypes.register(TOY)
    try:
        yield TOY
    finally:
        valuetypes.unregister(TOY)


def _server() -> tuple[Server, Client]:
    s = Server(parse_args(["--enable-debug-command", "yes", "--save", ""]))
    return s, Client(s, s.next_client_id())


def test_every_type_fills_every_field() -> None:
    names = set()
    for vt in valuetypes.registered():
        for f in dataclasses.fields(vt):
            value = getattr(vt, f.name)
            if f.name != "listpack_limits":
                assert value, f"{vt.name!r} leaves {f.name} empty"
            if "Callable" in str(f.type):  # a string here, a typing object compiled
                assert callable(value), f"{vt.name!r}.{f.name} is not callable"
        names.add(vt.name)
        for cls in vt.classes:
            assert valuetypes.BY_CLASS[cls] is vt
    assert names == {b"string", b"list", b"hash", b"zset", b"set", b"stream"}


def test_a_class_or_rdb_type_serves_one_type_only(toy: ValueType) -> None:
    with pytest.raises(ValueError):
        valuetypes.register(dataclasses.replace(toy, name=b"other"))
    with pytest.raises(ValueError):
        valuetypes.register(dataclasses.replace(toy, name=b"other", classes=(dict,), rdb_types=(0,)))


def test_a_registered_type_is_served_everywhere(toy: ValueType) -> None:
    s, c = _server()
    db: Db = s.dbs[0]
    db.set(b"k", Toy([b"a", b"b"]))
    db.set(b"j", b"1")  # an int-encoded string costs nothing beyond its key
    assert execute(c, [b"TYPE", b"k"]) == b"+toy\r\n"
    assert execute(c, [b"SCAN", b"0", b"TYPE", b"toy"]) == b"*2\r\n$1\r\n0\r\n" + bulks([b"k"])
    assert execute(c, [b"OBJECT", b"ENCODING", b"k"]) == b"$7\r\ntoypack\r\n"

    assert execute(c, [b"COPY", b"k", b"k2"]) == b":1\r\n"
    copied = db.get(b"k2")
    assert type(copied) is Toy and copied == [b"a", b"b"] and copied is not db.get(b"k")

    usage = int(execute(c, [b"MEMORY", b"USAGE", b"k"])[1:-2])
    assert usage - int(execute(c, [b"MEMORY", b"USAGE", b"j"])[1:-2]) == 2000

    digest = execute(c, [b"DEBUG", b"DIGEST"])
    copied.append(b"c")
    assert execute(c, [b"DEBUG", b"DIGEST"]) != digest
    copied.pop()
    assert execute(c, [b"DEBUG", b"DIGEST"]) == digest

    # RDB: written and read back by the type's own functions; an empty value is dropped.
    db.set(b"empty", Toy())
    s2, _ = _server()
    loaded = rdb.parse(s2, rdb.dump(s))
    data = loaded.dbs[0][0]
    assert type(data[b"k"]) is Toy and data[b"k"] == [b"a", b"b"]
    assert b"empty" not in data

    # AOF rewrite: the type's commands rebuild it.
    records = b"".join(snapshot_records(s))
    assert bulks([b"RPUSH", b"k", b"a", b"b"]) in records


def test_an_unregistered_class_is_no_type() -> None:
    s, c = _server()
    s.dbs[0].set(b"k", Toy([b"a"]))
    assert execute(c, [b"TYPE", b"k"]) == b"+none\r\n"


# The modules that treat values of every type: they ask the registry and
# never import a type's class (values.hash.Hash, values.zset.ZSet) themselves.
GENERIC = ("commands.keys", "commands.introspect", "commands.control", "execution.persist.rdb",
           "execution.persist.rewrite", "server")


def test_generic_modules_import_no_type_class() -> None:
    g = graph()
    bad = [f"{m} imports {t}" for m in GENERIC for t in ("values.hash", "values.zset") if t in g[m]]
    assert not bad, "ask values.registry instead:\n  " + "\n  ".join(bad)
