"""SORT and SORT_RO against Valkey 9.1.2, byte for byte in RESP2 and RESP3:
every source type and encoding, BY (key, hash field, constant), GET, LIMIT,
ASC/DESC, ALPHA, the numbers ``strtod`` takes and refuses, STORE, every
refusal with the keyspace left as it was, and SORT inside MULTI and EVAL.

Valkey's order for members of a hashtable set or of a sorted set it reads
through its dict is its hash table's (seeded at random per process), so a
step whose answer would depend on it (BY nosort on a hashtable set, equal
ALPHA weights over a sorted set) is left out; numeric sorts give a total
order (ties fall back to the members' bytes) and are compared on every type.
"""

from __future__ import annotations

import random
from typing import Any

import redis
from helpers.key_snapshot import snapshot
from helpers.resp_wire import Wire, encode, wait_blocked
from helpers.script import run

Pair = Any


def assert_same_keyspace(pair: Pair) -> None:
    assert snapshot(pair.t.port) == snapshot(pair.v.port)


def setup_data(pair: Pair) -> None:
    run(pair, r"""
        RPUSH l 3 1 2 10 -4 2.5 1e2 007 0x10
        RPUSH words banana Apple apple cherry 10 9 ""
        SADD si 5 3 9 1 -20 100
        SADD sl b a 3 c -7 zz
        ZADD zl 1 a 5 b 2 c 10 d 3 e
        ZADD zs 1 a 5 b 2 c 10 d 3 e
        CONFIG SET zset-max-listpack-entries 2
        ZADD zs 7 f
        CONFIG SET zset-max-listpack-entries 128
        MSET w_a 3 w_b 1 w_c 2 w_d 10 w_e -1 w_f 4 w_3 30 w_1 10 w_2 20 w_10 5
        MSET n_a x n_b y n_c z n_d w n_e v
        HSET h_a w 3 name alpha
        HSET h_b w 1 name beta
        HSET h_c w 2 name gamma
        HSET h_d w 9
        SET str hello
        HSET hash f v
    """)


def test_sort_lists_sets_zsets(pair23: Pair) -> None:
    setup_data(pair23)
    run(pair23, r"""
        SORT l
        SORT l DESC
        SORT l LIMIT 2 3
        SORT l LIMIT 0 0
        SORT l LIMIT -5 2
        SORT l LIMIT 3 -1
        SORT l LIMIT 100 2
        SORT l DESC LIMIT 1 2
        SORT l ALPHA
        SORT l ALPHA DESC LIMIT 2 4
        SORT words ALPHA
        SORT words ALPHA DESC
        SORT words
        SORT si
        SORT si DESC LIMIT 1 3
        SORT si ALPHA
        SORT sl ALPHA
        SORT sl ALPHA DESC LIMIT 1 10
        SORT sl
        SORT zl ALPHA
        SORT zl ALPHA DESC
        SORT zs ALPHA LIMIT 1 3
        SORT nokey
        SORT nokey ALPHA DESC LIMIT 0 5
        SORT_RO l DESC LIMIT 1 4
        SORT_RO si
        SORT_RO sl ALPHA
        SORT_RO nokey
        sort l asc desc asc
        sort l ALPHA alpha desc
    """)
    assert_same_keyspace(pair23)


def test_sort_by_nosort_keeps_native_order(pair23: Pair) -> None:
    setup_data(pair23)
    run(pair23, r"""
        SORT l BY nosort
        SORT l BY nosort DESC
        SORT l BY nosort LIMIT 2 3
        SORT l BY nosort DESC LIMIT 2 3
        SORT l BY nosort LIMIT 8 5
        SORT l BY nosort LIMIT 9 5
        SORT l BY nosort DESC LIMIT -3 2
        SORT l BY nosort LIMIT 1 0
        SORT l BY nosort ALPHA
        SORT zl BY nosort
        SORT zl BY nosort DESC
        SORT zl BY nosort LIMIT 1 2
        SORT zl BY nosort DESC LIMIT 1 2
        SORT zl BY nosort DESC LIMIT 4 9
        SORT zl BY nosort LIMIT 5 10
        SORT zl BY nosort LIMIT -10 100
        SORT zs BY nosort DESC LIMIT 2 2
        SORT si BY nosort
        SORT si BY nosort DESC LIMIT 1 2
        SORT sl BY nosort
        SORT sl BY nosort LIMIT 2 2
        SORT zl BY w_* BY nosort
        SORT zl BY nosort BY w_*
        SORT l BY nosort GET # GET w_*
        SORT_RO zl BY nosort DESC
        SORT nokey BY nosort
    """)


