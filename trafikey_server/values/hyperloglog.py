"""HyperLogLog values as Valkey lays them out, inside ordinary strings.

An HLL is a string value (``bytes``, or ``bytearray`` once edited: Valkey
edits a raw copy) holding Valkey's bytes, so GET, SET, DUMP and the RDB file
carry it unchanged and a value made by either server counts the same on the
other:

- a 16-byte header: ``HYLL``, the encoding (0 dense, 1 sparse), three bytes
  nobody reads (kept as found), and the cached cardinality, 64 bits little
  endian, whose top bit marks the cache stale;
- dense: 16384 registers of 6 bits packed from the low bit of each byte up
  (12288 bytes), so four registers share three bytes;
- sparse: run-length opcodes, ZERO ``00xxxxxx`` (1 to 64 zero registers),
  XZERO ``01xxxxxx yyyyyyyy`` (1 to 16384) and VAL ``1vvvvvxx`` (1 to 4
  registers of value 1 to 32).

The sparse form is not canonical: which opcodes a register change leaves
behind depends on the opcodes it found (Valkey splits one opcode, then
merges equal neighbours in a window of five). Edits therefore replay
Valkey's steps on a list of opcodes (``_Sparse``) rather than re-encoding
the registers, and the list keeps each opcode's first register so the one
covering a register is found by bisection: a PFADD of many elements costs
a search and a small list splice per element, not a scan of the string.

The cardinality is Ertl's improved estimator (arXiv:1702.01284) over the
register histogram, in the same double-precision steps as Valkey's, so the
integer it rounds to is the same. Dense registers are unpacked in bulk
(``bytes.translate`` and big-integer ORs over the three byte lanes), never
one attribute lookup per register.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from operator import itemgetter
from struct import Struct
from typing import Final

from ..util import native
from ..util.rand import rng

HDR: Final = 16
_CARD: Final = Struct("<Q")  # the cached cardinality: header bytes 8 to 16, little-endian
P: Final = 14
REGISTERS: Final = 1 << P  # 16384
Q: Final = 64 - P
DENSE_BYTES: Final = REGISTERS * 6 // 8  # 12288
DENSE_SIZE: Final = HDR + DENSE_BYTES
DENSE: Final = 0
SPARSE: Final = 1
SPARSE_VAL_MAX: Final = 32
ALPHA_INF: Final = 0.721347520444481703680  # 0.5 / ln(2)

INVALID_MSG: Final = b"INVALIDOBJ Corrupted HLL object detected"
NOT_HLL_MSG: Final = b"WRONGTYPE Key is not a valid HyperLogLog string value."

_MASK64: Final = (1 << 64) - 1
_M: Final = 0xC6A4A7935BD1E995
_SEED: Final = 0xADC83B19
_LLONG_MIN_U: Final = 1 << 63  # what llroundl gives for an estimate past LLONG_MAX

# -- hashing ------------------------------------------------------------------


_WORDS: Final[list[Struct]] = []


def _words(n: int) -> Struct:
    while len(_WORDS) <= n:
        _WORDS.append(Struct("<%dQ" % len(_WORDS)))
    return _WORDS[n]


def murmur64a(data: bytes, seed: int = _SEED) -> int:
    """MurmurHash64A as Valkey computes it (endian-neutral: words read
    little endian)."""
    n = len(data)
    m = _M
    mask = _MASK64
    h = (seed ^ (n * m)) & mask
    nb = n >> 3
    if nb:
        for k in _words(nb).unpack_from(data):
            k = (k * m) & mask
            k ^= k >> 47
            h = ((h ^ ((k * m) & mask)) * m) & mask
    tail = n & 7
    if tail:
        h = ((h ^ int.from_bytes(data[n - tail:], "little")) * m) & mask
    h ^= h >> 47
    h = (h * m) & mask
    return h ^ (h >> 47)


def pat_len(ele: bytes) -> tuple[int, int]:
    """hllPatLen: the register an element falls in, and the length of the
    0...01 run after the index bits (1 to Q + 1)."""
    h = murmur64a(ele)
    x = (h >> P) | (1 << Q)
    return h & (REGISTERS - 1), (x & -x).bit_length()


def _hashed(elements: list[bytes]) -> list[tuple[int, int]]:
    """pat_len of each element, in order. Elements of one length share the
    hash's whole sequence of steps, so each such group is hashed at once
    (``_lanes_pat``); grouping and scattering back use C-level maps only,
    so nothing here runs Python code per element."""
    if _KPAT is not None:
        return [_KPAT(e) for e in elements]
    total = len(elements)
    if total < _LANES_FROM:
        return [pat_len(e) for e in elements]
    lens = list(map(len, elements))
    order = sorted(range(total), key=lens.__getitem__)
    sorted_lens = list(map(lens.__getitem__, order))
    out: list[tuple[int, int]] = [(0, 0)] * total
    put = out.__setitem__
    start = 0
    while start < total:
        n = sorted_lens[start]
        end = bisect_right(sorted_lens, n, start)
        where = order[start:end]
        if end - start < _LANES_FROM:
            results = [pat_len(elements[k]) for k in where]
        else:
            results = _lanes_pat(n, b"".join(map(elements.__getitem__, where)), end - start)
        list(map(put, where, results))
        start = end
    return out


# The compiled hash (util/cbits.pyx), when built: the same pairs as pat_len.
_k: Final = native.load("util.cbits")
_KPAT: Final[Callable[[bytes], tuple[int, int]] | None] = None if _k is None else _k.pat_len
# PFADD into a dense value, whole (the same registers as _dense_set over pat_len).
_KDENSE: Final[Callable[[bytearray, list[bytes]], int] | None] = None if _k is None else _k.dense_add
# PFADD's sparse edits, opcode by opcode in place (the same as sparse_add).
_KSPARSE: Final[Callable[[bytearray, list[bytes], int], tuple[int, int] | None] | None] = (
    None if _k is None else _k.sparse_add)
# is_hll in one call (its pure test reads the value through generic calls when compiled).
_KENC: Final[Callable[[bytes | bytearray], int] | None] = None if _k is None else _k.hll_encoding

# Below this many elements of one length, one at a time is as fast.
_LANES_FROM: Final = 16


def _lanes_pat(n: int, data: bytes, count: int) -> list[tuple[int, int]]:
    """pat_len of ``count`` elements of n bytes each, concatenated in data:
    their words sit in 128-bit lanes of one big integer, and every step of
    the hash (multiply by the constant, shift, xor, cut to 64 bits) is one
    integer operation over all lanes (a 64-bit lane times the 64-bit
    constant fits its 128 bits; what a shift brings in from the next lane
    is cut off). The run of zeros is isolated per lane as x & (~x + 1)."""
    m = _M
    size = count * 16
    ones = int.from_bytes((b"\x01" + bytes(15)) * count, "little")
    mask = ones * _MASK64

    def lane(offset: int, width: int) -> int:
        buf = bytearray(size)
        for b in range(width):
            buf[b::16] = data[offset + b::n]
        return int.from_bytes(buf, "little")

    def values(x: int) -> list[int]:
        return memoryview(x.to_bytes(size, "little")).cast("Q").tolist()[0::2]

    h = ones * ((_SEED ^ (n * m)) & _MASK64)
    for w in range(n >> 3):
        k = (lane(8 * w, 8) * m) & mask
        k ^= (k >> 47) & mask
        h = ((h ^ ((k * m) & mask)) * m) & mask
    tail = n & 7
    if tail:
        h = ((h ^ lane(n - tail, tail)) * m) & mask
    h ^= (h >> 47) & mask
    h = (h * m) & mask
    h ^= (h >> 47) & mask
    x = ((h >> P) & mask) | (ones << Q)
    low = x & ((x ^ mask) + ones)
    return list(zip(values(h & (ones * (REGISTERS - 1))), map(int.bit_length, values(low)), strict=True))


_words(8)

# -- header and validity --------------------------------------------------------


def is_hll(v: bytes | bytearray) -> bool:
    """isHLLObjectOrReply's test of a string value."""
    e: int = hll_encoding(v) if _KENC is None else _KENC(v)
    return e >= 0


