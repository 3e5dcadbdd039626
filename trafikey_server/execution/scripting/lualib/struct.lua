-- Roberto Ierusalimschy's "struct" library as built into Valkey (lua_struct.c
-- on x86-64: long and size_t are 8 bytes, int 4, short 2, native order
-- little-endian, maximum alignment 8).  See _support.lua for errors.
--
-- Formats are C strings: processing stops at the first NUL.  Integers pass
-- through a C unsigned long, so sizes above 8 bytes are zero-filled when
-- packing, and only 8 bytes survive when unpacking (with the sign-extension
-- mask computed by an over-wide shift that x86 reduces modulo 64).

local S, B = ...
local type, select, tonumber, tostring, unpack = type, select, tonumber, tostring, unpack
local format, sub, char, byte, rep, find = string.format, string.sub, string.char, string.byte, string.rep, string.find
local reverse = string.reverse
local concat = table.concat

local entry1, entryn = S.entry1, S.entryn
local fail, argfail = S.fail, S.argfail
local checkstring, optinteger = S.checkstring, S.optinteger
local cstr, MAXCSTACK = S.cstr, S.MAXCSTACK

local BIG, LITTLE = 0, 1
local MAXINTSIZE, MAXALIGN = 32, 8
local INT_MAX = 2147483647
local TWO32, TWO64 = 4294967296, 18446744073709551616

local O_SPACE, O_BIG, O_LITTLE, O_BANG = 32, 62, 60, 33
local O_x, O_c, O_s, O_f, O_d = 120, 99, 115, 102, 100
local O_i, O_I = 105, 73

-- Sizes of the options that do not read a count.
local FIXED = {
  [byte("b")] = 1, [byte("B")] = 1, [byte("h")] = 2, [byte("H")] = 2,
  [byte("l")] = 8, [byte("L")] = 8, [byte("T")] = 8,
  [O_f] = 4, [O_d] = 8, [O_x] = 1,
}
local INTEGER = {
  [byte("b")] = true, [byte("B")] = true, [byte("h")] = true, [byte("H")] = true,
  [byte("l")] = true, [byte("L")] = true, [byte("T")] = true, [O_i] = true, [O_I] = true,
}
local SIGNED = {
  [byte("b")] = true, [byte("h")] = true, [byte("l")] = true, [O_i] = true,
}

local function isdigit(c) return c and c >= 48 and c <= 57 end

-- getnum(): a decimal count at fmt[i], or df; returns (value, next index).
local function getnum(fmt, i, df)
  local c = byte(fmt, i)
  if not isdigit(c) then return df, i end
  local a = 0
  repeat
    local d = c - 48
    if a > 214748364 or a * 10 > INT_MAX - d then fail("integral size overflow") end
    a = a * 10 + d
    i = i + 1
    c = byte(fmt, i)
  until not isdigit(c)
  return a, i
end

-- optsize(): the size of option opt, reading its count; (size, next index).
local function optsize(opt, fmt, i)
  local size = FIXED[opt]
  if size then return size, i end
  if opt == O_c then return getnum(fmt, i, 1) end
  if opt == O_i or opt == O_I then
    local sz
    sz, i = getnum(fmt, i, 4)
    if sz > MAXINTSIZE then
      fail(format("integral size %d is larger than limit of %d", sz, MAXINTSIZE))
    end
    return sz, i
  end
  return 0, i
end

-- x & m for a non-negative integer x and 0 <= m < 64.
local function band_small(x, m)
  local r, p = 0, 1
  x = x % 64
  while m > 0 do
    local xb, mb = x % 2, m % 2
    if xb == 1 and mb == 1 then r = r + p end
    x, m, p = (x - xb) / 2, (m - mb) / 2, p * 2
  end
  return r
end

-- gettoalign(): padding before an item of size 'size' at offset len.
local function gettoalign(len, align, opt, size)
  if size == 0 or opt == O_c or align == 1 then return 0 end
  if size > align then size = align end
  return band_small(size - band_small(len, size - 1), size - 1)
end

local function isp2(x)
  if x <= 0 then return false end
  while x % 2 == 0 do x = x / 2 end
  return x == 1
end

-- controloptions(): endianness, alignment, spaces; anything else is an
-- invalid option.  Returns (endian, align, next index).
local function controloptions(opt, fmt, i, endian, align)
  if opt == O_SPACE then return endian, align, i end
  if opt == O_BIG then return BIG, align, i end
  if opt == O_LITTLE then return LITTLE, align, i end
  if opt == O_BANG then
    local a
    a, i = getnum(fmt, i, MAXALIGN)
    if not isp2(a) then fail(format("alignment %d is not a power of 2", a)) end
    return endian, a, i
  end
  argfail(1, format("invalid format option '%s'", char(opt)))
end

local POW256 = { [0] = 1 }
for k = 1, 8 do POW256[k] = POW256[k - 1] * 256 end
local TWO48 = POW256[6]

