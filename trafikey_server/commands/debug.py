"""DEBUG: the test switches and probes Valkey's suite (and clients' own
suites) reach for, as Valkey's debug.c answers them.

Each subcommand is a row of ``SUBCOMMANDS``: the argument counts Valkey
accepts for it and its handler. A name Valkey does not know, or a known
name with a count it does not take, gets Valkey's one refusal. Switches set
here live on ``server.switches`` (services/switches.py), where the module
that honours each reads it. Valkey's probes of its own C structures
(HTSTATS, SDSLEN, STRUCTSIZE, MALLCTL, the cluster bus filters) have nothing
to describe here and are not rows.
"""

from __future__ import annotations

import hashlib
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..execution.persist.aofload import AofLoadError
from ..execution.persist.rdb import RdbError, checksum_checked, install, parse
from ..execution.persist.startup import reload_aof
from ..keyspace.access import LRU_CLOCK_MAX, idle_ms
from ..protocol.resp import OK, array, array_header, bulk, integer, status
from ..services.config import ConfigError, parse_memory
from ..services.config_rewrite import rewrite
from ..services.limits import LOADING
from ..util.errors import CommandError
from ..util.parsing import parse_int
from ..values.list import List
from ..values.registry import BY_CLASS, of
from .control import local_client
from .keys import value_encoding

if TYPE_CHECKING:
    from ..services.client import Client

_DEBUG_OFF: Final = (
    b'ERR DEBUG command not allowed. If the enable-debug-command option is set to "local", you can run it '
    b"from a local connection, otherwise you need to set this option in the configuration file, and then "
    b"restart the server."
)

