"""The list forms older files hold (Redis before 7): a ziplist (RDB type
10) and a quicklist of ziplists (type 14). Valkey 9.1 no longer writes
them, so the blobs are built here by the ziplist format's rules and read
by the list type's loader; the elements come back in order, integers
printed as Valkey prints them, the encoding chosen as Valkey's loader
chooses it (type 10 stays a quicklist; type 14 converts as type 18); and
quicklist nodes Valkey refuses (empty, or of no known container)."""

from __future__ import annotations

import pytest
from helpers.old_encodings import ziplist
from helpers.resp_wire import Wire
from helpers.servers import own_pair

from trafikey_server.protocol.rdbformat import (
    T_LIST_QUICKLIST,
    T_LIST_QUICKLIST_2,
    T_LIST_ZIPLIST,
    Reader,
    encode_len,
    encode_string,
)
from trafikey_server.server import Server
from trafikey_server.services.config import parse_args
from trafikey_server.util.crc64 import crc64
from trafikey_server.values.list import LIST


def _server(*args: str) -> Server:
    return Server(parse_args(["--save", "", *args]))


def test_ziplist_list() -> None:
    items = [b"a", b"bb", b"7", b"-5", b"300", b"12345678901", b"0"]
    lst = LIST.rdb_load(Reader(encode_string(ziplist(items))), T_LIST_ZIPLIST, b"k", _server(), False)
    assert list(lst) == items
    assert lst.big  # Valkey's loader keeps this form a quicklist (no conversion)


def test_quicklist_of_ziplists() -> None:
    nodes = [[b"n%d-%d" % (n, i) for i in range(5)] for n in range(3)]
    blob = encode_len(len(nodes)) + b"".join(encode_string(ziplist(n)) for n in nodes)
    server = _server()
    lst = LIST.rdb_load(Reader(blob), T_LIST_QUICKLIST, b"k", server, False)
    assert list(lst) == [e for n in nodes for e in n]
    assert lst.big  # three nodes: Valkey keeps a quicklist
    one = encode_len(1) + encode_string(ziplist(nodes[0]))
    assert not LIST.rdb_load(Reader(one), T_LIST_QUICKLIST, b"k", server, False).big
    # A count limit the single node passes keeps it a quicklist.
    small = _server("--list-max-listpack-size", "3")
    assert LIST.rdb_load(Reader(one), T_LIST_QUICKLIST, b"k", small, False).big



@pytest.mark.parametrize("node", [(1, b""), (2, b""), (3, b"x")], ids=["empty plain", "empty packed", "container 3"])
def test_restore_of_a_broken_quicklist_node(node: tuple[int, bytes]) -> None:
    """A quicklist (type 18) node that is empty, or of no known container:
    RESTORE refused as valkey-server 9.1.2 refuses it, nothing written."""
    container, blob = node
    body = bytes([T_LIST_QUICKLIST_2]) + encode_len(1) + encode_len(container) + encode_string(blob) + \
        (9).to_bytes(2, "little")
    payload = body + crc64(body).to_bytes(8, "little")
    with own_pair() as (v, t):
        replies = [Wire(p.port).call("RESTORE", "k", "0", payload) for p in (v, t)]
        assert replies[0] == replies[1] == b"-ERR Bad data format\r\n"
        assert [Wire(p.port).call("EXISTS", "k") for p in (v, t)] == [b":0\r\n", b":0\r\n"]
