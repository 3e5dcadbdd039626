-- Shared plumbing for the pure-Lua ports of Valkey's script libraries
-- (cjson, cmsgpack, struct, bit).
--
-- Valkey implements these libraries in C.  A C function reports errors with
-- luaL_error / luaL_argerror, whose texts carry the *caller's* position
-- ("user_script:1: ...") and the name the caller used for the function
-- ("bad argument #1 to 'encode' ...").  Our ports are Lua functions, so each
-- public entry point runs its body under pcall and, on a library error,
-- re-raises the message at level 2 (the caller), computing the argument-error
-- text from debug.getinfo on the entry point itself.  The body signals
-- errors through fail/argfail/rawfail below, which park the message and throw
-- a private sentinel; any other error (a hook, out of memory) passes through
-- untouched.  bit's functions, called in tight loops, skip the pcall and
-- raise through entry_argerror instead.
--
-- A Lua function loses its caller's frame when tail-called, which a C
-- function does not: see bytecode.py for the compile-time remedy.
--
-- Every global the libraries use is captured here at load time, so a script
-- that later replaces string.format or math.floor cannot change them.

local error, pcall, type, tostring, tonumber = error, pcall, type, tostring, tonumber
local format, sub, find = string.format, string.sub, string.find
local floor, ceil = math.floor, math.ceil
local unpack = unpack
local getinfo = debug.getinfo

local S = {}

-- Lua's C API refuses to grow a C function's stack past this many slots
-- (luaconf.h LUAI_MAXCSTACK); the C libraries fail with "stack overflow"
-- messages there, and the ports count slots to fail at the same point.
S.MAXCSTACK = 8000

local SENTINEL = {}
local pending_kind, pending_msg, pending_narg

-- luaL_error: message gets the caller's position prefix.
local function fail(msg)
  pending_kind, pending_msg = 1, msg
  error(SENTINEL, 0)
end
S.fail = fail

-- luaL_argerror: "bad argument #n to 'name' (extramsg)", name found at raise time.
local function argfail(narg, extramsg)
  pending_kind, pending_narg, pending_msg = 2, narg, extramsg
  error(SENTINEL, 0)
end
S.argfail = argfail

-- lua_error from the VM itself (e.g. "table index is nil"): no prefix at all,
-- because the running function is C and has no line information.
function S.rawfail(msg)
  pending_kind, pending_msg = 3, msg
  error(SENTINEL, 0)
end

-- luaL_typename(L, narg): the type name, or "no value" past the last argument.
local function typename(narg, nargs, v)
  if narg > nargs then return "no value" end
  return type(v)
end
S.typename = typename

function S.typefail(narg, nargs, v, expected)
  argfail(narg, format("%s expected, got %s", expected, typename(narg, nargs, v)))
end

-- The message luaL_argerror builds, given debug info about the entry point.
local function argmessage(info, narg, extramsg)
  local name = info and info.name
  if info and info.namewhat == "method" then
    narg = narg - 1
    if narg == 0 then
      return format("calling '%s' on bad self (%s)", tostring(name), extramsg)
    end
  end
  return format("bad argument #%d to '%s' (%s)", narg, name or "?", extramsg)
end

-- luaL_argerror raised directly by an entry point (called from the entry
-- point itself, not tail-called): for hot functions that skip pcall.
function S.entry_argerror(narg, extramsg)
  error(argmessage(getinfo(2, "n"), narg, extramsg), 3)
end

-- Re-raise a failure caught at an entry point.  Called (never tail-called)
-- from the entry point, so level 3 is the entry point's caller.
local function rethrow(e, info)
  if e ~= SENTINEL then error(e, 0) end
  local kind, msg = pending_kind, pending_msg
  pending_msg = nil
  if kind == 2 then
    error(argmessage(info, pending_narg, msg), 3)
  elseif kind == 3 then
    error(msg, 0)
  end
  error(msg, 3)
end

-- Entry point returning exactly one value.
function S.entry1(impl)
  return function(...)
    local ok, r = pcall(impl, ...)
    if ok then return r end
    rethrow(r, getinfo(1, "n"))
  end
end

-- Entry point for bodies returning (table, count): the count values in the
-- table are returned.  A C function may return up to MAXCSTACK values; the
-- standard unpack() needs a slot for each of its own three arguments too, so
-- the first few values are spelled out when the count is near the limit.
function S.entryn(impl)
  return function(...)
    local ok, t, n = pcall(impl, ...)
    if ok then
      if n < 7900 then return unpack(t, 1, n) end
      return t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], unpack(t, 9, n)
    end
    rethrow(t, getinfo(1, "n"))
  end
end

-- The C string a Lua string stands for (C code stops at the first NUL).
function S.cstr(s)
  local z = find(s, "\0", 1, true)
  if z then return sub(s, 1, z - 1) end
  return s
end

-- luaL_checklstring: strings, or numbers converted the way lua_tolstring
-- does ("%.14g", which is what tostring gives for numbers).
function S.checkstring(narg, nargs, v)
  local t = type(v)
  if t == "string" then return v end
  if t == "number" then return tostring(v) end
  S.typefail(narg, nargs, v, "string")
end

-- lua_tonumber's conversion: numbers, and strings Lua can read as numbers.
local function tonum(v)
  local t = type(v)
  if t == "number" then return v end
  if t == "string" then return tonumber(v) end
  return nil
end
S.tonum = tonum

-- luaL_checknumber.
function S.checknumber(narg, nargs, v)
  local n = tonum(v)
  if n == nil then S.typefail(narg, nargs, v, "number") end
  return n
end

local TWO63 = 9223372036854775808

-- (lua_Integer)d on x86-64: truncation; out of range or NaN gives INT64_MIN.
local function toint64(d)
  if d >= 0 then
    if d < TWO63 then return floor(d) end
  elseif d >= -TWO63 then
    return ceil(d)
  end
  return -TWO63
end
S.toint64 = toint64

-- luaL_checkinteger (a lua_Integer, i.e. int64 on the platform Valkey runs on).
function S.checkinteger(narg, nargs, v)
  local n = tonum(v)
  if n == nil then S.typefail(narg, nargs, v, "number") end
  return toint64(n)
end

-- luaL_optinteger.
function S.optinteger(narg, nargs, v, default)
  if v == nil then return default end
  return S.checkinteger(narg, nargs, v)
end

-- The low 32 bits of an integer-valued number, read as a signed C int.
function S.toint32(i)
  i = i % 4294967296
  if i >= 2147483648 then i = i - 4294967296 end
  return i
end

return S
