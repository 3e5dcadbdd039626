"""ZUNION/ZINTER/ZDIFF (and their STORE forms, and ZINTERCARD) read a set
input as a sorted set whose members all score 1, as Valkey's
zunionInterDiffGenericCommand does; compared with Valkey byte for byte, for
each set encoding against each sorted-set encoding."""

from __future__ import annotations

import pytest
from helpers.script import run

SETS = {
    "intset": "SADD s 1 2 3 9",
    "listpack": "SADD s a 1 2 3 9\n SREM s a",
    "hashtable": "SADD s " + " ".join("m%d" % i for i in range(150)) + " 1 2 3 9",
}


@pytest.mark.parametrize("enc", list(SETS))
def test_zset_ops_take_sets(pair23, enc: str) -> None:
    run(pair23, f"""
        {SETS[enc]}
        OBJECT ENCODING s
        ZADD z 1.5 1 2 2 3 3 7 x
        ZADD zbig {" ".join("%d m%d" % (i, i) for i in range(200))}
        ZUNION 2 s z WITHSCORES
        ZUNION 2 z s WEIGHTS 2 3 AGGREGATE MAX WITHSCORES
        ZINTER 2 s z WITHSCORES
        ZINTER 2 s zbig AGGREGATE MIN WITHSCORES
        ZINTER 2 s nokey
        ZDIFF 2 s z WITHSCORES
        ZDIFF 2 z s WITHSCORES
        ZINTERCARD 2 s z
        ZINTERCARD 2 s zbig LIMIT 1
        ZUNIONSTORE d 2 s z WEIGHTS 1 0.5
        ZRANGE d 0 -1 WITHSCORES
        OBJECT ENCODING d
        ZINTERSTORE d 2 s zbig
        ZRANGE d 0 -1 WITHSCORES
        ZDIFFSTORE d 2 s z
        ZRANGE d 0 -1 WITHSCORES
        ZUNIONSTORE d 1 s
        OBJECT ENCODING d
        TYPE d
        ZINTERSTORE d 2 s s
        ZCARD d
        SET str v
        ZUNION 2 s str
        ZINTER 2 str s
        ZDIFFSTORE d 2 nokey str
        ZUNIONSTORE d 2 s nokey WEIGHTS 1
        ZINTERCARD 2 s str
    """)
