-- LuaBitOp ("bit"), as built into Valkey's Lua 5.1: 32-bit operations on
-- Lua numbers.  See _support.lua for how errors reach the caller.
--
-- Arguments are converted the way lua_bit.c's barg() does: the number (or
-- numeric string) plus 2^52+2^51, and the low 32 bits of the resulting
-- double's representation.  That rounds to nearest-even and wraps modulo
-- 2^32 for ordinary values; for huge magnitudes it is whatever the low
-- mantissa bits hold, which we reproduce from frexp.  Results are signed
-- 32-bit numbers.  Internally we work on unsigned values in [0, 2^32).

local S = ...
local floor, frexp, abs = math.floor, math.frexp, math.abs
local type, select, tonumber = type, select, tonumber
local format, sub = string.format, string.sub

local entry_argerror, typename = S.entry_argerror, S.typename

local TWO32, TWO31 = 4294967296, 2147483648
local MAGIC = 6755399441055744 -- 2^52 + 2^51
local TWO52, TWO53 = 4503599627370496, 9007199254740992
local HUGE = math.huge

-- barg(): a number or numeric string as an unsigned 32-bit number, or nil.
-- The entry points raise the argument error themselves (without a pcall:
-- these functions are called in tight loops).
local function barg(v)
  local n = v
  if type(v) ~= "number" then
    if type(v) ~= "string" then return nil end
    n = tonumber(v)
    if n == nil then return nil end
  end
  if n >= -2147483648 and n < TWO32 and n == floor(n) then
    return n % TWO32
  end
  local x = n + MAGIC
  if x >= TWO52 and x < TWO53 then
    return (x - TWO52) % TWO32
  end
  if x ~= x or x == HUGE or x == -HUGE or x == 0 then
    return 0
  end
  local m = frexp(x)
  return (abs(m) * TWO53) % TWO32
end

local function expected(narg, nargs, v)
  return "number expected, got " .. typename(narg, nargs, v)
end

local function ret(b)
  if b >= TWO31 then return b - TWO32 end
  return b
end

-- XOR of two bytes: rows of a 256x256 table, each built from a nibble
-- table the first time it is needed (building all of it up front costs tens
-- of milliseconds and a megabyte per runtime, for scripts that may never
-- use bit operations).
local X4 = {}
for a = 0, 15 do
  for b = 0, 15 do
    local r, p, x, y = 0, 1, a, b
    for _ = 1, 4 do
      local xa, yb = x % 2, y % 2
      if xa ~= yb then r = r + p end
      x, y, p = (x - xa) / 2, (y - yb) / 2, p * 2
    end
    X4[a * 16 + b] = r
  end
end

local ROWS = {}
local function row(a)
  local r = {}
  local ah, al = floor(a / 16) * 16, a % 16
  for b = 0, 255 do
    local bl = b % 16
    r[b + 1] = X4[ah + (b - bl) / 16] * 16 + X4[al * 16 + bl]
  end
  ROWS[a + 1] = r
  return r
end

local function xor32(a, b)
  local a0, b0 = a % 256, b % 256
  a, b = (a - a0) / 256, (b - b0) / 256
  local a1, b1 = a % 256, b % 256
  a, b = (a - a1) / 256, (b - b1) / 256
  local a2, b2 = a % 256, b % 256
  a, b = (a - a2) / 256, (b - b2) / 256
  return (ROWS[a0 + 1] or row(a0))[b0 + 1] + (ROWS[a1 + 1] or row(a1))[b1 + 1] * 256
    + (ROWS[a2 + 1] or row(a2))[b2 + 1] * 65536 + (ROWS[a + 1] or row(a))[b + 1] * 16777216
end

local function and32(a, b) return (a + b - xor32(a, b)) / 2 end
local function or32(a, b) return (a + b + xor32(a, b)) / 2 end

local M = {}

M.tobit = function(...)
  local v = ...
  local b = barg(v)
  if not b then entry_argerror(1, expected(1, select("#", ...), v)) end
  return ret(b)
end

M.bnot = function(...)
  local v = ...
  local b = barg(v)
  if not b then entry_argerror(1, expected(1, select("#", ...), v)) end
  return ret(TWO32 - 1 - b)
end

-- band/bor/bxor convert argument 1 first, then the rest from the last one
-- down, as lua_bit.c does; that decides which bad argument gets reported.
local function fold(op)
  return function(...)
    local nargs = select("#", ...)
    local v, w = ...
    local b = barg(v)
    if not b then entry_argerror(1, expected(1, nargs, v)) end
    if nargs == 2 then
      local c = barg(w)
      if not c then entry_argerror(2, expected(2, nargs, w)) end
      return ret(op(b, c))
    end
    for i = nargs, 2, -1 do
      w = select(i, ...)
      local c = barg(w)
      if not c then entry_argerror(i, expected(i, nargs, w)) end
      b = op(b, c)
    end
    return ret(b)
  end
end
M.band = fold(and32)
M.bor = fold(or32)
M.bxor = fold(xor32)

local POW2 = {}
for i = 0, 32 do POW2[i] = 2 ^ i end

local function shift(fn)
  return function(...)
    local v, w = ...
    local b = barg(v)
    if not b then entry_argerror(1, expected(1, select("#", ...), v)) end
    local n = barg(w)
    if not n then entry_argerror(2, expected(2, select("#", ...), w)) end
    return ret(fn(b, n % 32))
  end
end

M.lshift = shift(function(b, n) return (b * POW2[n]) % TWO32 end)
M.rshift = shift(function(b, n) return floor(b / POW2[n]) end)
M.arshift = shift(function(b, n)
  if b >= TWO31 then b = b - TWO32 end
  return floor(b / POW2[n]) % TWO32
end)
M.rol = shift(function(b, n) return (b * POW2[n]) % TWO32 + floor(b / POW2[32 - n]) end)
M.ror = shift(function(b, n) return (b * POW2[32 - n]) % TWO32 + floor(b / POW2[n]) end)

M.bswap = function(...)
  local v = ...
  local b = barg(v)
  if not b then entry_argerror(1, expected(1, select("#", ...), v)) end
  local b0 = b % 256
  b = (b - b0) / 256
  local b1 = b % 256
  b = (b - b1) / 256
  local b2 = b % 256
  local b3 = (b - b2) / 256
  return ret(b0 * 16777216 + b1 * 65536 + b2 * 256 + b3)
end

M.tohex = function(...)
  local nargs = select("#", ...)
  local v, w = ...
  local b = barg(v)
  if not b then entry_argerror(1, expected(1, nargs, v)) end
  local n = 8
  if nargs >= 2 then
    n = barg(w)
    if not n then entry_argerror(2, expected(2, nargs, w)) end
    n = ret(n)
  end
  local fmt = "%08x"
  if n == -2147483648 then n = -2147483647 end
  if n < 0 then
    n = -n
    fmt = "%08X"
  end
  if n > 8 then n = 8 end
  if n == 0 then return "" end
  return sub(format(fmt, b), -n)
end

return M
