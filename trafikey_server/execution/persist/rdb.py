"""The RDB file format: writing this server's keyspace, reading it back.

Files are written as ``REDIS0011``, the newest version that both Valkey 9
(whose own files are ``VALKEY080``) and Redis 7.2 read (or as ``VALKEY080``
when a hash has field TTLs, whose type only that version carries), with only the plain
encodings: strings (integer-encoded when they are small canonical integers,
otherwise raw, never LZF-compressed), each value in the form Valkey writes
for its encoding (listpacks, intsets, quicklist nodes; hashtable hashes as
``RDB_TYPE_HASH``, skiplist sorted sets as ``RDB_TYPE_ZSET_2`` with binary
doubles), the same bytes a DUMP payload carries, expiry in milliseconds,
SELECTDB / RESIZEDB and the usual aux fields, closed by the CRC-64 of the
whole file. The reader decides each value's encoding the way Valkey does
while loading, so OBJECT ENCODING answers alike after a restart. A value's
own bytes are its type's business (``ValueType.rdb_save`` / ``rdb_load``,
found in ``values/registry.py``); this module frames the file around them.

The loader reads what this server writes and what Valkey 9 writes for the
types served here: LZF-compressed and integer strings, listpack and ziplist
hashes and sorted sets, string-score sorted sets, and hashes with field
TTLs (RDB_TYPE_HASH_2). Anything else (module values and module data) is
refused with an error naming the key and the type: skipping it would
silently lose data the user meant to keep.

Function libraries travel in the file as Valkey keeps them: one
``FUNCTION2`` record of library code each, after the aux fields. Loading
them is all or nothing (``install``), as FUNCTION RESTORE is, and comes
before the keys, so a library that no longer loads leaves the keyspace as
it was.

A file is parsed in full into fresh dictionaries and its checksum verified
before anything is installed, so a bad file leaves the running keyspace as
it was.
"""

from __future__ import annotations

import heapq
import os
import struct
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from ...protocol.rdbformat import T_HASH_2, Reader, Truncated, encode_len, encode_string
from ...protocol.rdbformat import RdbError as RdbError  # the loaders' error, raised from here too
from ...util.clock import debug_delay
from ...util.crc64 import update as crc_update
from ...util.memory import peak as _used_memory
from ...util.versions import REDIS_COMPAT_VERSION
from ...values.registry import BY_CLASS, BY_RDB_TYPE
from ..scripting.engine import ScriptError

if TYPE_CHECKING:
    from .host import PersistHost

RDB_VERSION = 11
MAGIC = b"REDIS%04d" % RDB_VERSION
# A hash with field TTLs is RDB_TYPE_HASH_2, which Valkey reads only in its
# own file version: a file holding one is written as Valkey 9 writes it.
VALKEY_MAGIC = b"VALKEY080"
# The newest versions read: Redis-format files up to 11, Valkey-format up to 80.
MAX_REDIS_VERSION = 11
MAX_VALKEY_VERSION = 80

TYPE_NAMES = {
    0: "string", 1: "list", 2: "set", 3: "zset", 4: "hash", 5: "zset", 6: "module", 7: "module",
    9: "hash (zipmap)", 10: "list (ziplist)", 11: "set (intset)", 12: "zset (ziplist)",
    13: "hash (ziplist)", 14: "list (quicklist)", 15: "stream", 16: "hash (listpack)",
    17: "zset (listpack)", 18: "list (quicklist)", 19: "stream", 20: "set (listpack)", 21: "stream",
    22: "hash with field expiry",
}

# Opcodes.
OP_SLOT_IMPORT, OP_SLOT_INFO, OP_FUNCTION2, OP_FUNCTION_PRE_GA = 243, 244, 245, 246
OP_MODULE_AUX, OP_IDLE, OP_FREQ, OP_AUX = 247, 248, 249, 250
OP_RESIZEDB, OP_EXPIRETIME_MS, OP_EXPIRETIME, OP_SELECTDB, OP_EOF = 251, 252, 253, 254, 255

_PACK_Q = struct.Struct("<Q").pack
_PACK_q = struct.Struct("<q").pack

