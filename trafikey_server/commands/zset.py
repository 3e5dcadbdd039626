"""Sorted set commands: ZADD and friends, ranges, pops, set algebra, ZSCAN.

The rules, including the order in which arguments are checked (it decides
which error a bad request gets) and the replies' shapes in RESP2 and RESP3,
are Valkey 9's ``t_zset.c``. Range reads resolve to an index span of the
``ZSet`` (see ``zset.py``) and cost O(log n) plus the elements returned.

Scores are written with ``c.r.double`` (a bulk string in RESP2, a double in
RESP3); with WITHSCORES, RESP2 gets one flat array and RESP3 an array of
``[member, score]`` pairs, because clients need the order a map would lose.

A write's side effects are the database's (``Db.notify``, ``Db.modified``,
``Db.members_removed``): each handler names its events in Valkey's order,
and a sorted set its last member left goes with ``del`` after them.
``members_removed`` is handed the member table (``zs.scores``): its
emptiness costs no call, where a ``ZSet``'s own ``__len__`` would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from ..protocol.args import mpop_args
from ..protocol.resp import EMPTY_ARRAY, ZERO, array_header, bulk, bulks, integer, scored_run2
from ..services.blocking import may_block, parse_timeout
from ..services.limits import beyond_output_limit
from ..util.errors import CommandError, not_float, syntax, wrong_args, wrongtype
from ..util.floats import format_double, parse_double
from ..util.parsing import index_span, parse_int, to_int
from ..util.rand import rng
from ..values.set import SetValue
from ..values.zset import LEX_MAX, LEX_MIN, LEX_STR, Index, LexBound, ZSet
from .hash import EMPTY_SCAN, parse_cursor, parse_scan_options, pattern_matcher, random_count_args

if TYPE_CHECKING:
    from ..services.client import Client

NAN_MSG: Final = b"ERR resulting score is not a number (NaN)"
SCORE_RANGE_ERR: Final = b"ERR min or max is not a float"
LEX_RANGE_ERR: Final = b"ERR min or max not valid string range item"
_LIMIT_WITH_RANK: Final = b"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
_WITHSCORES_WITH_LEX: Final = b"ERR syntax error, WITHSCORES not supported in combination with BYLEX"
_SPACE: Final = b" \t\n\r\x0b\x0c"


# -- configuration --------------------------------------------------------------


def zset_limits(c: Client) -> tuple[int, int]:
    """zset-max-listpack-entries / -value, as CONFIG SET last left them."""
    return c.server.zset_limits


# -- argument parsing ---------------------------------------------------------------


def _range_double(b: bytes) -> float | None:
    """A score range bound as Valkey reads it: ``strtod`` on the C string.

    Unlike a score argument, a bound ends at the first NUL, may be empty
    (reading as 0) and may overflow to an infinity; it still may not start
    or end with a space or be NaN."""
    nul = b.find(b"\0")
    if nul >= 0:
        b = b[:nul]
    if not b:
        return 0.0
    if b[0] in _SPACE or b[-1] in _SPACE or 95 in b:  # "_"
        return None
    try:
        x = float(b)
    except ValueError:
        return None
    return None if x != x else x


def parse_score_range(lo: bytes, hi: bytes) -> tuple[float, bool, float, bool]:
    out: list = []
    for b in (lo, hi):
        ex = b[:1] == b"("
        x = _range_double(b[1:] if ex else b)
        if x is None:
            raise CommandError(SCORE_RANGE_ERR)
        out.append(x)
        out.append(ex)
    return out[0], out[1], out[2], out[3]


def _lex_bound(b: bytes) -> LexBound | None:
    c = b[:1]
    if c == b"(":
        return (LEX_STR, b[1:], True)
    if c == b"[":
        return (LEX_STR, b[1:], False)
    if c == b"+" or c == b"-":
        # Valkey checks the byte after the sign against the C terminator,
        # so "+\0anything" passes as "+".
        if len(b) > 1 and b[1] != 0:
            return None
        return (LEX_MAX if c == b"+" else LEX_MIN, b"", True)
    return None


def parse_lex_range(lo: bytes, hi: bytes) -> tuple[LexBound, LexBound]:
    a = _lex_bound(lo)
    b = _lex_bound(hi)
    if a is None or b is None:
        raise CommandError(LEX_RANGE_ERR)
    return a, b


def _positive(b: bytes, msg: bytes = b"ERR value is out of range, must be positive") -> int:
    v = to_int(b)
    if v is None or v < 0:
        raise CommandError(msg)
    return v


# -- replies --------------------------------------------------------------------------

_EXACT: Final = float(2**53)


def _members(pairs: Iterable[tuple[float, bytes]]) -> bytes:
    return bulks([m for _, m in pairs])


# RESP2 bulks of integral scores already formatted, keyed by the score. 0.0
# is never cached: -0.0 would find it, and the two print differently.
_SCORE_BULKS: Final[dict[float, bytes]] = {}
_SCORE_CACHE_MAX: Final = 1 << 16


def _pair2(s: float, m: bytes) -> bytes:
    """A [member, score] pair as RESP2 bulks. Most scores are integral and
    small: their bulks come formatted from a bounded cache, and a miss
    skips the shortest-round-trip formatter (a nonzero integral double below
    2^53 prints as its integer; 0 needs the sign check)."""
    t = _SCORE_BULKS.get(s)
    if t is None:
        if s.is_integer() and s and -_EXACT < s < _EXACT:
            d = b"%d" % s
            t = b"$%d\r\n%s\r\n" % (len(d), d)
            if len(_SCORE_BULKS) < _SCORE_CACHE_MAX:
                _SCORE_BULKS[s] = t
        else:
            d = format_double(s)
            t = b"$%d\r\n%s\r\n" % (len(d), d)
    return b"$%d\r\n%b\r\n%b" % (len(m), m, t)


def _with_scores(c: Client, pairs: list[tuple[float, bytes]]) -> bytes:
    """[member, score] pairs: flat in RESP2, nested in RESP3."""
    if c.resp == 2:
        written = scored_run2(pairs)
        if written is not None:
            return written
        out = [array_header(2 * len(pairs))]
        out += [_pair2(s, m) for s, m in pairs]
    else:
        dbl = c.r.double
        out = [array_header(len(pairs))]
        for s, m in pairs:
            out.append(b"*2\r\n$%d\r\n%s\r\n" % (len(m), m))
            out.append(dbl(s))
    return b"".join(out)


def _pairs_reply(c: Client, pairs: list[tuple[float, bytes]], withscores: bool) -> bytes:
    return _with_scores(c, pairs) if withscores else _members(pairs)


# -- ZADD / ZINCRBY -------------------------------------------------------------------

# ZADD's options as flags (GEOADD passes its NX, XX and CH to add_scored).
ZADD_NX: Final = 1
ZADD_XX: Final = 2
_GT: Final = 4
_LT: Final = 8
ZADD_CH: Final = 16
_INCR: Final = 32
_ZADD_FLAGS: Final = {b"nx": ZADD_NX, b"xx": ZADD_XX, b"gt": _GT, b"lt": _LT, b"ch": ZADD_CH, b"incr": _INCR}


def zadd(c: Client, argv: list[bytes]) -> bytes:
    return _zadd(c, argv, 0)


def zincrby(c: Client, argv: list[bytes]) -> bytes:
    # ZINCRBY is ZADD INCR with the same option parser: "ZINCRBY k nx m"
    # reads NX as an option and fails on the pair count, as in Valkey.
    return _zadd(c, argv, _INCR)


def _zadd(c: Client, argv: list[bytes], flags: int) -> bytes:
    n = len(argv)
    i = 2
    while i < n:
        a = argv[i]
        f = _ZADD_FLAGS.get(a.lower()) if len(a) <= 4 else None
        if f is None:
            break
        flags |= f
        i += 1
    pairs = n - i
    if pairs % 2 or not pairs:
        raise syntax()
    pairs //= 2
    nx, xx, gt, lt, incr = flags & ZADD_NX, flags & ZADD_XX, flags & _GT, flags & _LT, flags & _INCR
    if nx and xx:
        raise CommandError(b"ERR XX and NX options at the same time are not compatible")
    if (gt and nx) or (lt and nx) or (gt and lt):
        raise CommandError(b"ERR GT, LT, and/or NX options at the same time are not compatible")
    if incr and pairs > 1:
        raise CommandError(b"ERR INCR option supports a single increment-element pair")
    # Every score is checked before anything changes: ZADD is all or nothing.
    scores = []
    for j in range(i, n, 2):
        s = parse_double(argv[j])
        if s is None:
            raise not_float()
        scores.append(s)
    return add_scored(c, argv[1], flags, scores, argv[i + 1 : n : 2])


def add_scored(c: Client, key: bytes, flags: int, scores: list[float], members: list[bytes]) -> bytes:
    """ZADD's writes, events and reply, for options already checked and
    scores already read (GEOADD computes its own, rather than writing them
    as text for ZADD to read back)."""
    nx, xx, gt, lt, incr = flags & ZADD_NX, flags & ZADD_XX, flags & _GT, flags & _LT, flags & _INCR
    pairs = len(scores)
    maxlen = 0
    for m in members:
        if len(m) > maxlen:
            maxlen = len(m)
    db = c.db
    zs = db.get_zset(key)
    entries = value = 0  # only consulted while the set is a listpack
    if zs is None:
        if xx:
            return c.r.null if incr else ZERO
        entries, value = zset_limits(c)
        zs = ZSet()
        zs.big = pairs > entries or maxlen > value
        db.add(key, zs)
    elif not zs.big:
        entries, value = zset_limits(c)
        if pairs > entries or maxlen > value:
            zs.big = True
    added = updated = processed = 0
    newscore = 0.0
    table = zs.scores
    for k, s in enumerate(scores):
        m = members[k]
        old = table.get(m)
        if old is not None:
            if nx:
                continue
            if incr:
                s += old
                if s != s:
                    raise CommandError(NAN_MSG)
            if (lt and s >= old) or (gt and s <= old):
                continue
            processed += 1
            newscore = s
            if s != old:
                zs.add(m, s)
                updated += 1
        elif not xx:
            if not zs.big and (len(table) + 1 > entries or len(m) > value):
                zs.big = True
            zs.add(m, s)
            added += 1
            processed += 1
            newscore = s
    if added or updated:
        db.modified(key, b"zincr" if incr else b"zadd")
    if incr:
        return c.r.double(newscore) if processed else c.r.null
    return integer(added + updated if flags & ZADD_CH else added)


# -- single-member reads ------------------------------------------------------------------


def zcard(c: Client, argv: list[bytes]) -> bytes:
    zs = c.db.get_zset(argv[1])
    if zs is None:
        c.db.notify(b"keymiss", argv[1])
    return ZERO if zs is None else integer(len(zs))


def zscore(c: Client, argv: list[bytes]) -> bytes:
    zs = c.db.get_zset(argv[1])
    if zs is None:
        c.db.notify(b"keymiss", argv[1])
        return c.r.null
    s = zs.scores.get(argv[2])
    return c.r.null if s is None else c.r.double(s)


def zmscore(c: Client, argv: list[bytes]) -> bytes:
    zs = c.db.get_zset(argv[1])
    if zs is None:
        c.db.notify(b"keymiss", argv[1])
    r = c.r
    out = [array_header(len(argv) - 2)]
    table = zs.scores if zs is not None else {}
    for m in argv[2:]:
        s = table.get(m)
        out.append(r.null if s is None else r.double(s))
    return b"".join(out)


def zrank(c: Client, argv: list[bytes]) -> bytes:
    return _zrank(c, argv, False)


def zrevrank(c: Client, argv: list[bytes]) -> bytes:
    return _zrank(c, argv, True)


def _zrank(c: Client, argv: list[bytes], reverse: bool) -> bytes:
    if len(argv) > 4:
        raise wrong_args(argv[0])
    withscore = False
    if len(argv) == 4:
        if argv[3].lower() != b"withscore":
            raise syntax()
        withscore = True
    zs = c.db.get_zset(argv[1])
    miss = c.r.null_array if withscore else c.r.null
    if zs is None:
        c.db.notify(b"keymiss", argv[1])
        return miss
    r = zs.rank(argv[2])
    if r is None:
        return miss
    if reverse:
        r = len(zs) - 1 - r
    if withscore:
        return b"*2\r\n" + integer(r) + c.r.double(zs.scores[argv[2]])
    return integer(r)


# -- counts ---------------------------------------------------------------------------------


def zcount(c: Client, argv: list[bytes]) -> bytes:
    lo, lo_ex, hi, hi_ex = parse_score_range(argv[2], argv[3])
    zs = c.db.get_zset(argv[1])
    if zs is None:
        c.db.notify(b"keymiss", argv[1])
        return ZERO
    a, b = zs.score_span(lo, lo_ex, hi, hi_ex)
    return integer(b - a)


def zlexcount(c: Client, argv: list[bytes]) -> bytes:
    lo, hi = parse_lex_range(argv[2], argv[3])
    zs = c.db.get_zset(argv[1])
    if zs is None:
        c.db.notify(b"keymiss", argv[1])
        return ZERO
    a, b = zs.lex_span(lo, hi)
    return integer(b - a)


# -- ZRANGE and its older spellings ----------------------------------------------------------

_RANK, _SCORE, _LEX = 1, 2, 3


def zrange(c: Client, argv: list[bytes]) -> bytes:
    return _zrange(c, argv, 1, None, 0, None)


def zrangestore(c: Client, argv: list[bytes]) -> bytes:
    return _zrange(c, argv, 2, argv[1], 0, None)


def zrevrange(c: Client, argv: list[bytes]) -> bytes:
    return _zrange(c, argv, 1, None, _RANK, True)


def zrangebyscore(c: Client, argv: list[bytes]) -> bytes:
    return _zrange(c, argv, 1, None, _SCORE, False)


def zrevrangebyscore(c: Client, argv: list[bytes]) -> bytes:
    return _zrange(c, argv, 1, None, _SCORE, True)


def zrangebylex(c: Client, argv: list[bytes]) -> bytes:
    return _zrange(c, argv, 1, None, _LEX, False)


def zrevrangebylex(c: Client, argv: list[bytes]) -> bytes:
    return _zrange(c, argv, 1, None, _LEX, True)


def _zrange(c: Client, argv: list[bytes], k: int, dst: bytes | None, kind: int, reverse: bool | None) -> bytes:
    """Valkey's zrangeGenericCommand: options first (in any order), then
    the conflicts between them, then the range, then the key."""
    n = len(argv)
    withscores = False
    offset, count = 0, -1
    j = k + 3
    while j < n:
        opt = argv[j].lower()
        if dst is None and opt == b"withscores":
            withscores = True
        elif opt == b"limit" and n - j - 1 >= 2:
            offset = parse_int(argv[j + 1])
            count = parse_int(argv[j + 2])
            j += 2
        elif reverse is None and opt == b"rev":
            reverse = True
        elif kind == 0 and opt == b"bylex":
            kind = _LEX
        elif kind == 0 and opt == b"byscore":
            kind = _SCORE
        else:
            raise syntax()
        j += 1
    reverse = bool(reverse)
    kind = kind or _RANK
    # "LIMIT x -1" leaves the count at its default, so Valkey lets it pass.
    if count != -1 and kind == _RANK:
        raise CommandError(_LIMIT_WITH_RANK)
    if withscores and kind == _LEX:
        raise CommandError(_WITHSCORES_WITH_LEX)
    a, b = argv[k + 1], argv[k + 2]
    if reverse and kind != _RANK:
        a, b = b, a
    if kind == _RANK:
        start, end = parse_int(a), parse_int(b)
    elif kind == _SCORE:
        srange = parse_score_range(a, b)
    else:
        lrange = parse_lex_range(a, b)
    zs = c.db.get_zset(argv[k])
    if zs is None:
        c.db.notify(b"keymiss", argv[k])
        return EMPTY_ARRAY if dst is None else _store_range(c, dst, [], False)
    if kind == _RANK:
        lo, hi = index_span(len(zs), start, end)
        if reverse:
            # Ranks count from the top: rank r is index n - 1 - r.
            lo, hi = len(zs) - hi, len(zs) - lo
    else:
        if kind == _SCORE:
            lo, hi = zs.score_span(*srange)
        else:
            lo, hi = zs.lex_span(lrange[0], lrange[1], reverse)
        lo, hi = zs.window(lo, hi, reverse, offset, count)
    pairs = list(zs.items(lo, hi, reverse))
    if dst is not None:
        return _store_range(c, dst, pairs, kind == _RANK)
    return _pairs_reply(c, pairs, withscores)


def _store_range(c: Client, dst: bytes, pairs: list[tuple[float, bytes]], sized: bool) -> bytes:
    """ZRANGESTORE's result: built by adding the members one by one in range
    order, as Valkey does, so the listpack/skiplist switch (and the -0 a
    listpack cannot hold) happen at the same member."""
    if not pairs:
        c.db.delete_destination(dst)
        return ZERO
    entries, value = zset_limits(c)
    out = ZSet()
    # A rank range knows its length up front and Valkey sizes the new set
    # with it; score and lex ranges start from an empty listpack.
    out.big = sized and len(pairs) > entries
    for s, m in pairs:
        if not out.big and (len(out) + 1 > entries or len(m) > value):
            out.big = True
        out.add(m, s)
    c.db.store(dst, out, b"zrangestore")
    return integer(len(out))


# -- removals ---------------------------------------------------------------------------------


def zrem(c: Client, argv: list[bytes]) -> bytes:
    key = argv[1]
    zs = c.db.get_zset(key)
    if zs is None:
        return ZERO
    deleted = 0
    for m in argv[2:]:
        if zs.remove(m):
            deleted += 1
            if not zs.scores:
                break  # the last member went: so does the key
    if deleted:
        c.db.members_removed(key, zs.scores, b"zrem")
    return integer(deleted)


def zremrangebyrank(c: Client, argv: list[bytes]) -> bytes:
    start, end = parse_int(argv[2]), parse_int(argv[3])
    zs = c.db.get_zset(argv[1])
    if zs is None:
        return ZERO
    lo, hi = index_span(len(zs), start, end)
    return _remove_span(c, argv[1], zs, lo, hi, b"zremrangebyrank")


def zremrangebyscore(c: Client, argv: list[bytes]) -> bytes:
    srange = parse_score_range(argv[2], argv[3])
    zs = c.db.get_zset(argv[1])
    if zs is None:
        return ZERO
    lo, hi = zs.score_span(*srange)
    return _remove_span(c, argv[1], zs, lo, hi, b"zremrangebyscore")


def zremrangebylex(c: Client, argv: list[bytes]) -> bytes:
    lo_b, hi_b = parse_lex_range(argv[2], argv[3])
    zs = c.db.get_zset(argv[1])
    if zs is None:
        return ZERO
    lo, hi = zs.lex_span(lo_b, hi_b)
    return _remove_span(c, argv[1], zs, lo, hi, b"zremrangebylex")


def _remove_span(c: Client, key: bytes, zs: ZSet, lo: int, hi: int, event: bytes) -> bytes:
    n = zs.remove_span(lo, hi)
    if n:
        c.db.members_removed(key, zs.scores, event)
    return integer(n)


# -- pops ----------------------------------------------------------------------------------------


def zpopmin(c: Client, argv: list[bytes]) -> bytes:
    return _zpop(c, argv, False)


def zpopmax(c: Client, argv: list[bytes]) -> bytes:
    return _zpop(c, argv, True)


def _zpop(c: Client, argv: list[bytes], top: bool) -> bytes:
    if len(argv) > 3:
        raise syntax()
    count = _positive(argv[2]) if len(argv) == 3 else -1
    key = argv[1]
    db = c.db
    zs = db.get_zset(key)
    if zs is None or count == 0:
        return EMPTY_ARRAY
    if count == -1:  # one pair, never nested; the methods called by name are direct calls when compiled
        pair = zs.pop_max() if top else zs.pop_min()
        written = scored_run2([pair]) if c.resp == 2 else None
        if written is not None:
            out = written
        else:
            s, m = pair
            out = b"*2\r\n" + (_pair2(s, m) if c.resp == 2 else b"$%d\r\n%s\r\n" % (len(m), m) + c.r.double(s))
    else:
        # RESP3 nests [member, score] pairs only when a count was given.
        pop = zs.pop_max if top else zs.pop_min
        pairs = [pop() for _ in range(min(len(zs.scores), count))]
        out = _with_scores(c, pairs)
    db.members_removed(key, zs.scores, b"zpopmax" if top else b"zpopmin")
    return out


def _pop_from(c: Client, key: bytes, zs: ZSet, top: bool, count: int, nested: bool) -> bytes:
    """Valkey's genericZpopCommand with the key in the reply: BZPOPMIN/MAX
    as one flat [key, member, score], ZMPOP/BZMPOP as [key, [[member,
    score], ...]] in both protocols."""
    pop = zs.pop_max if top else zs.pop_min
    n = min(len(zs.scores), 1 if count == -1 else count)
    pairs = [pop() for _ in range(n)]
    kb = b"$%d\r\n%s\r\n" % (len(key), key)
    if nested:
        out = [b"*2\r\n", kb, array_header(n)]
        if c.resp == 2:
            out += [b"*2\r\n" + _pair2(s, m) for s, m in pairs]
        else:
            dbl = c.r.double
            out += [b"*2\r\n$%d\r\n%s\r\n%s" % (len(m), m, dbl(s)) for s, m in pairs]
    else:
        s, m = pairs[0]
        out = [b"*3\r\n", kb, _pair2(s, m) if c.resp == 2 else b"$%d\r\n%s\r\n%s" % (len(m), m, c.r.double(s))]
    c.db.members_removed(key, zs.scores, b"zpopmax" if top else b"zpopmin")
    return b"".join(out)


_MIN_MAX: Final = (b"min", b"max")


def zmpop(c: Client, argv: list[bytes]) -> bytes:
    keys, top, count = mpop_args(argv, 1, _MIN_MAX)
    db = c.db
    for key in keys:
        zs = db.get_zset(key)  # the first key that exists decides, even a wrong type
        if zs is not None:
            return _pop_from(c, key, zs, top, count, True)
    return c.r.null_array


def bzpopmin(c: Client, argv: list[bytes]) -> bytes:
    return _bzpop(c, argv[1:-1], False, parse_timeout(c, argv[-1]), -1, False)


def bzpopmax(c: Client, argv: list[bytes]) -> bytes:
    return _bzpop(c, argv[1:-1], True, parse_timeout(c, argv[-1]), -1, False)


def bzmpop(c: Client, argv: list[bytes]) -> bytes:
    keys, top, count = mpop_args(argv, 2, _MIN_MAX)
    return _bzpop(c, keys, top, parse_timeout(c, argv[1]), count, True)


def _bzpop(c: Client, keys: list[bytes], top: bool, deadline: int, count: int, nested: bool) -> bytes:
    """Valkey's blockingGenericZpopCommand: pop from the first non-empty
    sorted set, or wait for one (blocking.py)."""
    db = c.db
    for key in keys:
        zs = db.get_zset(key)
        if zs is not None and zs.scores:
            return _pop_from(c, key, zs, top, count, nested)
    if not may_block(c):
        return c.r.null_array
    c.server.blocking.block(c, keys, ZSet, deadline, c.r.null_array)


# -- ZRANDMEMBER --------------------------------------------------------------------------------------


def zrandmember(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) >= 3:
        count, withscores = random_count_args(argv, b"withscores")
        zs = c.db.get_zset(argv[1])
        if zs is None:
            c.db.notify(b"keymiss", argv[1])
            return EMPTY_ARRAY
        if count == 0:
            return EMPTY_ARRAY
        if count < 0 and not c.in_script and beyond_output_limit(c, -count, 12 if withscores else 6):
            return b""  # closed without a reply
        return _with_scores(c, _random_pairs(zs, count)) if withscores else _members(_random_pairs(zs, count))
    zs = c.db.get_zset(argv[1])
    if zs is None:
        c.db.notify(b"keymiss", argv[1])
        return c.r.null
    return bulk(zs.index[rng.randrange(len(zs))][1])


def _random_pairs(zs: ZSet, count: int) -> list[tuple[float, bytes]]:
    """Valkey's pick rules. A negative count (or 1) draws with repetition;
    a count covering the set returns all of it, read from the tail as
    Valkey's iterator does; otherwise distinct members, which a listpack
    yields in its own (ascending) order and a skiplist in no order."""
    index = zs.index
    n = len(index)
    if count < 0 or count == 1:
        return [index[rng.randrange(n)] for _ in range(abs(count))]
    if count >= n:
        return list(index.islice(reverse=True))
    picks = rng.sample(range(n), count)
    if not zs.big:
        picks.sort()
    return [index[i] for i in picks]


# -- ZSCAN --------------------------------------------------------------------------------------------


def zscan(c: Client, argv: list[bytes]) -> bytes:
    cursor = parse_cursor(argv[2])
    zs = c.db.get_zset(argv[1])
    if zs is None:
        c.db.notify(b"keymiss", argv[1])
        return EMPTY_SCAN
    count, pattern, only_members = parse_scan_options(argv, b"zset")
    match = pattern_matcher(pattern)
    if not zs.big:
        # A listpack is returned whole, scores as it stores them.
        nxt = 0
        chosen: Iterable[tuple[float, bytes]] = zs.index
        fmt: Callable[[float], bytes] = format_double
    else:
        # Our cursor is a position in score order: see hscan for why.
        stop = cursor + count
        chosen = zs.index.islice(cursor, stop)
        nxt = stop if stop < len(zs) else 0
        # Valkey prints a skiplist's scores with "%.17Lg", not its reply format.
        fmt = _fmt_17g
    items: list[bytes] = []
    for s, m in chosen:
        if match is not None and not match(m):
            continue
        items.append(m)
        if not only_members:
            items.append(fmt(s))
    cur = b"%d" % nxt
    return b"*2\r\n$%d\r\n%s\r\n" % (len(cur), cur) + bulks(items)


def _fmt_17g(s: float) -> bytes:
    return b"%.17g" % s


# -- ZUNION / ZINTER / ZDIFF (and STORE, and ZINTERCARD) -------------------------------------------

_UNION, _INTER, _DIFF = 1, 2, 3
_SUM, _MIN, _MAX = 1, 2, 3
_AGGREGATES: Final = {b"sum": _SUM, b"min": _MIN, b"max": _MAX}


def zunion(c: Client, argv: list[bytes]) -> bytes:
    return _setop(c, argv, None, 1, _UNION)


def zinter(c: Client, argv: list[bytes]) -> bytes:
    return _setop(c, argv, None, 1, _INTER)


def zdiff(c: Client, argv: list[bytes]) -> bytes:
    return _setop(c, argv, None, 1, _DIFF)


def zunionstore(c: Client, argv: list[bytes]) -> bytes:
    return _setop(c, argv, argv[1], 2, _UNION)


def zinterstore(c: Client, argv: list[bytes]) -> bytes:
    return _setop(c, argv, argv[1], 2, _INTER)


def zdiffstore(c: Client, argv: list[bytes]) -> bytes:
    return _setop(c, argv, argv[1], 2, _DIFF)


def zintercard(c: Client, argv: list[bytes]) -> bytes:
    return _setop(c, argv, None, 1, _INTER, card=True)


def _setop(c: Client, argv: list[bytes], dst: bytes | None, k: int, op: int, card: bool = False) -> bytes:
    """Valkey's zunionInterDiffGenericCommand, check for check: numkeys,
    then every key's type, then the options."""
    nkeys = parse_int(argv[k])
    if nkeys < 1:
        name = argv[0].lower().decode(errors="replace")
        raise CommandError(f"ERR at least 1 input key is needed for '{name}' command")
    argc = len(argv)
    if nkeys > argc - (k + 1):
        raise syntax()
    db = c.db
    srcs: list[ZSet | _SetInput | None] = []
    for key in argv[k + 1 : k + 1 + nkeys]:
        v = db.get(key)
        if v is None:
            db.notify(b"keymiss", key)
        elif type(v) is SetValue:
            v = _SetInput(v)
        elif type(v) is not ZSet:
            raise wrongtype()
        srcs.append(v)
    weights = [1.0] * nkeys
    aggregate = _SUM
    withscores = False
    limit = 0
    j = k + 1 + nkeys
    while j < argc:
        left = argc - j
        opt = argv[j].lower()
        if op != _DIFF and not card and left >= nkeys + 1 and opt == b"weights":
            for w in range(nkeys):
                x = parse_double(argv[j + 1 + w])
                if x is None:
                    raise CommandError(b"ERR weight value is not a float")
                weights[w] = x
            j += 1 + nkeys
        elif op != _DIFF and not card and left >= 2 and opt == b"aggregate":
            agg = _AGGREGATES.get(argv[j + 1].lower())
            if agg is None:
                raise syntax()
            aggregate = agg
            j += 2
        elif left >= 1 and dst is None and not card and opt == b"withscores":
            withscores = True
            j += 1
        elif card and left >= 2 and opt == b"limit":
            limit = _positive(argv[j + 1], b"ERR LIMIT can't be negative")
            j += 2
        else:
            raise syntax()
    if op == _DIFF:
        result = _diff(srcs)
    else:
        # Smallest input first, as Valkey sorts them (it matters for the
        # order in which floating-point sums are taken).
        order = sorted(range(nkeys), key=lambda i: 0 if srcs[i] is None else len(srcs[i]))  # type: ignore[arg-type]
        inputs = [(srcs[i], weights[i]) for i in order]
        if op == _INTER:
            if card:
                return integer(_inter(inputs, aggregate, limit, True))  # type: ignore[arg-type]
            result = _inter(inputs, aggregate, 0, False)  # type: ignore[assignment]
        else:
            result = _union(inputs, aggregate)
    if dst is not None:
        return _store_setop(c, dst, result, _STORE_EVENTS[op])
    pairs = sorted((s, m) for m, s in result.items())
    return _pairs_reply(c, pairs, withscores)