def hll_encoding(v: bytes | bytearray) -> int:
    """The encoding byte (DENSE or SPARSE) of a string holding an HLL, else
    -1: the magic, a known encoding, and a dense value's exact size."""
    n = len(v)
    # One method call and one index: on bytes-or-bytearray each is a
    # generic call when compiled, and a slice would copy the 12 KB value.
    if n < HDR or not v.startswith(b"HYLL"):
        return -1
    enc = v[4]
    return enc if enc == SPARSE or (enc == DENSE and n == DENSE_SIZE) else -1


def new_sparse() -> bytearray:
    """createHLLObject: an empty sparse HLL (one XZERO of 16384)."""
    return bytearray(b"HYLL\x01" + bytes(11) + b"\x7f\xff")


def cached(v: bytes | bytearray) -> int | None:
    """The cached cardinality, or None when marked stale."""
    if v[15] & 0x80:
        return None
    card: int = _CARD.unpack_from(v, 8)[0]
    return card


def invalidate(v: bytearray) -> None:
    v[15] |= 0x80


def store_card(v: bytearray, card: int) -> None:
    v[8:16] = card.to_bytes(8, "little")


# -- dense registers in bulk ----------------------------------------------------

_LOW6: Final = bytes(b & 63 for b in range(256))
_SHR6: Final = bytes(b >> 6 for b in range(256))
_SHR4: Final = bytes(b >> 4 for b in range(256))
_SHR2: Final = bytes(b >> 2 for b in range(256))
_LOW4_SHL2: Final = bytes((b & 15) << 2 for b in range(256))
_LOW2_SHL4: Final = bytes((b & 3) << 4 for b in range(256))
# The inverse: byte lanes built from 6-bit registers (values above 63 are
# cut to their 6 bits, as the dense macros do).
_R1_LOW2_SHL6: Final = bytes(((b & 3) << 6) for b in range(256))
_R1_SHR2: Final = bytes((b & 63) >> 2 for b in range(256))
_R2_LOW4_SHL4: Final = bytes(((b & 15) << 4) for b in range(256))
_R2_SHR4: Final = bytes((b & 63) >> 4 for b in range(256))
_R3_SHL2: Final = bytes(((b & 63) << 2) for b in range(256))


