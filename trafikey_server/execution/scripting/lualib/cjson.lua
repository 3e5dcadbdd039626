-- Lua CJSON 2.1.0 as built into Valkey (lua_cjson.c with fpconv.c, Lua 5.1,
-- x86-64, glibc).  See _support.lua for errors.
--
-- Encoding writes numbers with "%.14g" (or the configured precision),
-- escapes '"', '\', '/', control characters and DEL, and decides array
-- versus object per table with lua_cjson.c's rules, including its int
-- arithmetic (a key of 2^31 or more turns the running maximum into INT_MIN).
-- Decoding treats the input as a C string (it ends at the first NUL), reads
-- numbers with the C library's strtod (Lua's tonumber() is strtod, applied to
-- exactly the prefix strtod would consume), and reports errors with
-- lua_cjson.c's token names and 1-based character positions.  JSON null is
-- the shared value cjson.null, a userdata whose tostring matches a NULL
-- lightuserdata's ("userdata: (nil)").  Nesting limits count Lua stack slots
-- the way the C code's lua_checkstack calls do.

local S = ...
local floor = math.floor
local type, select, next, tonumber, rawequal, rawget, pcall, error, ipairs =
  type, select, next, tonumber, rawequal, rawget, pcall, error, ipairs
local format, sub, char, byte, find, gsub, lower =
  string.format, string.sub, string.char, string.byte, string.find, string.gsub, string.lower
local concat = table.concat
local newproxy, getmetatable = newproxy, getmetatable

local entry1, entryn = S.entry1, S.entryn
local fail, argfail = S.fail, S.argfail
local checkstring, checkinteger, cstr, toint32, MAXCSTACK =
  S.checkstring, S.checkinteger, S.cstr, S.toint32, S.MAXCSTACK

local HUGE = math.huge
local INT_MAX, INT_MIN = 2147483647, -2147483648
local TWO31, TWO32 = 2147483648, 4294967296

-- cjson.null: Valkey's is a NULL lightuserdata, which pure Lua cannot make.
-- A proxy userdata with a locked metatable is the closest: same type(), same
-- tostring(), equal only to itself, and getmetatable() gives false (not nil).
local NULL = newproxy(true)
do
  local mt = getmetatable(NULL)
  mt.__tostring = function() return "userdata: (nil)" end
  mt.__metatable = false
end

-- ---------------------------------------------------------------- encoding

local ESCAPES = {
  ["\b"] = "\\b", ["\t"] = "\\t", ["\n"] = "\\n", ["\f"] = "\\f", ["\r"] = "\\r",
  ['"'] = '\\"', ["\\"] = "\\\\", ["/"] = "\\/", ["\127"] = "\\u007f",
}
for c = 0, 31 do
  local ch = char(c)
  if not ESCAPES[ch] then ESCAPES[ch] = format("\\u%04x", c) end
end
local ESCAPE_CLASS = '[%z\1-\31"\\/\127]'

local function enc_string(s)
  if find(s, ESCAPE_CLASS) then
    s = gsub(s, ESCAPE_CLASS, ESCAPES)
  end
  return '"' .. s .. '"'
end

local function encode_exception(v, reason)
  fail(format("Cannot serialise %s: %s", type(v), reason))
end

local function enc_number(cfg, n)
  local mode = cfg.encode_invalid_numbers
  if n ~= n or n == HUGE or n == -HUGE then
    if mode == 0 then
      encode_exception(n, "must not be NaN or Inf")
    elseif mode == 1 then
      if n ~= n then return "nan" end
    else
      return "null"
    end
  end
  return format(cfg.number_format, n)
end

-- a * b for C ints, wrapping like the 32-bit imul the C code compiles to.
local function mul32(a, b)
  a, b = a % TWO32, b % TWO32
  local blo = b % 65536
  local bhi = (b - blo) / 65536
  return toint32(a * blo + ((a * bhi) % 65536) * 65536)
end

-- lua_array_length(): the array length to encode, or -1 (or another value
-- below 1) for "encode as an object".
local function array_length(cfg, t)
  local max, items = 0, 0
  for k in next, t do
    if type(k) ~= "number" or k == 0 or floor(k) ~= k or k < 1 then
      return -1
    end
    if k > max then
      if k >= TWO31 then max = INT_MIN else max = k end
    end
    items = items + 1
  end
  local ratio = cfg.encode_sparse_ratio
  if ratio > 0 and max > mul32(items, ratio) and max > cfg.encode_sparse_safe then
    if cfg.encode_sparse_convert == 0 then
      encode_exception(t, "excessively sparse array")
    end
    return -1
  end
  return max
