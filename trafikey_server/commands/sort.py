"""SORT and SORT_RO, as Valkey's sort.c answers them.

The options are read left to right as Valkey reads them: each word is
matched only when enough arguments follow it (else it is a syntax error),
BY and GET are refused on the spot under cluster slot checks or limited
key permissions, and the key's type is checked only after all of that.

What is sorted, and by what, follows sortCompare: numbers read as Valkey
reads a score, up to a NUL (ties broken by comparing the elements' bytes), or with ALPHA the bytes,
compared as ``strcoll`` compares C strings (up to a NUL; the C locale's
order is the bytes') unless STORE is given, when whole values are
compared. Equal weights under ALPHA keep the order the elements were
loaded in, as glibc's merge-sort ``qsort`` keeps them.

BY a pattern without ``*`` (``nosort``) sorts nothing: a list or sorted
set answers in its own order (DESC walks it backwards, LIMIT picks the
range). A set has no order a replica or a script could reproduce, so with
STORE or inside a script it is sorted with ALPHA instead.

Every lookup through a BY or GET pattern is a read of the keyspace: a
missing key raises ``keymiss`` and an expired one is removed, as Valkey's
lookupKeyRead does. SORT on a sorted set leaves it in the skiplist
encoding (Valkey converts it before reading it), SORT_RO included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING

from ..execution.persist.aof import propagate
from ..protocol.args import cstr, word
from ..protocol.resp import array_header, integer
from ..services.acl import READ
from ..util.errors import CommandError, not_integer, syntax, wrongtype
from ..util.floats import parse_double
from ..util.parsing import to_int
from ..util.pqsort import pqsort
from ..util.slots import keyslot, pattern_slot
from ..values.hash import Hash
from ..values.list import List, loaded
from ..values.set import SetValue
from ..values.zset import ZSet

if TYPE_CHECKING:
    from ..keyspace.db import Db
    from ..services.client import Client

_BY_CLUSTER = (b"ERR BY option of SORT denied in Cluster mode when keys formed by the pattern may be "
               b"in different slots.")
_GET_CLUSTER = (b"ERR GET option of SORT denied in Cluster mode when keys formed by the pattern may be "
                b"in different slots.")
_BY_ACL = b"ERR BY option of SORT denied due to insufficient ACL permissions."
_GET_ACL = b"ERR GET option of SORT denied due to insufficient ACL permissions."
_NOT_DOUBLE = b"ERR One or more scores can't be converted into double"


def _weight(b: bytes) -> float | None:
    """A numeric weight as SORT reads it: Valkey's strtod (fast_float)
    over the C string, which must consume all of it, without a range error
    and not NaN; None when Valkey refuses it. That is a score's syntax
    (no spaces, no hex, not empty), cut at the first NUL."""
    s = cstr(b)
    if s.isdigit() and len(s) < 16:
        return float(int(s))
    return parse_double(s)


def _lookup(db: Db, pattern: bytes, subst: bytes) -> bytes | None:
    """lookupKeyByPattern: ``#`` is the element itself; otherwise the
    first ``*`` takes the element, and a ``->field`` after it (with
    something after the arrow) reads that field of a hash instead of a
    string. A pattern without ``*`` names no key."""
    if pattern[:1] == b"#" and (len(pattern) == 1 or pattern[1] == 0):
        return subst
    c = cstr(pattern)
    star = c.find(b"*")
    if star < 0:
        return None
    arrow = c.find(b"->", star + 1)
    field: bytes | None = None
    tail = pattern[star + 1:]
    if arrow >= 0 and arrow + 2 < len(c):
        field = pattern[arrow + 2:]
        tail = pattern[star + 1:arrow]
    key = pattern[:star] + subst + tail
    v = db.get(key)
    if v is None:
        db.notify(b"keymiss", key)
        return None
    if field is not None:
        if type(v) is not Hash:
            return None
        f = v.get(field) if v.ttl is None else v.live_get(field, db.clock.ms())
        return None if f is None else bytes(f)
    t = type(v)
    if t is bytes:
        return v
    if t is bytearray:
        return bytes(v)
    return None


def _full_key_access(c: Client, argv: list[bytes]) -> bool:
    """Whether the client may read every key for this SORT (BY and GET
    read keys built from patterns)."""
    user = c.acl
    if user.unrestricted:
        return True
    cmd = c.server.table.lookup(argv[0])
    return cmd is not None and user.full_key_access(cmd, argv, READ)


def sort(c: Client, argv: list[bytes]) -> bytes:
    return _apply(c, argv, parse_sort(c, argv, False))


def sort_ro(c: Client, argv: list[bytes]) -> bytes:
    return _apply(c, argv, parse_sort(c, argv, True))


def _limit(b: bytes) -> int:
    v = to_int(b)
    if v is None:
        raise not_integer()
    return v


@dataclass(slots=True)
class SortOptions:
    """SORT's options as parse_sort read them."""

    desc: bool = False
    alpha: bool = False
    # BY a pattern without ``*``: nothing is sorted (and it sticks).
    dontsort: bool = False
    limit_start: int = 0
    limit_count: int = -1
    by: bytes | None = None
    store: bytes | None = None
    gets: list[bytes] = field(default_factory=list)
    # SORT_RO: STORE is not an option.
    readonly: bool = False


