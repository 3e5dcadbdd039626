"""Geo commands against Valkey, byte for byte, in RESP2 and RESP3.

Scripts run line by line on both servers; every reply (scores, geohashes,
coordinates to their last printed digit, distances with four decimals) must
be the same bytes, and the keyspace the same afterwards. Each refusal is
checked with its exact text and the keyspace unchanged on both sides.
"""

from __future__ import annotations

from typing import Any

from helpers.aof_util import keyspace
from helpers.resp_wire import Wire
from helpers.script import run, words

SICILY = """
    GEOADD Sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania
    GEOADD Sicily 12.758489 38.788135 edge1 17.241510 38.788135 edge2 13.583333 37.316667 Agrigento
"""


def assert_same_keyspace(valkey_server: Any, trafikey_server: Any) -> None:
    assert keyspace(trafikey_server.port) == keyspace(valkey_server.port)


def assert_refused(pair: Any, valkey_server: Any, trafikey_server: Any, script: str) -> None:
    before = keyspace(valkey_server.port)
    assert keyspace(trafikey_server.port) == before
    for line in script.strip().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            r = pair.check(*words(line))
            assert r.startswith(b"-"), line
    assert keyspace(valkey_server.port) == before
    assert keyspace(trafikey_server.port) == before


def test_geoadd_options_and_scores(pair23, valkey_server, trafikey_server) -> None:
    run(pair23, SICILY + """
        ZRANGE Sicily 0 -1 WITHSCORES
        GEOADD Sicily NX 13.361389 38.115556 Palermo 1 2 NewOne
        GEOADD Sicily XX 1 1 Palermo 3 3 NotThere
        GEOADD Sicily CH 1 1 Palermo 15.087269 37.502669 Catania
        GEOADD Sicily CH XX 2 2 Palermo
        GEOADD Sicily nX cH 2 2 Palermo 4 4 Fresh
        GEOADD Sicily ch 2 2 Palermo
        GEOADD nokey XX 1 1 a
        EXISTS nokey
        GEOADD g -180 -85.05112878 sw 180 85.05112878 ne 0 0 zero -0 -0 negzero
        GEOADD g 179.9999999 0.0000001 a -179.9999999 -0.0000001 b 1e-300 1e-300 tiny
        ZRANGE g 0 -1 WITHSCORES
        GEOPOS g sw ne zero negzero a b tiny nothere
        GEOHASH g sw ne zero negzero a b tiny nothere
        OBJECT ENCODING Sicily
        ZRANGE Sicily 0 -1 WITHSCORES
    """)
    assert_same_keyspace(valkey_server, trafikey_server)


def test_geopos_geohash_geodist(pair23) -> None:
    run(pair23, SICILY + """
        GEOPOS Sicily Palermo Catania NonExisting edge1 edge2 Agrigento
        GEOPOS nokey a b
        GEOHASH Sicily Palermo Catania NonExisting edge1 edge2 Agrigento
        GEOHASH nokey a
        GEODIST Sicily Palermo Catania
        GEODIST Sicily Palermo Catania m
        GEODIST Sicily Palermo Catania KM
        GEODIST Sicily Palermo Catania mi
        GEODIST Sicily Palermo Catania fT
        GEODIST Sicily Palermo Palermo
        GEODIST Sicily Palermo NonExisting
        GEODIST nokey a b
        GEODIST Sicily edge1 edge2 km
        ZADD z 0 origin -1 neg 4503599627370496 big 1e300 huge
        GEOPOS z origin neg big huge
        GEOHASH z origin neg big huge
        GEODIST z origin big
    """)


