"""List commands against Valkey, byte for byte, in RESP2 and RESP3.

Each script runs line by line on both servers (``helpers.script.run``): every
reply, errors included, must be identical, and the keyspace after a refused
request is read back on both to show that nothing was written.
"""

from __future__ import annotations

import pytest
from helpers.script import run

# A list and the read-backs that show its state on both servers.
STATE = """
    LRANGE l 0 -1
    LLEN l
    TYPE l
    OBJECT ENCODING l
    DBSIZE
"""


def test_push_and_read(pair23) -> None:
    run(pair23, """
        RPUSH l a b c 1 2 3 -7 12345678901234567890
        LPUSH l x y
        LPUSHX l z
        RPUSHX l w
        LPUSHX nokey a
        RPUSHX nokey a
        EXISTS nokey
        LRANGE l 0 -1
        LRANGE l -3 100
        LRANGE l 5 2
        LRANGE l 100 200
        LRANGE l -100 1
        LRANGE nokey 0 -1
        LINDEX l 0
        LINDEX l -1
        LINDEX l 100
        LINDEX l -100
        LINDEX nokey 0
        LLEN l
        LLEN nokey
    """ + STATE)


def test_pops(pair23) -> None:
    run(pair23, """
        RPUSH l a b c d e f g
        LPOP l
        RPOP l
        LPOP l 2
        RPOP l 2
        LPOP l 0
        LPOP nokey
        RPOP nokey
        LPOP nokey 2
        RPOP nokey 0
        RPOP l 10
        EXISTS l
        RPUSH l a
        LPOP l 1
        EXISTS l
    """)


def test_lpos(pair23) -> None:
    run(pair23, """
        RPUSH l a b c a b c a
        LPOS l a
        LPOS l c
        LPOS l zz
        LPOS l a RANK 2
        LPOS l a RANK -1
        LPOS l a RANK -2
        LPOS l a RANK 9
        LPOS l a COUNT 0
        LPOS l a COUNT 2
        LPOS l a COUNT 2 RANK -1
        LPOS l a COUNT 0 MAXLEN 4
        LPOS l c MAXLEN 2
        LPOS l c RANK -1 MAXLEN 2
        LPOS l zz COUNT 3
        LPOS nokey a
        LPOS nokey a COUNT 1
    """)


def test_in_place_writes(pair23) -> None:
    run(pair23, """
        RPUSH l a b c a b c a
        LINSERT l BEFORE b X
        LINSERT l after c Y
        LINSERT l before zz Q
        LINSERT nokey before a b
        LSET l 0 first
        LSET l -1 last
        LREM l 0 a
        LREM l 1 b
        LREM l -1 c
        LREM l 0 zz
        LREM nokey 0 a
        LRANGE l 0 -1
        LTRIM l 1 -2
        LRANGE l 0 -1
        LTRIM l 5 2
        EXISTS l
        LTRIM nokey 0 1
        RPUSH l a a a
        LREM l 0 a
        EXISTS l
    """)


def test_moves_and_mpop(pair23) -> None:
    run(pair23, """
        RPUSH s a b c d e
        LMOVE s d left right
        LMOVE s d RIGHT LEFT
        RPOPLPUSH s d
        LMOVE nokey d left left
        RPOPLPUSH nokey d
        LRANGE s 0 -1
        LRANGE d 0 -1
        LMOVE s s left right
        LRANGE s 0 -1
        LMPOP 2 nokey s LEFT
        LMPOP 2 nokey d RIGHT COUNT 2
        LMPOP 3 x y z LEFT
        LMPOP 1 d left count 100
        EXISTS d
        RPOPLPUSH s s2
        RPOPLPUSH s s2
        EXISTS s
    """)


def test_errors_write_nothing(pair23) -> None:
    run(pair23, """
        RPUSH l a b c
        SET s v
        LPUSH s a
        RPUSHX s a
        LPOP s
        LPOP l 1 2
        LPOP l -1
        LPOP l x
        LRANGE l x 1
        LRANGE l 0 y
        LRANGE s 0 1
        LINDEX l x
        LINDEX s 0
        LSET l 100 x
        LSET l x y
        LSET nokey 0 x
        LSET s 0 x
        LINSERT l middle a b
        LINSERT s before a b
        LREM l x a
        LREM l -9223372036854775808 a
        LREM s 0 a
        LTRIM l a 1
        LTRIM s 0 1
        LPOS l a RANK 0
        LPOS l a RANK x
        LPOS l a RANK -9223372036854775808
        LPOS l a COUNT -1
        LPOS l a COUNT x
        LPOS l a MAXLEN -1
        LPOS l a MAXLEN
        LPOS l a FOO 1
        LPOS s a
        LMOVE l d up left
        LMOVE l d left down
        LMOVE s l left left
        LMOVE l s left left
        RPOPLPUSH l s
        LMPOP 0 l LEFT
        LMPOP -1 l LEFT
        LMPOP x l LEFT
        LMPOP 2 l LEFT
        LMPOP 1 l UP
        LMPOP 1 l LEFT COUNT 0
        LMPOP 1 l LEFT COUNT -1
        LMPOP 1 l LEFT COUNT 1 COUNT 1
        LMPOP 1 l LEFT FOO
        LMPOP 2 s l LEFT
        LLEN s
        LPOS s a COUNT 1
    """ + STATE + """
        GET s
    """)


