"""DUMP and RESTORE: one value in Valkey's serialized form.

A payload is the value's RDB type byte and encoding (what the value's
``ValueType.rdb_save`` writes, strings LZF-compressed as Valkey does under
``rdbcompression yes``), then the RDB version as two little-endian bytes
(80, Valkey 9's), then the CRC-64 of all that, little-endian. So a DUMP
from this server restores on Valkey and the other way round, and for the
encodings Valkey writes deterministically the bytes are the same.

RESTORE checks in Valkey's order: options, the key's absence (unless
REPLACE), the TTL, the footer (version and checksum), then the value. The
value is read from the whole payload, footer included, as Valkey reads it,
so a payload whose value runs into its own footer loads as Valkey's does.
A TTL already past deletes the replaced key (or creates nothing) and is
logged as that deletion; a relative TTL is logged as an absolute one with
ABSTTL, as Valkey propagates it.

IDLETIME and FREQ are checked, then set the restored key's LRU clock or LFU
counter (keyspace/access.py), each only under its kind of policy, as
Valkey's objectSetLRUOrLFU does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..execution.persist.aof import propagate
from ..execution.persist.rdb import failure_words
from ..keyspace.access import LRU_CLOCK_MAX
from ..protocol.args import word
from ..protocol.rdbformat import RdbError, Reader, compressing
from ..protocol.resp import OK, bulk
from ..util.crc64 import crc64
from ..util.errors import CommandError, syntax
from ..util.parsing import parse_int
from ..values.registry import BY_CLASS, BY_RDB_TYPE

if TYPE_CHECKING:
    from ..execution.dispatch import Configured
    from ..keyspace.db import Db
    from ..services.client import Client

# The version DUMP writes (Valkey 9's RDB_VERSION); RESTORE refuses newer
# ones and, under rdb-version-check strict, the range other servers use.
DUMP_VERSION = 80
_FOREIGN = range(12, 80)

_BAD_FOOTER = b"ERR DUMP payload version or checksum are wrong"
_BAD_DATA = b"ERR Bad data format"
_BUSY = b"BUSYKEY Target key name already exists."


def payload(server: Configured, value: object) -> bytes:
    """The DUMP payload of a stored value."""
    vt = BY_CLASS[type(value)]
    with compressing(bool(server.config.values.get("rdbcompression", True))):
        t, body = vt.rdb_save(value)
    out = bytes((t,)) + body + DUMP_VERSION.to_bytes(2, "little")
    return out + crc64(out).to_bytes(8, "little")


def dump(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    v = db.get(argv[1])
    if v is None:
        db.notify(b"keymiss", argv[1])
        return c.r.null
    return bulk(payload(c.server, v))


def footer_ok(c: Client, p: bytes) -> bool:
    if len(p) < 10:
        return False
    version = p[-10] | (p[-9] << 8)
    if c.server.config.values.get("rdb-version-check", "strict") == "strict" and (
            version > DUMP_VERSION or version in _FOREIGN):
        return False
    if c.server.switches.skip_checksum:  # DEBUG SET-SKIP-CHECKSUM-VALIDATION 1
        return True
    return crc64(memoryview(p)[:-8]) == int.from_bytes(p[-8:], "little")


def _set_use(db: Db, key: bytes, idle: int, freq: int) -> None:
    """objectSetLRUOrLFU: FREQ sets the counter under an LFU policy,
    IDLETIME the last access under any other (each ignored otherwise)."""
    if db.lfu is not None:
        if freq >= 0:
            db.set_use_field(key, db.lfu.minutes() << 8 | freq)
    elif idle >= 0:
        at = (db.clock.lru & LRU_CLOCK_MAX) - idle
        db.set_use_field(key, at + LRU_CLOCK_MAX if at < 0 else at)


def restore(c: Client, argv: list[bytes]) -> bytes:
    replace = absttl = False
    idle = freq = -1
    n = len(argv)
    j = 4
    while j < n:
        opt = word(argv[j])
        more = j + 1 < n
        if opt == b"replace":
            replace = True
        elif opt == b"absttl":
            absttl = True
        elif opt == b"idletime" and more and freq == -1:
            idle = parse_int(argv[j + 1])
            if idle < 0:
                raise CommandError(b"ERR Invalid IDLETIME value, must be >= 0")
            j += 1
        elif opt == b"freq" and more and idle == -1:
            freq = parse_int(argv[j + 1])
            if freq < 0 or freq > 255:
                raise CommandError(b"ERR Invalid FREQ value, must be >= 0 and <= 255")
            j += 1
        else:
            raise syntax()
        j += 1
    db = c.db
    key = argv[1]
    if not replace and db.get(key) is not None:
        raise CommandError(_BUSY)
    ttl = parse_int(argv[2])
    if ttl < 0:
        raise CommandError(b"ERR Invalid TTL value, must be >= 0")
    p = argv[3]
    if not footer_ok(c, p):
        raise CommandError(_BAD_FOOTER)
    r = Reader(p)
    try:
        vt = BY_RDB_TYPE.get(r.byte())
        value = None if vt is None else vt.rdb_load(r, p[0], key, c.server, False)
    except RdbError as e:
        # Valkey logs a RESTORE's corruption at verbose (rdbReportError).
        c.server.log.verbose(failure_words(e))
        value = None
    except (IndexError, ValueError, OverflowError):
        value = None
    if value is None:
        raise CommandError(_BAD_DATA)
    deleted = db.delete(key) if replace else False
    now = db.clock.ms()
    if ttl and not absttl:
        ttl += now
    if ttl and ttl <= now:
        if deleted:
            db.notify(b"del", key)
            unlink = c.server.config.values["lazyfree-lazy-server-del"]
            propagate(c, [[b"UNLINK" if unlink else b"DEL", key]])
        else:
            c.server.dirty -= 1  # nothing changed: nothing to log
        return OK
    db.add(key, value)
    _set_use(db, key, idle, freq)
    if ttl:
        db.before_expire(key)
        db.set_expire(key, ttl)
    db.notify(b"restore", key)
    logged = argv
    if ttl and not absttl:
        logged = [*argv[:2], b"%d" % ttl, *argv[3:], b"ABSTTL"]
    propagate(c, [logged])
    return OK