def test_georadius_family(pair23, valkey_server, trafikey_server) -> None:
    run(pair23, SICILY + """
        GEORADIUS Sicily 15 37 200 km
        GEORADIUS Sicily 15 37 200 km ASC
        GEORADIUS Sicily 15 37 200 km DESC
        GEORADIUS Sicily 15 37 200 km WITHDIST WITHCOORD WITHHASH ASC
        GEORADIUS Sicily 15 37 200 km WITHDIST COUNT 2
        GEORADIUS Sicily 15 37 200 km WITHDIST COUNT 2 DESC
        GEORADIUS Sicily 15 37 200 km COUNT 1 ANY
        GEORADIUS Sicily 15 37 200000 m withcoord
        GEORADIUS Sicily 15 37 124.27 mi WITHDIST
        GEORADIUS Sicily 15 37 656168 ft WITHDIST
        GEORADIUS Sicily 15 37 0 km
        GEORADIUS Sicily 15 37 20000 km WITHDIST ASC
        GEORADIUS_RO Sicily 15 37 200 km WITHDIST ASC
        GEORADIUSBYMEMBER Sicily Agrigento 100 km WITHDIST ASC
        GEORADIUSBYMEMBER_RO Sicily Palermo 300 km DESC COUNT 3 WITHHASH
        GEORADIUS nokey 15 37 200 km
        GEORADIUSBYMEMBER nokey nomember abc nounit
        GEORADIUS Sicily 15 37 200 km STORE dst
        ZRANGE dst 0 -1 WITHSCORES
        GEORADIUS Sicily 15 37 200 km STOREDIST dst2 ASC COUNT 2
        ZRANGE dst2 0 -1 WITHSCORES
        GEORADIUSBYMEMBER Sicily Palermo 300 km STORE dst3 STOREDIST dst4
        EXISTS dst3
        ZRANGE dst4 0 -1 WITHSCORES
        GEORADIUS Sicily 0 0 1 km STORE dst
        EXISTS dst
        GEORADIUS nokey 0 0 1 km STORE dst2
        EXISTS dst2
        GEORADIUS nokey 0 0 1 km STORE never
        SET str v
        GEORADIUS Sicily 15 37 200 km STORE str
        TYPE str
    """)
    assert_same_keyspace(valkey_server, trafikey_server)


def test_geosearch_and_store(pair23, valkey_server, trafikey_server) -> None:
    run(pair23, SICILY + """
        GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC WITHCOORD WITHDIST WITHHASH
        GEOSEARCH Sicily FROMMEMBER Palermo BYBOX 400 400 km DESC WITHDIST
        GEOSEARCH Sicily BYRADIUS 300 km FROMMEMBER Catania COUNT 2 WITHDIST
        GEOSEARCH Sicily FROMMEMBER Catania BYRADIUS 300 km COUNT 2 ANY
        GEOSEARCH Sicily FROMMEMBER Catania BYRADIUS 300 km COUNT 2 ANY DESC
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 0 0 km
        GEOSEARCH Sicily FROMMEMBER Palermo BYRADIUS 0 m WITHDIST
        GEOSEARCH Sicily FROMMEMBER Palermo FROMMEMBER Catania BYRADIUS 10 km
        GEOSEARCH nokey FROMMEMBER x BYRADIUS 1 km
        GEOSEARCH Sicily FROMLONLAT 15 37 BYBOX 400 200 mi withdist
        GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km ASC COUNT 3
        ZRANGE dst 0 -1 WITHSCORES
        GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYBOX 400 400 km STOREDIST
        ZRANGE dst 0 -1 WITHSCORES
        GEOSEARCHSTORE dst Sicily FROMLONLAT 0 0 BYRADIUS 1 m
        EXISTS dst
        GEOSEARCHSTORE dst nokey FROMLONLAT 0 0 BYRADIUS 1 m
        SET str v
        GEOSEARCHSTORE str Sicily FROMMEMBER Palermo BYRADIUS 1 m STOREDIST
        EXISTS str
    """)
    assert_same_keyspace(valkey_server, trafikey_server)