class _SetInput:
    """A set read as a sorted set whose every member scores 1, as Valkey's
    zunionInterDiffGenericCommand reads a set input."""

    __slots__ = ("scores",)

    def __init__(self, s: SetValue) -> None:
        self.scores = dict.fromkeys(s.members(), 1.0)

    def __len__(self) -> int:
        return len(self.scores)


def _aggregate(t: float, v: float, how: int) -> float:
    if how == _SUM:
        t += v
        # inf + -inf: Valkey settles on 0.
        return 0.0 if t != t else t
    if how == _MIN:
        return v if v < t else t
    return v if v > t else t


def _weighted(s: float, w: float) -> float:
    x = s * w
    return 0.0 if x != x else x


def _union(inputs: list[tuple[ZSet | _SetInput | None, float]], how: int) -> dict[bytes, float]:
    acc: dict[bytes, float] = {}
    for zs, w in inputs:
        if not zs:
            continue
        for m, s in zs.scores.items():
            x = _weighted(s, w)
            t = acc.get(m)
            acc[m] = x if t is None else _aggregate(t, x, how)
    return acc


def _inter(
    inputs: list[tuple[ZSet | _SetInput | None, float]], how: int, limit: int, card: bool
) -> dict[bytes, float] | int:
    first, w0 = inputs[0]
    acc: dict[bytes, float] = {}
    found = 0
    if not first:
        return 0 if card else acc
    rest = inputs[1:]
    for m, s in first.scores.items():
        x = _weighted(s, w0)
        for zs, w in rest:
            other = zs.scores.get(m)  # type: ignore[union-attr]
            if other is None:
                break
            x = _aggregate(x, other * w, how)
        else:
            if card:
                found += 1
                if limit and found >= limit:
                    break
            else:
                acc[m] = x
    return found if card else acc


def _diff(srcs: list[ZSet | _SetInput | None]) -> dict[bytes, float]:
    first = srcs[0]
    if not first:
        return {}
    others = [zs.scores for zs in srcs[1:] if zs]
    return {m: s for m, s in first.scores.items() if not any(m in o for o in others)}


_STORE_EVENTS: Final = {_UNION: b"zunionstore", _INTER: b"zinterstore", _DIFF: b"zdiffstore"}


def _store_setop(c: Client, dst: bytes, result: dict[bytes, float], event: bytes) -> bytes:
    """Valkey builds the result as a skiplist and turns it into a listpack
    if it is small enough, which is also when a -0 score becomes 0."""
    if not result:
        c.db.delete_destination(dst)
        return ZERO
    entries, value = zset_limits(c)
    out = ZSet()
    big = len(result) > entries or max(map(len, result)) > value
    out.big = big
    if not big:
        result = {m: (0.0 if s == 0.0 else s) for m, s in result.items()}
    out.scores = result
    out.index = Index((s, m) for m, s in result.items())
    c.db.store(dst, out, event)
    return integer(len(out))
