"""Geo commands: positions kept as sorted-set scores (Valkey 9's geo.c).

GEOADD turns each position into its 52-bit geohash score and hands the
request to ZADD, as Valkey does (so its events and its replies are ZADD's,
and the log holds the ZADD). Searches read the nine cells
``util.geohash.search_cells`` picks, each as one score range of the set, in
Valkey's order, so a ``COUNT n ANY`` search stops at the members Valkey stops
at. Arguments are read in ``georadiusGeneric``'s order, which decides the
error a bad request gets.

Distances print with four decimals (``fixedpoint_d2string``) and coordinates
as Valkey's "human" long double (``%.17Lf`` with trailing zeros removed):
a bulk string in RESP2, a double in RESP3.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Final

from ..execution.persist.aof import propagate
from ..protocol.args import error_text, word
from ..protocol.resp import EMPTY_ARRAY, ZERO, array_header, bulk, integer
from ..util.errors import NOT_FLOAT_MSG, CommandError, syntax
from ..util.floats import parse_double
from ..util.geohash import (
    BOX,
    LAT_MAX,
    LAT_MIN,
    LONG_MAX,
    LONG_MIN,
    POLYGON,
    Shape,
    cell_scores,
    decode,
    distance,
    score_of,
    search_cells,
    standard_hash,
)
from ..util.longdouble import format as format_long_double
from ..util.parsing import to_int
from ..util.pqsort import pqsort
from ..values.zset import ZSet
from . import zset as zset_commands

if TYPE_CHECKING:
    from ..services.client import Client

_UNITS: Final = {b"m": 1.0, b"km": 1000.0, b"ft": 0.3048, b"mi": 1609.34}
_UNIT_ERR: Final = b"ERR unsupported unit provided. please use M, KM, FT, MI"


# -- arguments ------------------------------------------------------------------------


def _double(b: bytes, err: bytes = NOT_FLOAT_MSG) -> float:
    v = parse_double(b)
    if v is None or v != v:
        raise CommandError(err)
    return v


def _lon_lat(lon: bytes, lat: bytes) -> tuple[float, float]:
    x = _double(lon)
    y = _double(lat)
    if x < LONG_MIN or x > LONG_MAX or y < LAT_MIN or y > LAT_MAX:
        raise CommandError(b"ERR invalid longitude,latitude pair %f,%f" % (x, y))
    return x, y


def _unit(b: bytes) -> float:
    u = _UNITS.get(word(b))
    if u is None:
        raise CommandError(_UNIT_ERR)
    return u


def _radius(s: Shape, r: bytes, unit: bytes) -> None:
    v = _double(r, b"ERR need numeric radius")
    if v < 0:
        raise CommandError(b"ERR radius cannot be negative")
    s.radius = v
    s.conversion = _unit(unit)


def _box(s: Shape, w: bytes, h: bytes, unit: bytes) -> None:
    width = _double(w, b"ERR need numeric width")
    height = _double(h, b"ERR need numeric height")
    if height < 0 or width < 0:
        raise CommandError(b"ERR height or width cannot be negative")
    s.kind = BOX
    s.width = width
    s.height = height
    s.conversion = _unit(unit)


def _polygon(s: Shape, argv: list[bytes], at: int) -> int:
    """BYPOLYGON's vertex count at ``argv[at]`` and its vertices after it,
    read into the shape (distances in metres); the number of arguments read.
    The count must fit a C int and the arguments left must hold that many
    pairs."""
    n = to_int(argv[at])
    if n is None or not -(2**31) <= n < 2**31:
        raise CommandError(b"ERR invalid number of vertices")
    if n < 3 or (len(argv) - at - 1) // 2 < n:
        raise CommandError(b"ERR GEOSEARCH BYPOLYGON must have at least 3 vertices")
    s.points = [_lon_lat(argv[at + 1 + 2 * k], argv[at + 2 + 2 * k]) for k in range(n)]
    s.kind = POLYGON
    s.conversion = 1.0
    return 1 + 2 * n


def _source(c: Client, key: bytes) -> ZSet | None:
    """lookupKeyRead plus the type check: a miss is a keyspace event."""
    zs = c.db.get_zset(key)
    if zs is None:
        c.db.notify(b"keymiss", key)
    return zs


# -- replies --------------------------------------------------------------------------


_LL_LIMIT_INT: Final = 2**63
_LL_LIMIT: Final = float(_LL_LIMIT_INT)


def _distance_reply(d: float) -> bytes:
    """fixedpoint_d2string(d, 4): the value rounded to ten-thousandths (to
    even on a tie, as llrint), as a bulk in both protocols."""
    if d == 0:
        return b"$6\r\n0.0000\r\n"
    x = d * 10000.0
    # llrint of NaN or of a value past the long long range is LLONG_MIN.
    q = round(x) if x == x and -_LL_LIMIT <= x < _LL_LIMIT else -_LL_LIMIT_INT
    s = b"%s%d.%04d" % (b"-" if q < 0 else b"", abs(q) // 10000, abs(q) % 10000)
    return bulk(s)


def _coord(c: Client, v: float) -> bytes:
    s = format_long_double(Fraction(v))
    return bulk(s) if c.resp == 2 else b",%s\r\n" % s


def _position(c: Client, score: float) -> bytes:
    x, y = decode(score)
    return b"*2\r\n" + _coord(c, x) + _coord(c, y)


# -- GEOADD ---------------------------------------------------------------------------


def geoadd(c: Client, argv: list[bytes]) -> bytes:
    n = len(argv)
    i = 2
    nx = xx = ch = False
    while i < n:
        w = word(argv[i])
        if w == b"nx":
            nx = True
        elif w == b"xx":
            xx = True
        elif w == b"ch":
            ch = True
        else:
            break
        i += 1
    if (n - i) % 3 or (xx and nx) or n == i:
        raise syntax()
    hashes: list[int] = []
    for j in range(i, n, 3):
        x, y = _lon_lat(argv[j], argv[j + 1])
        hashes.append(score_of(x, y))
    members = argv[i + 2 : n : 3]
    # ZADD's writes do the work, and the ZADD they stand for is what is
    # logged, if anything changes. Up to the first change nothing has moved,
    # so the set as it is now answers for every element before it.
    zs = c.db.get_zset(argv[1])
    table = zs.scores if zs is not None else {}
    changes = False
    for k, m in enumerate(members):
        old = table.get(m)
        if old is None:
            if not xx:
                changes = True
                break
        elif not nx and float(hashes[k]) != old:
            changes = True
            break
    flags = (zset_commands.ZADD_NX if nx else 0) | (zset_commands.ZADD_XX if xx else 0) | \
        (zset_commands.ZADD_CH if ch else 0)
    reply = zset_commands.add_scored(c, argv[1], flags, [float(h) for h in hashes], members)
    if not changes:
        c.server.dirty -= 1
    else:
        zargv = [b"ZADD", *argv[1:i]]
        for k, m in enumerate(members):
            zargv.append(b"%d" % hashes[k])
            zargv.append(m)
        propagate(c, [zargv])
    return reply


# -- GEOHASH / GEOPOS / GEODIST -----------------------------------------------------------


def geohash(c: Client, argv: list[bytes]) -> bytes:
    zs = _source(c, argv[1])
    table = zs.scores if zs is not None else {}
    out = [array_header(len(argv) - 2)]
    for m in argv[2:]:
        s = table.get(m)
        out.append(c.r.null if s is None else bulk(standard_hash(s)))
    return b"".join(out)


def geopos(c: Client, argv: list[bytes]) -> bytes:
    zs = _source(c, argv[1])
    table = zs.scores if zs is not None else {}
    out = [array_header(len(argv) - 2)]
    for m in argv[2:]:
        s = table.get(m)
        out.append(c.r.null_array if s is None else _position(c, s))
    return b"".join(out)


def geodist(c: Client, argv: list[bytes]) -> bytes:
    to_meter = 1.0
    if len(argv) == 5:
        to_meter = _unit(argv[4])
    elif len(argv) > 5:
        raise syntax()
    zs = _source(c, argv[1])
    if zs is None:
        return c.r.null
    s1 = zs.scores.get(argv[2])
    s2 = zs.scores.get(argv[3])
    if s1 is None or s2 is None:
        return c.r.null
    x1, y1 = decode(s1)
    x2, y2 = decode(s2)
    return _distance_reply(distance(x1, y1, x2, y2) / to_meter)


# -- searches -----------------------------------------------------------------------------

_COORDS, _MEMBER, _NOSTORE, _SEARCH, _SEARCHSTORE = 1, 2, 4, 8, 16
_NONE, _ASC, _DESC = 0, 1, 2


def georadius(c: Client, argv: list[bytes]) -> bytes:
    return _search(c, argv, 1, _COORDS)


def georadiusbymember(c: Client, argv: list[bytes]) -> bytes:
    return _search(c, argv, 1, _MEMBER)


def georadius_ro(c: Client, argv: list[bytes]) -> bytes:
    return _search(c, argv, 1, _COORDS | _NOSTORE)


def georadiusbymember_ro(c: Client, argv: list[bytes]) -> bytes:
    return _search(c, argv, 1, _MEMBER | _NOSTORE)


def geosearch(c: Client, argv: list[bytes]) -> bytes:
    return _search(c, argv, 1, _SEARCH)


def geosearchstore(c: Client, argv: list[bytes]) -> bytes:
    return _search(c, argv, 2, _SEARCH | _SEARCHSTORE)


def _member_position(s: Shape, zs: ZSet, member: bytes) -> None:
    score = zs.scores.get(member)
    if score is None:
        raise CommandError(b"ERR member %s does not exist" % error_text(member))
    s.x, s.y = decode(score)


class _SearchArgs:
    """A search's arguments, as parsed: the shape (centre, extent and unit),
    the destination (None: the reply) and STOREDIST, the WITH* parts of
    each reply entry, COUNT (0: none) with ANY, and the order (COUNT without
    ANY or an order sorts ascending, as Valkey forces)."""

    __slots__ = ("shape", "store", "storedist", "withdist", "withhash", "withcoord", "count", "any", "sort")

    def __init__(self) -> None:
        self.shape = Shape()
        self.store: bytes | None = None
        self.storedist = False
        self.withdist = self.withhash = self.withcoord = False
        self.count = 0
        self.any = False
        self.sort = _NONE


def _search_args(argv: list[bytes], flags: int, zs: ZSet | None) -> _SearchArgs:
    """georadiusGeneric's parsing, with its errors in its order: the centre
    and radius GEORADIUS* carry in place, the options as they come, then
    their conflicts. A member named as the centre is looked up as it is
    read (an error if the set lacks it); with no set, its radius too goes
    unread, as in Valkey."""
    a = _SearchArgs()
    shape = a.shape
    if flags & _COORDS:
        base = 6
        shape.x, shape.y = _lon_lat(argv[2], argv[3])
        _radius(shape, argv[4], argv[5])
    elif flags & _MEMBER:
        base = 5
        if zs is not None:
            _member_position(shape, zs, argv[2])
            _radius(shape, argv[3], argv[4])
    else:
        base = 2
        if flags & _SEARCHSTORE:
            base = 3
            a.store = argv[1]
    frommember = fromloc = byradius = bybox = bypolygon = False
    search = flags & _SEARCH
    storable = not (flags & _NOSTORE) and not search
    n = len(argv)
    i = base
    while i < n:
        more = n - i - 1  # arguments after this one
        w = word(argv[i])
        if w == b"withdist":
            a.withdist = True
        elif w == b"withhash":
            a.withhash = True
        elif w == b"withcoord":
            a.withcoord = True
        elif w == b"any":
            a.any = True
        elif w == b"asc":
            a.sort = _ASC
        elif w == b"desc":
            a.sort = _DESC
        elif w == b"count" and more >= 1:
            v = to_int(argv[i + 1])
            if v is None:
                raise CommandError(b"ERR value is not an integer or out of range")
            if v <= 0:
                raise CommandError(b"ERR COUNT must be > 0")
            a.count = v
            i += 1
        elif w == b"store" and more >= 1 and storable:
            a.store = argv[i + 1]
            a.storedist = False
            i += 1
        elif w == b"storedist" and more >= 1 and storable:
            a.store = argv[i + 1]
            a.storedist = True
            i += 1
        elif w == b"storedist" and search and flags & _SEARCHSTORE:
            a.storedist = True
        elif w == b"frommember" and more >= 1 and search and not fromloc and not bypolygon:
            if zs is not None:
                _member_position(shape, zs, argv[i + 1])
            frommember = True
            i += 1
        elif w == b"fromlonlat" and more >= 2 and search and not frommember and not bypolygon:
            shape.x, shape.y = _lon_lat(argv[i + 1], argv[i + 2])
            fromloc = True
            i += 2
        elif w == b"byradius" and more >= 2 and search and not bybox and not bypolygon:
            _radius(shape, argv[i + 1], argv[i + 2])
            byradius = True
            i += 2
        elif w == b"bybox" and more >= 3 and search and not byradius and not bypolygon:
            _box(shape, argv[i + 1], argv[i + 2], argv[i + 3])
            bybox = True
            i += 3
        elif (w == b"bypolygon" and more >= 2 and search and not byradius and not bybox
              and not frommember and not fromloc):
            i += _polygon(shape, argv, i + 1)
            bypolygon = True
        else:
            raise syntax()
        i += 1
    if a.store is not None and (a.withdist or a.withhash or a.withcoord):
        what = b"GEOSEARCHSTORE" if flags & _SEARCHSTORE else b"STORE option in GEORADIUS"
        raise CommandError(b"ERR %s is not compatible with WITHDIST, WITHHASH and WITHCOORD options" % what)
    name = argv[0].split(b"\0", 1)[0]
    if search and not (frommember or fromloc or bypolygon):
        raise CommandError(b"ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for %s" % name)
    if search and not (byradius or bybox or bypolygon):
        raise CommandError(b"ERR exactly one of BYRADIUS, BYBOX and BYPOLYGON can be specified for %s" % name)
    if a.any and not a.count:
        raise CommandError(b"ERR the ANY argument requires COUNT argument")
    if a.count and a.sort == _NONE and not a.any:
        a.sort = _ASC
    return a


def _search(c: Client, argv: list[bytes], src: int, flags: int) -> bytes:
    """georadiusGeneric: the source looked up first (a miss raises
    ``keymiss`` whatever the arguments), the arguments parsed, then the
    members found stored or returned."""
    zs = _source(c, argv[src])
    a = _search_args(argv, flags, zs)
    if a.store is None and not flags & (_NOSTORE | _SEARCH):
        c.server.dirty -= 1  # a GEORADIUS without STORE writes nothing
    found = _found(zs, a) if zs is not None else []
    if a.store is not None:
        conv = a.shape.conversion
        pairs = [(d / conv if a.storedist else s, m) for d, s, m in found]
        return _store(c, argv, a.store, pairs, a.storedist, flags)
    return _search_reply(c, a, found)


def _found(zs: ZSet, a: _SearchArgs) -> list[tuple[float, float, bytes]]:
    """(distance in metres, score, member) of the members inside the shape,
    in the order asked for and cut to COUNT."""
    count, sort = a.count, a.sort
    found = _points(zs, a.shape, count if a.any else 0)
    if count and count < len(found):
        # Valkey sorts only the first COUNT places, with its unstable
        # partial quicksort: equal distances come out in its order.
        if sort != _NONE:
            pqsort(found, _cmp_asc if sort == _ASC else _cmp_desc, 0, count - 1)
        del found[count:]
    elif sort != _NONE:
        # A full sort is libc's qsort, a stable merge sort.
        found.sort(key=_by_distance, reverse=sort == _DESC)
    return found


def _search_reply(c: Client, a: _SearchArgs, found: list[tuple[float, float, bytes]]) -> bytes:
    """Each member found, alone or with the WITH* parts asked for."""
    if not found:
        return EMPTY_ARRAY
    withdist, withhash, withcoord = a.withdist, a.withhash, a.withcoord
    conv = a.shape.conversion
    opts = withdist + withhash + withcoord
    out = [array_header(len(found))]
    for d, s, m in found:
        if opts:
            out.append(array_header(opts + 1))
        out.append(bulk(m))
        if withdist:
            out.append(_distance_reply(d / conv))
        if withhash:
            out.append(integer(int(s)))
        if withcoord:
            out.append(_position(c, s))
    return b"".join(out)


def _by_distance(p: tuple[float, float, bytes]) -> float:
    return p[0]


def _cmp_asc(a: tuple[float, float, bytes], b: tuple[float, float, bytes]) -> int:
    return 1 if a[0] > b[0] else 0 if a[0] == b[0] else -1


def _cmp_desc(a: tuple[float, float, bytes], b: tuple[float, float, bytes]) -> int:
    return -_cmp_asc(a, b)


def _points(zs: ZSet, shape: Shape, limit: int) -> list[tuple[float, float, bytes]]:
    """(distance in metres, score, member) of the members inside the
    shape, read cell by cell in Valkey's order; a cell equal to the one
    read just before it (huge radii) is skipped. With a limit (ANY) the
    reading stops as soon as that many were found."""
    found: list[tuple[float, float, bytes]] = []
    last: tuple[int, int] | None = None
    for k, cell in enumerate(search_cells(shape)):
        if cell == (0, 0):
            continue
        if last is not None and cell == last:
            continue
        if limit and len(found) >= limit:
            break
        lo, hi = cell_scores(cell)
        start, stop = zs.score_span(lo, False, hi, True)
        for s, m in zs.items(start, stop):
            x, y = decode(s)
            d = shape.within(x, y)
            if d is not None:
                found.append((d, s, m))
            if limit and len(found) >= limit:
                break
        if k:
            last = cell
    return found


def _store(c: Client, argv: list[bytes], dst: bytes, pairs: list[tuple[float, bytes]], storedist: bool,
           flags: int) -> bytes:
    """The search result as a new sorted set (a listpack when small
    enough), or the destination deleted when there is none; logged as sent
    when it changed the keyspace."""
    db = c.db
    if pairs:
        entries, value = zset_commands.zset_limits(c)
        out = ZSet()
        out.big = len(pairs) > entries or max(len(m) for _, m in pairs) > value
        for s, m in pairs:
            out.add(m, s)
        db.store(dst, out, b"geosearchstore" if flags & _SEARCH else b"georadiusstore")
    elif not db.delete_destination(dst):
        c.server.dirty -= 1
        return ZERO
    c.server.dirty += len(pairs) - 1 if pairs else 0
    propagate(c, [argv])
    return integer(len(pairs))