def test_sort_by_patterns_and_get(pair23: Pair) -> None:
    setup_data(pair23)
    run(pair23, r"""
        SORT zl BY w_*
        SORT zl BY w_* DESC
        SORT zl BY w_* LIMIT 1 2
        SORT zl BY w_* DESC LIMIT 1 3
        SORT zl BY w_* GET # GET w_* GET n_* GET h_*->name GET nope_*
        SORT zl BY h_*->w
        SORT zl BY h_*->w DESC GET h_*->name GET #
        SORT zl BY h_*->nofield
        SORT zl BY h_*-> GET h_*->
        SORT zl BY str_* GET str
        SORT zl BY hash GET hash
        SORT si BY w_*
        SORT si BY w_* GET # LIMIT 0 2
        SORT si BY w_* DESC GET w_*
        SORT l BY w_* LIMIT 0 3
        SORT l GET # GET #
        SORT l GET nokey
        SORT zl BY n_* ALPHA LIMIT 0 3
        SORT sl BY w_* ALPHA
        SORT l BY w_* ALPHA GET # GET w_*
        SORT l BY w_* ALPHA DESC
        SORT_RO zl BY w_* GET # GET h_*->w
        SORT zl BY *_w GET *
        SORT zl BY w_*x GET w_*x
    """)


def test_sort_get_from_wrong_types_and_field_forms(pair23: Pair) -> None:
    run(pair23, r"""
        RPUSH l a b c
        SET x:a-> 100
        HSET x:b f 7
        HSET x:b-> f 8
        RPUSH x:c z
        SET key_a->sub 1
        HSET key_b ->f v
        SORT l BY nosort GET x:*-> GET x:*->f GET x:* GET x:*-
        SORT l BY nosort GET key_*->sub GET key_*->->f GET *->f
        SORT l BY x:*->f GET x:*->f
        SORT l BY x:*->f ALPHA
        SORT l BY nosort GET #x GET ## GET x#
        SORT_RO l BY nosort GET x:*->
    """)


def test_sort_weights_as_strtod_reads_them(pair23: Pair) -> None:
    """Weights are read as Valkey reads them (its fast_float strtod over
    the C string): a NUL ends the number, subnormals are taken; spaces,
    hex, an empty string, trailing bytes, NaN and a range error (overflow,
    underflow to zero) are refused."""
    good = ["1", "1e2", ".5", "5.", "-inf", "+Infinity", "INF", "12\0abc", "4.9406564584124654e-324",
            "1e-310", "0e-999", "2.2250738585072014e-308", "-0", "1E+2", "+.5", "-.5e-3", "007",
            "1.7976931348623157e308"]
    for i, w in enumerate(good):
        pair23.check("SET", "g_%d" % i, w.encode("latin-1"))
        pair23.check("RPUSH", "good", str(i))
        pair23.check("SORT", "good", "BY", "g_*", "GET", "#", "GET", "g_*")
    pair23.check("SORT", "good", "BY", "g_*", "DESC")
    pair23.check("SORT", "good", "BY", "g_*", "LIMIT", "3", "5")
    bad = ["abc", "1 ", " 2", "\t3", "1e", "0x10", "0x1p-1074", "", "\0", "nan", "-nan", "1e309", "-1e400",
           "1e-400", "2e-324", "1.7976931348623159e308", "infinit", "Infinityx", "1_000", " ", ".", "+", "1,5",
           "1e+", "+-1"]
    for i, w in enumerate(bad):
        pair23.check("DEL", "bad", "b_x")
        pair23.check("RPUSH", "bad", "1", "x")
        pair23.check("SET", "b_x", w)
        pair23.check("SORT", "bad", "BY", "b_*")
        pair23.check("SORT", "bad", "BY", "b_*", "STORE", "dst")
        pair23.check("SORT", "bad", "BY", "b_*", "LIMIT", "0", "0")
        pair23.check("RPUSH", "own_%d" % i, w, "3")
        pair23.check("SORT", "own_%d" % i)
        pair23.check("SORT", "own_%d" % i, "ALPHA")
    pair23.check("EXISTS", "dst")
    run(pair23, r"""
        RPUSH mixed 1 2 3 4 not-a-double
        SORT mixed
        SORT mixed BY nosort
        SORT mixed ALPHA
        SADD ms 1 2 3 4
        MSET score:1 10 score:2 20 score:3 30 score:4 not-a-double
        SORT ms BY score:*
        SORT ms BY score:* STORE dst
        EXISTS dst
    """)
    assert_same_keyspace(pair23)