-- The size bytes of an integer argument, in the given byte order.
local function putinteger(n, endian, size)
  if size <= 4 and n > -TWO48 and n < TWO48 then
    -- common case, exact in a double: truncate, reduce modulo 2^(8*size)
    local v = (n >= 0 and n - n % 1 or n - n % -1) % POW256[size]
    if size == 1 then return char(v) end
    local b0 = v % 256
    v = (v - b0) / 256
    if size == 2 then
      if endian == LITTLE then return char(b0, v) end
      return char(v, b0)
    end
    local b1 = v % 256
    v = (v - b1) / 256
    local b2 = v % 256
    v = (v - b2) / 256
    if size == 4 then
      if endian == LITTLE then return char(b0, b1, b2, v) end
      return char(v, b2, b1, b0)
    end
    if size == 3 then
      if endian == LITTLE then return char(b0, b1, b2) end
      return char(b2, b1, b0)
    end
    return ""
  end
  local hi, lo = B.double_to_u64(n)
  local le = {}
  for k = 1, 4 do
    local b = lo % 256
    le[k] = b
    lo = (lo - b) / 256
  end
  for k = 5, 8 do
    local b = hi % 256
    le[k] = b
    hi = (hi - b) / 256
  end
  local out = {}
  if endian == LITTLE then
    for k = 1, size do out[k] = le[k] or 0 end
  else
    for k = 1, size do out[size + 1 - k] = le[k] or 0 end
  end
  return char(unpack(out, 1, size))
end

-- getinteger(): an integer item of size bytes at data[pos+1..].
local function getinteger(data, pos, endian, issigned, size)
  if size <= 6 then
    -- common case, exact in a double and clear of the shift quirk below
    local v = 0
    if endian == BIG then
      for k = pos + 1, pos + size do v = v * 256 + byte(data, k) end
    else
      for k = pos + size, pos + 1, -1 do v = v * 256 + byte(data, k) end
    end
    if issigned and v >= POW256[size] / 2 then v = v - POW256[size] end
    return v
  end
  -- The 8 bytes that survive the shifts, least significant first.
  local le = {}
  if endian == BIG then
    for k = 1, 8 do le[k] = byte(data, pos + size + 1 - k) or 0 end
    for k = size + 1, 8 do le[k] = 0 end
  else
    for k = 1, 8 do le[k] = k <= size and byte(data, pos + k) or 0 end
  end
  local lo = ((le[4] * 256 + le[3]) * 256 + le[2]) * 256 + le[1]
  local hi = ((le[8] * 256 + le[7]) * 256 + le[6]) * 256 + le[5]
  if not issigned then return B.u64_to_double(hi, lo) end
  local shift = (size * 8 - 1) % 64
  -- l >= 2^shift: set every bit from 'shift' up (sign extension).
  local negative
  if shift >= 32 then
    negative = hi >= 2 ^ (shift - 32)
    if negative then
      hi = hi % 2 ^ (shift - 32) + (TWO32 - 2 ^ (shift - 32))
    end
  else
    negative = hi > 0 or lo >= 2 ^ shift
    if negative then
      hi, lo = TWO32 - 1, lo % 2 ^ shift + (TWO32 - 2 ^ shift)
    end
  end
  return B.s64_to_double(hi, lo)
end

-- b_pack() pushes a nil above its arguments before reading them, so the
-- first missing argument (the only one ever reported) has type "nil".
local function pack_arg(args, narg, nargs, expected)
  local v = args[narg]
  local t = type(v)
  if expected == "number" then
    if t == "number" then return v end
    if t == "string" then
      local n = tonumber(v)
      if n then return n end
    end
  else
    if t == "string" then return v end
    if t == "number" then return tostring(v) end
  end
  local got = t
  if narg > nargs then got = "nil" end
  argfail(narg, format("%s expected, got %s", expected, got))
end

local function pack_impl(...)
  local nargs = select("#", ...)
  local args = { ... }
  local fmt = cstr(checkstring(1, nargs, args[1]))
  local endian, align = LITTLE, 1
  local out, nout = {}, 0
  local arg = 2
  local totalsize = 0
  local i, n = 1, #fmt
  while i <= n do
    local opt = byte(fmt, i)
    local size
    size, i = optsize(opt, fmt, i + 1)
    local toalign = gettoalign(totalsize, align, opt, size)
    totalsize = totalsize + toalign
    if toalign > 0 then
      nout = nout + 1
      out[nout] = rep("\0", toalign)
    end
    if INTEGER[opt] then
      local v = pack_arg(args, arg, nargs, "number")
      arg = arg + 1
      nout = nout + 1
      out[nout] = putinteger(v, endian, size)
    elseif opt == O_x then
      nout = nout + 1
      out[nout] = "\0"
    elseif opt == O_f then
      local v = pack_arg(args, arg, nargs, "number")
      arg = arg + 1
      local s = B.be32(B.float_bits(v))
      if endian == LITTLE then s = reverse(s) end
      nout = nout + 1
      out[nout] = s
    elseif opt == O_d then
      local v = pack_arg(args, arg, nargs, "number")
      arg = arg + 1
      local hi, lo = B.double_bits(v)
      local s = B.be32(hi) .. B.be32(lo)
      if endian == LITTLE then s = reverse(s) end
      nout = nout + 1
      out[nout] = s
    elseif opt == O_c or opt == O_s then
      local s = pack_arg(args, arg, nargs, "string")
      arg = arg + 1
      local l = #s
      if size == 0 then size = l end
      -- lua_struct.c reports the argument after the short one
      if l < size then argfail(arg, "string too short") end
      nout = nout + 1
      out[nout] = size == l and s or sub(s, 1, size)
      if opt == O_s then
        nout = nout + 1
        out[nout] = "\0"
        size = size + 1
      end
    else
      endian, align, i = controloptions(opt, fmt, i, endian, align)
    end
    totalsize = totalsize + size
  end
  return concat(out, "", 1, nout)