def parse_sort(c: Client, argv: list[bytes], readonly: bool) -> SortOptions:
    """The options after the key, read left to right as Valkey's
    sortCommandGeneric reads them, each error raised where Valkey raises it:
    a word without the arguments it takes is a syntax error, BY and GET are
    refused on the spot under cluster slot checks or limited key
    permissions. The key itself is not read here."""
    o = SortOptions(readonly=readonly)
    full_access = _full_key_access(c, argv)
    slot_checks = c.server.slot_checks
    n = len(argv)
    j = 2
    while j < n:
        w = word(argv[j])
        left = n - j - 1
        if w == b"asc":
            o.desc = False
        elif w == b"desc":
            o.desc = True
        elif w == b"alpha":
            o.alpha = True
        elif w == b"limit" and left >= 2:
            o.limit_start = _limit(argv[j + 1])
            o.limit_count = _limit(argv[j + 2])
            j += 2
        elif not readonly and w == b"store" and left >= 1:
            o.store = argv[j + 1]
            j += 1
        elif w == b"by" and left >= 1:
            by = o.by = argv[j + 1]
            if b"*" not in cstr(by):
                o.dontsort = True  # a constant weight: nothing to sort (and it sticks)
            else:
                if slot_checks and pattern_slot(by) != keyslot(argv[1]):
                    raise CommandError(_BY_CLUSTER)
                if not full_access:
                    raise CommandError(_BY_ACL)
            j += 1
        elif w == b"get" and left >= 1:
            pat = argv[j + 1]
            if (slot_checks and not (pat[:1] == b"#" and (len(pat) == 1 or pat[1] == 0))
                    and pattern_slot(pat) != keyslot(argv[1])):
                raise CommandError(_GET_CLUSTER)
            if not full_access:
                raise CommandError(_GET_ACL)
            o.gets.append(pat)
            j += 1
        else:
            raise syntax()
        j += 1
    return o


def _apply(c: Client, argv: list[bytes], o: SortOptions) -> bytes:
    """SORT with its options read: the key's type checked, the range
    picked, the elements ordered, then answered or stored."""
    db = c.db
    key = argv[1]
    v = db.get(key)
    if v is None:
        db.notify(b"keymiss", key)
        v = List()
    else:
        t = type(v)
        if t is not List and t is not SetValue and t is not ZSet:
            raise wrongtype()
    if o.dontsort and type(v) is SetValue and (o.store is not None or c.in_script):
        # No order a replica or a script could repeat: sort by the members.
        o.dontsort = False
        o.alpha = True
        o.by = None
    if type(v) is ZSet:
        v.big = True  # zsetConvert(SKIPLIST), before anything is read
    elements, start, end = _elements(v, o)
    bad_weight = False if o.dontsort else _order(db, elements, o, start, end)
    span = end - start + 1
    outputlen = len(o.gets) * span if o.gets else span
    if bad_weight:
        raise CommandError(_NOT_DOUBLE)
    picked = elements[start:end + 1] if span > 0 else []
    if o.store is None:
        if not o.readonly:
            # Dispatch counts each write command as one change (Valkey's
            # server.dirty); a SORT that stores nothing changes nothing.
            c.server.dirty -= 1
        return _reply(c, o, picked, outputlen)
    return _store(c, argv, o.store, _items(db, o, picked), outputlen)


