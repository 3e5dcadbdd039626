"""The word syntax of valkey.conf lines (Valkey's sdssplitargs).

Words are separated by spaces, tabs, CR or LF. A word may be, or contain,
a "double-quoted" part with C escapes (\\n \\r \\t \\b \\a, \\xHH for any
byte, a backslash before anything else takes that character) or a
'single-quoted' part where only \\' is an escape. A closing quote must end
the word. CONFIG REWRITE quotes strings this way, so whatever it writes
reads back as the same bytes.
"""

from __future__ import annotations

_SPACE = " \n\r\t"
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "a": "\a"}
_HEX = "0123456789abcdefABCDEF"


def split_args(line: str) -> list[str] | None:
    """The line's words, or None for unbalanced quotes. Bytes written as
    \\xHH come back as str through surrogateescape, like the rest of the file."""
    raw = line.encode("utf-8", "surrogateescape")
    words: list[str] = []
    i, n = 0, len(raw)
    while True:
        while i < n and chr(raw[i]) in _SPACE:
            i += 1
        if i >= n:
            return words
        cur = bytearray()
        inq = insq = False
        while True:
            if inq:
                if i >= n:
                    return None
                c = chr(raw[i])
                if c == "\\" and i + 3 < n and chr(raw[i + 1]) == "x" and chr(raw[i + 2]) in _HEX \
                        and chr(raw[i + 3]) in _HEX:
                    cur.append(int(raw[i + 2:i + 4].decode(), 16))
                    i += 3
                elif c == "\\" and i + 1 < n:
                    i += 1
                    e = chr(raw[i])
                    cur += _ESCAPES[e].encode() if e in _ESCAPES else bytes([raw[i]])
                elif c == '"':
                    if i + 1 < n and chr(raw[i + 1]) not in _SPACE:
                        return None  # a closing quote must end the word
                    i += 1
                    break
                else:
                    cur.append(raw[i])
            elif insq:
                if i >= n:
                    return None
                c = chr(raw[i])
                if c == "\\" and i + 1 < n and chr(raw[i + 1]) == "'":
                    i += 1
                    cur.append(raw[i])
                elif c == "'":
                    if i + 1 < n and chr(raw[i + 1]) not in _SPACE:
                        return None
                    i += 1
                    break
                else:
                    cur.append(raw[i])
            else:
                if i >= n or chr(raw[i]) in _SPACE:
                    break
                c = chr(raw[i])
                if c == '"':
                    inq = True
                elif c == "'":
                    insq = True
                else:
                    cur.append(raw[i])
            i += 1
        words.append(cur.decode("utf-8", "surrogateescape"))


def quote(s: str) -> str:
    """Valkey's sdscatrepr: double quotes, C escapes for the rest."""
    out = ['"']
    for ch in s:
        if ch in '\\"':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\a":
            out.append("\\a")
        elif ch == "\b":
            out.append("\\b")
        elif ch.isprintable() and ord(ch) < 128:
            out.append(ch)
        else:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogateescape"))
    out.append('"')
    return "".join(out)
