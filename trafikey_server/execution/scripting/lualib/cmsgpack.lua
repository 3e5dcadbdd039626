-- lua-cmsgpack 0.4.0 as built into Valkey (lua_cmsgpack.c, Lua 5.1, 64-bit).
-- See _support.lua for errors.
--
-- Encoding: integral numbers in [-2^63, 2^63) use the smallest MessagePack
-- integer; other numbers use float32 when the value survives the round trip,
-- else float64; strings use fixstr/str8/str16/str32; a table whose keys are
-- exactly 1..n is an array (so {} is an empty array), anything else a map in
-- next() order; tables nested 16 deep, and every non-encodable value, become
-- nil.  Decoding has no bin/ext support ("Bad data format in input.").
-- Decoded values that need more Lua stack than a C function may use fail the
-- way the C code does, so the slot accounting below follows lua_cmsgpack.c.

local S, B = ...
local floor = math.floor
local type, select, next = type, select, next
local format, sub, char, byte = string.format, string.sub, string.char, string.byte
local concat = table.concat

local entry1, entryn = S.entry1, S.entryn
local fail, argfail, rawfail = S.fail, S.argfail, S.rawfail
local checkstring, optinteger, checkinteger = S.checkstring, S.optinteger, S.checkinteger
local toint32, MAXCSTACK = S.toint32, S.MAXCSTACK

local TWO32, TWO31 = 4294967296, 2147483648
local TWO63 = 9223372036854775808
local MAX_NESTING = 16
local INT_MAX = 2147483647

-- ---------------------------------------------------------------- encoding

local be32, split, neg64 = B.be32, B.split, B.neg64

local function be16(n)
  local lo = n % 256
  return char((n - lo) / 256, lo)
end

local function enc_int(n)
  if n >= 0 then
    if n <= 127 then return char(n) end
    if n <= 255 then return "\204" .. char(n) end
    if n <= 65535 then return "\205" .. be16(n) end
    if n < TWO32 then return "\206" .. be32(n) end
    local hi, lo = split(n)
    return "\207" .. be32(hi) .. be32(lo)
  end
  if n >= -32 then return char(n + 256) end
  if n >= -128 then return "\208" .. char(n + 256) end
  if n >= -32768 then return "\209" .. be16(n + 65536) end
  if n >= -TWO31 then return "\210" .. be32(n + TWO32) end
  local hi, lo = neg64(split(-n))
  return "\211" .. be32(hi) .. be32(lo)
end

local function enc_number(n)
  if n == floor(n) and n >= -TWO63 and n < TWO63 then
    return enc_int(n)
  end
  if n == B.to_float(n) then
    return "\202" .. be32(B.float_bits(n))
  end
  local hi, lo = B.double_bits(n)
  return "\203" .. be32(hi) .. be32(lo)
end

local function enc_string(s)
  local len = #s
  if len < 32 then return char(160 + len) .. s end
  if len <= 255 then return "\217" .. char(len) .. s end
  if len <= 65535 then return "\218" .. be16(len) .. s end
  return "\219" .. be32(len % TWO32) .. s
end

local function enc_len(n, fix, h16, h32)
  if n <= 15 then return char(fix + n) end
  if n <= 65535 then return h16 .. be16(n) end
  return h32 .. be32(n % TWO32)
end

local encode

-- table_is_an_array(): every key a positive integer below 2^31, and as many
-- keys as the largest one.
local function is_array(t)
  local count, max = 0, 0
  for k in next, t do
    if type(k) ~= "number" or k <= 0 or k >= TWO31 or k ~= floor(k) then
      return false
    end
    if k > max then max = k end
    count = count + 1
  end
  return max == count
end