def _elements(v: List | SetValue | ZSet, o: SortOptions) -> tuple[list[bytes], int, int]:
    """The elements to order and the range of them LIMIT picks (start and
    end, Valkey's clamping): with nothing to sort, a list or sorted set
    reads just that range in its own order."""
    desc = o.desc
    size = len(v)
    start = min(max(o.limit_start, 0), size)
    limit_count = min(max(o.limit_count, -1), size)
    end = size - 1 if limit_count < 0 else start + limit_count - 1
    if start >= size:
        start = size - 1
        end = size - 2
    if end >= size:
        end = size - 1

    elements: list[bytes]
    if o.dontsort and type(v) is not SetValue:
        # A list or sorted set read in its own order, just the range.
        count = end - start + 1
        if count > 0:
            if type(v) is List:
                elements = list(islice(reversed(v) if desc else v, start, start + count))
            else:
                assert isinstance(v, ZSet)
                if desc:
                    pairs = v.items(size - start - count, size - start, True)
                else:
                    pairs = v.items(start, start + count)
                elements = [m for _, m in pairs]
        else:
            elements = []
        if count > 0 or type(v) is ZSet:
            end -= start
            start = 0
    elif type(v) is List:
        elements = list(v)
    elif type(v) is SetValue:
        elements = v.members()
    else:
        assert isinstance(v, ZSet)
        elements = list(v.scores)
    return elements, start, end


def _order(db: Db, elements: list[bytes], o: SortOptions, start: int, end: int) -> bool:
    """Sort elements in place as sortCompare orders them; True when a
    weight did not read as a number (Valkey sorts, then refuses)."""
    desc, by = o.desc, o.by
    if o.alpha:
        storing = o.store is not None
        if by is not None:
            weights = [_lookup(db, by, e) for e in elements]
            if not storing:
                weights = [None if w is None else cstr(w) for w in weights]
            keyed = [((0, b"") if w is None else (1, w), e) for w, e in zip(weights, elements, strict=True)]
            if start != 0 or end != len(keyed) - 1:
                # Equal weights are possible here and Valkey's partial
                # quicksort leaves them in its own order: run the same.
                sign = -1 if desc else 1

                def cmp(x: tuple[tuple[int, bytes], bytes], y: tuple[tuple[int, bytes], bytes]) -> int:
                    a, b = x[0], y[0]
                    return 0 if a == b else (sign if a > b else -sign)

                pqsort(keyed, cmp, start, end)
            else:
                keyed.sort(key=lambda p: p[0], reverse=desc)
            elements[:] = [e for _, e in keyed]
        elif storing:
            elements.sort(reverse=desc)
        else:
            elements.sort(key=cstr, reverse=desc)
        return False
    bad_weight = False
    scored: list[tuple[float, bytes]] = []
    for e in elements:
        if by is not None:
            wv = _lookup(db, by, e)
            if wv is None:
                scored.append((0.0, e))
                continue
        else:
            wv = e
        x = _weight(wv)
        if x is None:
            bad_weight = True
            x = 0.0
        scored.append((x, e))
    scored.sort(reverse=desc)
    elements[:] = [e for _, e in scored]
    return bad_weight


def _reply(c: Client, o: SortOptions, picked: list[bytes], outputlen: int) -> bytes:
    """The picked elements, or what each GET pattern finds for them."""
    db = c.db
    gets = o.gets
    out = [array_header(outputlen)]
    null = c.r.null
    for e in picked:
        if not gets:
            out.append(b"$%d\r\n%s\r\n" % (len(e), e))
        for pat in gets:
            val = _lookup(db, pat, e)
            out.append(null if val is None else b"$%d\r\n%s\r\n" % (len(val), val))
    return b"".join(out)


def _items(db: Db, o: SortOptions, picked: list[bytes]) -> list[bytes]:
    """What STORE writes: the picked elements, or what each GET pattern
    finds for them (a miss stores an empty string)."""
    gets = o.gets
    items: list[bytes] = []
    for e in picked:
        if not gets:
            items.append(e)
        for pat in gets:
            val = _lookup(db, pat, e)
            items.append(b"" if val is None else val)
    return items


def _store(c: Client, argv: list[bytes], store: bytes, items: list[bytes], outputlen: int) -> bytes:
    """STORE: the list written in place of the destination (deleted when
    empty), then the command logged if it changed the keyspace."""
    db = c.db
    if outputlen:
        c.server.dirty += outputlen - 1  # Valkey counts each element stored
        lst = loaded(items, c.server.list_limits[0])
        db.store(store, lst, b"sortstore")
    elif not db.delete_destination(store):
        c.server.dirty -= 1
        return integer(0)  # nothing changed: nothing to log
    # Logged as sent, and only when it changed the keyspace (Valkey
    # propagates a command whose call made the dataset dirty); its rule
    # logs nothing, so a SORT without STORE never reaches the log.
    propagate(c, [argv])
    return integer(outputlen)
