"""Valkey's geohash arithmetic, to the last bit (its geohash.c and
geohash_helper.c).

A position is stored as a sorted-set score: the 26-bit longitude and
latitude cells interleaved into a 52-bit integer, latitude on the even bits,
over the Mercator-safe latitude range -85.05112878..85.05112878. A search
covers the query's bounding box with the cell that holds the centre at an
estimated precision plus its eight neighbours (some dropped when they lie
outside the box), and reads each cell as one score range. The order of the
cells, which of them are dropped and the order inside each range decide
which members a ``COUNT n ANY`` search stops at, so they are reproduced as
Valkey computes them, with the same double arithmetic (libm's sin, cos,
asin and sqrt, in the same order of operations).
"""

from __future__ import annotations

from math import asin, atan2, cos, isfinite, nan, pi, sin, sqrt
from typing import Final

LAT_MIN: Final = -85.05112878
LAT_MAX: Final = 85.05112878
LONG_MIN: Final = -180.0
LONG_MAX: Final = 180.0
STEP_MAX: Final = 26

_D_R: Final = pi / 180.0
EARTH_RADIUS: Final = 6372797.560856
_MERCATOR_MAX: Final = 20037726.37
_M64: Final = (1 << 64) - 1
_EVEN: Final = 0x5555555555555555
_ODD: Final = 0xAAAAAAAAAAAAAAAA

CIRCLE: Final = 1
BOX: Final = 2
POLYGON: Final = 3

Cell = tuple[int, int]  # (bits, step); (0, 0) is Valkey's zeroed neighbour


def _spread_slow(v: int) -> int:
    """The 8 bits of ``v`` moved to the even bit positions of 16."""
    out = 0
    for k in range(8):
        out |= ((v >> k) & 1) << (2 * k)
    return out


_SPREAD8: Final = [_spread_slow(i) for i in range(256)]


def _spread(v: int) -> int:
    """The 32 bits of ``v`` moved to the even bit positions of 64 (byte by
    byte through a table: GEOADD encodes every position it is given)."""
    t = _SPREAD8
    return (t[v & 0xFF] | (t[(v >> 8) & 0xFF] << 16) | (t[(v >> 16) & 0xFF] << 32)
            | (t[(v >> 24) & 0xFF] << 48))


def _squash(v: int) -> int:
    """The even bits of ``v`` gathered into the low 32."""
    v &= 0x5555555555555555
    v = (v | (v >> 1)) & 0x3333333333333333
    v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0F
    v = (v | (v >> 4)) & 0x00FF00FF00FF00FF
    v = (v | (v >> 8)) & 0x0000FFFF0000FFFF
    v = (v | (v >> 16)) & 0x00000000FFFFFFFF
    return v


def encode(lon: float, lat: float, step: int, lat_min: float = LAT_MIN, lat_max: float = LAT_MAX) -> int:
    """The cell of (lon, lat) at ``step`` bits per axis, interleaved. The
    offsets are truncated to 32 bits as C's double-to-uint32 cast does."""
    lat_off = (lat - lat_min) / (lat_max - lat_min) * float(1 << step)
    lon_off = (lon - LONG_MIN) / (LONG_MAX - LONG_MIN) * float(1 << step)
    return _spread(int(lat_off)) | (_spread(int(lon_off)) << 1)


def score_of(lon: float, lat: float) -> int:
    """The 52-bit score GEOADD stores for a position."""
    return encode(lon, lat, STEP_MAX)


def cell_area(bits: int, step: int) -> tuple[float, float, float, float]:
    """(lon_min, lon_max, lat_min, lat_max) of a cell."""
    ilat = _squash(bits)
    ilon = _squash(bits >> 1)
    div = float(1 << step)
    lat_scale = LAT_MAX - LAT_MIN
    lon_scale = LONG_MAX - LONG_MIN
    return (
        LONG_MIN + (ilon * 1.0 / div) * lon_scale,
        LONG_MIN + ((ilon + 1) * 1.0 / div) * lon_scale,
        LAT_MIN + (ilat * 1.0 / div) * lat_scale,
        LAT_MIN + ((ilat + 1) * 1.0 / div) * lat_scale,
    )


_TWO63: Final = float(1 << 63)
_TWO64: Final = float(1 << 64)


def _score_bits(score: float) -> int:
    """``(uint64_t)score`` as x86-64 code computes it, out-of-range values
    included (a sorted set may hold scores GEOADD never wrote)."""
    if -_TWO63 < score < _TWO63:
        return int(score) & _M64
    if _TWO63 <= score < _TWO64:
        return int(score)
    return 0 if score >= _TWO64 else 1 << 63