-- Appends the encoding of v (at nesting level 'level') to out.
encode = function(v, out, level)
  local t = type(v)
  if t == "string" then
    out[#out + 1] = enc_string(v)
  elseif t == "number" then
    out[#out + 1] = enc_number(v)
  elseif t == "boolean" then
    out[#out + 1] = v and "\195" or "\194"
  elseif t == "table" and level ~= MAX_NESTING then
    if is_array(v) then
      local len = #v
      out[#out + 1] = enc_len(len, 0x90, "\220", "\221")
      for j = 1, len do
        encode(v[j], out, level + 1)
      end
    else
      local len = 0
      for _ in next, v do len = len + 1 end
      out[#out + 1] = enc_len(len, 0x80, "\222", "\223")
      for k, x in next, v do
        encode(k, out, level + 1)
        encode(x, out, level + 1)
      end
    end
  else
    out[#out + 1] = "\192"
  end
end

local function pack_impl(...)
  local nargs = select("#", ...)
  if nargs == 0 then argfail(0, "MessagePack pack needs input.") end
  if nargs + nargs > MAXCSTACK then argfail(0, "Too many arguments for MessagePack pack.") end
  local out = {}
  if nargs == 1 then
    encode((...), out, 0)
  else
    local args = { ... }
    for i = 1, nargs do encode(args[i], out, 0) end
  end
  return concat(out)
end

-- ---------------------------------------------------------------- decoding

-- A decoding pass: the input, the read position (1-based index of the next
-- byte), the end, and 'top', the Lua stack slots the C decoder would hold.
local EOF, BADFMT = 1, 2
local s_, pos_, len_, err_, top_

local function need(n)
  if len_ - pos_ + 1 < n then
    err_ = EOF
    return false
  end
  return true
end

local decode

local function check_stack(msg)
  if top_ + 1 > MAXCSTACK then fail("stack overflow (" .. msg .. ")") end
end

local function settable(t, k, v)
  if k == nil then rawfail("table index is nil") end
  if k ~= k then rawfail("table index is NaN") end
  t[k] = v
end

local function decode_array(n)
  local t = {}
  top_ = top_ + 1
  check_stack("in function mp_decode_to_lua_array")
  local index = 1
  for _ = 1, n do
    top_ = top_ + 1 -- the index
    local v = decode()
    if err_ then return t end
    top_ = top_ - 1
    t[index] = v
    index = index + 1
  end
  top_ = top_ - 1
  return t
end

local function decode_map(n)
  local t = {}
  top_ = top_ + 1
  for _ = 1, n do
    local k = decode()
    if err_ then return t end
    top_ = top_ + 1
    local v = decode()
    if err_ then return t end
    top_ = top_ - 1
    settable(t, k, v)
  end
  top_ = top_ - 1
  return t
end

local function u16(p)
  local a, b = byte(s_, p, p + 1)
  return a * 256 + b
end

local function u32(p)
  return B.get_be32(s_, p)
end

local function str(p, n)
  return sub(s_, p, p + n - 1)
end

-- mp_decode_to_lua_type(): one value at pos_ (nil with err_ set on error).
decode = function()
  if not need(1) then return nil end
  check_stack("too many return values at once; use unpack_one or unpack_limit instead.")
  local p = pos_
  local c = byte(s_, p)
  if c < 0x80 then
    pos_ = p + 1
    return c
  elseif c >= 0xe0 then
    pos_ = p + 1
    return c - 256
  elseif c >= 0xa0 and c < 0xc0 then
    local l = c - 0xa0
    if not need(1 + l) then return nil end
    pos_ = p + 1 + l
    return str(p + 1, l)
  elseif c < 0x90 then
    pos_ = p + 1
    return decode_map(c - 0x80)
  elseif c < 0xa0 then
    pos_ = p + 1
    return decode_array(c - 0x90)
  elseif c == 0xc0 then
    pos_ = p + 1
    return nil
  elseif c == 0xc2 then
    pos_ = p + 1
    return false
  elseif c == 0xc3 then
    pos_ = p + 1
    return true
  elseif c == 0xcc then
    if not need(2) then return nil end
    pos_ = p + 2
    return byte(s_, p + 1)
  elseif c == 0xd0 then
    if not need(2) then return nil end
    pos_ = p + 2
    local v = byte(s_, p + 1)
    return v >= 128 and v - 256 or v
  elseif c == 0xcd then
    if not need(3) then return nil end
    pos_ = p + 3
    return u16(p + 1)
  elseif c == 0xd1 then
    if not need(3) then return nil end
    pos_ = p + 3
    local v = u16(p + 1)
    return v >= 32768 and v - 65536 or v
  elseif c == 0xce then
    if not need(5) then return nil end
    pos_ = p + 5
    return u32(p + 1)
  elseif c == 0xd2 then
    if not need(5) then return nil end
    pos_ = p + 5
    local v = u32(p + 1)
    return v >= TWO31 and v - TWO32 or v
  elseif c == 0xcf or c == 0xd3 then
    -- uint64 goes through lua_Integer too, so both read as signed
    if not need(9) then return nil end
    pos_ = p + 9
    return B.s64_to_double(u32(p + 1), u32(p + 5))
  elseif c == 0xca then
    if not need(5) then return nil end
    pos_ = p + 5
    return B.float_from_bits(u32(p + 1))
  elseif c == 0xcb then
    if not need(9) then return nil end
    pos_ = p + 9
    return B.double_from_bits(u32(p + 1), u32(p + 5))
  elseif c == 0xd9 then
    if not need(2) then return nil end
    local l = byte(s_, p + 1)
    if not need(2 + l) then return nil end
    pos_ = p + 2 + l
    return str(p + 2, l)
  elseif c == 0xda then
    if not need(3) then return nil end
    local l = u16(p + 1)
    if not need(3 + l) then return nil end
    pos_ = p + 3 + l
    return str(p + 3, l)
  elseif c == 0xdb then
    if not need(5) then return nil end
    local l = u32(p + 1)
    pos_ = p + 5
    if not need(l) then return nil end
    pos_ = p + 5 + l
    return str(p + 5, l)
  elseif c == 0xdc then
    if not need(3) then return nil end
    pos_ = p + 3
    return decode_array(u16(p + 1))
  elseif c == 0xdd then
    if not need(5) then return nil end
    pos_ = p + 5
    return decode_array(u32(p + 1))
  elseif c == 0xde then
    if not need(3) then return nil end
    pos_ = p + 3
    return decode_map(u16(p + 1))
  elseif c == 0xdf then
    if not need(5) then return nil end
    pos_ = p + 5
    return decode_map(u32(p + 1))
  end
  err_ = BADFMT
  return nil
end

-- mp_unpack_full(): 'base' is the stack slots in use (the arguments left).
local function unpack_full(s, limit, offset, base)
  local len = #s
  if offset < 0 or limit < 0 then
    fail(format("Invalid request to unpack with offset of %d and limit of %d.", toint32(offset), toint32(len)))
  elseif offset > len then
    fail(format("Start offset %d greater than input length %d.", toint32(offset), toint32(len)))
  end
  local decode_all = limit == 0 and offset == 0
  if decode_all then limit = INT_MAX end
  s_, pos_, len_, err_, top_ = s, offset + 1, len, nil, base
  local res, cnt = {}, 0
  while pos_ <= len_ and cnt < limit do
    local v = decode()
    if err_ == EOF then
      s_ = nil
      fail("Missing bytes in input.")
    elseif err_ == BADFMT then
      s_ = nil
      fail("Bad data format in input.")
    end
    cnt = cnt + 1
    res[cnt] = v
    top_ = top_ + 1
  end
  s_ = nil
  if decode_all then return res, cnt end
  check_stack("in function mp_unpack_full")
  local nxt = pos_ > len_ and -1 or pos_ - 1
  for i = cnt, 1, -1 do res[i + 1] = res[i] end
  res[1] = nxt
  return res, cnt + 1
end

local function unpack_impl(...)
  local nargs = select("#", ...)
  local s = checkstring(1, nargs, (...))
  return unpack_full(s, 0, 0, nargs)
end

local function unpack_one_impl(...)
  local nargs = select("#", ...)
  local s, offset = ...
  offset = optinteger(2, nargs, offset, 0)
  s = checkstring(1, nargs > 0 and 1 or 0, s)
  return unpack_full(s, 1, offset, 1)
end

local function unpack_limit_impl(...)
  local nargs = select("#", ...)
  local s, limit, offset = ...
  limit = checkinteger(2, nargs, limit)
  offset = optinteger(3, nargs, offset, 0)
  s = checkstring(1, nargs > 0 and 1 or 0, s)
  return unpack_full(s, limit, offset, 1)
end

return {
  pack = entry1(pack_impl),
  unpack = entryn(unpack_impl),
  unpack_one = entryn(unpack_one_impl),
  unpack_limit = entryn(unpack_limit_impl),
  _NAME = "cmsgpack",
  _VERSION = "lua-cmsgpack 0.4.0",
  _COPYRIGHT = "Copyright (C) 2012, Redis Ltd.",
  _DESCRIPTION = "MessagePack C implementation for Lua",
}