def _or(a: bytes, b: bytes) -> bytes:
    """Bytewise OR of equal-length strings whose set bits never meet."""
    return (int.from_bytes(a, "little") | int.from_bytes(b, "little")).to_bytes(len(a), "little")


def _lanes(dense: bytes | bytearray | memoryview) -> tuple[bytes, bytes, bytes, bytes]:
    """The registers 4k, 4k+1, 4k+2 and 4k+3 of 12288 packed bytes, as four
    strings of one byte per register."""
    b0 = bytes(dense[0::3])
    b1 = bytes(dense[1::3])
    b2 = bytes(dense[2::3])
    return (b0.translate(_LOW6), _or(b0.translate(_SHR6), b1.translate(_LOW4_SHL2)),
            _or(b1.translate(_SHR4), b2.translate(_LOW2_SHL4)), b2.translate(_SHR2))


def dense_to_raw(dense: bytes | bytearray | memoryview) -> bytearray:
    """12288 packed bytes -> 16384 registers, one byte each."""
    r0, r1, r2, r3 = _lanes(dense)
    raw = bytearray(REGISTERS)
    raw[0::4] = r0
    raw[1::4] = r1
    raw[2::4] = r2
    raw[3::4] = r3
    return raw


def raw_to_dense(raw: bytes | bytearray) -> bytearray:
    """16384 one-byte registers -> the 12288 packed bytes."""
    r0 = bytes(raw[0::4])
    r1 = bytes(raw[1::4])
    r2 = bytes(raw[2::4])
    r3 = bytes(raw[3::4])
    out = bytearray(DENSE_BYTES)
    out[0::3] = _or(r0.translate(_LOW6), r1.translate(_R1_LOW2_SHL6))
    out[1::3] = _or(r1.translate(_R1_SHR2), r2.translate(_R2_LOW4_SHL4))
    out[2::3] = _or(r2.translate(_R2_SHR4), r3.translate(_R3_SHL2))
    return out