def test_sort_ties_and_bytes(pair23: Pair) -> None:
    """Equal scores fall back to the elements' bytes; ALPHA compares bytes
    (unsigned) up to a NUL without STORE, whole values with it."""
    run(pair23, r"""
        SADD myset a b c d e f g h i l m n o p q r s t u v z aa aaa azz
        SORT myset BY score:*
        SORT myset BY score:* DESC LIMIT 2 5
        RPUSH bytes "\xff" "\x80a" "a\0c" "a\0b" "a" "A" "\x01" "b"
        SORT bytes ALPHA
        SORT bytes ALPHA DESC
        SORT bytes ALPHA STORE out
        LRANGE out 0 -1
        SORT bytes ALPHA DESC STORE out
        LRANGE out 0 -1
        RPUSH dup 3 1 3 2 1 -0 0 0.0
        SORT dup
        SORT dup DESC
        SORT dup ALPHA
        SET wt_x "b\0z"
        SET wt_y "b\0a"
        SET wt_z "a"
        RPUSH tl x y z q
        SORT tl BY wt_* ALPHA
        SORT tl BY wt_* ALPHA DESC
        SORT tl BY wt_* ALPHA STORE out
        LRANGE out 0 -1
        SORT tl BY wt_* ALPHA DESC STORE out
        LRANGE out 0 -1
    """)


def test_sort_store(pair23: Pair) -> None:
    setup_data(pair23)
    run(pair23, r"""
        SORT l STORE dst
        LRANGE dst 0 -1
        OBJECT ENCODING dst
        SORT zl BY w_* GET # GET w_* GET nope_* STORE dst
        LRANGE dst 0 -1
        SORT zl BY nosort DESC LIMIT 1 2 STORE dst
        LRANGE dst 0 -1
        SORT sl BY nosort STORE dst
        LRANGE dst 0 -1
        SORT si BY nosort DESC STORE dst
        LRANGE dst 0 -1
        SORT sl BY nosort LIMIT 1 3 STORE dst
        LRANGE dst 0 -1
        SORT l STORE dst1 STORE dst2
        EXISTS dst1
        LRANGE dst2 0 -1
        SET strdst v
        EXPIRE strdst 1000
        SORT l LIMIT 0 2 STORE strdst
        TYPE strdst
        TTL strdst
        LRANGE strdst 0 -1
        SORT l STORE l
        LRANGE l 0 -1
        SORT nokey STORE dst
        EXISTS dst
        SORT nokey STORE never
        EXISTS never
        SORT l LIMIT 50 10 STORE strdst
        EXISTS strdst
        SORT zl LIMIT 0 0 GET # STORE z2
        EXISTS z2
        sort l store
        SORT_RO l STORE dst
        SORT l "alpha\0x" "desc\0" LIMIT 0 2 "store\0" dst2
        LRANGE dst2 0 -1
    """)
    assert_same_keyspace(pair23)


def test_sort_store_encodings(pair: Pair) -> None:
    run(pair, r"""
        CONFIG SET list-max-listpack-size 4
        RPUSH five 5 4 3 2 1
        SORT five STORE d5
        OBJECT ENCODING d5
        SORT five LIMIT 0 4 STORE d4
        OBJECT ENCODING d4
        SORT five GET # GET # STORE d10
        OBJECT ENCODING d10
        CONFIG SET list-max-listpack-size -2
        SORT five GET # GET # STORE d10
        OBJECT ENCODING d10
    """)
    big = ["x" * 3000, "y" * 3000, "z" * 3000]
    pair.check("RPUSH", "big", *big)
    pair.check("SORT", "big", "ALPHA", "STORE", "dbig")
    pair.check("OBJECT", "ENCODING", "dbig")
    pair.check("LRANGE", "dbig", 0, -1)
    pair.check("CONFIG", "SET", "list-max-listpack-size", "-2")


def test_sort_converts_sorted_set_encoding(pair: Pair) -> None:
    """Valkey turns a listpack sorted set into a skiplist before reading
    it, even for SORT_RO, and even when the request then sorts nothing."""
    run(pair, r"""
        ZADD z1 1 a 2 b
        OBJECT ENCODING z1
        SORT_RO z1 BY nosort LIMIT 0 0
        OBJECT ENCODING z1
        ZADD z2 1 a
        SORT z2 foo
        OBJECT ENCODING z2
        SORT z2 ALPHA
        OBJECT ENCODING z2
    """)


