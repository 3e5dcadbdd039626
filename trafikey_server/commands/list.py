"""List commands: pushes, pops, ranges, LINSERT/LREM/LTRIM/LPOS, the moves,
LMPOP and the blocking pops.

The rules, the order in which arguments are checked (it decides which error
a bad request gets), the keyspace events and the replies are Valkey 9's
``t_list.c``. A list is a ``List`` (``values/list.py``); its encoding
moves to quicklist before a write would pass ``list-max-listpack-size`` and
back after a removal leaves it at half of it, as Valkey's
listTypeTryConversion does.

The blocking forms park the client through ``services/blocking.py`` when
every key is empty; the request runs again once a push makes one ready, so
a served BLPOP is exactly an LPOP of its first non-empty key.

A write's side effects are the database's (``Db.notify``, ``Db.modified``,
``Db.members_removed``): each handler names its events in Valkey's order,
and a list its last element left goes with ``del`` after them.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice
from typing import TYPE_CHECKING, Final

from ..protocol.args import mpop_args, word
from ..protocol.resp import EMPTY_ARRAY, OK, ZERO, array_header, bulk, bulks, integer
from ..services.blocking import may_block, parse_timeout
from ..util.errors import CommandError, syntax, wrong_args, wrongtype
from ..util.parsing import index_span, parse_int, to_int
from ..values.list import List, entry_size, grow, shrink

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..services.client import Client

_LONG_MAX: Final = (1 << 63) - 1
_RANGE_MSG: Final = b"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
_NO_SUCH_KEY: Final = CommandError(b"ERR no such key")
_OUT_OF_RANGE: Final = b"ERR index out of range"
_RANK_ZERO: Final = (b"ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... "
              b"or use negative to start from the end of the list")
HEAD, TAIL = 0, 1


def _get(db: Db, key: bytes) -> List | None:
    v = db.get(key)
    if v is None or type(v) is List:
        return v
    raise wrongtype()


def _ranged(b: bytes, lo: int, hi: int, msg: bytes | None) -> int:
    """getRangeLongFromObjectOrReply: msg (when given) answers both a
    non-integer and a value out of [lo, hi]."""
    v = to_int(b)
    if v is None:
        raise CommandError(msg or b"ERR value is not an integer or out of range")
    if v < lo or v > hi:
        raise CommandError(msg or b"ERR value is out of range, value must between %d and %d" % (lo, hi))
    return v


def _positive(b: bytes, msg: bytes | None = None) -> int:
    return _ranged(b, 0, _LONG_MAX, msg or b"ERR value is out of range, must be positive")


def _fill(c: Client) -> int:
    return c.server.list_limits[0]


def _where(arg: bytes) -> int:
    w = word(arg)
    if w == b"left":
        return HEAD
    if w == b"right":
        return TAIL
    raise syntax()


# The events of a push and of a pop, by end (HEAD, TAIL).
# Variable-length tuple types: a fixed-length Final tuple is a C struct when
# compiled, and indexing it by a variable builds a Python tuple every time.
_PUSHED: Final[tuple[bytes, ...]] = (b"lpush", b"rpush")
_POPPED: Final[tuple[bytes, ...]] = (b"lpop", b"rpop")


def _removed(c: Client, key: bytes, lst: List, event: bytes) -> None:
    """listElementsRemoved: a list left smaller may convert back to
    listpack; then the event, and an empty list's key goes with ``del``."""
    if lst:
        shrink(lst, _fill(c))
    c.db.members_removed(key, lst, event)


def _span(n: int, start: int, end: int) -> tuple[int, int]:
    """A [start, end] request as Valkey clamps it: (first index, count)."""
    first, stop = index_span(n, start, end)
    return first, stop - first


def _range(lst: List, start: int, count: int) -> list[bytes]:
    n = len(lst)
    if start > n // 2:  # walk from the nearer end
        out = list(islice(reversed(lst), n - start - count, n - start))
        out.reverse()
        return out
    return list(islice(lst, start, start + count))


