-- The script environment Valkey gives, built once per Lua state.
--
-- This chunk runs with the real globals table. It trims the standard
-- library down to what Valkey offers, builds the `server`/`redis` API on
-- top of a few Python callbacks, and returns the functions the Python side
-- drives: `run` (one script call, its reply already encoded as RESP),
-- `compile` (an EVAL script), `load_library` (FUNCTION LOAD) and a few
-- helpers.
--
-- Valkey keeps two Lua states: one for EVAL scripts and one for FUNCTION
-- libraries, each with its own globals. Here one state holds both: user
-- code never sees a real globals table but a proxy (`env` for scripts,
-- `fenv` for libraries) that reads through to its own globals (`G`, `FG`),
-- refuses to create or change anything ("Attempt to modify a readonly
-- table") and refuses to read what does not exist ("Script attempted to
-- access nonexistent global variable"), which is how Valkey's patched Lua
-- behaves with its read-only tables. Library tables are proxied the same
-- way, and the few base functions that could see through a proxy (rawget,
-- rawset, next, pairs, getmetatable, setmetatable) are wrapped so they
-- answer as Valkey's do for its read-only tables.
--
-- The server API functions are Python callables: to Lua they are C
-- functions, so a script's own frame survives a tail call to them
-- (`return redis.call(...)` still reports the script's line), as it does
-- with Valkey's C API; `type` presents them as functions. The wrappers
-- written in Lua here cannot do that: an argument error of one called in
-- tail position (`return setmetatable()`) loses the script's line.

-- `py` holds the Python side; `versions` the version fields of the API;
-- `internal` the chunk names of the Lua libraries (lualib), whose frames,
-- like this chunk's, stand for Valkey's C code.
local py, versions, internal = ...
local py_unwrap, py_double, py_hook, killed_message = py.unwrap, py.double, py.hook, py.killed_message
local py_untail = py.untail

local G = _G
local error, type, tostring, tonumber, select, setmetatable, getmetatable =
    error, type, tostring, tonumber, select, setmetatable, getmetatable
local rawget, rawset, rawequal, pcall, xpcall, unpack, next, setfenv, loadstring, load, ipairs =
    rawget, rawset, rawequal, pcall, xpcall, unpack, next, setfenv, loadstring, load, ipairs
local co_resume = coroutine.resume
local concat = table.concat
local format, gsub, byte, sub = string.format, string.gsub, string.byte, string.sub
local string_dump = string.dump
local dbg = debug
local clock = os.clock

local internal_src = {["=prelude"] = true}
for _, name in ipairs(internal) do
    internal_src[name] = true
end

-- The Python callables of the API (their tostring is "function: 0x...").
local py_funcs = {}
local function py_func(f)
    py_funcs[f] = true
    return f
end

-- What Valkey does not offer (getfenv, setfenv and newproxy went in 9.0).
for _, name in ipairs({"io", "package", "require", "module", "dofile", "loadfile", "print", "python", "debug",
                       "getfenv", "setfenv", "newproxy"}) do
    rawset(G, name, nil)
end
rawset(G, "os", {clock = clock})

-- Errors as Valkey's C functions raise them -------------------------------------------------

local function vtype(v)
    if py_funcs[v] then
        return "function"
    end
    return type(v)
end

-- luaL_where for a C function: the position of its caller, `level` frames
-- above the function calling this one.
local function where(level)
    local i = dbg.getinfo(level + 1, "Sl")
    if i and i.currentline > 0 then
        return i.short_src .. ":" .. i.currentline .. ": "
    end
    return ""
end

-- luaL_argerror's text for the function one frame up (a Lua wrapper
-- standing for a C function, or a Python callable calling this).
local function argmsg(narg, extramsg)
    local ar = dbg.getinfo(2, "n")
    local name = ar and ar.name
    if ar and ar.namewhat == "method" then
        narg = narg - 1
        if narg == 0 then
            return where(3) .. "calling '" .. tostring(name) .. "' on bad self (" .. extramsg .. ")"
        end
    end
    return where(3) .. "bad argument #" .. narg .. " to '" .. (name or "?") .. "' (" .. extramsg .. ")"
end

-- luaL_error's text for the function one frame up.
local function errmsg(msg)
    return where(3) .. msg
end

-- Valkey takes the texts of errors and statuses as C strings: up to a NUL.
local function cstr(s)
    return (string.match(s, "^[^%z]*"))
end

local function typemsg(narg, n, v, expected)
    return expected .. " expected, got " .. (narg > n and "no value" or vtype(v))
end

local function unwrap(e)
    if type(e) == "userdata" then
        return py_unwrap(e) or e
    end
    return e
end

-- Read-only tables -----------------------------------------------------------

local real_of = setmetatable({}, {__mode = "k"}) -- proxy -> the table it stands for

local function readonly()
    error("Attempt to modify a readonly table", 2)
end

local function protect(real)
    local proxy = setmetatable({}, {__index = real, __newindex = readonly, __metatable = false})
    real_of[proxy] = real
    return proxy
end

local function nonexistent(name)
    local t = type(name)
    if t ~= "string" and t ~= "number" then
        error("Second argument to luaProtectedTableError must be a string or number", 3)
    end
    error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 3)