# -- writing ----------------------------------------------------------------------


def _aux(name: bytes, value: bytes) -> bytes:
    return bytes((OP_AUX,)) + encode_string(name) + encode_string(value)


def _value(v: Any) -> tuple[int, bytes] | None:
    vt = BY_CLASS.get(type(v))
    return None if vt is None else vt.rdb_save(v)


class _Sink:
    """Buffered output that keeps the running checksum."""

    def __init__(self, out: IO[bytes], checksum: bool) -> None:
        self.out = out
        self.checksum = checksum
        self.crc = 0
        self.buf = bytearray()

    def write(self, b: bytes) -> None:
        self.buf += b
        if len(self.buf) >= 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            if self.checksum:
                self.crc = crc_update(self.crc, self.buf)
            self.out.write(self.buf)
            self.buf = bytearray()


def write(server: PersistHost, out: IO[bytes], aof_base: bool = False) -> int:
    """Stream the keyspace to out as an RDB file; the number of keys written.

    Keys past their expiry are written too (as Valkey does); the loader
    drops them. ``aof_base``: the file is the base of the append-only log
    (its ``aof-base`` aux field says so, as Valkey's does)."""
    values = server.config.values
    delay = int(values.get("rdb-key-save-delay", 0))
    sink = _Sink(out, bool(values.get("rdbchecksum", True)))
    w = sink.write
    w(VALKEY_MAGIC if _has_field_ttls(server) else MAGIC)
    w(_aux(b"redis-ver", REDIS_COMPAT_VERSION.encode()))
    w(_aux(b"redis-bits", b"64"))
    w(_aux(b"ctime", b"%d" % int(time.time())))
    w(_aux(b"used-mem", b"%d" % _used_memory()))
    w(_aux(b"aof-base", b"1" if aof_base else b"0"))
    for lib in server.scripting.libraries.libraries.values():
        w(bytes((OP_FUNCTION2,)) + encode_string(lib.code))
    keys = 0
    for db in server.dbs:
        data = db.data
        if not data:
            continue
        expires = db.expires
        w(bytes((OP_SELECTDB,)) + encode_len(db.id))
        w(bytes((OP_RESIZEDB,)) + encode_len(len(data)) + encode_len(len(expires)))
        for key, v in list(db.items()):
            enc = _value(v)
            if enc is None:
                continue
            when = expires.get(key) if expires else None
            if when is not None:
                w(bytes((OP_EXPIRETIME_MS,)) + _PACK_q(when))
            w(bytes((enc[0],)) + encode_string(key) + enc[1])
            keys += 1
            if delay:
                debug_delay(delay)
    w(bytes((OP_EOF,)))
    sink.flush()
    out.write(_PACK_Q(sink.crc))
    return keys


def _has_field_ttls(server: PersistHost) -> bool:
    return any(db.has_field_ttls() for db in server.dbs if db.volatile)


def dump(server: PersistHost) -> bytes:
    import io

    buf = io.BytesIO()
    write(server, buf)
    return buf.getvalue()


# -- reading ----------------------------------------------------------------------


class ChecksumError(RdbError):
    """The file's CRC-64 is not its contents'."""

    def __init__(self, stored: int, computed: int) -> None:
        super().__init__(f"wrong RDB checksum: the file says {stored:016x}, its contents give "
                         f"{computed:016x}; the file is damaged")
        self.stored = stored
        self.computed = computed


def failure_words(e: RdbError) -> str:
    """What Valkey logs when a file stops its load (rdbLoadRio's aborts):
    the words the log readers match, then this server's detail."""
    if isinstance(e, Truncated):
        return f"Short read or OOM loading DB. Unrecoverable error, aborting now. ({e})"
    if isinstance(e, ChecksumError):
        return (f"Wrong RDB checksum expected: ({e.computed:016x}) but got ({e.stored:016x}). "
                "Aborting now. (RDB CRC error)")
    return f"Internal error in RDB reading: {e}"