def _dense_set(v: bytearray, index: int, count: int) -> bool:
    """hllDenseSet on a whole value (header included): raise the register
    to count if it is lower."""
    pos = index * 6
    at = HDR + (pos >> 3)
    fb = pos & 7
    b0 = v[at]
    if fb <= 2:
        if count > (b0 >> fb) & 63:
            v[at] = (b0 & ~(63 << fb) & 0xFF) | (count << fb)
            return True
        return False
    b1 = v[at + 1]
    if count > ((b0 >> fb) | (b1 << (8 - fb))) & 63:
        v[at] = (b0 & ((1 << fb) - 1)) | ((count << fb) & 0xFF)
        v[at + 1] = (b1 & ~(63 >> (8 - fb)) & 0xFF) | (count >> (8 - fb))
        return True
    return False


# -- sparse opcodes ---------------------------------------------------------------
#
# An opcode is kept as the integer its bytes spell: ZERO 0..63, VAL
# 128..255, XZERO 0x4000..0x7fff (two bytes, big endian). Each form reads
# back to the bytes it came from.


_OP_BYTES: Final = [bytes((i,)) for i in range(256)]


def _op_bytes(op: int) -> bytes:
    return _OP_BYTES[op] if op < 256 else bytes((op >> 8, op & 0xFF))


_XZERO_BYTE: Final = re.compile(rb"[\x40-\x7f]")
# The registers a one-byte opcode (ZERO or VAL) covers.
_SPAN1: Final = bytes((b + 1) if b < 64 else (b & 3) + 1 if b >= 128 else 0 for b in range(256))


def _parse(v: bytes | bytearray) -> tuple[list[int], list[int], bool]:
    """The sparse opcodes after the header and the registers each covers.
    One-byte opcodes are taken a run at a time between XZEROs (found by a
    regular expression), so the work per opcode is C's. An XZERO cut
    short by the end of the string reads a zero second byte, as Valkey
    reads the string's terminator (the flag returned says so)."""
    ops: list[int] = []
    spans: list[int] = []
    n = len(v)
    i = HDR
    search = _XZERO_BYTE.search
    while True:
        mo = search(v, i)
        j = n if mo is None else mo.start()
        run = v[i:j]
        ops.extend(run)
        spans.extend(run.translate(_SPAN1))
        if mo is None:
            return ops, spans, False
        op = (v[j] << 8) | (v[j + 1] if j + 1 < n else 0)
        ops.append(op)
        spans.append((op & 0x3FFF) + 1)
        i = j + 2
        if i > n:
            return ops, spans, True


def _opcodes(v: bytes | bytearray) -> list[int]:
    return _parse(v)[0]