end

local encode_value

-- A table at nesting 'depth'; 'slots' is the Lua stack the C encoder would
-- be using with this table on top.
local function encode_table(cfg, t, out, n, depth, slots)
  depth = depth + 1
  if depth > cfg.encode_max_depth or slots + 3 > MAXCSTACK then
    fail(format("Cannot serialise, excessive nesting (%d)", depth))
  end
  local len = array_length(cfg, t)
  if len > 0 then
    n = n + 1
    out[n] = "["
    for i = 1, len do
      if i > 1 then
        n = n + 1
        out[n] = ","
      end
      n = encode_value(cfg, rawget(t, i), out, n, depth, slots + 1)
    end
    n = n + 1
    out[n] = "]"
    return n
  end
  n = n + 1
  out[n] = "{"
  local comma = false
  for k, v in next, t do
    if comma then
      n = n + 1
      out[n] = ","
    else
      comma = true
    end
    local kt = type(k)
    n = n + 1
    if kt == "number" then
      out[n] = '"' .. enc_number(cfg, k) .. '":'
    elseif kt == "string" then
      out[n] = enc_string(k) .. ":"
    else
      encode_exception(k, "table key must be a number or string")
    end
    n = encode_value(cfg, v, out, n, depth, slots + 2)
  end
  n = n + 1
  out[n] = "}"
  return n
end

-- Appends the JSON for v to out[n+1..]; returns the new n.
encode_value = function(cfg, v, out, n, depth, slots)
  local t = type(v)
  if t == "string" then
    n = n + 1
    out[n] = enc_string(v)
  elseif t == "number" then
    n = n + 1
    out[n] = enc_number(cfg, v)
  elseif t == "boolean" then
    n = n + 1
    out[n] = v and "true" or "false"
  elseif t == "table" then
    return encode_table(cfg, v, out, n, depth, slots)
  elseif v == nil or rawequal(v, NULL) then
    n = n + 1
    out[n] = "null"
  else
    encode_exception(v, "type not supported")
  end
  return n
end

-- ---------------------------------------------------------------- decoding

-- Token types, numbered as in lua_cjson.c so the names line up.
local T_OBJ_BEGIN, T_OBJ_END, T_ARR_BEGIN, T_ARR_END = 0, 1, 2, 3
local T_STRING, T_NUMBER, T_BOOLEAN, T_NULL = 4, 5, 6, 7
local T_COLON, T_COMMA, T_END, T_ERROR = 8, 9, 10, 12
local TOKEN_NAME = {
  [0] = "T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER",
  "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN",
}

local SINGLE = {
  [byte("{")] = T_OBJ_BEGIN, [byte("}")] = T_OBJ_END, [byte("[")] = T_ARR_BEGIN,
  [byte("]")] = T_ARR_END, [byte(",")] = T_COMMA, [byte(":")] = T_COLON,
}
-- Characters that may start a string, number, literal or invalid number.
local UNKNOWN = {}
for _, c in ipairs({ "f", "i", "I", "n", "N", "t", '"', "+", "-" }) do UNKNOWN[byte(c)] = true end
for c = 48, 57 do UNKNOWN[c] = true end

local ESCAPE_CHAR = {
  [byte('"')] = '"', [byte("\\")] = "\\", [byte("/")] = "/", [byte("b")] = "\b",
  [byte("t")] = "\t", [byte("n")] = "\n", [byte("f")] = "\f", [byte("r")] = "\r",
}

-- Parser state for one decode call (decode never re-enters itself).
local js, jpos, jcfg, jdepth, jslots
-- The current token: type, value, 1-based position (index + 1 in C terms).
local tt, tv, ti

local function token_error(msg, at)
  tt, tv, ti = T_ERROR, msg, at
end