def test_geosearch_bypolygon(pair23, valkey_server, trafikey_server) -> None:
    """BYPOLYGON (Valkey 9.0+): even-odd ray casting on the vertices,
    distances from the centroid of the vertices, no FROM option."""
    run(pair23, """
        GEOADD p 0.5 0.2 a 0.1 0.1 b 2 2 c 0.9 0.05 d -0.1 0.5 e 0.3 0.3 f 179.5 0 g -179.5 0 h
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 WITHDIST WITHCOORD WITHHASH ASC
        GEOSEARCH p BYPOLYGON 4 0 0 1 0 0 1 0 0 WITHDIST
        GEOSEARCH p BYPOLYGON 5 -1 -1 1 -1 1 1 -1 1 -1 -1 WITHDIST DESC
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 COUNT 1
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 COUNT 2 ANY
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 BYPOLYGON 3 0 0 2 0 0 2
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 1 0 WITHDIST
        GEOSEARCH p BYPOLYGON 6 0 0 3 0 3 3 1 1 0 3 0 0 WITHDIST
        GEOSEARCH p BYPOLYGON 4 179 -1 -179 -1 -179 1 179 1
        GEOSEARCH p BYPOLYGON 4 179 -1 180 -1 180 1 179 1 WITHCOORD
        GEOSEARCH p BYPOLYGON 3 -10 80 10 80 0 85
        GEOSEARCH nokey BYPOLYGON 3 0 0 1 0 0 1
        GEOSEARCHSTORE dst p BYPOLYGON 3 0 0 1 0 0 1 STOREDIST
        ZRANGE dst 0 -1 WITHSCORES
        GEOSEARCHSTORE dst2 p BYPOLYGON 3 0 0 1 0 0 1 COUNT 2
        ZRANGE dst2 0 -1 WITHSCORES
    """)
    assert_refused(pair23, valkey_server, trafikey_server, """
        GEOSEARCH p BYPOLYGON 2 0 0 1 0
        GEOSEARCH p BYPOLYGON 3 0 0 1 0
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0
        GEOSEARCH p BYPOLYGON x 0 0 1 0 0 1
        GEOSEARCH p BYPOLYGON 3.0 0 0 1 0 0 1
        GEOSEARCH p BYPOLYGON 2147483648 0 0 1 0 0 1
        GEOSEARCH p BYPOLYGON -3 0 0 1 0 0 1
        GEOSEARCH p BYPOLYGON 0 0 0 1 0 0 1
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 100
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 abc
        GEOSEARCH p BYPOLYGON 4 0 0 1 0 0 1 200 0
        GEOSEARCH p FROMMEMBER a BYPOLYGON 3 0 0 1 0 0 1
        GEOSEARCH p FROMMEMBER nosuch BYPOLYGON 3 0 0 1 0 0 1
        GEOSEARCH p FROMLONLAT 1 1 BYPOLYGON 3 0 0 1 0 0 1
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 FROMLONLAT 1 1
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 FROMMEMBER a
        GEOSEARCH p BYRADIUS 1 km BYPOLYGON 3 0 0 1 0 0 1
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 BYRADIUS 1 km
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 BYBOX 1 1 km
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 2 2
        GEOSEARCH p BYPOLYGON 3 0 0 2.5 0 0 2.5 BYPOLYGON 2 0 0 1 0 0 1
        GEOSEARCH p ASC ASC ASC ASC BYPOLYGON 3
        GEOSEARCH p ASC ASC ASC BYPOLYGON 3 0
        GEOSEARCH p BYPOLYGON 3 0 0 1 0 0 1 ANY
        GEORADIUS p 0 0 100 km BYPOLYGON 3 0 0 1 0 0 1
        GEOSEARCHSTORE dst p BYPOLYGON 3 0 0 1 0 0 1 WITHDIST
        GEOSEARCH nokey BYPOLYGON 2 0 0 1 0 0 1
    """)


def test_store_encoding_follows_the_limits(pair23, valkey_server, trafikey_server) -> None:
    lines = ["GEOADD big " + " ".join(f"{i * 0.001:.3f} {i * 0.001:.3f} m{i}" for i in range(200))]
    lines += [
        "OBJECT ENCODING big",
        "GEOSEARCHSTORE small big FROMLONLAT 0 0 BYRADIUS 50 km COUNT 10",
        "OBJECT ENCODING small",
        "GEOSEARCHSTORE large big FROMLONLAT 0 0 BYRADIUS 5000 km",
        "OBJECT ENCODING large",
        "ZCARD large",
        "GEORADIUS big 0 0 5000 km STOREDIST large2 DESC COUNT 150",
        "OBJECT ENCODING large2",
        "ZRANGE large2 0 4 WITHSCORES",
    ]
    run(pair23, "\n".join(lines))
    assert_same_keyspace(valkey_server, trafikey_server)