class Loaded:
    """A parsed file: per database, its data and expiry dicts."""

    def __init__(self) -> None:
        self.dbs: dict[int, tuple[dict[bytes, Any], dict[bytes, int]]] = {}
        self.aux: dict[bytes, bytes] = {}
        # The code of each function library, in file order.
        self.libraries: list[bytes] = []
        self.keys_loaded = 0
        self.keys_expired = 0
        self.version = 0
        # Where the file ended (after its checksum): an AOF's tail follows.
        self.end = 0


def _read_value(r: Reader, t: int, key: bytes, server: PersistHost, has_ttl: bool) -> Any:
    """The value of type byte t, as its type loads it (None: Valkey drops it)."""
    vt = BY_RDB_TYPE.get(t)
    if vt is not None:
        return vt.rdb_load(r, t, key, server, has_ttl)
    name = TYPE_NAMES.get(t)
    if name is None:
        raise RdbError(f"unknown value type {t} at offset {r.p - 1}")
    raise RdbError(f"key {key!r} holds a {name} (RDB type {t}), a type this server does not "
                   "serve; remove it from the source server or load the file into Valkey")


def parse(server: PersistHost, data: bytes, check: bool = True, tail: bool = False,
          progress: Callable[[int], None] | None = None) -> Loaded:
    """Everything in data, checked, without touching the server. ``tail``:
    data may go on past the file's end (an AOF's commands after its RDB
    preamble); ``Loaded.end`` says where the file ended. ``progress`` is
    told the position after each key (a load at start-up, loading.py)."""
    res = Loaded()
    if len(data) < 9:
        raise Truncated(f"the file has {len(data)} bytes, fewer than an RDB header")
    if data[:5] == b"REDIS" and data[5:9].isdigit():
        version, limit, start = int(data[5:9]), MAX_REDIS_VERSION, 9
    elif data[:6] == b"VALKEY" and data[6:9].isdigit():
        version, limit, start = int(data[6:9]), MAX_VALKEY_VERSION, 9
    else:
        raise RdbError("wrong signature: not an RDB file")
    if version < 1 or version > limit:
        raise RdbError(f"can't handle RDB format version {version}")
    res.version = version
    r = Reader(data)
    r.p = start
    now = server.clock.ms()
    ndbs = len(server.dbs)
    cur: tuple[dict[bytes, Any], dict[bytes, int]] | None = None
    expire: int | None = None
    try:
        while True:
            op = r.byte()
            if op == OP_EOF:
                break
            if op == OP_SELECTDB:
                dbid = r.plain_len()
                if dbid >= ndbs:
                    raise RdbError(f"the file holds database {dbid}, but this server is configured "
                                   f"for {ndbs} databases")
                cur = res.dbs.setdefault(dbid, ({}, {}))
                continue
            if op == OP_RESIZEDB:
                r.plain_len()
                r.plain_len()
                continue
            if op == OP_AUX:
                k = r.string()
                res.aux[k] = r.string()
                continue
            if op == OP_EXPIRETIME_MS:
                expire = struct.unpack("<q", r.take(8))[0]
                continue
            if op == OP_EXPIRETIME:
                expire = struct.unpack("<i", r.take(4))[0] * 1000
                continue
            if op == OP_IDLE:
                r.plain_len()
                continue
            if op == OP_FREQ:
                r.byte()
                continue
            if op == OP_SLOT_INFO:
                r.plain_len()
                r.plain_len()
                r.plain_len()
                continue
            if op == OP_FUNCTION2:
                res.libraries.append(r.string())
                continue
            if op == OP_FUNCTION_PRE_GA:
                raise RdbError(f"the file holds a function library in the format of Redis 7.0's "
                               f"release candidates (at offset {r.p - 1}), which Valkey does not read")
            if op == OP_MODULE_AUX:
                raise RdbError(f"the file holds module data (at offset {r.p - 1}); this server "
                               "has no modules")
            if op == OP_SLOT_IMPORT:
                raise RdbError(f"the file holds a cluster slot import (at offset {r.p - 1})")
            at = r.p - 1
            if op > T_HASH_2 and op < OP_SLOT_IMPORT:
                raise RdbError(f"unknown value type {op} at offset {at}")
            if cur is None:
                cur = res.dbs.setdefault(0, ({}, {}))
            key = r.string()
            value = _read_value(r, op, key, server, expire is not None)
            if progress is not None:
                progress(r.p)
            if value is None:
                expire = None
                continue  # Valkey drops empty containers on load
            if expire is not None and expire < now:
                res.keys_expired += 1
                expire = None
                continue
            if key in cur[0]:
                raise RdbError(f"duplicate key {key!r} at offset {at}")
            cur[0][key] = value
            if expire is not None:
                cur[1][key] = expire
                expire = None
            res.keys_loaded += 1
    except RdbError as e:
        if check and not isinstance(e, Truncated) and _checksum_state(data, r.n)[0] is False:
            raise RdbError(f"{e} (and the checksum does not match: the file is damaged)") from None
        raise
    end = r.p
    if version >= 5:
        if end + 8 > len(data):
            raise Truncated(f"the file is truncated: it ends at offset {len(data)}, inside its checksum")
        stored_crc = int.from_bytes(data[end:end + 8], "little")
        if check and stored_crc != 0:
            computed = crc_update(0, memoryview(data)[:end])
            if computed != stored_crc:
                raise ChecksumError(stored_crc, computed)
        end += 8
    res.end = end
    if end != len(data) and not tail:
        raise RdbError(f"{len(data) - end} bytes of garbage after the end of the file (offset {end})")
    return res