end

-- A globals proxy over `real`: what is not there is an error.
local function globals_proxy(real)
    local proxy = setmetatable({}, {
        __index = function(_, name)
            local v = rawget(real, name)
            if v == nil then
                nonexistent(name)
            end
            return v
        end,
        __newindex = readonly,
        __metatable = false,
    })
    real_of[proxy] = real
    return proxy
end

local env = globals_proxy(G)
local globals_mt = protect({__index = dbg.getmetatable(env).__index})
local cur_env = env -- the globals of the code running now (scripts or functions)

-- The base functions that would see through a proxy ------------------------------------

rawset(G, "rawset", function(...)
    local n = select("#", ...)
    local t, k, v = ...
    if type(t) ~= "table" then
        error(argmsg(1, typemsg(1, n, t, "table")), 0)
    elseif n < 2 then
        error(argmsg(2, "value expected"), 0)
    elseif n < 3 then
        error(argmsg(3, "value expected"), 0)
    end
    if real_of[t] then
        error("Attempt to modify a readonly table", 0)
    end
    return rawset(t, k, v)
end)

rawset(G, "rawget", function(...)
    local n = select("#", ...)
    local t, k = ...
    if type(t) ~= "table" then
        error(argmsg(1, typemsg(1, n, t, "table")), 0)
    elseif n < 2 then
        error(argmsg(2, "value expected"), 0)
    end
    return rawget(real_of[t] or t, k)
end)

rawset(G, "next", function(...)
    local n = select("#", ...)
    local t, k = ...
    if type(t) ~= "table" then
        error(argmsg(1, typemsg(1, n, t, "table")), 0)
    end
    return next(real_of[t] or t, k)
end)

local function pairs_next(t, k)
    return next(real_of[t] or t, k)
end
rawset(G, "pairs", function(...)
    local n = select("#", ...)
    local t = ...
    if type(t) ~= "table" then
        error(argmsg(1, typemsg(1, n, t, "table")), 0)
    end
    if real_of[t] then
        return pairs_next, t, nil
    end
    return next, t, nil
end)

local string_mt = protect({__index = nil}) -- filled in once `string` is protected
rawset(G, "getmetatable", function(...)
    if select("#", ...) == 0 then
        error(argmsg(1, "value expected"), 0)
    end
    local v = ...
    local t = type(v)
    if t == "string" then
        return string_mt
    end
    local real = real_of[v]
    if real == G or (real ~= nil and rawget(real, "_G") == v) then
        return globals_mt -- a globals table: its metatable is the error metatable
    end
    if real ~= nil or py_funcs[v] then
        return nil
    end
    return getmetatable(v)
end)

rawset(G, "setmetatable", function(...)
    local n = select("#", ...)
    local t, mt = ...
    if type(t) ~= "table" then
        error(argmsg(1, typemsg(1, n, t, "table")), 0)
    end
    local mtt = type(mt)
    if n < 2 or (mtt ~= "nil" and mtt ~= "table") then
        error(argmsg(2, "nil or table expected"), 0)
    end
    if real_of[t] then
        error("Attempt to modify a readonly table", 0)
    end
    local old = dbg.getmetatable(t)
    if old ~= nil and rawget(old, "__metatable") ~= nil then
        error(errmsg("cannot change a protected metatable"), 0)
    end
    return setmetatable(t, mt)
end)

rawset(G, "type", function(...)
    if select("#", ...) == 0 then
        error(argmsg(1, "value expected"), 0)
    end
    local v = ...
    if py_funcs[v] then
        return "function"
    end
    return type(v)
end)

