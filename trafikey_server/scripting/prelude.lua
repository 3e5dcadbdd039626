-- The script environment Valkey gives, built once per Lua state.
--
-- This chunk runs with the real globals table. It trims the standard
-- library down to what Valkey offers, builds the `server`/`redis` API on
-- top of a few Python callbacks, and returns the functions the Python side
-- drives: `run` (one script call, its reply already encoded as RESP),
-- `compile` (a user chunk, bound to the protected globals) and `protect`.
--
-- User code never sees the real globals table. Its environment is a proxy
-- that reads through to the real one, refuses to create or change
-- anything ("Attempt to modify a readonly table") and refuses to read what
-- does not exist ("Script attempted to access nonexistent global variable"),
-- which is how Valkey's patched Lua behaves with its read-only tables.
-- Library tables are proxied the same way.

-- `py` holds the Python side: the API functions that may raise (they are
-- C functions to Lua, so a script's own frame survives a tail call to
-- them, as it does with Valkey's C API), and a few helpers.
local py, versions = ...
local py_unwrap, py_double, py_hook, killed_message = py.unwrap, py.double, py.hook, py.killed_message

local G = _G
local error, type, tostring, tonumber, select, setmetatable, getmetatable =
    error, type, tostring, tonumber, select, setmetatable, getmetatable
local rawget, rawset, rawequal, pcall, xpcall, unpack, next, setfenv, loadstring =
    rawget, rawset, rawequal, pcall, xpcall, unpack, next, setfenv, loadstring
local floor, huge = math.floor, math.huge
local concat = table.concat
local format, gsub, byte = string.format, string.gsub, string.byte
local dbg = debug
local clock = os.clock

-- What Valkey does not offer.
for _, name in ipairs({"io", "package", "require", "module", "dofile", "loadfile", "print", "python", "debug"}) do
    rawset(G, name, nil)
end
rawset(G, "os", {clock = clock})

-- Read-only tables -----------------------------------------------------------

local protected = setmetatable({}, {__mode = "k"})

local function readonly_newindex()
    error("Attempt to modify a readonly table", 2)
end

local function protect(real)
    local proxy = {}
    setmetatable(proxy, {__index = real, __newindex = readonly_newindex, __metatable = false})
    protected[proxy] = true
    return proxy
end

local env = {}
setmetatable(env, {
    __index = function(_, name)
        local v = rawget(G, name)
        if v == nil then
            error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
        end
        return v
    end,
    __newindex = readonly_newindex,
    __metatable = false,
})
protected[env] = true

rawset(G, "rawset", function(t, k, v)
    if protected[t] then
        error("Attempt to modify a readonly table", 0)
    end
    return rawset(t, k, v)
end)

-- Code compiled at run time (loadstring, load) sees the protected globals too.
rawset(G, "loadstring", function(s, name)
    local f, err = loadstring(s, name)
    if f then
        setfenv(f, env)
    end
    return f, err
end)
local load = load
rawset(G, "load", function(fn, name)
    local f, err = load(fn, name)
    if f then
        setfenv(f, env)
    end
    return f, err
end)

-- pcall as Valkey gives it: an error raised as a table ({err = ...}, as
-- server.call raises) is caught as its message, for scripts written before
-- errors were tables.
local function pack(...)
    return {n = select("#", ...), ...}
end
rawset(G, "pcall", function(f, ...)
    local r = pack(pcall(f, ...))
    if not r[1] then
        local e = r[2]
        if type(e) == "userdata" then
            e = py_unwrap(e) or e
        end
        if type(e) == "table" and type(rawget(e, "err")) == "string" then
            return false, rawget(e, "err")
        end
        return false, e
    end
    return unpack(r, 1, r.n)
end)

-- math.random with Valkey's own generator, the same sequence on every platform.
rawset(G.math, "random", py.random)
rawset(G.math, "randomseed", py.randomseed)

-- Errors ---------------------------------------------------------------------------------

-- Where a user frame is: Valkey reports the script's own line, skipping the
-- C function that raised the error (here: also our own Lua wrappers).
local function user_frame(level)
    while true do
        local i = dbg.getinfo(level, "nSl")
        if not i then
            return nil
        end
        local src = i.source
        if i.what ~= "C" and (src == "@user_script" or src == "@user_function") then
            return i
        end
        level = level + 1
    end
end

local function err_handler(err)
    local i = user_frame(3)
    if type(err) == "userdata" then
        err = py_unwrap(err) or err
        if type(err) == "string" and i then
            -- a library function's error, placed where it was called as luaL_error does
            err = i.short_src .. ":" .. i.currentline .. ": " .. err
        end
    end
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
    local code, msg
    if byte(text, 1) == 45 then -- "-"
        local sp = string.find(text, " ", 1, true)
        if sp then
            code, msg = text:sub(2, sp - 1), text:sub(sp + 1)
        else
            code, msg = "ERR", text:sub(2)
        end
    else
        code, msg = "ERR", text
    end
    msg = gsub(gsub(msg, "^[\r\n]+", ""), "[\r\n]+$", "")
    return {err = code .. " " .. msg}
end

-- The server API -------------------------------------------------------------------------

local api = {}

api.call = py.call
api.pcall = py.pcall
api.sha1hex = py.sha1hex
api.log = py.log
api.setresp = py.setresp
api.set_repl = py.set_repl
api.acl_check_cmd = py.acl_check_cmd

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

local run_state = py.state

api.REPL_NONE = 0
api.REPL_AOF = 1
api.REPL_SLAVE = 2
api.REPL_REPLICA = 2
api.REPL_ALL = 3

api.replicate_commands = function()
    return true
end
api.breakpoint = function()
    return false
end
api.debug = function() end

for k, v in pairs(versions) do
    api[k] = v
end

local api_proxy = protect(api)
rawset(G, "server", api_proxy)
rawset(G, "redis", api_proxy)

-- Every library table is read-only for scripts.
for _, name in ipairs({"string", "math", "table", "os", "coroutine", "cjson", "struct", "cmsgpack", "bit"}) do
    local real = rawget(G, name)
    if type(real) == "table" then
        rawset(G, name, protect(real))
    end
end
getmetatable("").__index = rawget(G, "string")
rawset(G, "_G", env)

-- Replies -------------------------------------------------------------------------------

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

local function encode(v, out, resp, null)
    local t = type(v)
    if t == "string" then
        out[#out + 1] = "$" .. #v .. "\r\n" .. v .. "\r\n"
    elseif t == "number" then
        out[#out + 1] = ":" .. ll(v) .. "\r\n"
    elseif t == "boolean" then
        if run_state.resp == 2 then
            out[#out + 1] = v and ":1\r\n" or null
        else
            out[#out + 1] = v and "#t\r\n" or "#f\r\n"
        end
    elseif t == "table" then
        local e = rawget(v, "err")
        if type(e) == "string" then
            out[#out + 1] = "-" .. no_crlf(e) .. "\r\n"
            return
        end
        local ok = rawget(v, "ok")
        if type(ok) == "string" then
            out[#out + 1] = "+" .. no_crlf(ok) .. "\r\n"
            return
        end
        local d = rawget(v, "double")
        if type(d) == "number" then
            out[#out + 1] = py_double(d, resp)
            return
        end
        local big = rawget(v, "big_number")
        if type(big) == "string" then
            big = no_crlf(big)
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
                    out[#out + 1] = "=" .. (#str + 4) .. "\r\n" .. fmt:sub(1, 3) .. ":" .. str .. "\r\n"
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
                encode(k, out, resp, null)
                encode(x, out, resp, null)
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
                encode(k, out, resp, null)
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
            encode(x, out, resp, null)
            j = j + 1
        end
        out[at] = "*" .. (j - 1) .. "\r\n"
    else
        out[#out + 1] = null
    end
end

local function error_reply(err, name)
    if type(err) ~= "table" then
        local msg = err
        if type(msg) ~= "string" and type(msg) ~= "number" then
            msg = "execution failure"
        end
        return "-ERR Error running script " .. name .. ", " .. no_crlf(tostring(msg):sub(1, 100)) .. "\r\n"
    end
    local msg = rawget(err, "err")
    local line = "-" .. no_crlf(type(msg) == "string" and msg or tostring(msg))
    local source, at = rawget(err, "source"), rawget(err, "line")
    if source ~= nil and at ~= nil and (type(source) == "string" or type(source) == "number")
        and (type(at) == "string" or type(at) == "number") then
        line = line .. " script: on " .. tostring(source) .. ":" .. tostring(at) .. "."
    end
    return line .. "\r\n"
end

-- Running --------------------------------------------------------------------------------

-- A killed script is stopped by raising an error at once, and again on
-- every line of user code it reaches, so that pcall cannot swallow it.
local function kill_again()
    local i = dbg.getinfo(2, "S")
    if i and (i.source == "@user_script" or i.source == "@user_function") then
        error({err = killed_message()})
    end
end

local function hook()
    if py_hook() then
        dbg.sethook(kill_again, "l")
        error({err = killed_message()})
    end
end


-- One call: f is the compiled script (EVAL) or a registered function
-- (FCALL, which takes KEYS and ARGV as arguments). Answers the reply
-- already encoded for a client speaking `resp`, and whether it failed.
local function run(f, name, fcall, resp, hook_every, nkeys, ...)
    local n = select("#", ...)
    local keys, args = {}, {}
    for i = 1, nkeys do
        keys[i] = (select(i, ...))
    end
    for i = nkeys + 1, n do
        args[i - nkeys] = (select(i, ...))
    end
    if not fcall then
        rawset(G, "KEYS", keys)
        rawset(G, "ARGV", args)
    end
    if hook_every > 0 then
        dbg.sethook(hook, "", hook_every)
    end
    local ok, result
    if fcall then
        ok, result = xpcall(function()
            return f(keys, args)
        end, err_handler)
    else
        ok, result = xpcall(f, err_handler)
    end
    if hook_every > 0 then
        dbg.sethook()
    end
    local null = resp == 2 and "$-1\r\n" or "_\r\n"
    if not ok then
        return error_reply(result, name), true
    end
    local out = {}
    local good = pcall(encode, result, out, resp, null)
    if not good then
        return "-ERR reached lua stack limit\r\n", true
    end
    return concat(out), false
end

-- A user chunk, compiled under the name Valkey gives it and bound to the
-- protected globals. Answers the function, or nil and the compiler's message.
local function compile(body, chunkname)
    local f, err = loadstring(body, chunkname)
    if not f then
        return nil, err
    end
    setfenv(f, env)
    return f, nil
end

-- Run a library's code for FUNCTION LOAD, with `register` (a Python
-- callback answering nil or a refusal text) standing in for
-- server.register_function. Answers true, or false, "compile"|"run", message.
local function load_library(body, register)
    local f, err = loadstring(body, "@user_function")
    if not f then
        return false, "compile", err
    end
    local lib_api = {}
    for k, v in pairs(api) do
        lib_api[k] = v
    end
    lib_api.call = nil
    lib_api.pcall = nil
    lib_api.setresp = nil
    lib_api.set_repl = nil
    lib_api.register_function = register
    local lib_proxy = {}
    setmetatable(lib_proxy, {
        __index = function(_, name)
            local v = lib_api[name]
            if v == nil then
                error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
            end
            return v
        end,
        __newindex = readonly_newindex,
        __metatable = false,
    })
    protected[lib_proxy] = true
    local lib_env = setmetatable({}, {
        __index = function(_, name)
            if name == "server" or name == "redis" then
                return lib_proxy
            end
            local v = rawget(G, name)
            if v == nil then
                error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2)
            end
            return v
        end,
        __newindex = readonly_newindex,
        __metatable = false,
    })
    setfenv(f, lib_env)
    local ok, e = pcall(f)
    if not ok then
        if type(e) == "userdata" then
            e = py_unwrap(e) or e
        end
        if type(e) == "table" then
            return false, "run", rawget(e, "err")
        end
        return false, "run", "ERR " .. tostring(e)
    end
    return true
end

-- A function registered by a library runs with the ordinary script API.
local function bind(f)
    setfenv(f, env)
    return f
end

return run, compile, load_library, bind, protect, error_table