# -- pushes -------------------------------------------------------------------


def lpush(c: Client, argv: list[bytes]) -> bytes:
    return _push(c, argv, HEAD, False)


def rpush(c: Client, argv: list[bytes]) -> bytes:
    return _push(c, argv, TAIL, False)


def lpushx(c: Client, argv: list[bytes]) -> bytes:
    return _push(c, argv, HEAD, True)


def rpushx(c: Client, argv: list[bytes]) -> bytes:
    return _push(c, argv, TAIL, True)


def _push(c: Client, argv: list[bytes], where: int, xx: bool) -> bytes:
    key = argv[1]
    db = c.db
    lst = _get(db, key)
    items = argv[2:]
    if lst is None:
        if xx:
            return ZERO
        lst = List()
        db.add(key, lst)
    grow(lst, _fill(c), items, len(items))
    lst.push(items, where == HEAD)
    db.modified(key, _PUSHED[where])
    return integer(len(lst))


# -- reads --------------------------------------------------------------------


def llen(c: Client, argv: list[bytes]) -> bytes:
    lst = _get(c.db, argv[1])
    if lst is None:
        c.db.notify(b"keymiss", argv[1])
        return ZERO
    return integer(len(lst))


def lindex(c: Client, argv: list[bytes]) -> bytes:
    lst = _get(c.db, argv[1])
    if lst is None:
        c.db.notify(b"keymiss", argv[1])
        return c.r.null
    i = parse_int(argv[2])
    n = len(lst)
    if i < 0:
        i += n
    if 0 <= i < n:
        return bulk(lst[i])
    return c.r.null


def lrange(c: Client, argv: list[bytes]) -> bytes:
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    lst = _get(c.db, argv[1])
    if lst is None:
        c.db.notify(b"keymiss", argv[1])
        return EMPTY_ARRAY
    first, count = _span(len(lst), start, end)
    if not count:
        return EMPTY_ARRAY
    return bulks(_range(lst, first, count))


def lpos(c: Client, argv: list[bytes]) -> bytes:
    ele = argv[2]
    rank, count, maxlen = 1, -1, 0
    n = len(argv)
    j = 3
    while j < n:
        opt = word(argv[j])
        more = n - 1 - j
        if opt == b"rank" and more:
            j += 1
            rank = _ranged(argv[j], -_LONG_MAX, _LONG_MAX, None)
            if rank == 0:
                raise CommandError(_RANK_ZERO)
        elif opt == b"count" and more:
            j += 1
            count = _positive(argv[j], b"ERR COUNT can't be negative")
        elif opt == b"maxlen" and more:
            j += 1
            maxlen = _positive(argv[j], b"ERR MAXLEN can't be negative")
        else:
            raise syntax()
        j += 1
    lst = _get(c.db, argv[1])
    if lst is None:
        c.db.notify(b"keymiss", argv[1])
        return EMPTY_ARRAY if count != -1 else c.r.null
    size = len(lst)
    forward = rank > 0
    rank = abs(rank)
    it: Iterable[bytes] = lst if forward else reversed(lst)
    if maxlen:
        it = islice(it, maxlen)
    found: list[int] = []
    matches = 0
    for idx, e in enumerate(it):
        if e == ele:
            matches += 1
            if matches >= rank:
                found.append(idx if forward else size - idx - 1)
                if count == -1 or (count and matches - rank + 1 >= count):
                    break
    if count == -1:
        return integer(found[0]) if found else c.r.null
    return array_header(len(found)) + b"".join(integer(i) for i in found)


# -- in-place writes -------------------------------------------------------------