class _Sparse:
    """A sparse HLL being edited: its opcodes, the first register each
    covers, and the string's length (header included) as Valkey counts it
    against hll-sparse-max-bytes."""

    __slots__ = ("ops", "starts", "size", "cut")

    def __init__(self, v: bytes | bytearray, parsed: tuple[list[int], list[int], bool] | None = None) -> None:
        ops, spans, cut = _parse(v) if parsed is None else parsed
        self.ops = ops
        self.starts = list(accumulate(spans[:-1], initial=0)) if spans else []
        self.size = len(v)
        # The last opcode is an XZERO missing its second byte (a corrupted
        # value). Valkey's edits then count it as two bytes while the string
        # holds one: the string is what its length arithmetic leaves.
        self.cut = cut

    def _recut(self) -> None:
        """After an edit of a value with a cut XZERO: the opcodes as Valkey
        would read back its string, whose length it kept as if the XZERO
        were whole (what lies past the length is gone)."""
        ops, spans, cut = _parse(bytes(HDR) + self.body())
        self.ops = ops
        self.starts = list(accumulate(spans[:-1], initial=0)) if spans else []
        self.cut = cut

    def set(self, index: int, count: int, max_bytes: int) -> int:
        """hllSparseSet: 1 if the register rose, 0 if not, -1 if the
        opcodes do not cover it, 2 if Valkey would promote the HLL to dense
        instead (a value above 32, or a string that would outgrow
        max_bytes); nothing is changed in the last two cases. (The opcode
        arithmetic is written out: this runs once per element added.)"""
        if count > SPARSE_VAL_MAX:
            return 2
        ops = self.ops
        starts = self.starts
        i = bisect_right(starts, index) - 1
        if i < 0:
            return -1
        op = ops[i]
        first = starts[i]
        new = 0x80 | ((count - 1) << 2)  # VAL count, one register
        if op < 64:  # ZERO
            last = first + op
            if index > last:
                return -1
            if op == 0:
                ops[i] = new
                self._merge(i)
                if self.cut:
                    self._recut()
                return 1
            zero = True
            old = 1
        elif op < 256:  # VAL
            last = first + (op & 3)
            if index > last:
                return -1
            if ((op >> 2) & 31) + 1 >= count:
                return 0
            if first == last:
                ops[i] = new
                self._merge(i)
                if self.cut:
                    self._recut()
                return 1
            zero = False
            old = 1
        else:  # XZERO
            last = first + (op & 0x3FFF)
            if index > last:
                return -1
            zero = True
            old = 2
        seq = []
        at = []
        size = 1
        if index != first:
            n = index - first
            if not zero:
                seq.append((op & 0xFC) | (n - 1))
                size += 1
            elif n > 64:
                seq.append(0x4000 | (n - 1))
                size += 2
            else:
                seq.append(n - 1)
                size += 1
            at.append(first)
        seq.append(new)
        at.append(index)
        if index != last:
            n = last - index
            if not zero:
                seq.append((op & 0xFC) | (n - 1))
                size += 1
            elif n > 64:
                seq.append(0x4000 | (n - 1))
                size += 2
            else:
                seq.append(n - 1)
                size += 1
            at.append(index + 1)
        delta = size - old
        if delta > 0 and self.size + delta > max_bytes:
            return 2
        ops[i:i + 1] = seq
        starts[i:i + 1] = at
        self.size += delta
        self._merge(i)
        if self.cut:
            self._recut()
        return 1

    def _merge(self, i: int) -> None:
        """Step 4 of hllSparseSet: from the opcode before the changed one,
        five steps of merging equal adjacent VALs that fit one opcode."""
        ops = self.ops
        n = len(ops)
        j = i - 1 if i > 0 else 0
        left = 5
        while left and j < n:
            left -= 1
            op = ops[j]
            if 128 <= op < 256 and j + 1 < n:
                nxt = ops[j + 1]
                if 128 <= nxt < 256 and not (op ^ nxt) & 0x7C:
                    k = (op & 3) + (nxt & 3) + 1  # the joint run, less one
                    if k <= 3:
                        ops[j + 1] = (op & 0xFC) | k
                        del ops[j]
                        del self.starts[j + 1]
                        self.size -= 1
                        n -= 1
                        continue
            j += 1

    def body(self) -> bytes:
        ops = self.ops
        if not ops or max(ops) < 256:
            return bytes(ops)
        out = b"".join([_OP_BYTES[op] if op < 256 else _op_bytes(op) for op in ops])
        return out[:self.size - HDR] if self.cut else out


# What each one-byte opcode expands to, one byte per register.
_PIECE: Final = [bytes(b + 1) if b < 64 else bytes((((b >> 2) & 31) + 1,)) * ((b & 3) + 1) if b >= 128 else b""
          for b in range(256)]


def _sparse_raw(v: bytes | bytearray) -> bytes | None:
    """The registers of a sparse value, one byte each, or None when its
    runs do not cover exactly 16384 registers (Valkey's reading stops at a
    VAL run past the end, or finds the count off: either way the runs
    expanded add up to another length)."""
    piece = _PIECE
    raw = b"".join([piece[op] if op < 256 else bytes((op & 0x3FFF) + 1) for op in _parse(v)[0]])
    return raw if len(raw) == REGISTERS else None


def _sparse_histogram(v: bytes | bytearray) -> list[int] | None:
    """hllSparseRegHisto (None when the runs do not add up to 16384)."""
    raw = _sparse_raw(v)
    return None if raw is None else raw_histogram(raw)


# -- the estimator -----------------------------------------------------------------


