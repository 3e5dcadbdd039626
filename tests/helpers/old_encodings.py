"""The encodings files from older Redis versions hold and Valkey 9.1 no
longer writes (a ziplist, a zipmap), built by their formats' rules, and a
DUMP payload around an RDB record: for the loaders' tests."""

from __future__ import annotations

from trafikey_server.protocol.rdbformat import encode_string
from trafikey_server.util.crc64 import crc64


def ziplist(entries: list[bytes]) -> bytes:
    """A ziplist of short strings and the integer encodings."""
    body = b""
    prev = 0
    last = 0  # the offset of the last entry in the body (the header's tail offset, less the header)
    for e in entries:
        if e.lstrip(b"-").isdigit():
            v = int(e)
            if 0 <= v <= 12:
                enc = bytes([0xF1 + v])
            elif -128 <= v <= 127:
                enc = b"\xfe" + v.to_bytes(1, "little", signed=True)
            elif -32768 <= v <= 32767:
                enc = b"\xc0" + v.to_bytes(2, "little", signed=True)
            else:
                enc = b"\xe0" + v.to_bytes(8, "little", signed=True)
        else:
            assert len(e) < 64
            enc = bytes([len(e)]) + e
        entry = bytes([prev]) + enc
        prev = len(entry)
        last = len(body)
        body += entry
    total = 10 + len(body) + 1
    head = total.to_bytes(4, "little") + (10 + last).to_bytes(4, "little") + len(entries).to_bytes(2, "little")
    return head + body + b"\xff"


def zipmap(pairs: list[tuple[bytes, bytes]], free: int = 2) -> bytes:
    """A zipmap: a count, each field and value by its length (one byte
    below 254, else 254 and four bytes), a value followed by `free` unused
    bytes; 255 ends it."""
    def length(n: int) -> bytes:
        return bytes([n]) if n < 254 else b"\xfe" + n.to_bytes(4, "little")

    body = b"".join(length(len(f)) + f + length(len(v)) + bytes([free]) + v + b"\0" * free for f, v in pairs)
    return bytes([len(pairs)]) + body + b"\xff"


def dump_payload(rdb_type: int, blob: bytes, version: int = 9) -> bytes:
    """A DUMP payload of one value: its type, the blob as an RDB string,
    the RDB version and the CRC-64 of all that."""
    body = bytes([rdb_type]) + encode_string(blob) + version.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")