def test_sort_errors_leave_keyspace(pair23: Pair) -> None:
    setup_data(pair23)
    before = snapshot(pair23.v.port)
    run(pair23, r"""
        SORT
        SORT_RO
        SORT l foo
        SORT l LIMIT
        SORT l LIMIT 1
        SORT l LIMIT a 1
        SORT l LIMIT 1 b
        SORT l LIMIT 1 9223372036854775808
        SORT l LIMIT 1 "1 "
        SORT l LIMIT a b STORE dst
        SORT l STORE dst LIMIT x 1
        SORT l STORE dst foo
        SORT l BY
        SORT l GET
        SORT l STORE
        SORT l BY w_* GET # DESC ALPHA junk STORE dst
        SORT_RO l STORE dst
        SORT_RO l BY w_* STORE dst
        SORT str
        SORT hash
        SORT str BY w_* STORE dst
        SORT str foo
        SORT str LIMIT x 1
        SORT_RO str
        SORT l STORE dst BY w_* LIMIT 0 1 GET # foo
        SORT "l\0" STORE dst
        SORT l "limit\0" 0 1
    """)
    assert snapshot(pair23.v.port) == before
    assert_same_keyspace(pair23)


def test_command_getkeys(pair: Pair) -> None:
    run(pair, r"""
        COMMAND GETKEYS sort abc store def
        COMMAND GETKEYS sort_ro abc
        COMMAND GETKEYS sort abc store invalid store stillbad store def
        COMMAND GETKEYS sort abc limit store x store y
        COMMAND GETKEYS sort abc get store store
        COMMAND GETKEYS sort abc by store
        COMMAND GETKEYS sort abc store
        COMMAND GETKEYS sort abc STORE store STORE
        COMMAND GETKEYS sort abc "store\0x" k
        COMMAND GETKEYSANDFLAGS sort abc store def
        COMMAND GETKEYSANDFLAGS sort_ro abc store def
        COMMAND GETKEYSANDFLAGS sort abc
        COMMAND INFO sort sort_ro
        COMMAND DOCS sort_ro
    """)


def test_sort_in_multi(pair23: Pair) -> None:
    setup_data(pair23)
    run(pair23, r"""
        MULTI
        SORT zl BY nosort ASC
        SORT zl BY nosort DESC
        SORT l BY w_* GET # STORE dst
        SORT l LIMIT x y
        SORT_RO str
        LRANGE dst 0 -1
        EXEC
        MULTI
        SORT l foo
        SORT_RO l STORE x
        EXEC
        MULTI
        SORT l
        SORT
        EXEC
    """)
    assert_same_keyspace(pair23)


def test_sort_in_scripts(pair23: Pair) -> None:
    """In a script a set is never answered in its own order: BY nosort on a
    set sorts with ALPHA (Valkey's rule for scripts and replicas), while a
    list or a sorted set keeps its order."""
    setup_data(pair23)
    pair23.check("SADD", "ht", *["x%d" % i for i in range(1, 131)])
    run(pair23, r"""
        OBJECT ENCODING ht
        EVAL "return {redis.call('sort',KEYS[1],'by','nosort'), redis.call('sort',KEYS[1],'by','nosort','desc')}" 1 zl
        EVAL "return redis.call('sort',KEYS[1],'by','nosort')" 1 ht
        EVAL "return redis.call('sort',KEYS[1],'by','nosort','desc','limit','3','4')" 1 ht
        EVAL "return redis.call('sort',KEYS[1],'by','nosort')" 1 sl
        EVAL "return redis.call('sort',KEYS[1],'by','nosort')" 1 l
        EVAL "return redis.call('sort_ro',KEYS[1],'by','nosort','get','#','get','w_*')" 1 si
        EVAL "return redis.call('sort',KEYS[1],'by','nosort','store',KEYS[2])" 2 ht dst
        LRANGE dst 0 -1
        EVAL "return redis.call('sort',KEYS[1],'by','w_*','get','#','get','h_*->name')" 1 zl
        EVAL "return redis.pcall('sort',KEYS[1],'limit','a','1')" 1 l
        EVAL "return redis.pcall('sort',KEYS[1])" 1 str
        EVAL "return redis.pcall('sort',KEYS[1])" 1 words
        EVAL "return redis.pcall('sort_ro',KEYS[1],'store','x')" 1 l
        EVAL "return redis.call('sort',KEYS[1],'store',KEYS[2])" 2 nokey dst
        EXISTS dst
        EVAL_RO "return redis.call('sort_ro',KEYS[1],'by','nosort')" 1 ht
        EVAL_RO "return redis.pcall('sort',KEYS[1])" 1 l
    """)
    assert_same_keyspace(pair23)