def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y = 1.0
    z = x
    while True:
        x *= x
        z_prev = z
        z += x * y
        y += y
        if z_prev == z:
            return z


def _tau(x: float) -> float:
    if x == 0.0 or x == 1.0:
        return 0.0
    y = 1.0
    z = 1 - x
    while True:
        x = math.sqrt(x)
        z_prev = z
        y *= 0.5
        z -= (1 - x) ** 2 * y
        if z_prev == z:
            return z / 3


def estimate(hist: list[int]) -> int:
    """hllCount's estimate from the register histogram, as the unsigned
    64-bit integer Valkey stores (an estimate past 2**63, or undefined,
    is llroundl's LLONG_MIN)."""
    m = float(REGISTERS)
    z = m * _tau((m - hist[Q + 1]) / m)
    for j in range(Q, 0, -1):
        z += hist[j]
        z *= 0.5
    z += m * _sigma(hist[0] / m)
    if z == 0.0:
        return _LLONG_MIN_U
    e = ALPHA_INF * m * m / z
    if e != e or e >= 9.223372036854775807e18:
        return _LLONG_MIN_U
    r = math.floor(e)
    return int(r + 1 if e - r >= 0.5 else r)


def raw_histogram(raw: bytes | bytearray) -> list[int]:
    """The histogram of one-byte registers (only values up to Q + 1 count
    in the estimate; counting stops once every register is seen)."""
    hist = [0] * 64
    seen = 0
    for value in range(Q + 2):
        k = raw.count(value)
        hist[value] = k
        seen += k
        if seen == REGISTERS:
            break
    return hist


def _dense_histogram(v: bytes | bytearray) -> list[int]:
    return raw_histogram(b"".join(_lanes(memoryview(v)[HDR:])))


def count(v: bytes | bytearray) -> int | None:
    """hllCount of a valid HLL value; None for corrupted sparse opcodes."""
    if v[4] == DENSE:
        return estimate(_dense_histogram(v))
    hist = _sparse_histogram(v)
    return None if hist is None else estimate(hist)


def registers(v: bytes | bytearray) -> bytes | bytearray | None:
    """One byte per register of a valid HLL value (hllMerge's reading);
    None for corrupted sparse opcodes."""
    if v[4] == DENSE:
        return dense_to_raw(memoryview(v)[HDR:])
    return _sparse_raw(v)


def max_into(acc: bytes | bytearray, raw: bytes | bytearray) -> bytearray:
    """Registers of acc raised to those of raw, all at once: bytewise max
    as big-integer arithmetic on byte lanes (every value is below 128)."""
    a = int.from_bytes(acc, "little")
    b = int.from_bytes(raw, "little")
    high = _HIGH
    ge = (((a | high) - b) & high) >> 7  # 1 in each lane where a >= b
    keep = ge * 255
    out = (a & keep) | (b & (keep ^ _ALL))
    return bytearray(out.to_bytes(REGISTERS, "little"))


_HIGH: Final = int.from_bytes(b"\x80" * REGISTERS, "little")
_ALL: Final = int.from_bytes(b"\xff" * REGISTERS, "little")  # not a shift: mypyc would fold a 131,072-bit literal

# -- edits --------------------------------------------------------------------------


def to_dense(v: bytearray) -> bool:
    """hllSparseToDense in place: the header (cache included) kept, the
    encoding byte set; False, and v unchanged, if the opcodes are corrupted."""
    if v[4] == DENSE:
        return True
    raw = _sparse_raw(v)
    if raw is None:
        return False
    v[HDR:] = raw_to_dense(raw)
    v[4] = DENSE
    return True


def sparse_add(v: bytearray, elements: list[bytes], max_bytes: int) -> tuple[int, int] | None:
    """PFADD's edits of a sparse value whose runs cover the 16384 registers
    exactly, in place: (registers raised, elements taken), fewer taken than
    given when the next would promote the value to dense. None, v
    untouched, for any other value (``add`` then follows Valkey's reading
    of the corrupted opcodes). util/cbits.pyx's ``sparse_add`` answers the
    same without parsing the whole string each time."""
    parsed = _parse(v)
    if parsed[2] or sum(parsed[1]) != REGISTERS:
        return None
    sp = _Sparse(v, parsed)
    updated = 0
    k = 0
    for e in elements:
        index, cnt = pat_len(e)
        r = sp.set(index, cnt, max_bytes)
        if r == 2:
            break
        updated += r
        k += 1
    if updated:
        v[HDR:] = sp.body()
        invalidate(v)
    return updated, k