-- The length of the longest prefix of js at p that glibc's strtod accepts
-- (C locale), or nil if there is none.
local function strtod_end(p)
  local q = p
  local c = byte(js, q)
  if c == 43 or c == 45 then
    q = q + 1
    c = byte(js, q)
  end
  if c == 105 or c == 73 then -- i I
    if lower(sub(js, q, q + 2)) ~= "inf" then return nil end
    if lower(sub(js, q, q + 7)) == "infinity" then return q + 8 end
    return q + 3
  end
  if c == 110 or c == 78 then -- n N
    if lower(sub(js, q, q + 2)) ~= "nan" then return nil end
    if byte(js, q + 3) == 40 then
      local _, e = find(js, "^[0-9A-Za-z_]*%)", q + 4)
      if e then return e + 1 end
    end
    return q + 3
  end
  if c == 48 then
    local x = byte(js, q + 1)
    if x == 120 or x == 88 then
      local _, e = find(js, "^[0-9A-Fa-f]*", q + 2)
      local digits, r = e - q - 1, e + 1
      if byte(js, r) == 46 then
        local _, e2 = find(js, "^[0-9A-Fa-f]*", r + 1)
        digits, r = digits + e2 - r, e2 + 1
      end
      if digits == 0 then return q + 1 end
      local pc = byte(js, r)
      if pc == 112 or pc == 80 then
        local _, e3 = find(js, "^[+-]?[0-9]+", r + 1)
        if e3 then r = e3 + 1 end
      end
      return r
    end
  end
  local _, e = find(js, "^[0-9]*", q)
  local digits, r = e - q + 1, e + 1
  if byte(js, r) == 46 then
    local _, e2 = find(js, "^[0-9]*", r + 1)
    digits, r = digits + e2 - r, e2 + 1
  end
  if digits == 0 then return nil end
  local ec = byte(js, r)
  if ec == 101 or ec == 69 then
    local _, e3 = find(js, "^[+-]?[0-9]+", r + 1)
    if e3 then r = e3 + 1 end
  end
  return r
end

-- json_is_invalid_number(): '+', hex, leading zeros, inf and nan.
local function is_invalid_number(p)
  local c = byte(js, p)
  if c == 43 then return true end
  if c == 45 then
    p = p + 1
    c = byte(js, p)
  end
  if c == 48 then
    local c2 = byte(js, p + 1)
    if c2 == 120 or c2 == 88 or (c2 and c2 >= 48 and c2 <= 57) then return true end
    return false
  end
  -- a C char: bytes from 0x80 are negative, and the end (NUL) is 0
  if c == nil or c <= 57 or c >= 128 then return false end
  local w = lower(sub(js, p, p + 2))
  return w == "inf" or w == "nan"
end

local function number_token(p)
  local e = strtod_end(p)
  if not e then return token_error("invalid number", p) end
  tt, tv, ti = T_NUMBER, tonumber(sub(js, p, e - 1)), p
  jpos = e
end

local function hex4(p)
  local h = sub(js, p, p + 3)
  if #h < 4 or find(h, "[^0-9A-Fa-f]") then return nil end
  return tonumber(h, 16)
end

local function utf8(cp)
  if cp <= 0x7F then return char(cp) end
  if cp <= 0x7FF then return char(floor(cp / 64) + 0xC0, cp % 64 + 0x80) end
  if cp <= 0xFFFF then
    return char(floor(cp / 4096) + 0xE0, floor(cp / 64) % 64 + 0x80, cp % 64 + 0x80)
  end
  return char(floor(cp / 262144) + 0xF0, floor(cp / 4096) % 64 + 0x80, floor(cp / 64) % 64 + 0x80, cp % 64 + 0x80)
end

-- A \u escape at p (the backslash): (utf-8 text, next position) or nil.
local function unicode_escape(p)
  local cp = hex4(p + 2)
  if not cp then return nil end
  local nxt = p + 6
  if cp >= 0xD800 and cp <= 0xDFFF then
    if cp >= 0xDC00 then return nil end
    if sub(js, p + 6, p + 7) ~= "\\u" then return nil end
    local low = hex4(p + 8)
    if not low or low < 0xDC00 or low > 0xDFFF then return nil end
    cp = (cp - 0xD800) * 1024 + (low - 0xDC00) + 0x10000
    nxt = p + 12
  end
  return utf8(cp), nxt
end

