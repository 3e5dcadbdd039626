"""RESP replies read and written by hand: the bulk strings of a flat reply,
and the bytes of the replies a test expects."""

from __future__ import annotations


def bulk_items(reply: bytes) -> list[bytes]:
    """The bulk strings of a flat array or set reply (elements free of CR LF)."""
    out = []
    lines = reply.split(b"\r\n")
    i = 1
    while i < len(lines):
        if lines[i].startswith(b"$"):
            out.append(lines[i + 1])
            i += 2
        else:
            i += 1
    return out


def bulk(b: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(b), b)


def arr(*items: bytes) -> bytes:
    return b"*%d\r\n" % len(items) + b"".join(items)


def num(n: int) -> bytes:
    return b":%d\r\n" % n


def ids(*jobs: bytes) -> bytes:
    """An array of job ids as bulk strings."""
    return arr(*(bulk(j) for j in jobs))