def test_refusals(pair23, valkey_server, trafikey_server) -> None:
    run(pair23, SICILY + "SET str v")
    assert_refused(pair23, valkey_server, trafikey_server, """
        GEOADD Sicily 200 10 x
        GEOADD Sicily 10 86 x
        GEOADD Sicily 10 -85.06 x
        GEOADD Sicily -180.0000001 0 x
        GEOADD Sicily inf 0 x
        GEOADD Sicily abc 0 x
        GEOADD Sicily 0 abc x
        GEOADD Sicily 1 1 a 2 2
        GEOADD Sicily 1 1 a 200 2 b
        GEOADD Sicily NX XX 1 1 a
        GEOADD Sicily GT 1 1 a
        GEOADD Sicily ch nx xx
        GEOADD Sicily ch nx
        GEOADD str 1 1 a
        GEOADD str 1 1000 a
        GEODIST Sicily Palermo Catania parsecs
        GEODIST Sicily Palermo Catania km extra
        GEODIST str a b
        GEODIST str a b furlongs
        GEOHASH str a
        GEOPOS str a
        GEORADIUS str 15 37 200 km
        GEORADIUS Sicily 200 37 200 km
        GEORADIUS Sicily 15 37 abc km
        GEORADIUS Sicily 15 37 -1 km
        GEORADIUS Sicily 15 37 1 lightyears
        GEORADIUS Sicily 15 37 200 km COUNT 0
        GEORADIUS Sicily 15 37 200 km COUNT -5
        GEORADIUS Sicily 15 37 200 km COUNT x
        GEORADIUS Sicily 15 37 200 km COUNT
        GEORADIUS Sicily 15 37 200 km ANY
        GEORADIUS Sicily 15 37 200 km ANY ASC
        GEORADIUS Sicily 15 37 200 km STORE
        GEORADIUS Sicily 15 37 200 km STORE dst WITHDIST
        GEORADIUS Sicily 15 37 200 km WITHHASH STOREDIST dst
        GEORADIUS Sicily 15 37 200 km FROMMEMBER Palermo
        GEORADIUS Sicily 15 37 200 km bogus
        GEORADIUS_RO Sicily 15 37 200 km STORE dst
        GEORADIUSBYMEMBER Sicily NotThere 100 km
        GEORADIUSBYMEMBER Sicily "a\\r\\nb\\0c" 100 km
        GEORADIUSBYMEMBER Sicily Palermo 100 parsecs
        GEORADIUSBYMEMBER_RO Sicily Palermo 100 km STOREDIST dst
        GEORADIUSBYMEMBER str Palermo 100 km
        GEOSEARCH Sicily BYRADIUS 10 km
        GEOSEARCH Sicily FROMMEMBER Palermo
        GEOSEARCH Sicily FROMMEMBER Palermo COUNT 2
        geoSearch Sicily FROMLONLAT 1 1 COUNT 2
        GEOSEARCH Sicily FROMMEMBER "x\\r\\ny\\0z" BYRADIUS 1 km
        GEOSEARCH Sicily FROMMEMBER NotThere BYRADIUS 10 km
        GEOSEARCH Sicily FROMMEMBER Palermo FROMLONLAT 1 1 BYRADIUS 10 km
        GEOSEARCH Sicily FROMLONLAT 1 1 FROMMEMBER Palermo BYRADIUS 10 km
        GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 10 km BYBOX 1 1 km
        GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 1 km BYRADIUS 10 km
        GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX a 1 km
        GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 a km
        GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX -1 1 km
        GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 -1 km
        GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 1 parsecs
        GEOSEARCH Sicily FROMLONLAT 1 1 BYBOX 1 1
        GEOSEARCH Sicily FROMLONLAT 1 BYRADIUS 1 km
        GEOSEARCH Sicily FROMLONLAT 1 100 BYRADIUS 1 km
        GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km STORE dst
        GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km STOREDIST
        GEOSEARCH Sicily FROMLONLAT 1 1 BYRADIUS 1 km ANY
        GEOSEARCH nokey BYRADIUS 1 km
        GEOSEARCH nokey FROMMEMBER x
        GEOSEARCH str FROMMEMBER x BYRADIUS 1 km
        GEOSEARCHSTORE dst Sicily FROMLONLAT 1 1 BYRADIUS 1 km WITHDIST
        GEOSEARCHSTORE dst Sicily FROMLONLAT 1 1 BYRADIUS 1 km STORE x
        GEOSEARCHSTORE dst str FROMLONLAT 1 1 BYRADIUS 1 km
        GEOSEARCHSTORE dst Sicily FROMMEMBER NotThere BYRADIUS 1 km
        GEOSEARCHSTORE dst nokey BYBOX 1 1 km
    """)


def test_command_getkeys(pair) -> None:
    """GEORADIUS[BYMEMBER]'s STORE key comes from Valkey's own key function
    (the last STORE or STOREDIST wins); the other geo commands' keys from
    their key specs."""
    run(pair, """
        COMMAND GETKEYS GEORADIUS k 0 0 1 km STORE dst
        COMMAND GETKEYS GEORADIUS k 0 0 1 km
        COMMAND GETKEYSANDFLAGS GEORADIUS k 0 0 1 km STOREDIST dst
        COMMAND GETKEYSANDFLAGS GEORADIUSBYMEMBER k m 1 km STORE dst STOREDIST dst2
        COMMAND GETKEYSANDFLAGS GEORADIUSBYMEMBER k m 1 km STORE
        COMMAND GETKEYSANDFLAGS GEORADIUS k 0 0 1 STORE dst
        COMMAND GETKEYSANDFLAGS GEORADIUS k 0 0 1 km STORE STORE x
        COMMAND GETKEYSANDFLAGS GEORADIUS_RO k 0 0 1 km
        COMMAND GETKEYSANDFLAGS GEORADIUSBYMEMBER_RO k m 1 km STORE x
        COMMAND GETKEYSANDFLAGS GEOSEARCHSTORE dst src FROMLONLAT 0 0 BYRADIUS 1 km
        COMMAND GETKEYSANDFLAGS GEOSEARCH src FROMLONLAT 0 0 BYRADIUS 1 km
        COMMAND GETKEYSANDFLAGS GEOADD k 1 1 a
        COMMAND GETKEYSANDFLAGS GEOPOS k a
        COMMAND GETKEYSANDFLAGS GEODIST k a b
        COMMAND GETKEYSANDFLAGS GEOHASH k a
    """)