def test_blocking_forms_answer_at_once_when_they_can(pair23) -> None:
    run(pair23, """
        RPUSH a 1 2 3
        BLPOP nokey a 0
        BRPOP nokey a 0
        BLMPOP 0 2 nokey a RIGHT COUNT 5
        EXISTS a
        RPUSH a 1 2
        BLMOVE a b LEFT RIGHT 0
        BRPOPLPUSH a b 0
        LRANGE b 0 -1
        BLPOP a -1
        BLPOP a x
        BLMOVE a b LEFT UP 0
        BLMOVE a b LEFT LEFT x
        BLMPOP x 1 a LEFT
        BLMPOP 0 0 a LEFT
        BLMPOP 0 1 a UP
        SET s v
        BLPOP s 0
        BRPOPLPUSH s b 0
        BLMOVE b s left left 0
        BLMPOP 0 1 s LEFT
        MULTI
        BLPOP nokey 0
        BRPOP nokey 0
        BLMOVE nokey b left left 0
        BRPOPLPUSH nokey b 0
        BLMPOP 0 1 nokey LEFT
        EXEC
        EVAL "return redis.call('blpop', 'nokey', 0)" 1 nokey
        EVAL "return redis.call('blmove', 'nokey', 'b', 'left', 'left', 0)" 1 nokey
    """)


@pytest.mark.parametrize("fill", ["-2", "-1", "-5", "-6", "4", "1", "0"])
def test_encoding_transitions(pair, fill: str) -> None:
    pair.check("CONFIG", "SET", "list-max-listpack-size", fill)
    try:
        run(pair, """
            RPUSH l a b c
            OBJECT ENCODING l
            RPUSH l d e
            OBJECT ENCODING l
            RPUSH l f g h i j k l m n o p
            OBJECT ENCODING l
            LPOP l 8
            OBJECT ENCODING l
            RPOP l 4
            OBJECT ENCODING l
            LTRIM l 0 0
            OBJECT ENCODING l
        """)
        big = "x" * 3000
        for i in range(12):
            pair.check("RPUSH", "b", big + str(i))
            pair.check("OBJECT", "ENCODING", "b")
        for _ in range(12):
            pair.check("RPOP", "b")
            pair.check("OBJECT", "ENCODING", "b")
        pair.check("RPUSH", "h", *[str(i) for i in range(200)])
        pair.check("OBJECT", "ENCODING", "h")
        for _ in range(20):
            pair.check("LPOP", "h", "10")
            pair.check("OBJECT", "ENCODING", "h")
        pair.check("RPUSH", "s", "a", "b")
        pair.check("LSET", "s", "0", "y" * 9000)
        pair.check("OBJECT", "ENCODING", "s")
        pair.check("LSET", "s", "0", "a")
        pair.check("OBJECT", "ENCODING", "s")
        pair.check("LINSERT", "s", "before", "a", "z" * 9000)
        pair.check("OBJECT", "ENCODING", "s")
        pair.check("LREM", "s", "0", "z" * 9000)
        pair.check("OBJECT", "ENCODING", "s")
        pair.check("LMOVE", "s", "t", "left", "left")
        pair.check("OBJECT", "ENCODING", "t")
    finally:
        pair.check("CONFIG", "SET", "list-max-listpack-size", "-2")


WATCHED_WRITES = [
    "LPUSH l z", "RPUSH l z", "LPUSHX l z", "RPUSHX nol z", "LPOP l", "RPOP l 2", "LPOP l 0", "LPOP nol",
    "LSET l 0 S", "LSET l 99 S", "LINSERT l BEFORE b I", "LINSERT l AFTER zz I", "LREM l 0 zz", "LREM l 1 b",
    "LTRIM l 0 -1", "LTRIM l 0 1", "LTRIM nol 0 1", "LMOVE l m LEFT RIGHT", "LMOVE m l LEFT RIGHT",
    "RPOPLPUSH nol l", "LMPOP 2 nol l LEFT COUNT 2", "BLPOP l 0", "BRPOPLPUSH l m 0", "LRANGE l 0 -1",
    "LLEN l", "LPOS l a",
]


@pytest.mark.parametrize("write", WATCHED_WRITES)
def test_watch_sees_list_changes(pair, write: str) -> None:
    # A client's own write to a watched key aborts its transaction, as
    # another client's would; a no-op write or a read does not.
    run(pair, f"""
        RPUSH l a b c d e
        RPUSH m x
        WATCH l m
        {write}
        MULTI
        PING
        EXEC
        LRANGE l 0 -1
        LRANGE m 0 -1
    """)