def test_sort_in_function(pair: Pair) -> None:
    lib = ("#!lua name=sortlib\n"
           "server.register_function{function_name='srt', callback=function(keys, args) "
           "return server.call('sort', keys[1], 'by', 'nosort') end, flags={'no-writes'}}")
    pair.check("FUNCTION", "LOAD", lib)
    pair.check("SADD", "s", "c", "a", "b")
    pair.check("FCALL", "srt", 1, "s")
    pair.check("FCALL_RO", "srt", 1, "s")
    pair.check("FUNCTION", "FLUSH")


def _changes(port: int) -> int:
    r = redis.Redis(port=port)
    try:
        return int(r.info("persistence")["rdb_changes_since_last_save"])
    finally:
        r.close()


def test_sort_counts_changes_as_valkey(pair: Pair) -> None:
    """The changes a save rule counts: none for SORT without STORE (or one
    that stored nothing over no key), one per stored element, one for a
    destination an empty result deleted."""
    setup_data(pair)
    steps = [
        ("SORT", "l"), ("SORT_RO", "l"), ("SORT", "l", "STORE", "dst"), ("SORT", "l", "GET", "#", "GET", "#",
                                                                         "LIMIT", "0", "3", "STORE", "dst"),
        ("SORT", "l", "LIMIT", "0", "0", "STORE", "dst"), ("SORT", "l", "LIMIT", "0", "0", "STORE", "dst"),
        ("SORT", "l", "foo"), ("EVAL", "return redis.call('sort', KEYS[1], 'store', KEYS[2])", "2", "zl", "d2"),
        ("MULTI",), ("SORT", "l"), ("SORT", "si", "STORE", "d3"), ("EXEC",),
    ]
    for step in steps:
        before = (_changes(pair.v.port), _changes(pair.t.port))
        pair.check(*step)
        after = (_changes(pair.v.port), _changes(pair.t.port))
        assert after[1] - before[1] == after[0] - before[0], step


def test_sort_alpha_ties_under_limit(pair: Pair) -> None:
    """BY ... ALPHA with equal or missing weights and a LIMIT: Valkey's
    partial quicksort decides where equal elements land, so lists of many
    lengths (insertion sort below 7, one median below 41, three above) and
    ranges at every place are compared, with and without STORE."""
    rnd = random.Random(1234)
    for n in (3, 6, 7, 8, 12, 40, 41, 60, 150):
        key = "ties%d" % n
        elements = ["e%d" % i for i in range(n)]
        pair.check("RPUSH", key, *elements)
        for e in elements:
            w = rnd.choice(["a", "b", "c", "b\0x", "b\0y", None])
            if w is not None:
                pair.check("SET", "tw_%s" % e, w)
        for _ in range(12):
            offset = rnd.randrange(-1, n + 2)
            count = rnd.randrange(-1, n + 2)
            order = rnd.choice(["ASC", "DESC"])
            pair.check("SORT", key, "BY", "tw_*", "ALPHA", order, "LIMIT", offset, count, "GET", "#", "GET", "tw_*")
            pair.check("SORT", key, "BY", "tw_*", "ALPHA", order, "LIMIT", offset, count, "STORE", "tdst")
            pair.check("LRANGE", "tdst", 0, -1)


def test_sort_store_serves_a_blocked_client(pair: Pair) -> None:
    """STORE adds the destination as a new key, which serves a client
    blocked on it, as Valkey's setKey (dbAdd) does."""
    waiters = [Wire(pair.v.port), Wire(pair.t.port)]
    try:
        for w in waiters:
            w.send_raw(encode("BLPOP", "dst", "0"))
        for side in (pair.v, pair.t):
            wait_blocked(side, timeout=2)
        run(pair, r"""
            RPUSH l c a b
            SORT l ALPHA STORE dst
            LRANGE dst 0 -1
        """)
        v, t = (w.read_reply() for w in waiters)
        assert t == v == b"*2\r\n$3\r\ndst\r\n$1\r\na\r\n"
    finally:
        for w in waiters:
            w.close()