def test_extreme_sizes_and_places(pair23) -> None:
    """Infinite and huge radii and boxes (C's NaN arithmetic, not errors),
    zero sizes, antipodal points, the poles' latitude limit and the
    antimeridian."""
    run(pair23, """
        GEOADD q 0 0 a 180 0 b -180 0 c 90 0 d -90 0 e 0 85 f 180 -85 g 0.0000001 0 h -179.9999999 0 i
        GEODIST q a b
        GEODIST q a c
        GEODIST q a i
        GEODIST q f g
        GEOSEARCH q FROMLONLAT 0 0 BYRADIUS inf m WITHDIST
        GEOSEARCH q FROMLONLAT 0 0 BYRADIUS 1e308 km WITHDIST
        GEOSEARCH q FROMLONLAT 0 0 BYBOX inf inf m WITHDIST
        GEOSEARCH q FROMLONLAT 0 0 BYBOX 1e308 1e308 km WITHDIST
        GEOSEARCH q FROMLONLAT 0 0 BYRADIUS 20037 km WITHDIST ASC
        GEOSEARCH q FROMLONLAT 180 0 BYRADIUS 30000 km WITHDIST DESC
        GEOSEARCH q FROMMEMBER i BYBOX 40000 40000 km WITHDIST DESC
        GEOSEARCH q FROMMEMBER f BYBOX 40000 1000 km WITHDIST DESC
        GEORADIUS q 0 0 inf ft WITHDIST
        GEOSEARCH q FROMLONLAT 0 0 BYRADIUS 0 m WITHDIST
        GEOSEARCH q FROMLONLAT 0 0 BYBOX 0 0 m WITHDIST
        GEOSEARCH q FROMLONLAT 0 85.05112878 BYRADIUS 100 km WITHDIST
        GEOSEARCH q FROMLONLAT 180 -85.05112878 BYRADIUS 100 km WITHDIST
        GEOSEARCH q FROMLONLAT 0 0 BYRADIUS 1e-320 m WITHDIST
        GEOSEARCH q BYPOLYGON 3 -180 -85 180 -85 0 85 WITHDIST
        GEOSEARCH q BYPOLYGON 3 0 80 120 80 -120 80 WITHDIST
    """)


def test_acl_key_permissions(pair, valkey_server, trafikey_server) -> None:
    """The STORE key of GEORADIUS is written, the searched key only read:
    a user allowed to read ``src*`` and write ``dst*`` may store into dst
    only, as on Valkey."""
    run(pair, """
        ACL SETUSER georeader on nopass +@all %R~src* %W~dst*
        GEOADD src 1 1 a
    """)
    ws = [Wire(valkey_server.port), Wire(trafikey_server.port)]
    seen: list[bytes] = []
    try:
        for w in ws:
            assert w.call("AUTH", "georeader", "x") == b"+OK\r\n"
        for line in (
            "GEORADIUS src 1 1 10 km STORE dst1",
            "GEORADIUS src 1 1 10 km STORE other",
            "GEORADIUS src 1 1 10 km STORE other STOREDIST dst2",
            "GEORADIUSBYMEMBER src a 10 km STOREDIST other",
            "GEORADIUS_RO src 1 1 10 km",
            "GEOSEARCHSTORE dst3 src FROMMEMBER a BYRADIUS 10 km",
            "GEOSEARCHSTORE other src FROMMEMBER a BYRADIUS 10 km",
            "GEOADD src 2 2 b",
            "GEOADD dst4 2 2 b",
            "GEOPOS dst1 a",
        ):
            replies = [w.call(*words(line)) for w in ws]
            assert replies[1] == replies[0], (line, replies)
            seen.append(replies[0][:7])
        assert b"-NOPERM" in seen and b":1\r\n" in seen
    finally:
        for w in ws:
            w.close()
        run(pair, "ACL DELUSER georeader")