def decode(score: float) -> tuple[float, float]:
    """The centre of a score's cell, clamped to the valid range."""
    lo_lon, hi_lon, lo_lat, hi_lat = cell_area(_score_bits(score), STEP_MAX)
    x = (lo_lon + hi_lon) / 2
    x = min(max(x, LONG_MIN), LONG_MAX)
    y = (lo_lat + hi_lat) / 2
    y = min(max(y, LAT_MIN), LAT_MAX)
    return x, y


_ALPHABET: Final = b"0123456789bcdefghjkmnpqrstuvwxyz"


def standard_hash(score: float) -> bytes:
    """The 11-character geohash GEOHASH prints: the decoded position
    re-encoded over the standard -90..90 latitude range (52 bits, so the
    11th character is always '0')."""
    x, y = decode(score)
    bits = encode(x, y, STEP_MAX, -90.0, 90.0)
    out = bytearray(11)
    for i in range(10):
        out[i] = _ALPHABET[(bits >> (52 - (i + 1) * 5)) & 0x1F]
    out[10] = _ALPHABET[0]
    return bytes(out)


# -- distances ----------------------------------------------------------------------


def _rad(d: float) -> float:
    return d * _D_R


def lat_distance(lat1: float, lat2: float) -> float:
    return EARTH_RADIUS * abs(_rad(lat2) - _rad(lat1))


def distance(lon1: float, lat1: float, lon2: float, lat2: float) -> float:
    """Haversine distance in metres."""
    lon1r = _rad(lon1)
    lon2r = _rad(lon2)
    v = sin((lon2r - lon1r) / 2)
    if v == 0.0:
        return lat_distance(lat1, lat2)
    lat1r = _rad(lat1)
    lat2r = _rad(lat2)
    u = sin((lat2r - lat1r) / 2)
    a = u * u + cos(lat1r) * cos(lat2r) * v * v
    s = sqrt(a)
    if s > 1.0:
        return nan  # C's asin past 1 (rounding, near-antipodal points)
    return 2.0 * EARTH_RADIUS * asin(s)


class Shape:
    """A search area: a circle of ``radius`` or a ``width`` x ``height`` box
    (in the request's unit, ``conversion`` metres each) around (x, y), or a
    polygon (``points``, (lon, lat) vertices) whose centre is the centroid
    of its vertices, computed by ``search_cells``."""

    __slots__ = ("kind", "x", "y", "radius", "width", "height", "conversion", "points")

    def __init__(self) -> None:
        self.kind = CIRCLE
        self.x = 0.0
        self.y = 0.0
        self.radius = 0.0
        self.width = 0.0
        self.height = 0.0
        self.conversion = 1.0
        self.points: list[tuple[float, float]] = []

    def within(self, x: float, y: float) -> float | None:
        """The distance in metres from the centre to (x, y), or None when
        the point is outside."""
        if self.kind == CIRCLE:
            d = distance(self.x, self.y, x, y)
            return None if d > self.radius * self.conversion else d
        if self.kind == POLYGON:
            return self._in_polygon(x, y)
        if lat_distance(y, self.y) > self.height * self.conversion / 2:
            return None
        if distance(x, y, self.x, y) > self.width * self.conversion / 2:
            return None
        return distance(self.x, self.y, x, y)

    def _in_polygon(self, x: float, y: float) -> float | None:
        """Ray casting (even-odd rule) on the plane of degrees, each edge
        from vertex i to the one before it, as Valkey tests them."""
        pts = self.points
        inside = False
        bx, by = pts[-1]
        for ax, ay in pts:
            if (ay > y) != (by > y) and x < (bx - ax) * (y - ay) / (by - ay) + ax:
                inside = not inside
            bx, by = ax, ay
        return distance(self.x, self.y, x, y) if inside else None


def _estimate_steps(range_m: float, lat: float) -> int:
    if range_m == 0:
        return 26
    step = 1
    while range_m < _MERCATOR_MAX:
        range_m *= 2
        step += 1
    step -= 2
    if lat > 66 or lat < -66:
        step -= 1
        if lat > 80 or lat < -80:
            step -= 1
    return min(max(step, 1), 26)


def _rad_deg(r: float) -> float:
    return r / _D_R


def _c_cos(x: float) -> float:
    """C's cos: NaN, not an exception, for an infinite argument (an
    infinite search size)."""
    return cos(x) if isfinite(x) else nan