def _dense_add(v: bytearray, elements: list[bytes]) -> int:
    if _KDENSE is not None:
        n: int = _KDENSE(v, elements)
        return n
    return sum([_dense_set(v, index, cnt) for index, cnt in _hashed(elements)])


def add(v: bytearray, elements: list[bytes], max_bytes: int) -> int:
    """PFADD's loop over elements on a valid HLL value, in place: the
    number of registers raised (Valkey's ``updated``), or -1 when corrupted
    opcodes stop it (what was done until then stays, as in Valkey). The
    cache is not marked stale here, except by sparse edits, which mark it
    as they go."""
    if not elements:
        return 0
    if v[4] == DENSE:
        return _dense_add(v, elements)
    if len(elements) < _AT_ONCE_FROM:
        edits = sparse_add(v, elements, max_bytes) if _KSPARSE is None else _KSPARSE(v, elements, max_bytes)
        if edits is not None:
            raised, taken = edits
            if taken < len(elements):
                to_dense(v)
                raised += _dense_add(v, elements[taken:])
            return raised
    hashed = _hashed(elements)
    updated = 0
    k = 0
    if v[4] == SPARSE and len(hashed) >= _AT_ONCE_FROM:
        done = _dense_at_once(v, hashed, max_bytes)
        if done is not None:
            return done
    if v[4] == SPARSE:
        sp = _Sparse(v)
        changed = False
        promoted = None
        for index, cnt in hashed:
            r = sp.set(index, cnt, max_bytes)
            k += 1
            if r == 1:
                updated += 1
                changed = True
            elif r == 2:
                promoted = (index, cnt)
                break
            elif r == -1:
                updated = -1
                break
        if changed:
            v[HDR:] = sp.body()
            invalidate(v)
        if promoted is None:
            return updated
        if not to_dense(v):
            return -1
        _dense_set(v, promoted[0], promoted[1])
        updated += 1
    for index, cnt in hashed[k:]:
        if _dense_set(v, index, cnt):
            updated += 1
    return updated


# A batch this large into a sparse value is first checked for ending dense.
_AT_ONCE_FROM: Final = 128