-- Code compiled at run time (loadstring, load) sees the globals of the code
-- that compiled it. Valkey's Lua reads every chunk as text, so a precompiled
-- chunk is a syntax error there; a leading space gives the same here.
local function text_only(s)
    if byte(s, 1) == 27 then
        return " " .. s
    end
    return s
end

rawset(G, "loadstring", function(...)
    local n = select("#", ...)
    local s, name = ...
    local t = type(s)
    if t ~= "string" and t ~= "number" then
        error(argmsg(1, typemsg(1, n, s, "string")), 0)
    end
    s = tostring(s)
    if name == nil then
        name = s
    else
        local nt = type(name)
        if nt ~= "string" and nt ~= "number" then
            error(argmsg(2, typemsg(2, n, name, "string")), 0)
        end
    end
    local f, err = loadstring(text_only(s), name)
    if f then
        setfenv(f, cur_env)
    end
    return f, err
end)

rawset(G, "load", function(...)
    local n = select("#", ...)
    local reader, name = ...
    if type(reader) ~= "function" then
        error(argmsg(1, typemsg(1, n, reader, "function")), 0)
    end
    local first = true
    local f, err = load(function()
        local piece = reader()
        if first and type(piece) == "string" and piece ~= "" then
            first = false
            return text_only(piece)
        end
        return piece
    end, name)
    if f then
        setfenv(f, cur_env)
    end
    return f, err
end)

-- pcall as Valkey's luaRedisPcall: an error table ({err = ...}, as
-- server.call raises) is caught as its message, for scripts written before
-- errors were tables; a table without a message comes with what its `err`
-- field holds.
local function pcall_result(ok, ...)
    if ok then
        return true, ...
    end
    local e = unwrap((...))
    if type(e) == "table" then
        local m = e.err
        local mt = type(m)
        if mt == "string" or mt == "number" then
            return false, m
        end
        return false, e, m
    end
    return false, e
end
rawset(G, "pcall", function(...)
    if select("#", ...) == 0 then
        return false, "attempt to call a boolean value"
    end
    return pcall_result(pcall(...))
end)

rawset(G, "xpcall", function(...)
    local n = select("#", ...)
    local f, h = ...
    if n < 2 then
        error(argmsg(2, "value expected"), 0)
    end
    local handler = h
    if type(h) == "function" then
        handler = function(e)
            return h(unwrap(e))
        end
    end
    return xpcall(f, handler)
end)

local function resume_result(ok, ...)
    if ok then
        return true, ...
    end
    return false, unwrap((...))
end
rawset(G.coroutine, "resume", function(...)
    local co = ...
    if type(co) ~= "thread" then
        error(argmsg(1, "coroutine expected"), 0)
    end
    return resume_result(co_resume(...))
end)

-- A coroutine runs under the hook of the code that created it (Valkey's C
-- hook is inherited by new threads; a debug.sethook hook is not), so a
-- script spinning in a coroutine still answers to SCRIPT KILL.
local co_create, co_wrap = coroutine.create, coroutine.wrap
local function lua_function(f)
    return type(f) == "function" and not py_funcs[f] and dbg.getinfo(f, "S").what ~= "C"
end
local function hooked(f)
    local h, mask, count = dbg.gethook()
    if not h then
        return f
    end
    return function(...)
        dbg.sethook(h, mask, count)
        return f(...)
    end
end
rawset(G.coroutine, "create", function(f)
    if not lua_function(f) then
        error(argmsg(1, "Lua function expected"), 0)
    end
    return co_create(hooked(f))
end)
rawset(G.coroutine, "wrap", function(f)
    if not lua_function(f) then
        error(argmsg(1, "Lua function expected"), 0)
    end
    return co_wrap(hooked(f))
end)

-- math.random with Valkey's own generator, the same sequence on every platform.
rawset(G.math, "random", py_func(py.random))
rawset(G.math, "randomseed", py_func(py.randomseed))

-- Errors ---------------------------------------------------------------------------------

-- Valkey's error handler reports the frame that raised the error, or its
-- caller when that frame is a C function. Our own Lua frames (this chunk,
-- the libraries) stand for Valkey's C code, so they are looked through.
local boundary = {} -- where a script's stack starts: the frames below are ours
local function error_frame()
    local level, first = 3, nil
    while true do
        local i = dbg.getinfo(level, "Slf")
        if not i or boundary[i.func] then
            return first and first.what ~= "C" and first or nil
        end
        if i.what == "C" or not internal_src[i.source] then
            if first == nil then
                if i.what ~= "C" then
                    return i
                end
                first = i
            else
                return i
            end
        end
        level = level + 1
    end