end

local function unpack_impl(...)
  local nargs = select("#", ...)
  local fmt, data, pos = ...
  fmt = cstr(checkstring(1, nargs, fmt))
  data = checkstring(2, nargs, data)
  local ld = #data
  pos = optinteger(3, nargs, pos, 1)
  if pos == 0 then argfail(3, "offset must be 1 or greater") end
  -- A size_t in C: a negative position is a huge one, past any data, and
  -- comes back unchanged when the format is empty.
  local start = pos
  pos = pos - 1
  local endian, align = LITTLE, 1
  local res, nres = {}, 0
  local i, n = 1, #fmt
  while i <= n do
    local opt = byte(fmt, i)
    local size
    size, i = optsize(opt, fmt, i + 1)
    pos = pos + gettoalign(pos, align, opt, size)
    if start < 0 or not (size <= ld and pos <= ld - size) then argfail(2, "data string too short") end
    if nargs + nres + 2 > MAXCSTACK then fail("stack overflow (too many results)") end
    if INTEGER[opt] then
      nres = nres + 1
      res[nres] = getinteger(data, pos, endian, SIGNED[opt], size)
    elseif opt == O_x then
      -- padding
    elseif opt == O_f then
      local s = sub(data, pos + 1, pos + 4)
      if endian == BIG then s = reverse(s) end
      local b0, b1, b2, b3 = byte(s, 1, 4)
      nres = nres + 1
      res[nres] = B.float_from_bits(((b3 * 256 + b2) * 256 + b1) * 256 + b0)
    elseif opt == O_d then
      local s = sub(data, pos + 1, pos + 8)
      if endian == LITTLE then s = reverse(s) end
      nres = nres + 1
      res[nres] = B.double_from_bits(B.get_be32(s, 1), B.get_be32(s, 5))
    elseif opt == O_c then
      if size == 0 then
        local prev = res[nres]
        local t = type(prev)
        local num = t == "number" and prev or (t == "string" and tonumber(prev))
        if nres == 0 or not num then fail("format 'c0' needs a previous size") end
        res[nres] = nil
        nres = nres - 1
        -- (size_t) of the number: truncation; negative and NaN wrap to huge
        if num >= TWO64 then
          size = 0
        elseif num >= 0 then
          size = num - num % 1
        else
          size = TWO64
        end
        if not (size <= ld and pos <= ld - size) then argfail(2, "data string too short") end
      end
      nres = nres + 1
      res[nres] = sub(data, pos + 1, pos + size)
    elseif opt == O_s then
      local e = find(data, "\0", pos + 1, true)
      if not e then fail("unfinished string in data") end
      size = e - pos
      nres = nres + 1
      res[nres] = sub(data, pos + 1, e - 1)
    else
      endian, align, i = controloptions(opt, fmt, i, endian, align)
    end
    pos = pos + size
  end
  nres = nres + 1
  res[nres] = n == 0 and start or pos + 1
  return res, nres
end

local function size_impl(...)
  local nargs = select("#", ...)
  local fmt = cstr(checkstring(1, nargs, (...)))
  local endian, align = LITTLE, 1
  local pos = 0
  local i, n = 1, #fmt
  while i <= n do
    local opt = byte(fmt, i)
    local size
    size, i = optsize(opt, fmt, i + 1)
    pos = pos + gettoalign(pos, align, opt, size)
    if opt == O_s then
      argfail(1, "option 's' has no fixed size")
    elseif opt == O_c and size == 0 then
      argfail(1, "option 'c0' has no fixed size")
    end
    local isalnum = (opt >= 48 and opt <= 57) or (opt >= 65 and opt <= 90) or (opt >= 97 and opt <= 122)
    if not isalnum then
      endian, align, i = controloptions(opt, fmt, i, endian, align)
    end
    pos = pos + size
  end
  return pos
end

return {
  pack = entry1(pack_impl),
  unpack = entryn(unpack_impl),
  size = entry1(size_impl),
}
