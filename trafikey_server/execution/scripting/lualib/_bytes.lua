-- Number <-> byte conversions shared by struct and cmsgpack: IEEE-754
-- single and double precision, and 64-bit integers carried as two 32-bit
-- halves (hi, lo) so that every step stays exact in a Lua double.

local floor, frexp, ldexp, abs = math.floor, math.frexp, math.ldexp, math.abs
local format, sub, char, byte = string.format, string.sub, string.char, string.byte
local tonumber = tonumber

local B = {}

local TWO32, TWO31 = 4294967296, 2147483648
local TWO63, TWO64 = 9223372036854775808, 18446744073709551616
local HUGE = math.huge
local NAN, NEGNAN = tonumber("nan"), tonumber("-nan")
B.NAN, B.NEGNAN = NAN, NEGNAN

-- Whether a number's sign bit is set (works for NaN and -0.0 too).
local function signbit(d)
  if d < 0 then return true end
  if d > 0 then return false end
  if d == 0 then return 1 / d < 0 end
  return sub(format("%f", d), 1, 1) == "-"
end
B.signbit = signbit

-- (hi, lo) of an integer 0 <= v < 2^64 held exactly in a double.
local function split(v)
  local hi = floor(v / TWO32)
  return hi, v - hi * TWO32
end
B.split = split

-- Two's complement negation of a 64-bit (hi, lo).
local function neg64(hi, lo)
  if lo == 0 then
    return (TWO32 - hi) % TWO32, 0
  end
  return TWO32 - 1 - hi, TWO32 - lo
end
B.neg64 = neg64

-- (uint64_t)(int64_t)d for d < 0, (uint64_t)d otherwise, as the x86-64 code
-- GCC generates for lua_struct.c computes them (out of range: 2^63 or 0).
function B.double_to_u64(d)
  if d < 0 then
    if d < -TWO63 then return TWO31, 0 end
    local hi, lo = split(-(d - d % -1)) -- truncate toward zero
    return neg64(hi, lo)
  end
  if d < TWO63 then return split(d - d % 1) end
  if d >= TWO64 then return 0, 0 end
  if d >= TWO63 then return split(d) end
  return TWO31, 0 -- NaN
end

-- The double nearest to the unsigned 64-bit (hi, lo): one rounding, as C's
-- conversion does.
function B.u64_to_double(hi, lo)
  return hi * TWO32 + lo
end

-- The double nearest to the signed 64-bit (hi, lo).
function B.s64_to_double(hi, lo)
  if hi < TWO31 then return hi * TWO32 + lo end
  hi, lo = neg64(hi, lo)
  return -(hi * TWO32 + lo)
end

-- Round-half-even of a non-negative double to an integer.
local function rint(y)
  local r = floor(y)
  local f = y - r
  if f > 0.5 or (f == 0.5 and r % 2 == 1) then r = r + 1 end
  return r
end

-- IEEE single-precision bits (as a number in [0, 2^32)) of (float)d.
function B.float_bits(d)
  local s = signbit(d) and TWO31 or 0
  if d ~= d then return s + 0x7FC00000 end
  local a = abs(d)
  if a == HUGE then return s + 0x7F800000 end
  if a == 0 then return s end
  local m, e = frexp(a)
  if e <= -126 then
    -- subnormal range: units of 2^-149; 2^23 comes out as the smallest normal
    return s + rint(ldexp(a, 149))
  end
  local mant = rint(m * 16777216)
  if mant == 16777216 then
    mant, e = 8388608, e + 1
  end
  local biased = e + 126
  if biased >= 255 then return s + 0x7F800000 end
  return s + biased * 8388608 + (mant - 8388608)
end

-- The double value of single-precision bits.
function B.float_from_bits(bits)
  local neg = bits >= TWO31
  if neg then bits = bits - TWO31 end
  local e = floor(bits / 8388608)
  local mant = bits - e * 8388608
  local v
  if e == 255 then
    if mant ~= 0 then return neg and NEGNAN or NAN end
    v = HUGE
  elseif e == 0 then
    v = ldexp(mant, -149)
  else
    v = ldexp(mant + 8388608, e - 150)
  end
  if neg then return -v end
  return v
end

-- (double)(float)d: d rounded to single precision.
function B.to_float(d)
  return B.float_from_bits(B.float_bits(d))
end

-- IEEE double-precision bits of d as (hi, lo) 32-bit halves.
function B.double_bits(d)
  local s = signbit(d) and TWO31 or 0
  if d ~= d then return s + 0x7FF80000, 0 end
  local a = abs(d)
  if a == HUGE then return s + 0x7FF00000, 0 end
  if a == 0 then return s, 0 end
  local m, e = frexp(a)
  local biased, mant
  if e <= -1022 then
    biased, mant = 0, ldexp(a, 1074)
  else
    biased, mant = e + 1022, (m * 2 - 1) * 4503599627370496
  end
  local mhi = floor(mant / TWO32)
  return s + biased * 1048576 + mhi, mant - mhi * TWO32
end

-- The double with bits (hi, lo).
function B.double_from_bits(hi, lo)
  local neg = hi >= TWO31
  if neg then hi = hi - TWO31 end
  local e = floor(hi / 1048576)
  local mant = (hi - e * 1048576) * TWO32 + lo
  local v
  if e == 2047 then
    if mant ~= 0 then return neg and NEGNAN or NAN end
    v = HUGE
  elseif e == 0 then
    v = ldexp(mant, -1074)
  else
    v = ldexp(mant + 4503599627370496, e - 1075)
  end
  if neg then return -v end
  return v
end

-- Big-endian 4-byte string of v in [0, 2^32).
local function be32(v)
  local b3 = v % 256
  v = (v - b3) / 256
  local b2 = v % 256
  v = (v - b2) / 256
  local b1 = v % 256
  return char((v - b1) / 256, b1, b2, b3)
end
B.be32 = be32

-- [0, 2^32) from 4 bytes of s at i, big-endian.
function B.get_be32(s, i)
  local b0, b1, b2, b3 = byte(s, i, i + 3)
  return ((b0 * 256 + b1) * 256 + b2) * 256 + b3
end

return B