def checksum_checked(server: PersistHost) -> bool:
    """Whether a file's checksum is verified on load: rdbchecksum, unless
    DEBUG SET-SKIP-CHECKSUM-VALIDATION says not."""
    return bool(server.config.values.get("rdbchecksum", True)) and not server.switches.skip_checksum


def _checksum_state(data: bytes, n: int) -> tuple[bool | None, int]:
    """Whether the last 8 bytes are the checksum of the rest (None: no checksum)."""
    if n < 17:
        return None, 0
    stored_crc = int.from_bytes(data[n - 8:n], "little")
    if stored_crc == 0:
        return None, 0
    return crc_update(0, memoryview(data)[:n - 8]) == stored_crc, stored_crc


def install(server: PersistHost, res: Loaded, functions: bytes = b"flush") -> None:
    """Put a parsed file's libraries and keys into the server (keys merged
    into what the databases hold; callers empty them first).

    ``functions`` is FUNCTION RESTORE's policy for the file's libraries:
    ``flush`` (they replace the loaded ones, as after Valkey's emptyData),
    ``append`` (a name clash fails the load) or ``replace`` (DEBUG RELOAD
    MERGE). A file without libraries leaves them alone unless flushing."""
    if res.libraries or functions == b"flush":
        try:
            server.scripting.libraries.restore(res.libraries, functions)
        except ScriptError as e:
            raise RdbError(f"a function library in the file does not load: "
                           f"{e.msg.decode(errors='replace')}") from None
    for dbid, (data, expires) in res.dbs.items():
        db = server.dbs[dbid]
        if not db.data:
            db.float_ints = None
            if db.watchers:
                db.touch_all(None)
            db.load_values(data)
            db.expires = expires
            db._heap = [(t, k) for k, t in expires.items()]
            heapq.heapify(db._heap)
            db.find_volatile()
            continue
        # Loaded keys are not announced (Valkey's dbAddRDBLoad raises no
        # keyspace event), so notifications pause while they go in.
        events, db.events = db.events, None
        try:
            for k, v in data.items():
                db.set(k, v)
            for k, t in expires.items():
                db.set_expire(k, t)
        finally:
            db.events = events


def load(server: PersistHost, source: bytes | str | os.PathLike[str], check: bool | None = None,
         progress: Callable[[int], None] | None = None) -> Loaded:
    """Parse a file (a path, or its bytes) and install its keys."""
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        with open(source, "rb") as f:
            data = f.read()
    if check is None:
        check = checksum_checked(server)
    res = parse(server, data, check, progress=progress)
    install(server, res)
    return res