def lset(c: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    db = c.db
    lst = _get(db, key)
    if lst is None:
        raise _NO_SUCH_KEY
    i = parse_int(argv[2])
    value = argv[3]
    fill = _fill(c)
    grow(lst, fill, (value,), 1)
    n = len(lst)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise CommandError(_OUT_OF_RANGE)
    old = lst[i]
    lst[i] = value
    lst.replaced_at(i, old, value)
    shrink(lst, fill)
    db.modified(key, b"lset")
    return OK


def linsert(c: Client, argv: list[bytes]) -> bytes:
    w = word(argv[2])
    if w == b"after":
        after = True
    elif w == b"before":
        after = False
    else:
        raise syntax()
    key = argv[1]
    db = c.db
    lst = _get(db, key)
    if lst is None:
        return ZERO
    grow(lst, _fill(c), (argv[4],), 1)
    try:
        i = lst.index(argv[3])
    except ValueError:
        return b":-1\r\n"
    lst.insert(i + 1 if after else i, argv[4])
    lst.inserted_at(i, argv[4])
    db.modified(key, b"linsert")
    return integer(len(lst))


def lrem(c: Client, argv: list[bytes]) -> bytes:
    toremove = _ranged(argv[2], -_LONG_MAX, _LONG_MAX, None)
    key = argv[1]
    db = c.db
    lst = _get(db, key)
    if lst is None:
        return ZERO
    obj = argv[3]
    limit = abs(toremove)
    n = len(lst)
    positions: list[int] = []
    if toremove < 0:
        for i, e in enumerate(reversed(lst)):
            if e == obj:
                positions.append(n - 1 - i)
                if len(positions) == limit:
                    break
        positions.reverse()
    else:
        for i, e in enumerate(lst):
            if e == obj:
                positions.append(i)
                if len(positions) == limit:
                    break
    removed = len(positions)
    if removed:
        gone = set(positions)
        kept = [e for i, e in enumerate(lst) if i not in gone]
        lst.clear()
        lst.extend(kept)
        lst.removed_at(positions, entry_size(obj))
        _removed(c, key, lst, b"lrem")
    return integer(removed)


def ltrim(c: Client, argv: list[bytes]) -> bytes:
    start = parse_int(argv[2])
    end = parse_int(argv[3])
    key = argv[1]
    db = c.db
    lst = _get(db, key)
    if lst is None:
        return OK
    n = len(lst)
    first, count = _span(n, start, end)
    rtrim = n - first - count if count else 0
    ltrim_n = first if count else n
    lst.take(ltrim_n, True)
    lst.take(rtrim, False)
    if ltrim_n + rtrim:
        _removed(c, key, lst, b"ltrim")
    else:
        # Valkey 9.1 emits the event even when nothing went, but a WATCH of
        # the key stays clean then.
        shrink(lst, _fill(c))
        db.notify(b"ltrim", key)
    return OK


# -- pops -----------------------------------------------------------------------


def lpop(c: Client, argv: list[bytes]) -> bytes:
    return _pop(c, argv, HEAD)


def rpop(c: Client, argv: list[bytes]) -> bytes:
    return _pop(c, argv, TAIL)


def _pop(c: Client, argv: list[bytes], where: int) -> bytes:
    n = len(argv)
    if n > 3:
        raise wrong_args(argv[0])
    count = _positive(argv[2]) if n == 3 else -1
    key = argv[1]
    lst = _get(c.db, key)
    if lst is None:
        return c.r.null_array if count != -1 else c.r.null
    if count == 0:
        return EMPTY_ARRAY
    if count == -1:
        out = bulk(lst.take(1, where == HEAD)[0])
    else:
        out = bulks(_take(lst, where, count))
    _removed(c, key, lst, _POPPED[where])
    return out


def _take(lst: List, where: int, count: int) -> list[bytes]:
    return lst.take(min(count, len(lst)), where == HEAD)


def _pop_with_key(c: Client, key: bytes, lst: List, where: int, count: int) -> bytes:
    """listPopRangeAndReplyWithKey: [key, [elements]]."""
    items = _take(lst, where, count)
    out = b"*2\r\n" + bulk(key) + bulks(items)
    _removed(c, key, lst, _POPPED[where])
    return out


def _mpop_args(argv: list[bytes], numkeys_at: int) -> tuple[list[bytes], int, int]:
    keys, right, count = mpop_args(argv, numkeys_at, (b"left", b"right"))
    return keys, TAIL if right else HEAD, count


def lmpop(c: Client, argv: list[bytes]) -> bytes:
    keys, where, count = _mpop_args(argv, 1)
    db = c.db
    for key in keys:
        lst = _get(db, key)
        if lst:
            return _pop_with_key(c, key, lst, where, count)
    return c.r.null_array


# -- moves --------------------------------------------------------------------


def lmove(c: Client, argv: list[bytes]) -> bytes:
    src = _where(argv[3])
    dst = _where(argv[4])
    return _move(c, argv[1], argv[2], src, dst)


def rpoplpush(c: Client, argv: list[bytes]) -> bytes:
    return _move(c, argv[1], argv[2], TAIL, HEAD)


def _move(c: Client, skey: bytes, dkey: bytes, wherefrom: int, whereto: int) -> bytes:
    """lmoveGenericCommand: pop from the source, push to the destination
    (its events first), then the source's pop event and deletion."""
    db = c.db
    slst = _get(db, skey)
    if slst is None:
        return c.r.null
    dlst = _get(db, dkey)
    value = slst.take(1, wherefrom == HEAD)[0]
    if dlst is None:
        dlst = List()
        db.add(dkey, dlst)
    grow(dlst, _fill(c), (value,), 1)
    dlst.push([value], whereto == HEAD)
    db.modified(dkey, _PUSHED[whereto])
    _removed(c, skey, slst, _POPPED[wherefrom])
    return bulk(value)


# -- blocking -------------------------------------------------------------------------


def blpop(c: Client, argv: list[bytes]) -> bytes:
    return _bpop(c, argv[1:-1], HEAD, parse_timeout(c, argv[-1]), -1)


def brpop(c: Client, argv: list[bytes]) -> bytes:
    return _bpop(c, argv[1:-1], TAIL, parse_timeout(c, argv[-1]), -1)


def blmpop(c: Client, argv: list[bytes]) -> bytes:
    keys, where, count = _mpop_args(argv, 2)
    return _bpop(c, keys, where, parse_timeout(c, argv[1]), count)


def _bpop(c: Client, keys: list[bytes], where: int, deadline: int, count: int) -> bytes:
    """blockingPopGenericCommand: pop from the first non-empty list, or wait."""
    db = c.db
    for key in keys:
        lst = _get(db, key)
        if lst:
            if count != -1:
                return _pop_with_key(c, key, lst, where, count)
            value = lst.take(1, where == HEAD)[0]
            out = b"*2\r\n" + bulk(key) + bulk(value)
            _removed(c, key, lst, _POPPED[where])
            return out
    if not may_block(c):
        return c.r.null_array
    c.server.blocking.block(c, keys, List, deadline, c.r.null_array)


def blmove(c: Client, argv: list[bytes]) -> bytes:
    src = _where(argv[3])
    dst = _where(argv[4])
    return _bmove(c, argv, src, dst, parse_timeout(c, argv[5]))


def brpoplpush(c: Client, argv: list[bytes]) -> bytes:
    return _bmove(c, argv, TAIL, HEAD, parse_timeout(c, argv[3]))


def _bmove(c: Client, argv: list[bytes], wherefrom: int, whereto: int, deadline: int) -> bytes:
    if _get(c.db, argv[1]) is None:
        if not may_block(c):
            return c.r.null
        # A timeout answers with a null array, as every list block does in
        # Valkey's replyToBlockedClientTimedOut, though the immediate answer
        # above is a null bulk.
        c.server.blocking.block(c, [argv[1]], List, deadline, c.r.null_array)
    return _move(c, argv[1], argv[2], wherefrom, whereto)
