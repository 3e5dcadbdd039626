"""Set commands, as Valkey's t_set.c answers them.

Members and encodings live in ``values/set.py``. Replies list members
in the order the set's encoding gives (numeric for an intset, insertion for
a listpack); a hashtable's order is Valkey's hash table's and cannot match.
A result built by SUNION/SDIFF/SINTER is a new set started as an intset and
filled member by member, so its encoding, and thus its order, moves as
Valkey's does.

A write's side effects are the database's (``Db.notify``, ``Db.modified``,
``Db.members_removed``): each handler names its events in Valkey's order,
and a set its last member left goes with ``del`` after them.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, Final

from ..protocol.resp import EMPTY_ARRAY, ONE, ZERO, array_header, bulk_run, bulks, integer
from ..services.limits import beyond_output_limit
from ..util.errors import CommandError, not_integer, syntax, wrongtype
from ..util.parsing import to_int
from ..util.rand import rng
from ..values.set import (
    HASHTABLE,
    INTSET,
    LISTPACK,
    SetValue,
    add,
    all_ints,
    create,
    limits_of,
    maybe_convert,
    maybe_to_intset,
)
from .hash import EMPTY_SCAN, parse_cursor, parse_scan_options, pattern_matcher

if TYPE_CHECKING:
    from ..services.client import Client

_POSITIVE: Final = b"ERR value is out of range, must be positive"
_LONG_MAX: Final = 2**63 - 1


def _get(c: Client, key: bytes, read: bool = False) -> SetValue | None:
    v = c.db.get(key)
    if v is None:
        if read:
            c.db.notify(b"keymiss", key)
        return None
    if type(v) is not SetValue:
        raise wrongtype()
    return v


def _bulks_set(c: Client, members: list[bytes]) -> bytes:
    return c.r.set_header(len(members)) + bulk_run(members)


def _bulks_array(members: list[bytes]) -> bytes:
    return bulks(members)


def _remove(s: SetValue, m: bytes) -> bool:
    if m in s:
        del s[m]
        return True
    return False


# -- single-key commands ----------------------------------------------------------------


def sadd(c: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    db = c.db
    s = db.get(key)
    if s is not None and type(s) is not SetValue:
        raise wrongtype()
    limits = limits_of(c.server)
    if s is None:
        s = create(argv[2], len(argv) - 2, limits)
        db.add(key, s)
    else:
        maybe_convert(s, len(argv) - 2, limits)
    added = 0
    for m in argv[2:]:
        if add(s, m, limits):
            added += 1
    if added:
        db.modified(key, b"sadd")
    return integer(added)


def srem(c: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    s = _get(c, key)
    if s is None:
        return ZERO
    deleted = 0
    for m in argv[2:]:
        if _remove(s, m):
            deleted += 1
            if not s:
                break  # the last member went: so does the key
    if deleted:
        c.db.members_removed(key, s, b"srem")
    return integer(deleted)


def scard(c: Client, argv: list[bytes]) -> bytes:
    s = _get(c, argv[1], True)
    return ZERO if s is None else integer(len(s))


def sismember(c: Client, argv: list[bytes]) -> bytes:
    s = _get(c, argv[1], True)
    return ONE if s is not None and argv[2] in s else ZERO


def smismember(c: Client, argv: list[bytes]) -> bytes:
    s = _get(c, argv[1], True)
    table = s if s is not None else {}
    return array_header(len(argv) - 2) + b"".join(ONE if m in table else ZERO for m in argv[2:])


def smembers(c: Client, argv: list[bytes]) -> bytes:
    s = _get(c, argv[1], True)
    if s is None:
        return c.r.set_header(0)
    return _bulks_set(c, s.members())


def smove(c: Client, argv: list[bytes]) -> bytes:
    src_key, dst_key, m = argv[1], argv[2], argv[3]
    db = c.db
    src = db.get(src_key)
    dst = db.get(dst_key)
    if src is None:
        return ZERO
    if type(src) is not SetValue or (dst is not None and type(dst) is not SetValue):
        raise wrongtype()
    if src is dst:
        return ONE if m in src else ZERO
    if not _remove(src, m):
        return ZERO
    db.members_removed(src_key, src, b"srem")
    limits = limits_of(c.server)
    if dst is None:
        dst = create(m, 1, limits)
        db.add(dst_key, dst)
    if add(dst, m, limits):
        db.modified(dst_key, b"sadd")
    return ONE


# -- random members ---------------------------------------------------------------------


def spop(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) == 3:
        return _spop_count(c, argv)
    if len(argv) > 3:
        raise syntax()
    key = argv[1]
    db = c.db
    s = _get(c, key)
    if s is None:
        return c.r.null
    m = s.pick(True)
    db.members_removed(key, s, b"spop")
    return b"$%d\r\n%s\r\n" % (len(m), m)


def _spop_count(c: Client, argv: list[bytes]) -> bytes:
    n = to_int(argv[2])
    if n is None or n < 0:
        raise CommandError(_POSITIVE)
    key = argv[1]
    db = c.db
    s = _get(c, key)
    if s is None or n == 0:
        return c.r.set_header(0)
    order = s.members()
    if n >= len(order):
        popped = order
        s.clear()  # all of it: the key goes
    else:
        picked = set(rng.sample(range(len(order)), n))
        popped = [m for i, m in enumerate(order) if i in picked]
        if (len(order) - n) * 5 > n:
            for m in popped:
                del s[m]
        else:
            # Valkey keeps the few that stay in a new set instead, started as
            # an intset when the old one was, else as a listpack: a hashtable
            # can come out of SPOP as a listpack.
            limits = limits_of(c.server)
            kept = SetValue(INTSET if s.enc == INTSET else LISTPACK)
            for i, m in enumerate(order):
                if i not in picked:
                    add(kept, m, limits)
            s.clear()
            s.update(kept)
            s.enc = kept.enc
            s.pool = None
    db.members_removed(key, s, b"spop")
    return _bulks_set(c, popped)


def srandmember(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) > 3:
        raise syntax()
    if len(argv) == 2:
        s = _get(c, argv[1], True)
        if s is None:
            return c.r.null
        m = s.pick(False)
        return b"$%d\r\n%s\r\n" % (len(m), m)
    n = to_int(argv[2])
    if n is None:
        raise not_integer()
    if n < -_LONG_MAX:
        raise CommandError(b"ERR value is out of range, value must between -9223372036854775807 and "
                           b"9223372036854775807")
    s = _get(c, argv[1], True)
    if s is None or n == 0:
        return EMPTY_ARRAY
    if n < 0 and not c.in_script and beyond_output_limit(c, -n, 6):
        return b""  # closed without a reply
    order = s.members()
    if n < 0 or n == 1:
        return _bulks_array([rng.choice(order) for _ in range(abs(n))])
    if n >= len(order):
        return _bulks_array(order)
    picked = set(rng.sample(range(len(order)), n))
    return _bulks_array([m for i, m in enumerate(order) if i in picked])


# -- algebra ----------------------------------------------------------------------------


def _sets(c: Client, keys: list[bytes]) -> list[SetValue | None]:
    """Every input, WRONGTYPE checked in order; a missing key is None."""
    out: list[SetValue | None] = []
    for k in keys:
        out.append(_get(c, k, True))
    return out


def _result(members: list[bytes], limits: tuple[int, int, int], enc: int = INTSET) -> SetValue:
    """A result set built as Valkey builds it: empty in ``enc``, filled in order."""
    r = SetValue(enc)
    for m in members:
        add(r, m, limits)
    return r


def _store(c: Client, dst: bytes, r: SetValue, event: bytes) -> bytes:
    db = c.db
    if r:
        db.store(dst, r, event)
    else:
        db.delete_destination(dst)
    return integer(len(r))


def _smallest_first(sets: list[SetValue]) -> list[SetValue]:
    return sorted(sets, key=len)


def _inter_members(ordered: list[SetValue], limit: int = 0) -> list[bytes]:
    first, rest = ordered[0], [o for o in ordered[1:] if o is not ordered[0]]
    out = []
    for m in first.members():
        if all(m in o for o in rest):
            out.append(m)
            if limit and len(out) >= limit:
                break
    return out


def _sinter(c: Client, keys: list[bytes], dst: bytes | None) -> bytes:
    sets = _sets(c, keys)
    limits = limits_of(c.server)
    if any(s is None for s in sets):
        if dst is not None:
            return _store(c, dst, SetValue(), b"sinterstore")
        return c.r.set_header(0)
    ordered = _smallest_first(sets)  # type: ignore[arg-type]
    members = _inter_members(ordered)
    if dst is None:
        # Unlike SUNION and SDIFF, SINTER replies as it walks the smallest set.
        return _bulks_set(c, members)
    # The result starts as an intset when the smallest input is one, else
    # as a listpack, and becomes an intset if every member is an integer.
    r = _result(members, limits, INTSET if ordered[0].enc == INTSET else LISTPACK)
    if all_ints(r):
        maybe_to_intset(r, limits)
    return _store(c, dst, r, b"sinterstore")


def sinter(c: Client, argv: list[bytes]) -> bytes:
    return _sinter(c, argv[1:], None)


def sinterstore(c: Client, argv: list[bytes]) -> bytes:
    return _sinter(c, argv[2:], argv[1])


def sintercard(c: Client, argv: list[bytes]) -> bytes:
    n = to_int(argv[1])
    if n is None or n <= 0:
        raise CommandError(b"ERR numkeys should be greater than 0")
    if n > len(argv) - 2:
        raise CommandError(b"ERR Number of keys can't be greater than number of args")
    keys = argv[2:2 + n]
    limit = 0
    i = 2 + n
    while i < len(argv):
        if argv[i].lower() == b"limit" and i + 1 < len(argv):
            v = to_int(argv[i + 1])
            if v is None or v < 0:
                raise CommandError(b"ERR LIMIT can't be negative")
            limit = v
            i += 2
        else:
            raise syntax()
    sets = _sets(c, keys)
    if any(s is None for s in sets):
        return ZERO
    return integer(len(_inter_members(_smallest_first(sets), limit)))  # type: ignore[arg-type]


def _sunion_diff(c: Client, keys: list[bytes], dst: bytes | None, diff: bool) -> bytes:
    sets = _sets(c, keys)
    limits = limits_of(c.server)
    # Without a destination, any input that is not an intset makes the
    # result a hashtable (whose order in Valkey is its hash table's).
    enc = INTSET
    if dst is None and any(s is not None and s.enc != INTSET for s in sets):
        enc = HASHTABLE
    r = SetValue(enc)
    first = sets[0]
    if not diff:
        for s in sets:
            if s is not None:
                for m in s.members():
                    add(r, m, limits)
    elif first is not None and not any(s is first for s in sets[1:]):
        present = [s for s in sets[1:] if s is not None]
        one = len(first) * (1 + len(present)) // 2
        two = len(first) + sum(len(s) for s in present)
        if one <= two:
            # Valkey's first way: each member of the first set, checked
            # against the others (largest first).
            present.sort(key=len, reverse=True)
            for m in first.members():
                if not any(m in o for o in present):
                    add(r, m, limits)
        else:
            # The second: all of the first set, then the others removed.
            for m in first.members():
                add(r, m, limits)
            for o in present:
                for m in o.members():
                    r.pop(m, None)
                if not r:
                    break
    if dst is not None:
        return _store(c, dst, r, b"sdiffstore" if diff else b"sunionstore")
    return _bulks_set(c, r.members())


def sunion(c: Client, argv: list[bytes]) -> bytes:
    return _sunion_diff(c, argv[1:], None, False)


def sunionstore(c: Client, argv: list[bytes]) -> bytes:
    return _sunion_diff(c, argv[2:], argv[1], False)


def sdiff(c: Client, argv: list[bytes]) -> bytes:
    return _sunion_diff(c, argv[1:], None, True)


def sdiffstore(c: Client, argv: list[bytes]) -> bytes:
    return _sunion_diff(c, argv[2:], argv[1], True)


def sscan(c: Client, argv: list[bytes]) -> bytes:
    cursor = parse_cursor(argv[2])
    s = _get(c, argv[1], True)
    if s is None:
        return EMPTY_SCAN
    count, pattern, _ = parse_scan_options(argv, b"set")
    match = pattern_matcher(pattern)
    if s.enc != HASHTABLE:
        # An intset or a listpack is returned whole in one call, cursor 0.
        chosen = s.members()
        nxt = 0
    else:
        # A position in insertion order, as HSCAN's cursor on a hashtable.
        stop = cursor + count
        chosen = list(islice(s, cursor, stop))
        nxt = stop if stop < len(s) else 0
    items = [m for m in chosen if match is None or match(m)]
    cur = b"%d" % nxt
    return b"*2\r\n$%d\r\n%s\r\n" % (len(cur), cur) + _bulks_array(items)