def _dense_at_once(v: bytearray, hashed: list[tuple[int, int]], max_bytes: int) -> int | None:
    """A batch into a sparse value that surely ends dense, done at once:
    the registers raised in a flat array, then packed. The number of
    registers raised is the same whatever the encoding, and so is the end
    value (header kept, dense, cache stale), so the opcode edits need not
    be replayed when they surely promote: an element counting above 32
    promotes, and so do final registers no sparse string within
    hll-sparse-max-bytes can hold (a lower bound on the opcodes they need:
    one per run of zeros, one per run of a value and one per four
    registers of a value). None, with v untouched, when not sure (or the
    value is corrupted, or already past the limit: the one-by-one edits
    then decide)."""
    if len(v) > max_bytes:
        return None
    if _parse(v)[2]:
        return None
    raw = _sparse_raw(v)
    if raw is None:
        return None
    regs = bytearray(raw)
    updated = 0
    for index, cnt in hashed:
        if cnt > regs[index]:
            regs[index] = cnt
            updated += 1
    if max(map(itemgetter(1), hashed)) <= SPARSE_VAL_MAX:
        nonzero = regs.translate(_NONZERO)
        prev = b"\x00" + bytes(regs[:-1])
        changed = (int.from_bytes(regs, "little") ^ int.from_bytes(prev, "little")).to_bytes(REGISTERS, "little")
        starts = int.from_bytes(changed.translate(_NONZERO), "little")
        is_zero = int.from_bytes(nonzero, "little") ^ _ONES
        first_zero = 1 if regs[0] == 0 else 0  # a zero run at register 0 starts without a change
        zero_runs = (starts & is_zero).bit_count() + first_zero
        value_runs = (starts & ~is_zero).bit_count()
        n = REGISTERS - regs.count(0)
        if HDR + zero_runs + max(value_runs, (n + 3) // 4) <= max_bytes:
            return None
    v[HDR:] = raw_to_dense(regs)
    v[4] = DENSE
    invalidate(v)
    return updated


_NONZERO: Final = bytes([0]) + bytes([1]) * 255
_ONES: Final = int.from_bytes(b"\x01" * REGISTERS, "little")


def merge_into(v: bytearray, raw: bytes | bytearray, use_dense: bool, max_bytes: int) -> bool:
    """PFMERGE's write of the merged registers into the destination value
    (which took part in the merge, so its registers are all at most
    raw's): dense if any source was, else register by register through
    the sparse edits until they would promote. False if the destination's
    opcodes are corrupted."""
    if use_dense and not to_dense(v):
        return False
    if v[4] == SPARSE:
        sp = _Sparse(v)
        changed = False
        for index in range(REGISTERS):
            cnt = raw[index]
            if not cnt:
                continue
            r = sp.set(index, cnt, max_bytes)
            if r == 1:
                changed = True
            elif r == 2:
                if changed:
                    v[HDR:] = sp.body()
                if not to_dense(v):
                    return False
                break
        else:
            if changed:
                v[HDR:] = sp.body()
            invalidate(v)
            return True
    v[HDR:] = raw_to_dense(raw)
    invalidate(v)
    return True


def decode(v: bytes | bytearray) -> bytes:
    """PFDEBUG DECODE: the opcodes of a sparse value as text."""
    out = []
    for op in _opcodes(v):
        if op < 64:
            out.append(b"z:%d" % (op + 1))
        elif op < 256:
            out.append(b"v:%d,%d" % (((op >> 2) & 31) + 1, (op & 3) + 1))
        else:
            out.append(b"Z:%d" % ((op & 0x3FFF) + 1))
    return b" ".join(out)


# -- PFSELFTEST ---------------------------------------------------------------------


def selftest(max_bytes: int, cycles: int = 1000, limit: int = 100_000) -> bytes | None:
    """PFSELFTEST's two checks, on this implementation: packed registers
    read back what was written, and dense and sparse HLLs fed the same
    elements agree and stay within six standard errors, at cardinalities
    1, 10, 100, ... up to ``limit`` (Valkey goes on to 10**7, which pure
    Python cannot do in a command's time). None on success, else the
    error text. The registers and elements are drawn from the server's
    generator (Valkey's from rand()), so a seeded run repeats."""
    for _ in range(cycles):
        raw = rng.randbytes(REGISTERS).translate(_LOW6)
        back = dense_to_raw(raw_to_dense(raw))
        if back != raw:
            i = next(j for j in range(REGISTERS) if back[j] != raw[j])
            return b"TESTFAILED Register %d should be %d but is %d" % (i, raw[i], back[i])
    dense = bytearray(b"HYLL" + bytes(12)) + bytearray(DENSE_BYTES)
    sparse = new_sparse()
    relerr = 1.04 / math.sqrt(REGISTERS)
    seed = rng.getrandbits(64)
    checkpoint = 1
    j = 1
    while checkpoint <= limit:
        batch = [((i ^ seed) & _MASK64).to_bytes(8, "little") for i in range(j, checkpoint + 1)]
        add(dense, batch, max_bytes)
        add(sparse, batch, max_bytes)
        j = checkpoint + 1
        if checkpoint < max_bytes / 2 and sparse[4] != SPARSE:
            return b"TESTFAILED sparse encoding not used"
        card = count(dense)
        if card != count(sparse):
            return b"TESTFAILED dense/sparse disagree"
        assert card is not None
        maxerr = 1 if checkpoint == 10 else math.ceil(relerr * 6 * checkpoint)
        if abs(checkpoint - card) > maxerr:
            return b"TESTFAILED Too big error. card:%d abserr:%d" % (checkpoint, abs(checkpoint - card))
        checkpoint *= 10
    return None