end

local function err_handler(err)
    local i = error_frame()
    err = unwrap(err)
    if type(err) ~= "table" then
        err = {err = "ERR " .. tostring(err)}
    end
    if i then
        err["source"] = i.source
        err["line"] = i.currentline
    end
    return err
end
rawset(G, "__server__err__handler", err_handler)
rawset(G, "__redis__err__handler", err_handler)

-- An error table as Valkey's luaPushErrorBuff builds it from "-CODE msg" or "msg".
local function error_table(text)
    text = cstr(text)
    local code, msg
    if byte(text, 1) == 45 then -- "-"
        local sp = string.find(text, " ", 1, true)
        if sp then
            code, msg = sub(text, 2, sp - 1), sub(text, sp + 1)
        else
            code, msg = "ERR", sub(text, 2)
        end
    else
        code, msg = "ERR", text
    end
    msg = gsub(gsub(msg, "^[\r\n]+", ""), "[\r\n]+$", "")
    return {err = code .. " " .. msg}
end

-- The server API -------------------------------------------------------------------------

local api = {}

-- server.call and server.pcall are Lua functions: a C function of lupa cannot
-- take as many arguments as Valkey's (a Python call needs stack room beyond
-- Lua's 8000-slot limit for C frames, and `unpack` alone gives 7999), so a
-- call with that many goes to Python as one table. Their frames are looked
-- through like this chunk's, and compile() keeps the script's frame when it
-- tail-calls them (lualib/bytecode.py).
local BIG_CALL = 7000
local function api_function(f, f_table)
    local function wrapper(...)
        local n = select("#", ...)
        if n < BIG_CALL then
            return f(...)
        end
        return f_table({...}, n)
    end
    return py_func(wrapper)
end
if py.c_call then
    -- C functions reading the Lua stack themselves (cbridge.pyx), as Valkey's are
    api.call, api.pcall = py_func(py.c_call), py_func(py.c_pcall)
else
    api.call = api_function(py.call, py.call_table)
    api.pcall = api_function(py.pcall, py.pcall_table)
end
api.sha1hex = py_func(py.sha1hex)
api.log = py_func(py.log)
api.setresp = py_func(py.setresp)
api.set_repl = py_func(py.set_repl)
api.acl_check_cmd = py_func(py.acl_check_cmd)

api.error_reply = function(...)
    local s = ...
    if select("#", ...) ~= 1 or type(s) ~= "string" then
        return error_table("wrong number or type of arguments")
    end
    if byte(s, 1) ~= 45 then
        s = "-" .. s
    end
    return error_table(s)
end

api.status_reply = function(...)
    local s = ...
    if select("#", ...) ~= 1 or type(s) ~= "string" then
        return error_table("wrong number or type of arguments")
    end
    return {ok = s}
end

api.LOG_DEBUG = 0
api.LOG_VERBOSE = 1
api.LOG_NOTICE = 2
api.LOG_WARNING = 3

api.REPL_NONE = 0
api.REPL_AOF = 1
api.REPL_SLAVE = 2
api.REPL_REPLICA = 2
api.REPL_ALL = 3

for k, v in next, versions do
    api[k] = v
end

-- FCALL's functions get the API without the EVAL-only debugging helpers.
local fapi = {}
for k, v in next, api do
    fapi[k] = v
end

api.replicate_commands = function()
    return true
end

-- The Lua debugger (SCRIPT DEBUG) --------------------------------------------------------
-- The session (debugger.Session, Python) holds the debugger's state, its
-- socket and its commands; what needs the Lua stack is here. While one runs,
-- ldb_session is it, and a line hook stops the script where it says.
local ldb_session = nil