# C's atof and atoi, as Valkey reads most of these arguments: leading space,
# a numeric prefix; junk is 0.
_ATOF: Final = re.compile(rb"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_ATOI: Final = re.compile(rb"\s*[+-]?\d+")


def atof(b: bytes) -> float:
    m = _ATOF.match(b)
    return float(m.group()) if m else 0.0


def atoi(b: bytes) -> int:
    """C's atoi, wrapped to 32 bits as Valkey's int fields take it."""
    m = _ATOI.match(b)
    n = int(m.group()) if m else 0
    return (n + (1 << 31)) % (1 << 32) - (1 << 31)


def _positive(b: bytes) -> int:
    """getPositiveLongFromObjectOrReply: 0 and up."""
    n = parse_int(b, b"ERR value is out of range, must be positive")
    if n < 0:
        raise CommandError(b"ERR value is out of range, must be positive")
    return n


# -- the keyspace -----------------------------------------------------------------


def _reload(c: Client, argv: list[bytes]) -> bytes:
    """RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save, empty, load the file back."""
    flush = do_save = True
    merge = False
    for a in argv[2:]:
        o = a.lower()
        if o == b"merge":
            merge = True
        elif o == b"noflush":
            flush = False
        elif o == b"nosave":
            do_save = False
        else:
            raise CommandError(b"ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
    srv = c.server
    if do_save and not srv.snapshots.save():
        raise CommandError(b"ERR")
    try:
        with open(srv.snapshots.path(), "rb") as f:
            data = f.read()
        res = parse(srv, data, checksum_checked(srv))
    except (OSError, RdbError) as e:
        srv.log.warning(f"DEBUG RELOAD: {e}")
        raise CommandError(b"ERR Error trying to load the RDB dump, check server logs.") from None
    if flush:
        for db in srv.dbs:
            db.clear()
        srv.tracking.flushed()
    elif not merge:
        for dbid, (data_, _) in res.dbs.items():
            if any(k in srv.dbs[dbid].data for k in data_):
                srv.log.warning("DEBUG RELOAD: duplicate keys without MERGE")
                raise CommandError(b"ERR Error trying to load the RDB dump, check server logs.")
    try:
        install(srv, res, b"flush" if flush else b"replace" if merge else b"append")
    except RdbError as e:
        srv.log.warning(f"DEBUG RELOAD: {e}")
        raise CommandError(b"ERR Error trying to load the RDB dump, check server logs.") from None
    srv.snapshots.keys_loaded, srv.snapshots.keys_expired = res.keys_loaded, res.keys_expired
    srv.log.notice("DB reloaded by DEBUG RELOAD")
    return OK


def _loadaof(c: Client, argv: list[bytes]) -> bytes:
    """LOADAOF: the keyspace emptied and loaded back from the AOF on disk."""
    srv = c.server
    try:
        reload_aof(srv)
    except (AofLoadError, OSError) as e:
        srv.log.warning(f"DEBUG LOADAOF: {e}")
        raise CommandError(b"ERR Error trying to load the AOF files, check server logs.") from None
    finally:
        srv.tracking.flushed()
    srv.dirty = 0  # as Valkey: nothing to save or propagate
    srv.log.notice("Append Only File loaded by DEBUG LOADAOF")
    return OK


def _populate(c: Client, argv: list[bytes]) -> bytes:
    """POPULATE count [prefix] [size]: string keys prefix:N holding value:N
    (cut or zero-padded to size), each added as Valkey's dbAdd adds it —
    the ``new`` event and watchers told, no TTL — but not counted as a
    change nor logged: DEBUG is no write command. Keys already there stay."""
    count = _positive(argv[2])
    if c.server.loading:
        raise CommandError(LOADING)
    size = _positive(argv[4]) if len(argv) == 5 else 0
    prefix = argv[3] if len(argv) > 3 else b"key"
    db = c.db
    for j in range(count):
        key = b"%s:%d" % (prefix, j)
        if db.peek(key) is not None:
            continue
        value = b"value:%d" % j
        if size:
            value = value[:size].ljust(size, b"\0")
        db.add_string(key, value, None)
    return OK


# -- digests and probes ---------------------------------------------------------


def _digest_value(v: object) -> bytes:
    """A stable rendering of a value: container contents in sorted order so
    the digest does not depend on insertion history."""
    vt = of(v)
    return repr(v).encode() if vt is None else vt.digest(v)


def _digest(c: Client, argv: list[bytes]) -> bytes:
    """DIGEST: XOR of per-key SHA1s (order-free, like Valkey's); all zeros
    for an empty dataset."""
    acc = 0
    for i, db in enumerate(c.server.dbs):
        for key in list(db.live_keys()):
            v = db.get(key)
            if v is None:
                continue
            ttl = db.ttl_ms(key)
            h = hashlib.sha1(b"%d\0%s\0%s\0%d" % (i, key, _digest_value(v), ttl is not None))
            acc ^= int.from_bytes(h.digest(), "big")
    return status(b"%040x" % acc)


def _key_digest(c: Client, key: bytes) -> bytes:
    """DIGEST-VALUE's digest of one key: its value and whether it has a
    time to live, found even past that time (as Valkey's dbFind); forty
    zeros for no key."""
    db = c.db
    v = db.stored(key)
    if v is None:
        return b"0" * 40
    return hashlib.sha1(b"%s\0%d" % (_digest_value(v), key in db.expires)).hexdigest().encode()


def _digest_values(c: Client, argv: list[bytes]) -> bytes:
    return array([status(_key_digest(c, key)) for key in argv[2:]])


def _object(c: Client, argv: list[bytes]) -> bytes:
    """OBJECT key [fast] in Valkey's words: where the value is, its
    references (one: Valkey 9 embeds the key in every value, so none is
    shared), its encoding, its RDB length (this server's, never
    LZF-compressed; left out under ``fast``), its LRU field and the idle
    time it gives. The key is found as Valkey's dbFind finds it: even past
    its time (nothing is expired by looking), and the lookup is not a use."""
    key = argv[2]
    db = c.db
    v = db.stored(key)
    if v is None:
        raise CommandError(b"ERR no such key")
    fast = len(argv) == 4 and argv[3].lower() == b"fast"
    out = b"Value at:0x%x refcount:1 encoding:%s" % (id(v), value_encoding(c, key, v))
    if not fast:
        vt = BY_CLASS.get(type(v))
        out += b" serializedlength:%d" % (len(vt.rdb_save(v)[1]) if vt is not None else 0)
    field = db.use_field(key) or 0
    if db.lfu is None:  # the 24 bits of Valkey's LRU clock, as its objects keep them
        field &= LRU_CLOCK_MAX
    idle = idle_ms(db.clock, field) // 1000 if db.lfu is None else 0
    out += b" lru:%d lru_seconds_idle:%d" % (field, idle)
    if isinstance(v, List) and v.big:
        # The quicklist's shape, as Valkey adds it.
        nodes = v.quicklist_nodes()
        compressed = int(c.server.config.values.get("list-compress-depth", 0) != 0)
        out += b" ql_nodes:%d ql_avg_node:%.2f ql_listpack_max:%d ql_compressed:%d" % (
            len(nodes), len(v) / max(len(nodes), 1), v.fill, compressed)
        if not fast:
            out += b" ql_uncompressed_size:%d" % sum(n[1] for n in nodes)
    return status(out)


def _encoded_as(c: Client, key: bytes, encoding: bytes, refusal: bytes) -> object:
    """The value under key (no use recorded), if it is held in that
    encoding; Valkey's refusals otherwise."""
    v = c.db.peek(key)
    if v is None:
        raise CommandError(b"ERR no such key")
    if value_encoding(c, key, v) != encoding:
        raise CommandError(refusal)
    return v


def _listpack(c: Client, argv: list[bytes]) -> bytes:
    """LISTPACK key: the value's layout printed on the server's stdout."""
    v = _encoded_as(c, argv[2], b"listpack", b"ERR Not a listpack encoded object.")
    print(f"{{listpack value of {argv[2]!r}: {v!r}}}", file=sys.stdout, flush=True)
    return status(b"Listpack structure printed on stdout")


def _quicklist(c: Client, argv: list[bytes]) -> bytes:
    """QUICKLIST key [0|1]: the value's layout printed on the server's stdout."""
    v = _encoded_as(c, argv[2], b"quicklist", b"ERR Not a quicklist encoded object.")
    print(f"{{quicklist value of {argv[2]!r}: {v!r}}}", file=sys.stdout, flush=True)
    return status(b"Quicklist structure printed on stdout")


# -- replies of every type ---------------------------------------------------------

_PROTOCOL_TYPES: Final = b"string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false"


def _protocol(c: Client, argv: list[bytes]) -> bytes:
    """PROTOCOL type: a test reply of that RESP type, in the client's protocol."""
    name = argv[2].lower()
    r = c.r
    three = c.resp >= 3
    if name == b"string":
        return bulk(b"Hello World")
    if name == b"integer":
        return integer(12345)
    if name == b"double":
        return r.double(3.141)
    if name == b"bignum":
        n = b"1234567999999999999999999999999999999"
        return b"(%s\r\n" % n if three else bulk(n)
    if name == b"null":
        return r.null
    if name == b"array":
        return array_header(3) + integer(0) + integer(1) + integer(2)
    if name == b"set":
        return r.set_header(3) + integer(0) + integer(1) + integer(2)
    if name == b"map":
        return r.map_header(3) + b"".join(integer(j) + r.boolean(j == 1) for j in range(3))
    if name == b"attrib":
        head = b"|1\r\n" + bulk(b"key-popularity") + array_header(2) + bulk(b"key:123") + integer(90) if three else b""
        # an attribute is no reply by itself: a real one follows
        return head + bulk(b"Some real reply following the attribute")
    if name == b"push":
        if not three:
            raise CommandError(b"ERR RESP2 is not supported by this command")
        # out of band, after the real reply a client waiting for one reads
        c.push(b">2\r\n" + bulk(b"server-cpu-usage") + integer(42))
        return bulk(b"Some real reply following the push reply")
    if name == b"true":
        return r.boolean(True)
    if name == b"false":
        return r.boolean(False)
    if name == b"verbatim":
        return r.verbatim(b"This is a verbatim\nstring")
    raise CommandError(b"ERR Wrong protocol type name. Please use one of the following: " + _PROTOCOL_TYPES)


def _error(c: Client, argv: list[bytes]) -> bytes:
    """ERROR text: that text as an error reply, newlines made spaces. Valkey
    writes it as raw reply bytes, so it is counted in no error statistics."""
    return b"-%s\r\n" % argv[2].replace(b"\r", b" ").replace(b"\n", b" ")


# -- switches ------------------------------------------------------------------


def _sleep(c: Client, argv: list[bytes]) -> bytes:
    secs = atof(argv[2])
    if secs > 0:
        time.sleep(secs)  # blocking on purpose: DEBUG SLEEP stalls the server
    return OK


def _set_active_expire(c: Client, argv: list[bytes]) -> bytes:
    c.server.switches.active_expire = atoi(argv[2]) != 0
    return OK


def _aof_flush_sleep(c: Client, argv: list[bytes]) -> bytes:
    c.server.switches.aof_flush_sleep = max(atoi(argv[2]), 0)
    return OK


def _pause_cron(c: Client, argv: list[bytes]) -> bytes:
    c.server.switches.pause_cron = atoi(argv[2]) != 0
    return OK


def _skip_checksum(c: Client, argv: list[bytes]) -> bytes:
    c.server.switches.skip_checksum = atoi(argv[2]) != 0
    return OK


def _disable_deny_scripts(c: Client, argv: list[bytes]) -> bytes:
    c.server.switches.scripts_unrestricted = atoi(argv[2]) != 0
    return OK


_PACKED_MAX: Final = (1 << 32) - (1 << 20)  # quicklistSetPackedThreshold's bound


def _packed_threshold(c: Client, argv: list[bytes]) -> bytes:
    """QUICKLIST-PACKED-THRESHOLD size: a memory value (memtoull, as a config
    file's) up to 4 GB less 1 MB; 0 restores the default of 1 GB."""
    try:
        size = parse_memory(argv[2].decode("utf-8", "surrogateescape"))
    except ConfigError:
        size = -1
    if not 0 <= size <= _PACKED_MAX:
        raise CommandError(b"ERR argument must be a memory value bigger than 1 and smaller than 4gb")
    c.server.switches.packed_threshold = size or 1 << 30
    return OK


def _log(c: Client, argv: list[bytes]) -> bytes:
    c.server.log.warning("DEBUG LOG: " + argv[2].decode("utf-8", "replace"))
    return OK


def _ok(c: Client, argv: list[bytes]) -> bytes:
    """A switch for a part of Valkey that has no counterpart here (its
    dictionaries' resizing, its reply buffers, replicas): taken, as Valkey
    takes it, with nothing to change."""
    return OK


def _replybuffer(c: Client, argv: list[bytes]) -> bytes:
    what = argv[2].lower()
    if what == b"peak-reset-time":
        if argv[3].lower() not in (b"never", b"reset"):
            parse_int(argv[3])
    elif what != b"resizing":
        raise _unknown(argv)
    return OK


def _change_repl_id(c: Client, argv: list[bytes]) -> bytes:
    c.server.log.notice("Changing replication IDs after receiving DEBUG change-repl-id")
    c.server.change_replication_id()
    return OK


def _config_rewrite_force_all(c: Client, argv: list[bytes]) -> bytes:
    """CONFIG-REWRITE-FORCE-ALL: CONFIG REWRITE writing every option, its
    default too. Without a config file Valkey's rewrite fails on a null
    path, and says so in these words."""
    cfg = c.server.config
    if not cfg.file:
        raise CommandError(b"ERR CONFIG-REWRITE-FORCE-ALL failed: Bad address")
    try:
        rewrite(cfg, force_all=True, users=c.server.acl.config_lines())
    except OSError as e:
        raise CommandError(b"ERR CONFIG-REWRITE-FORCE-ALL failed: %s" % (e.strerror or "").encode()) from None
    return OK


# -- crashing on purpose ----------------------------------------------------------------


def _segfault(c: Client, argv: list[bytes]) -> bytes:
    """SEGFAULT: the crash report for SIGSEGV, then death by it."""
    c.server.crash.crash_by_signal(signal.SIGSEGV, sys._getframe())


def _assert(c: Client, argv: list[bytes]) -> bytes:
    """ASSERT: an assertion that fails, reported as Valkey reports one."""
    frame = sys._getframe()
    where = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
    c.server.crash.failed("=== ASSERTION FAILED ===", [f"==> {where} '1 == 2' is not true"], frame)


def _panic(c: Client, argv: list[bytes]) -> bytes:
    frame = sys._getframe()
    where = f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}"
    c.server.crash.failed("------------------------------------------------", [
        "!!! Software Failure. Press left mouse button to continue",
        f"Guru Meditation: DEBUG PANIC called at Unix time {int(time.time())} #{where}",
    ], frame)


# -- the table --------------------------------------------------------------------

_HELP: Final = (
    b"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"AOF-FLUSH-SLEEP <microsec>",
    b"    Server will sleep before flushing the AOF, this is used for testing.",
    b"ASSERT",
    b"    Crash by assertion failed.",
    b"CHANGE-REPL-ID",
    b"    Change the replication IDs of the instance.",
    b"    Dangerous: should be used only for testing the replication subsystem.",
    b"CONFIG-REWRITE-FORCE-ALL",
    b"    Like CONFIG REWRITE but writes all configuration options, including",
    b"    keywords not listed in original configuration file or default values.",
    b"DIGEST",
    b"    Output a hex signature representing the current DB content.",
    b"DIGEST-VALUE <key> [<key> ...]",
    b"    Output a hex signature of the values of all the specified keys.",
    b"ERROR <string>",
    b"    Return a RESP protocol error with <string> as message. Useful for clients",
    b"    unit tests to simulate error replies.",
    b"LEAK <string>",
    b"    Create a memory leak of the input string.",
    b"LOG <message>",
    b"    Write <message> to the server log.",
    b"LOADAOF",
    b"    Flush the AOF buffers on disk and reload the AOF in memory.",
    b"REPLICATE <string>",
    b"    Replicates the provided string to replicas, allowing data divergence.",
    b"OBJECT <key> [fast]",
    b"    Show low level info about `key` and associated value.",
    b"    Some fields of the default behavior may be time consuming to fetch,",
    b"    and `fast` can be passed to avoid fetching them.",
    b"PANIC",
    b"    Crash the server simulating a panic.",
    b"POPULATE <count> [<prefix>] [<size>]",
    b"    Create <count> string keys named key:<num>. If <prefix> is specified then",
    b"    it is used instead of the 'key' prefix. These are not propagated to",
    b"    replicas. Cluster slots are not respected so keys not belonging to the",
    b"    current node can be created in cluster mode.",
    b"PROTOCOL <type>",
    b"    Reply with a test value of the specified type. <type> can be: string,",
    b"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
    b"    true, false.",
    b"RELOAD [option ...]",
    b"    Save the RDB on disk and reload it back to memory. Valid <option> values:",
    b"    * MERGE: conflicting keys will be loaded from RDB.",
    b"    * NOFLUSH: the existing database will not be removed before load, but",
    b"      conflicting keys will generate an exception and kill the server.",
    b"    * NOSAVE: the database will be loaded from an existing RDB file.",
    b"    Examples:",
    b"    * DEBUG RELOAD: verify that the server is able to persist, flush and reload",
    b"      the database.",
    b"    * DEBUG RELOAD NOSAVE: replace the current database with the contents of an",
    b"      existing RDB file.",
    b"    * DEBUG RELOAD NOSAVE NOFLUSH MERGE: add the contents of an existing RDB",
    b"      file to the database.",
    b"SEGFAULT",
    b"    Crash the server with sigsegv.",
    b"SET-ACTIVE-EXPIRE <0|1>",
    b"    Setting it to 0 disables expiring keys in background when they are not",
    b"    accessed (otherwise the behavior). Setting it to 1 reenables back the",
    b"    default.",
    b"QUICKLIST-PACKED-THRESHOLD <size>",
    b"    Sets the threshold for elements to be inserted as plain vs packed nodes",
    b"    Default value is 1GB, allows values up to 4GB. Setting to 0 restores to default.",
    b"SET-SKIP-CHECKSUM-VALIDATION <0|1>",
    b"    Enables or disables checksum checks for RDB files and RESTORE's payload.",
    b"SLEEP <seconds>",
    b"    Stop the server for <seconds>. Decimals allowed.",
    b"LISTPACK <key>",
    b"    Show low level info about the listpack encoding of <key>.",
    b"QUICKLIST <key> [<0|1>]",
    b"    Show low level info about the quicklist encoding of <key>.",
    b"    The optional argument (0 by default) sets the level of detail",
    b"PAUSE-CRON <0|1>",
    b"    Stop periodic cron job processing.",
    b"REPLYBUFFER PEAK-RESET-TIME <NEVER||RESET|time>",
    b"    Sets the time (in milliseconds) to wait between client reply buffer peak resets.",
    b"    In case NEVER is provided the last observed peak will never be reset",
    b"    In case RESET is provided the peak reset time will be restored to the default value",
    b"REPLYBUFFER RESIZING <0|1>",
    b"    Enable or disable the reply buffer resize cron job",
    b"DICT-RESIZING <0|1>",
    b"    Enable or disable the main dict and expire dict resizing.",
    b"HASHTABLE-CAN-ABORT-SHRINK <0|1>",
    b"    Enable or disable the hashtable shrink abort.",
    b"SET-DISABLE-DENY-SCRIPTS <0|1>",
    b"    Allow scripts to call commands that are denied to them (noscript).",
    b"HELP",
    b"    Print this help.",
)


def _help(c: Client, argv: list[bytes]) -> bytes:
    return array([status(line) for line in _HELP])


Handler = Callable[["Client", list[bytes]], bytes]

# name: (least argument count, most (-1: any), handler), counting DEBUG and the name.
SUBCOMMANDS: Final[dict[bytes, tuple[int, int, Handler]]] = {
    b"help": (2, 2, _help),
    b"segfault": (2, -1, _segfault),
    b"panic": (2, -1, _panic),
    b"assert": (2, -1, _assert),
    b"log": (3, 3, _log),
    b"leak": (3, 3, _ok),  # nothing to leak: memory here is the collector's
    b"reload": (2, -1, _reload),
    b"loadaof": (2, -1, _loadaof),
    b"object": (3, 4, _object),
    b"listpack": (3, 3, _listpack),
    b"quicklist": (3, 4, _quicklist),
    b"populate": (3, 5, _populate),
    b"digest": (2, 2, _digest),
    b"digest-value": (2, -1, _digest_values),
    b"protocol": (3, 3, _protocol),
    b"sleep": (3, 3, _sleep),
    b"set-active-expire": (3, 3, _set_active_expire),
    b"quicklist-packed-threshold": (3, 3, _packed_threshold),
    b"set-skip-checksum-validation": (3, 3, _skip_checksum),
    b"aof-flush-sleep": (3, 3, _aof_flush_sleep),
    b"replicate": (3, -1, _ok),  # no replicas to feed
    b"error": (3, 3, _error),
    b"change-repl-id": (2, 2, _change_repl_id),
    b"set-disable-deny-scripts": (3, 3, _disable_deny_scripts),
    b"pause-cron": (3, 3, _pause_cron),
    b"replybuffer": (4, 4, _replybuffer),
    b"dict-resizing": (3, 3, _ok),
    b"hashtable-can-abort-shrink": (3, 3, _ok),
    b"config-rewrite-force-all": (2, 2, _config_rewrite_force_all),
}


def _unknown(argv: list[bytes]) -> CommandError:
    return CommandError(b"ERR unknown subcommand or wrong number of arguments for '%s'. Try DEBUG HELP."
                        % argv[1][:128])


def debug(c: Client, argv: list[bytes]) -> bytes:
    allowed = c.server.config.values.get("enable-debug-command", "no")
    if allowed == "no" or (allowed == "local" and not local_client(c)):
        raise CommandError(_DEBUG_OFF)
    row = SUBCOMMANDS.get(argv[1].lower())
    if row is None:
        raise _unknown(argv)
    least, most, handler = row
    if len(argv) < least or (most >= 0 and len(argv) > most):
        raise _unknown(argv)
    return handler(c, argv)