def _polygon_bounds(s: Shape) -> tuple[float, float, float, float]:
    """The vertices' bounding box in degrees; sets the shape's centre to the
    centroid of the vertices (the mean of their points on the sphere)."""
    min_lon, max_lon = LONG_MAX, LONG_MIN
    min_lat, max_lat = LAT_MAX, LAT_MIN
    x = y = z = 0.0
    for lon, lat in s.points:
        min_lon = lon if lon < min_lon else min_lon
        max_lon = lon if lon > max_lon else max_lon
        min_lat = lat if lat < min_lat else min_lat
        max_lat = lat if lat > max_lat else max_lat
        lon_r = _rad(lon)
        lat_r = _rad(lat)
        x += EARTH_RADIUS * cos(lat_r) * cos(lon_r)
        y += EARTH_RADIUS * cos(lat_r) * sin(lon_r)
        z += EARTH_RADIUS * sin(lat_r)
    n = len(s.points)
    x /= n
    y /= n
    z /= n
    s.x = _rad_deg(atan2(y, x))
    s.y = _rad_deg(atan2(z, sqrt(x * x + y * y)))
    return min_lon, min_lat, max_lon, max_lat


def _bounds(s: Shape) -> tuple[float, float, float, float]:
    if s.kind == POLYGON:
        return _polygon_bounds(s)
    if s.kind == CIRCLE:
        height = s.conversion * s.radius
        width = s.conversion * s.radius
    else:
        height = s.conversion * (s.height / 2)
        width = s.conversion * (s.width / 2)
    lat_delta = _rad_deg(height / EARTH_RADIUS)
    top = _rad_deg(width / EARTH_RADIUS / _c_cos(_rad(s.y + lat_delta)))
    bottom = _rad_deg(width / EARTH_RADIUS / _c_cos(_rad(s.y - lat_delta)))
    delta = bottom if s.y < 0 else top
    return s.x - delta, s.y - lat_delta, s.x + delta, s.y + lat_delta


def _move(bits: int, step: int, dx: int, dy: int) -> int:
    width = 64 - step * 2
    x = bits & _ODD
    y = bits & _EVEN
    if dx:
        zz = _EVEN >> width
        x = (x + zz + 1) if dx > 0 else ((x | zz) - (zz + 1))
        x &= _ODD >> width
    if dy:
        zz = _ODD >> width
        y = (y + zz + 1) if dy > 0 else ((y | zz) - (zz + 1))
        y &= _EVEN >> width
    return x | y


# The centre cell, then N, S, E, W, NE, NW, SE, SW: the order Valkey reads them.
_AROUND: Final = ((0, 1), (0, -1), (1, 0), (-1, 0), (1, 1), (-1, 1), (1, -1), (-1, -1))


def search_cells(s: Shape) -> list[Cell]:
    """The nine cells (zeroed ones as (0, 0)) Valkey searches for a shape."""
    min_lon, min_lat, max_lon, max_lat = _bounds(s)
    if s.kind == CIRCLE:
        radius_m = s.radius
    elif s.kind == POLYGON:
        # The farthest corner of the bounding box from the centroid.
        radius_m = max(
            distance(s.x, s.y, min_lon, max_lat),
            distance(s.x, s.y, max_lon, max_lat),
            distance(s.x, s.y, min_lon, min_lat),
            distance(s.x, s.y, max_lon, min_lat),
        )
    else:
        radius_m = sqrt((s.width / 2) * (s.width / 2) + (s.height / 2) * (s.height / 2))
    radius_m *= s.conversion
    steps = _estimate_steps(radius_m, s.y)
    bits = encode(s.x, s.y, steps)
    n = _move(bits, steps, 0, 1)
    so = _move(bits, steps, 0, -1)
    e = _move(bits, steps, 1, 0)
    w = _move(bits, steps, -1, 0)
    if steps > 1 and (
        cell_area(n, steps)[3] < max_lat
        or cell_area(so, steps)[2] > min_lat
        or cell_area(e, steps)[1] < max_lon
        or cell_area(w, steps)[0] > min_lon
    ):
        steps -= 1
        bits = encode(s.x, s.y, steps)
    cells: list[Cell] = [(bits, steps)]
    cells += [(_move(bits, steps, dx, dy), steps) for dx, dy in _AROUND]
    if steps >= 2:
        a_lon_min, a_lon_max, a_lat_min, a_lat_max = cell_area(bits, steps)
        zero: set[int] = set()
        if a_lat_min < min_lat:
            zero.update((2, 8, 7))
        if a_lat_max > max_lat:
            zero.update((1, 5, 6))
        if a_lon_min < min_lon:
            zero.update((4, 8, 6))
        if a_lon_max > max_lon:
            zero.update((3, 7, 5))
        for i in zero:
            cells[i] = (0, 0)
    return cells


def cell_scores(cell: Cell) -> tuple[float, float]:
    """The score range [lo, hi) of the members inside a cell."""
    bits, step = cell
    shift = 52 - step * 2
    return float((bits << shift) & _M64), float(((bits + 1) << shift) & _M64)
