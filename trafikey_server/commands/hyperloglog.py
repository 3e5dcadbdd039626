"""HyperLogLog commands, as Valkey's hyperloglog.c answers them.

An HLL is a string holding Valkey's bytes (``values/hyperloglog.py``). A command
that edits one first makes the stored value a ``bytearray`` (Valkey edits a
raw copy: dbUnshareStringValue), then edits it in place.

What reaches the append-only file is what Valkey propagates: a command is
logged as sent when it changed the data (``server.dirty``). PFADD that
raised no register logs nothing; PFCOUNT, a read, is logged when it wrote
a fresh cached cardinality into the value; PFDEBUG GETREG and TODENSE when
they turned a sparse value dense. The last two are logged from here, their
rules logging nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..execution.persist.aof import propagate
from ..protocol.args import error_text, word
from ..protocol.resp import OK, ONE, ZERO, bulk, integer
from ..util.errors import CommandError, wrongtype
from ..values import hyperloglog as hll
from ..values.hyperloglog import DENSE, REGISTERS, SPARSE

if TYPE_CHECKING:
    from ..services.client import Client


def _invalid() -> CommandError:
    return CommandError(hll.INVALID_MSG)

_REG_REPLY: Final = [b":%d\r\n" % i for i in range(256)]


def _hll(v: object) -> bytes | bytearray:
    """isHLLObjectOrReply: a string that holds an HLL, or the refusal."""
    t = type(v)
    if t is not bytes and t is not bytearray:
        raise wrongtype()
    if not hll.is_hll(v):  # type: ignore[arg-type]
        raise CommandError(hll.NOT_HLL_MSG)
    return v  # type: ignore[return-value]


def _editable(c: Client, key: bytes, v: bytes | bytearray) -> bytearray:
    if type(v) is bytearray:
        return v
    b = bytearray(v)
    c.db.replace(key, b)
    return b


def _max_bytes(c: Client) -> int:
    return c.server.hll_sparse_max


def _log(c: Client, argv: list[bytes], close: bool) -> None:
    """The command as sent goes to the append-only file (``close`` for a
    command dispatch does not log: the unit is closed here)."""
    propagate(c, [argv])
    aof = c.server.aof
    if close and aof is not None and aof.depth == 0:
        aof.close_unit()


_U63: Final = 1 << 63
_U64: Final = 1 << 64


def _signed(card: int) -> int:
    """addReplyLongLong of the unsigned cardinality."""
    return card - _U64 if card >= _U63 else card


def pfadd(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    key = argv[1]
    v = db.get(key)
    if v is None:
        v = hll.new_sparse()
        db.add(key, v)
        updated = 1
    else:
        v = _editable(c, key, _hll(v))
        updated = 0
    n = hll.add(v, argv[2:], _max_bytes(c))
    if n < 0:
        raise _invalid()
    updated += n
    if not updated:
        c.server.dirty -= 1  # dispatch counts one change per write; this made none
        return ZERO
    hll.invalidate(v)
    db.modified(key, b"pfadd")
    c.server.dirty += updated - 1  # Valkey counts each register raised
    return ONE


def pfcount(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    if len(argv) > 2:
        return integer(_union_count(c, argv))
    key = argv[1]
    v = db.get(key)
    if v is None:
        db.notify(b"keymiss", key)
        return ZERO
    v = _editable(c, key, _hll(v))
    card = hll.cached(v)
    if card is None:
        card = hll.count(v)
        if card is None:
            raise _invalid()
        hll.store_card(v, card)
        # A read that wrote the value: Valkey signals the key and counts a
        # change, so the command is propagated as sent.
        db.touch(key)
        c.server.dirty += 1
        _log(c, argv, True)
    return integer(_signed(card))


def _union_count(c: Client, argv: list[bytes]) -> int:
    """PFCOUNT of several keys: the union's estimate, nothing written."""
    db = c.db
    acc: bytes | bytearray | None = None
    for key in argv[1:]:
        v = db.get(key)
        if v is None:
            db.notify(b"keymiss", key)
            continue
        raw = hll.registers(_hll(v))
        if raw is None:
            raise _invalid()
        acc = raw if acc is None else hll.max_into(acc, raw)
    if acc is None:
        return 0
    return _signed(hll.estimate(hll.raw_histogram(acc)))


def pfmerge(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    acc = bytearray(REGISTERS)
    use_dense = False
    for key in argv[1:]:
        v = db.get(key)
        if v is None:
            db.notify(b"keymiss", key)
            continue
        v = _hll(v)
        if v[4] == DENSE:
            use_dense = True
        raw = hll.registers(v)
        if raw is None:
            raise _invalid()
        acc = hll.max_into(acc, raw)
    dest = argv[1]
    v = db.get(dest)
    if v is None:
        v = hll.new_sparse()
        db.add(dest, v)
    else:
        v = _editable(c, dest, v)
    if not hll.merge_into(v, acc, use_dense, _max_bytes(c)):
        raise _invalid()
    db.modified(dest, b"pfadd")  # Valkey's event for a merge too
    return OK


def pfdebug(c: Client, argv: list[bytes]) -> bytes:
    db = c.db
    sub = word(argv[1])
    key = argv[2]
    v = db.get(key)
    if v is None:
        raise CommandError(b"ERR The specified key does not exist")
    v = _editable(c, key, _hll(v))
    if sub == b"getreg" or sub == b"todense":
        converted = v[4] == SPARSE
        if converted:
            if not hll.to_dense(v):
                raise _invalid()
            _log(c, argv, False)  # dispatch closes the unit
        else:
            c.server.dirty -= 1
        if sub == b"todense":
            return ONE if converted else ZERO
        regs = hll.registers(v)
        assert regs is not None
        table = _REG_REPLY
        return b"*%d\r\n" % REGISTERS + b"".join([table[r] for r in regs])
    if sub == b"decode":
        if v[4] != SPARSE:
            raise CommandError(b"ERR HLL encoding is not sparse")
        c.server.dirty -= 1
        return bulk(hll.decode(v))
    if sub == b"encoding":
        c.server.dirty -= 1
        return b"+dense\r\n" if v[4] == DENSE else b"+sparse\r\n"
    raise CommandError(b"ERR Unknown PFDEBUG subcommand '%s'" % error_text(argv[1]))


def pfselftest(c: Client, argv: list[bytes]) -> bytes:
    err = hll.selftest(_max_bytes(c))
    if err is not None:
        raise CommandError(err)
    return OK