-- A value as the debugger shows it (Valkey 9.1.2's): strings as they are,
-- numbers as %g, tables as {a; b; } when they read as arrays and
-- {[k]=v; } otherwise, at most 10 deep.
local function ldb_repr(v, level)
    if level == 10 then
        return "<max recursion level reached! Nested table?>"
    end
    level = level + 1
    local t = type(v)
    if t == "string" then
        return v
    elseif t == "boolean" then
        return v and "true" or "false"
    elseif t == "number" then
        return format("%g", v)
    elseif t == "nil" then
        return "nil"
    elseif t == "table" then
        local expected, is_array, as_array, as_map = 1, true, {}, {}
        for k, val in next, v do
            if is_array and (type(k) ~= "number" or k ~= expected) then
                is_array = false
            end
            as_array[expected] = ldb_repr(val, level) .. "; "
            as_map[expected] = "[" .. ldb_repr(k, level) .. "]=" .. ldb_repr(val, level) .. "; "
            expected = expected + 1
        end
        return "{" .. concat(is_array and as_array or as_map) .. "}"
    end
    local name = t == "function" and "function" or t == "thread" and "thread" or "userdata"
    local address = string.match(tostring(v), "0x%x+") or "0x0"
    return ' "' .. name .. "@" .. address .. '"'
end

api.breakpoint = function()
    if ldb_session then
        ldb_session.luabp = true
        return true
    end
    return false
end
api.debug = function(...)
    if ldb_session then
        local parts = {}
        for i = 1, select("#", ...) do
            parts[i] = ldb_repr((select(i, ...)), 0)
        end
        ldb_session.debug(concat(parts, ", "))
    end
end

local api_proxy = protect(api)
rawset(G, "server", api_proxy)
rawset(G, "redis", api_proxy)

-- string.dump refuses the API functions, which are C functions in Valkey.
local dump = string_dump
G.string.dump = function(...)
    local f = ...
    if type(f) ~= "function" then
        error(argmsg(1, typemsg(1, select("#", ...), f, "function")), 0)
    end
    if py_funcs[f] then
        error(errmsg("unable to dump given function"), 0)
    end
    return dump(f)
end

-- Every library table is read-only for scripts.
for _, name in ipairs({"string", "math", "table", "os", "coroutine", "cjson", "struct", "cmsgpack", "bit"}) do
    local real = rawget(G, name)
    if type(real) == "table" then
        rawset(G, name, protect(real))
    end
end
local string_proxy = rawget(G, "string")
real_of[string_mt].__index = string_proxy
getmetatable("").__index = string_proxy
rawset(G, "_G", env)

-- The globals of FUNCTION libraries: the same builtins and libraries, the
-- API without the debugging helpers, and no KEYS/ARGV. While a library
-- loads, its code sees only `server`/`redis` with register_function, log
-- and the version fields, as Valkey's library globals have it; the
-- functions it creates keep the same globals proxy, which serves the full
-- set once loading is over.
local FG = {}
for k, v in next, G do
    FG[k] = v
end
FG.__server__err__handler = nil
FG.__redis__err__handler = nil
local fapi_proxy = protect(fapi)
FG.server = fapi_proxy
FG.redis = fapi_proxy

local lib_api = {register_function = py_func(py.register_function), log = api.log,
                 LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3}
for k, v in next, versions do
    lib_api[k] = v
end
local lib_server = globals_proxy(lib_api)
local LG = {server = lib_server, redis = lib_server}

local loading = false
local fenv = setmetatable({}, {
    __index = function(_, name)
        local v = rawget(loading and LG or FG, name)
        if v == nil then
            nonexistent(name)
        end
        return v
    end,
    __newindex = readonly,
    __metatable = false,
})
real_of[fenv] = FG
FG._G = fenv

-- Replies -------------------------------------------------------------------------------

local run_state = py.state

local function ll(n)
    -- Valkey casts a Lua number to long long: truncation toward zero.
    if n ~= n or n >= 9223372036854775808 or n < -9223372036854775808 then
        return "-9223372036854775808"
    end
    return format("%d", n)
end

local function no_crlf(s)
    return (gsub(s, "[\r\n]", " "))
end

-- Error replies within a reply are counted in the error statistics unless
-- their table says otherwise (redis.pcall's errors were counted already).
local function counted(v, line, errs)
    errs.any = true
    local ign = rawget(v, "ignore_error_stats_update")
    if ign ~= true then
        errs[#errs + 1] = line
    end
end

local function encode(v, out, resp, null, errs)
    local t = type(v)
    if t == "string" then
        out[#out + 1] = "$" .. #v .. "\r\n" .. v .. "\r\n"
    elseif t == "number" then
        out[#out + 1] = ":" .. ll(v) .. "\r\n"
    elseif t == "boolean" then
        if run_state.resp == 2 then
            out[#out + 1] = v and ":1\r\n" or null
        elseif resp == 2 then
            -- a RESP3 boolean to a RESP2 client, as addReplyBool has it
            out[#out + 1] = v and ":1\r\n" or ":0\r\n"
        else
            out[#out + 1] = v and "#t\r\n" or "#f\r\n"
        end
    elseif t == "table" then
        local e = rawget(v, "err")
        if type(e) == "string" then
            local line = "-" .. no_crlf(cstr(e))
            out[#out + 1] = line .. "\r\n"
            counted(v, line, errs)
            return
        end
        local ok = rawget(v, "ok")
        if type(ok) == "string" then
            out[#out + 1] = "+" .. no_crlf(cstr(ok)) .. "\r\n"
            return
        end
        local d = rawget(v, "double")
        if type(d) == "number" then
            if d == 0 and 1 / d < 0 then -- -0: its sign would not survive the way to Python
                out[#out + 1] = resp == 2 and "$2\r\n-0\r\n" or ",-0\r\n"
            else
                out[#out + 1] = py_double(d, resp)
            end
            return
        end
        local big = rawget(v, "big_number")
        if type(big) == "string" then
            big = no_crlf(cstr(big))
            if resp == 2 then
                out[#out + 1] = "$" .. #big .. "\r\n" .. big .. "\r\n"
            else
                out[#out + 1] = "(" .. big .. "\r\n"
            end
            return
        end
        local verb = rawget(v, "verbatim_string")
        if type(verb) == "table" then
            local fmt, str = rawget(verb, "format"), rawget(verb, "string")
            if type(fmt) == "string" and type(str) == "string" then
                if resp == 2 then
                    out[#out + 1] = "$" .. #str .. "\r\n" .. str .. "\r\n"
                else
                    -- the format as a C string, blank-padded to its 3 characters (addReplyVerbatim)
                    fmt = sub(cstr(fmt) .. "   ", 1, 3)
                    out[#out + 1] = "=" .. (#str + 4) .. "\r\n" .. fmt .. ":" .. str .. "\r\n"
                end
                return
            end
        end
        local map = rawget(v, "map")
        if type(map) == "table" then
            local at = #out + 1
            out[at] = ""
            local n = 0
            for k, x in next, map do
                encode(k, out, resp, null, errs)
                encode(x, out, resp, null, errs)
                n = n + 1
            end
            out[at] = resp == 2 and ("*" .. (2 * n) .. "\r\n") or ("%" .. n .. "\r\n")
            return
        end
        local set = rawget(v, "set")
        if type(set) == "table" then
            local at = #out + 1
            out[at] = ""
            local n = 0
            for k in next, set do
                encode(k, out, resp, null, errs)
                n = n + 1
            end
            out[at] = resp == 2 and ("*" .. n .. "\r\n") or ("~" .. n .. "\r\n")
            return
        end
        local at = #out + 1
        out[at] = ""
        local j = 1
        while true do
            local x = rawget(v, j)
            if x == nil then
                break
            end
            encode(x, out, resp, null, errs)
            j = j + 1
        end
        out[at] = "*" .. (j - 1) .. "\r\n"
    else
        out[#out + 1] = null
    end
end

local function is_text(v)
    local t = type(v)
    return t == "string" or t == "number"
end

-- The reply for an error that ended a script, as luaCallFunction builds it
-- from the error table: "-<err> script: on <source>:<line>."; and whether
-- the error statistics count it.
local function error_reply(err, name)
    if type(err) ~= "table" then
        local msg = is_text(err) and cstr(tostring(err)) or "execution failure"
        local text = gsub("ERR Error running script " .. name .. ", " .. sub(msg, 1, 100), "[\r\n]+$", "")
        return "-" .. no_crlf(text), true
    end
    local ok, msg, source, line, ign = pcall(function()
        return err.err, err.source, err.line, err.ignore_error_stats_update
    end)
    if not ok then
        msg, source, line = rawget(err, "err"), rawget(err, "source"), rawget(err, "line")
        ign = rawget(err, "ignore_error_stats_update")
    end
    local text = is_text(msg) and cstr(tostring(msg)) or "ERR unknown error"
    if is_text(source) and is_text(line) then
        text = text .. " script: on " .. cstr(tostring(source)) .. ":" .. cstr(tostring(line)) .. "."
    end
    return "-" .. no_crlf(text), ign ~= true
end

-- Running --------------------------------------------------------------------------------

-- A killed script is stopped by raising an error at once, and again on
-- every line of user code it reaches, so that pcall cannot swallow it.
local function kill_again()
    local i = dbg.getinfo(2, "S")
    if i and not internal_src[i.source] then
        error({err = killed_message()})
    end
end

local function hook()
    if py_hook() then
        dbg.sethook(kill_again, "l")
        error({err = killed_message()})
    end
end

-- The debugger's line hook (Valkey's luaLdbLineHook): every line of the
-- script, and every 100000 instructions to notice a runaway loop. The
-- session answers an error to raise (abort, a broken request) or nil.
local USER_SCRIPT = "@user_script"
local function ldb_hook(event)
    local i = dbg.getinfo(2, "Sl")
    if not i or i.source ~= USER_SCRIPT then
        return
    end
    local err = ldb_session.line(i.currentline, event == "count")
    if err then
        error({err = err})
    end
end

-- The user's frames, innermost first, as levels of the caller of this
-- function's caller: the frames of our own code are not the user's.
local function ldb_levels()
    local levels, level = {}, 3
    while true do
        local i = dbg.getinfo(level, "S")
        if not i then
            return levels
        end
        if i.source == USER_SCRIPT then
            levels[#levels + 1] = level - 1
        end
        level = level + 1
    end
end

-- The locals of the frame at level (of the caller), as {name, value} pairs.
local function ldb_locals(level)
    local out, j = {}, 1
    while true do
        local n, v = dbg.getlocal(level + 1, j)
        if n == nil then
            return out
        end
        out[j] = {n, v}
        j = j + 1
    end
end

-- "print <name>": the value of the innermost local called name, or of
-- KEYS or ARGV; nil when there is none.
local function ldb_print(name)
    for _, level in ipairs(ldb_levels()) do
        for _, pair in ipairs(ldb_locals(level)) do
            if pair[1] == name then
                return ldb_repr(pair[2], 0)
            end
        end
    end
    if name == "KEYS" or name == "ARGV" then
        return ldb_repr(rawget(G, name), 0)
    end
    return nil
end

-- "print": "name = value" for every local of the current frame.
local function ldb_print_all()
    local out, level = {}, ldb_levels()[1]
    if level then
        for _, pair in ipairs(ldb_locals(level)) do
            if not string.find(pair[1], "(*temporary)", 1, true) then
                out[#out + 1] = pair[1] .. " = " .. ldb_repr(pair[2], 0)
            end
        end
    end
    return out
end

-- "trace": {name, line} of each of the user's frames, innermost first.
local function ldb_trace()
    local out = {}
    for _, level in ipairs(ldb_levels()) do
        local i = dbg.getinfo(level, "nl")
        out[#out + 1] = {i.name or "top level", i.currentline}
    end
    return out
end

-- "eval <code>": run as an expression, else as a statement, in a frame of
-- its own with the script's globals. Answers whether it ran, the value or
-- the error, and whether it compiled.
local function ldb_eval(code)
    local f = loadstring("return " .. code, "@ldb_eval")
    if not f then
        local err
        f, err = loadstring(code, "@ldb_eval")
        if not f then
            return false, tostring(err), false
        end
    end
    setfenv(f, env)
    local ok, v = pcall(f)
    if not ok then
        v = unwrap(v)
        return false, is_text(v) and tostring(v) or "(null)", true
    end
    return true, ldb_repr(v, 0), true
end

-- "server <cmd> ...": the command as server.call runs it; the session logs
-- it and its reply.
local function ldb_call(...)
    pcall(api.call, ...)
end

-- A function called by FCALL, with its KEYS and ARGV.
local fcall_f, fcall_keys, fcall_args
local function fcall_entry()
    return fcall_f(fcall_keys, fcall_args)
end
boundary[fcall_entry] = true

-- One call: f is the compiled script (EVAL) or a registered function
-- (FCALL, which takes KEYS and ARGV as arguments). Answers the reply
-- already encoded for a client speaking `resp`, the error replies in it
-- that the error statistics count (or nil), and whether it holds any error
-- reply (the call then counts as failed in the command statistics).
local function run(f, name, fcall, resp, hook_every, nkeys, ...)
    run_state.resp = 2  -- scripts start on RESP2 (server.setresp changes it)
    local keys, args
    if nkeys == 0 then
        keys, args = {}, {...}
    else
        keys, args = {...}, {}
        local n = #keys  -- arguments are strings: no holes
        for i = nkeys + 1, n do
            args[i - nkeys] = keys[i]
            keys[i] = nil
        end
    end
    if fcall then
        cur_env = fenv
    else
        cur_env = env
        rawset(G, "KEYS", keys)
        rawset(G, "ARGV", args)
    end
    if ldb_session then
        dbg.sethook(ldb_hook, "l", 100000)
    elseif hook_every > 0 then
        dbg.sethook(hook, "", hook_every)
    end
    local ok, result
    if fcall then
        fcall_f, fcall_keys, fcall_args = f, keys, args
        ok, result = xpcall(fcall_entry, err_handler)
        fcall_f, fcall_keys, fcall_args = nil, nil, nil
    else
        ok, result = xpcall(f, err_handler)
    end
    if hook_every > 0 or ldb_session then
        dbg.sethook()
    end
    local null = resp == 2 and "$-1\r\n" or "_\r\n"
    if not ok then
        local line, count = error_reply(result, name)
        return line .. "\r\n", count and {line} or {}, true
    end
    local out, errs = {}, {}
    local good = pcall(encode, result, out, resp, null, errs)
    if not good then
        return "-ERR reached lua stack limit\r\n", {"-ERR reached"}, true
    end
    if errs.any then
        return concat(out), errs, true
    end
    return concat(out), nil, false
end
boundary[run] = true

-- An EVAL script, compiled under the name Valkey gives it and bound to the
-- scripts' globals. Answers the function, or nil and the compiler's message.
-- A user chunk compiled from its text (never as bytecode: text_only), then
-- recompiled with its tail calls to library functions made ordinary calls,
-- so they keep the script's frame as Valkey's C libraries do (lualib/bytecode.py).
local function compile_text(body, chunkname)
    local f, err = loadstring(text_only(body), chunkname)
    if not f then
        return nil, err
    end
    local g = loadstring(py_untail(string_dump(f)), chunkname)
    return g or f
end

local function compile(body)
    local f, err = compile_text(body, "@user_script")
    if not f then
        return nil, cstr(err)
    end
    setfenv(f, env)
    return f, nil
end

-- The message of an error raised while a library loads, as Valkey's
-- luaExtractErrorInformation reads it.
local function load_error(e)
    e = unwrap(e)
    if is_text(e) then
        return cstr("ERR " .. tostring(e))
    end
    if type(e) == "table" then
        local ok, m = pcall(function()
            return e.err
        end)
        if ok and is_text(m) then
            return cstr(tostring(m))
        end
    end
    return "ERR unknown error"
end

-- Run a library's code for FUNCTION LOAD, within `timeout` seconds of CPU
-- (0: none). Answers true, or false, "compile"|"run", message. The
-- functions it registers reach Python through register_function.
local function load_library(body, timeout)
    local f, err = compile_text(body, "@user_function")
    if not f then
        return false, "compile", cstr(err)
    end
    setfenv(f, fenv)
    local deadline = clock() + timeout
    local function timed_out()
        error({err = "ERR FUNCTION LOAD timeout"})
    end
    if timeout > 0 then
        dbg.sethook(function()
            if clock() > deadline then
                dbg.sethook(function()
                    local i = dbg.getinfo(2, "S")
                    if i and not internal_src[i.source] then
                        timed_out()
                    end
                end, "l")
                timed_out()
            end
        end, "", 100000)
    end
    loading = true
    local ok, e = pcall(f)
    loading = false
    if timeout > 0 then
        dbg.sethook()
    end
    if not ok then
        return false, "run", load_error(e)
    end
    return true
end

local function array(...)
    return {...}
end

-- hashed(k1, v1, k2, v2, ...): a table of those pairs whose hash part was
-- sized for them before the first went in, as Valkey's lua_createtable(0, n)
-- for a RESP3 map or set (the order pairs() walks them depends on it). A
-- constructor of n fields sizes its table so; one is compiled per n.
local builders = {}
local function hashed(...)
    local n = select("#", ...) / 2
    local build = builders[n]
    if build == nil then
        local fields = {}
        for i = 1, n do
            fields[i] = "[s[" .. (2 * i - 1) .. "]]=s[" .. (2 * i) .. "]"
        end
        build = loadstring("local s = ... return {" .. concat(fields, ",") .. "}", "=hashed")
        builders[n] = build
    end
    return build({...})
end

-- The session the next runs are debugged by (nil: none).
local function ldb_attach(session)
    ldb_session = session
end

return {
    run = run, compile = compile, load_library = load_library,
    argmsg = argmsg, errmsg = errmsg, array = array, hashed = hashed,
    ldb = {attach = ldb_attach, print = ldb_print, print_all = ldb_print_all, trace = ldb_trace,
           eval = ldb_eval, call = ldb_call},
}