local function string_token(p)
  local q = p + 1
  local parts, np = nil, 0
  while true do
    local e = find(js, '["\\]', q)
    if not e then return token_error("unexpected end of string", #js + 1) end
    if byte(js, e) == 34 then
      local last = sub(js, q, e - 1)
      if parts then
        np = np + 1
        parts[np] = last
        last = concat(parts, "", 1, np)
      end
      tt, tv, ti = T_STRING, last, p
      jpos = e + 1
      return
    end
    parts = parts or {}
    if e > q then
      np = np + 1
      parts[np] = sub(js, q, e - 1)
    end
    local esc = byte(js, e + 1)
    local text
    if esc == 117 then
      text, q = unicode_escape(e)
      if not text then return token_error("invalid unicode escape code", e) end
    else
      text = ESCAPE_CHAR[esc]
      if not text then return token_error("invalid escape code", e) end
      q = e + 2
    end
    np = np + 1
    parts[np] = text
  end
end

-- json_next_token(): sets tt, tv, ti.
local function next_token()
  local p = find(js, "[^ \t\n\r]", jpos)
  if not p then
    tt, tv, ti = T_END, nil, #js + 1
    jpos = ti
    return
  end
  jpos = p
  local c = byte(js, p)
  local single = SINGLE[c]
  if single then
    tt, tv, ti = single, nil, p
    jpos = p + 1
    return
  end
  if not UNKNOWN[c] then return token_error("invalid token", p) end
  if c == 34 then return string_token(p) end
  if c == 45 or (c >= 48 and c <= 57) then
    if jcfg.decode_invalid_numbers == 0 and is_invalid_number(p) then
      return token_error("invalid number", p)
    end
    return number_token(p)
  end
  if sub(js, p, p + 3) == "true" then
    tt, tv, ti = T_BOOLEAN, true, p
    jpos = p + 4
  elseif sub(js, p, p + 4) == "false" then
    tt, tv, ti = T_BOOLEAN, false, p
    jpos = p + 5
  elseif sub(js, p, p + 3) == "null" then
    tt, tv, ti = T_NULL, NULL, p
    jpos = p + 4
  elseif jcfg.decode_invalid_numbers ~= 0 and is_invalid_number(p) then
    return number_token(p)
  else
    return token_error("invalid token", p)
  end
end

local function parse_error(expected)
  local found = tt == T_ERROR and tv or TOKEN_NAME[tt]
  fail(format("Expected %s but found %s at character %d", expected, found, ti))
end

local function descend(slots)
  jdepth = jdepth + 1
  if jdepth > jcfg.decode_max_depth or jslots + slots > MAXCSTACK then
    fail(format("Found too many nested data structures (%d) at character %d", jdepth, jpos - 1))
  end
end

local parse_object, parse_array

-- json_process_value() for the current token.
local function process_value()
  if tt == T_STRING or tt == T_NUMBER or tt == T_BOOLEAN or tt == T_NULL then
    return tv
  elseif tt == T_OBJ_BEGIN then
    return parse_object()
  elseif tt == T_ARR_BEGIN then
    return parse_array()
  end
  parse_error("value")
end

parse_object = function()
  descend(3)
  jslots = jslots + 1
  local t = {}
  next_token()
  if tt ~= T_OBJ_END then
    while true do
      if tt ~= T_STRING then parse_error("object key string") end
      local k = tv
      next_token()
      if tt ~= T_COLON then parse_error("colon") end
      jslots = jslots + 1
      next_token()
      local v
      if tt == T_OBJ_BEGIN then
        v = parse_object()
      elseif tt == T_ARR_BEGIN then
        v = parse_array()
      else
        v = process_value()
      end
      t[k] = v
      jslots = jslots - 1
      next_token()
      if tt == T_OBJ_END then break end
      if tt ~= T_COMMA then parse_error("comma or object end") end
      next_token()
    end
  end
  jdepth = jdepth - 1
  jslots = jslots - 1
  return t
end

parse_array = function()
  descend(2)
  jslots = jslots + 1
  local t = {}
  next_token()
  if tt ~= T_ARR_END then
    local i = 1
    while true do
      local v
      if tt == T_ARR_BEGIN then
        v = parse_array()
      elseif tt == T_OBJ_BEGIN then
        v = parse_object()
      else
        v = process_value()
      end
      t[i] = v
      i = i + 1
      next_token()
      if tt == T_ARR_END then break end
      if tt ~= T_COMMA then parse_error("comma or array end") end
      next_token()
    end
  end
  jdepth = jdepth - 1
  jslots = jslots - 1
  return t
end

local function decode_document()
  next_token()
  local r = process_value()
  next_token()
  if tt ~= T_END then parse_error("the end") end
  return r
end

local function decode(cfg, s)
  local len = #s
  if len >= 2 and (byte(s, 1) == 0 or byte(s, 2) == 0) then
    fail("JSON parser does not support UTF-16 or UTF-32")
  end
  js, jpos, jcfg, jdepth, jslots = cstr(s), 1, cfg, 0, 1
  local ok, v = pcall(decode_document)
  js, jcfg, tv = nil, nil, nil
  if not ok then error(v, 0) end
  return v
end

-- ------------------------------------------------------------ configuration

local function arg_init(nargs, max)
  if nargs > max then argfail(max + 1, "found too many arguments") end
end

local function integer_option(cfg, key, narg, nargs, v, min, max)
  if v ~= nil then
    local value = toint32(checkinteger(narg, nargs, v))
    if value < min or value > max then
      argfail(1, format("expected integer between %d and %d", min, max))
    end
    cfg[key] = value
  end
  return cfg[key]
end

local BOOL_OPTIONS = { "off", "on" }

local function enum_option(cfg, key, narg, nargs, v, options)
  if v ~= nil then
    if type(v) == "boolean" then
      cfg[key] = v and 1 or 0
    else
      local name = cstr(checkstring(narg, nargs, v))
      local found
      for i = 1, #options do
        if options[i] == name then
          found = i - 1
          break
        end
      end
      if not found then argfail(narg, format("invalid option '%s'", name)) end
      cfg[key] = found
    end
  end
  local setting = cfg[key]
  if setting == 0 or setting == 1 then return setting == 1 end
  return options[setting + 1]
end

local new

new = function()
  local cfg = {
    encode_sparse_convert = 0,
    encode_sparse_ratio = 2,
    encode_sparse_safe = 10,
    encode_max_depth = 1000,
    decode_max_depth = 1000,
    encode_invalid_numbers = 0,
    decode_invalid_numbers = 1,
    encode_keep_buffer = 1,
    encode_number_precision = 14,
    number_format = "%.14g",
  }
  local M = {}

  M.encode = entry1(function(...)
    local nargs = select("#", ...)
    if nargs ~= 1 then argfail(1, "expected 1 argument") end
    local out = {}
    local n = encode_value(cfg, (...), out, 0, 0, 1)
    return concat(out, "", 1, n)
  end)

  M.decode = entry1(function(...)
    local nargs = select("#", ...)
    if nargs ~= 1 then argfail(1, "expected 1 argument") end
    return decode(cfg, checkstring(1, 1, (...)))
  end)

  M.encode_sparse_array = entryn(function(...)
    local nargs = select("#", ...)
    arg_init(nargs, 3)
    local convert, ratio, safe = ...
    local r1 = enum_option(cfg, "encode_sparse_convert", 1, nargs, convert, BOOL_OPTIONS)
    local r2 = integer_option(cfg, "encode_sparse_ratio", 2, nargs, ratio, 0, INT_MAX)
    local r3 = integer_option(cfg, "encode_sparse_safe", 3, nargs, safe, 0, INT_MAX)
    return { r1, r2, r3 }, 3
  end)

  local function int_config(key, min, max)
    return entry1(function(...)
      local nargs = select("#", ...)
      arg_init(nargs, 1)
      return integer_option(cfg, key, 1, nargs, (...), min, max)
    end)
  end
  M.encode_max_depth = int_config("encode_max_depth", 1, INT_MAX)
  M.decode_max_depth = int_config("decode_max_depth", 1, INT_MAX)

  M.encode_number_precision = entry1(function(...)
    local nargs = select("#", ...)
    arg_init(nargs, 1)
    local r = integer_option(cfg, "encode_number_precision", 1, nargs, (...), 1, 14)
    cfg.number_format = "%." .. r .. "g"
    return r
  end)

  local function enum_config(key, options)
    return entry1(function(...)
      local nargs = select("#", ...)
      arg_init(nargs, 1)
      return enum_option(cfg, key, 1, nargs, (...), options)
    end)
  end
  M.encode_keep_buffer = enum_config("encode_keep_buffer", BOOL_OPTIONS)
  M.encode_invalid_numbers = enum_config("encode_invalid_numbers", { "off", "on", "null" })
  M.decode_invalid_numbers = enum_config("decode_invalid_numbers", BOOL_OPTIONS)

  M.new = new
  M.null = NULL
  M._NAME = "cjson"
  M._VERSION = "2.1.0"
  return M
end

return new()
