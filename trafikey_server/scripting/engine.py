"""The Lua engine: one Lua 5.1 state per server, as Valkey keeps one.

The environment a script sees (the sandbox, the read-only globals, the
``server``/``redis`` API, error tables, reply encoding) is Lua code in
``prelude.lua``; this module gives it the few things only the server can
do: run a command (``_call``), log, hash, format a double, watch the clock
for a runaway script, and draw random numbers from Valkey's generator.

A script's commands run through ``dispatch.call`` on a client of their own
(``Engine.client``), as Valkey runs them on its Lua client: the caller's
database, RESP2 unless the script asks for RESP3, and the checks Valkey
makes for commands called from scripts (unknown command, arity, commands
not allowed in scripts, writes from read-only scripts, cluster slots).
The reply the handler encodes is decoded back into Lua values here
(``decode``), so a script sees exactly what a client would have seen.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lupa import lua51

from ..client import Client
from ..dispatch import call
from ..floats import format_double
from ..keyspecs import request_keys
from ..slots import keyslot

try:
    from . import lualib
except ImportError:  # pragma: no cover - while the libraries are being written
    lualib = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from ..registry import Command
    from ..server import Server

PRELUDE = Path(__file__).with_name("prelude.lua")

# Shebang flags, as Valkey names them.
NO_WRITES = 1
ALLOW_OOM = 2
ALLOW_STALE = 4
NO_CLUSTER = 8
ALLOW_CROSS_SLOT = 16
COMPAT = 1 << 10  # no shebang: the behaviour of scripts written before flags existed
FLAG_NAMES = {
    b"no-writes": NO_WRITES, b"allow-oom": ALLOW_OOM, b"allow-stale": ALLOW_STALE,
    b"no-cluster": NO_CLUSTER, b"allow-cross-slot-keys": ALLOW_CROSS_SLOT,
}

HOOK_EVERY = 100_000  # Lua instructions between two looks at the clock, as Valkey
EVAL_CACHE = 500  # scripts created by EVAL that are kept (SCRIPT LOAD ones always are)

_LL_MAX = 2**63


class Raise(Exception):
    """Raised by a server API function to raise a Lua error: an error
    table ({err = msg}) like Valkey's luaPushError, or, for the errors of
    library functions (``table=False``), a message."""

    def __init__(self, msg: bytes, table: bool = True, from_command: bool = False) -> None:
        super().__init__(msg)
        self.msg = msg
        self.table = table
        self.from_command = from_command


class ScriptError(Exception):
    """A script that cannot be created; ``msg`` is the error reply's text."""

    def __init__(self, msg: bytes) -> None:
        super().__init__(msg)
        self.msg = msg


class Script:
    __slots__ = ("sha", "body", "flags", "function", "loaded")

    def __init__(self, sha: bytes, body: bytes, flags: int, function: Any, loaded: bool) -> None:
        self.sha = sha
        self.body = body
        self.flags = flags
        self.function = function
        self.loaded = loaded  # by SCRIPT LOAD: never evicted


class Run:
    """What is known about the script that is running right now."""

    __slots__ = ("caller", "argv", "name", "eval_mode", "read_only", "allow_cross_slot", "dirty", "killed", "start",
                 "timed_out", "slot")

    def __init__(self, caller: Client, argv: list[bytes], name: bytes, eval_mode: bool, read_only: bool,
                 cross_slot: bool) -> None:
        self.caller = caller
        self.argv = argv
        self.name = name
        self.eval_mode = eval_mode
        self.read_only = read_only
        self.allow_cross_slot = cross_slot
        self.dirty = False
        self.killed = False
        self.timed_out = False
        self.start = time.monotonic()
        self.slot = -1


def sha1hex(data: bytes) -> bytes:
    return hashlib.sha1(data).hexdigest().encode()


def parse_shebang(body: bytes) -> tuple[int, int]:
    """(flags, length of the shebang line) of an EVAL body, as Valkey's
    evalExtractShebangFlags reads it; raises ScriptError with its texts."""
    if not body.startswith(b"#!"):
        return COMPAT, 0
    end = body.find(b"\n")
    if end < 0:
        raise ScriptError(b"ERR Invalid script shebang")
    parts = body[:end].split()
    if not parts:
        raise ScriptError(b"ERR Invalid engine in script shebang")
    if parts[0] != b"#!lua":
        raise ScriptError(b"ERR Could not find scripting engine '%s'" % parts[0][2:])
    flags = 0
    for part in parts[1:]:
        if not part.startswith(b"flags="):
            raise ScriptError(b"ERR Unknown lua shebang option: " + part)
        value = part[6:]
        for name in value.split(b",") if value else []:
            bit = FLAG_NAMES.get(name)
            if bit is None:
                raise ScriptError(b"ERR Unexpected flag in script shebang: " + name)
            flags |= bit
    return flags, end


def _lrand48_seed(seed: int) -> int:
    return ((seed & 0xFFFFFFFF) << 16) | 0x330E


class Engine:
    def __init__(self, server: Server) -> None:
        self.server = server
        self.lua = lua51.LuaRuntime(
            encoding=None, unpack_returned_tuples=True, register_eval=False, register_builtins=False
        )
        install = getattr(lualib, "install", None)
        if install is not None:
            install(self.lua)
        self.client = Client(server, 0)
        self.client.in_script = True
        self.run: Run | None = None
        self.scripts: dict[bytes, Script] = {}
        self.evicted = 0
        self._eval_lru: OrderedDict[bytes, None] = OrderedDict()
        self._rand = 0x1234ABCD330E
        versions = self.lua.table_from({
            b"REDIS_VERSION_NUM": 0x00070204, b"REDIS_VERSION": b"7.2.4",
            b"VALKEY_VERSION_NUM": 0x00090102, b"VALKEY_VERSION": b"9.1.2", b"SERVER_NAME": b"valkey",
        })
        table_from = self.lua.table_from
        self.table_from = table_from
        self.state = table_from({b"resp": 2})
        py = table_from({
            b"call": self._api_call, b"pcall": self._api_pcall, b"sha1hex": _api_sha1hex, b"log": self._api_log,
            b"setresp": self._api_setresp, b"set_repl": self._api_set_repl, b"acl_check_cmd": self._api_acl_check,
            b"random": self._api_random, b"randomseed": self._api_randomseed, b"unwrap": self._unwrap,
            b"double": self._double, b"hook": self._hook, b"killed_message": self._killed_message,
            b"state": self.state,
        })
        (self._run, self._compile, self._load_library, self._bind, _protect,
         self._error_table) = self.lua.execute(PRELUDE.read_bytes(), py, versions)
        from .library import Libraries

        self.libraries = Libraries(self)

    # -- the server API, as C functions to Lua --------------------------------------------------

    def _unwrap(self, e: Any) -> Any:
        """The Lua error value of a Python exception raised into Lua: the
        error table of a refusal, the message of a library error, and an
        error table naming any other exception (a bug, reported, not fatal)."""
        if isinstance(e, Raise):
            if e.table:
                fields: dict[bytes, Any] = {b"err": e.msg}
                if e.from_command:
                    fields[b"ignore_error_stats_update"] = True
                return self.table_from(fields)
            return e.msg
        if isinstance(e, BaseException):
            return self.table_from({b"err": b"ERR " + str(e).encode()})
        return None

    def _api_call(self, *args: Any) -> Any:
        """server.call: the command's reply as a Lua value; an error reply is raised."""
        kind, v = self._command(args)
        if kind == 0:
            return v
        if kind == 1:
            return self.table_from({b"ok": v})
        raise Raise(v, from_command=kind == 2)

    def _api_pcall(self, *args: Any) -> Any:
        """server.pcall: as server.call, but an error reply is returned as a table."""
        kind, v = self._command(args)
        if kind == 0:
            return v
        if kind == 1:
            return self.table_from({b"ok": v})
        if kind == 2:
            return self.table_from({b"err": v, b"ignore_error_stats_update": True})
        return self.table_from({b"err": v})

    def _command(self, args: tuple[Any, ...]) -> tuple[int, Any]:
        """Run a script's command: (0, Lua value), (1, status), (2, error
        reply) or (3, refusal before the command ran)."""
        run = self.run
        if run is None:
            return 3, b"ERR server.call can only be used inside a script"
        if not args:
            return 3, b"ERR Please specify at least one argument for this call"
        argv: list[bytes] = []
        for a in args:
            t = type(a)
            if t is bytes:
                argv.append(a)
            elif t is int:
                argv.append(b"%d" % a)
            elif t is float:
                if a == a and -_LL_MAX <= a < _LL_MAX and a == int(a):
                    argv.append(b"%d" % int(a))
                else:
                    argv.append(format_double(a))
            else:
                return 3, b"ERR Command arguments must be strings or integers"
        cmd = self._lookup(argv)
        if cmd is None:
            return 3, b"ERR Unknown command called from script"
        if not cmd.arity_ok(len(argv)):
            return 3, b"ERR Wrong number of args calling command from script"
        if cmd.noscript:
            return 3, b"ERR This Valkey command is not allowed from script"
        if cmd.write:
            if run.read_only:
                return 3, b"ERR Write commands are not allowed from read-only scripts."
            run.dirty = True
        if self.server.slot_checks and cmd.key_specs:
            err = self._slot_error(run, cmd, argv)
            if err is not None:
                return 3, err
        return decode(call(self.client, cmd, argv), self.table_from)

    def _lookup(self, argv: list[bytes]) -> Command | None:
        table = self.server.table
        cmd = table.commands.get(argv[0])
        if cmd is None:
            cmd = table.commands.get(argv[0].lower())
            if cmd is None:
                return None
        if cmd.subcommands and len(argv) >= 2:
            # An unknown subcommand is an unknown command, as Valkey's lookupCommand has it.
            return cmd.subcommands.get(argv[1].lower())
        return cmd

    def _slot_error(self, run: Run, cmd: Command, argv: list[bytes]) -> bytes | None:
        """Valkey Cluster's checks on a script's command: its own keys share
        a slot, and (unless the script allows cross-slot keys) that slot is
        the one the script's keys are in."""
        slots = {keyslot(k) for k in request_keys(cmd, argv)}
        if not slots:
            return None
        if len(slots) > 1:
            return b"ERR Command '%s' in script attempted to access keys that don't hash to the same slot" % (
                cmd.bname)
        slot = slots.pop()
        if not run.allow_cross_slot:
            if run.slot == -1:
                run.slot = slot
            elif run.slot != slot:
                return b"ERR Script attempted to access keys that do not hash to the same slot"
        return None

    def _api_log(self, *args: Any) -> None:
        if len(args) < 2:
            raise Raise(b"ERR server.log() requires two arguments or more.")
        level = _lua_number(args[0])
        if level is None:
            raise Raise(b"ERR First argument must be a number (log level).")
        level = int(level)
        if level < 0 or level > 3:
            raise Raise(b"ERR Invalid log level.")
        parts = [_lua_text(a) for a in args[1:]]
        msg = b" ".join(p for p in parts if p is not None).decode("utf-8", "replace")
        log = self.server.log
        (log.debug, log.verbose, log.notice, log.warning)[level](msg)

    def _api_setresp(self, *args: Any) -> None:
        if len(args) != 1:
            raise Raise(b"ERR server.setresp() requires one argument.")
        v = int(_lua_number(args[0]) or 0)
        if v != 2 and v != 3:
            raise Raise(b"ERR RESP version must be 2 or 3.")
        self.state[b"resp"] = v
        self.client.set_protocol(v)

    def _api_set_repl(self, *args: Any) -> None:
        if len(args) != 1:
            raise Raise(b"ERR server.set_repl() requires one argument.")
        v = int(_lua_number(args[0]) or 0)
        if v & ~3:
            raise Raise(b"ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")

    def _api_acl_check(self, *args: Any) -> bool:
        if not args:
            raise Raise(b"ERR Please specify at least one argument for this call")
        argv = [a if isinstance(a, bytes) else _lua_text(a) or b"" for a in args]
        if self._lookup(argv) is None:
            raise Raise(b"ERR Invalid command passed to server.acl_check_cmd()")
        return True

    def _api_random(self, *args: Any) -> float | int:
        """math.random on Valkey's generator (lrand48, scaled as its Lua patch does)."""
        self._rand = (0x5DEECE66D * self._rand + 0xB) & 0xFFFFFFFFFFFF
        r = ((self._rand >> 17) % 0x7FFFFFFF) / 0x7FFFFFFF
        n = len(args)
        if n == 0:
            return r
        if n == 1:
            u = _check_int(args, 1, "random")
            if u < 1:
                raise Raise(b"bad argument #1 to 'random' (interval is empty)", table=False)
            return math.floor(r * u) + 1
        if n == 2:
            lo = _check_int(args, 1, "random")
            hi = _check_int(args, 2, "random")
            if lo > hi:
                raise Raise(b"bad argument #2 to 'random' (interval is empty)", table=False)
            return math.floor(r * (hi - lo + 1)) + lo
        raise Raise(b"wrong number of arguments", table=False)

    def _api_randomseed(self, *args: Any) -> None:
        self._rand = _lrand48_seed(_check_int(args, 1, "randomseed"))

    def _double(self, d: float, resp: int) -> bytes:
        s = format_double(d)
        if resp == 2:
            return b"$%d\r\n%s\r\n" % (len(s), s)
        return b"," + s + b"\r\n"

    def _hook(self) -> bool:
        """Every HOOK_EVERY instructions: past busy-reply-threshold, serve
        other clients (they get BUSY) and report whether the script was killed."""
        run = self.run
        if run is None:
            return False
        if not run.timed_out:
            threshold = self.server.config.values.get("busy-reply-threshold", 5000)
            if (time.monotonic() - run.start) * 1000 < threshold:
                return False
            run.timed_out = True
            self.server.log.warning(
                "Slow script detected: still in execution after %d milliseconds. You can try killing the script "
                "using the %s command. Script name is: %s." % (
                    (time.monotonic() - run.start) * 1000, "SCRIPT KILL" if run.eval_mode else "FUNCTION KILL",
                    run.name.decode()))
        self.server.busy.serve(run)
        return run.killed

    def _killed_message(self) -> bytes:
        run = self.run
        if run is not None and not run.eval_mode:
            return b"ERR Script killed by user with FUNCTION KILL."
        return b"ERR Script killed by user with SCRIPT KILL."

    # -- scripts ------------------------------------------------------------------------------

    def create(self, body: bytes, loaded: bool) -> Script:
        """The script for body, compiled now if new (EVAL and SCRIPT LOAD)."""
        sha = sha1hex(body)
        script = self.scripts.get(sha)
        if script is not None:
            if loaded and not script.loaded:
                script.loaded = True
                self._eval_lru.pop(sha, None)
            return script
        flags, skip = parse_shebang(body)
        # The shebang line is skipped but its line feed kept, so line numbers stay the user's.
        f, err = self._compile(body[skip:], b"@user_script")
        if f is None:
            raise ScriptError(b"ERR Error compiling script (new function): " + _text(err))
        script = Script(sha, body, flags, f, loaded)
        if not loaded:
            lru = self._eval_lru
            while len(lru) >= EVAL_CACHE:
                old, _ = lru.popitem(last=False)
                del self.scripts[old]
                self.evicted += 1
            lru[sha] = None
        self.scripts[sha] = script
        return script

    def touch(self, script: Script) -> None:
        if not script.loaded:
            self._eval_lru.move_to_end(script.sha)

    def flush(self) -> None:
        self.scripts.clear()
        self._eval_lru.clear()
        self.lua.execute(b"collectgarbage()")

    def execute(self, caller: Client, function: Any, name: bytes, eval_mode: bool, flags: int, ro: bool,
                argv: list[bytes], nkeys: int) -> bytes:
        """Run a script (EVAL) or a function (FCALL) for the caller, whose
        request is argv; the reply, encoded."""
        read_only = ro or (not flags & COMPAT and bool(flags & NO_WRITES))
        cross = bool(flags & (COMPAT | ALLOW_CROSS_SLOT))
        run = Run(caller, argv, name, eval_mode, read_only, cross)
        if self.server.slot_checks and nkeys:
            run.slot = keyslot(argv[3])
        c = self.client
        c.db = caller.db
        c.set_protocol(2)
        self.state[b"resp"] = 2
        c.user = caller.user
        self.run = run
        threshold = self.server.config.values.get("busy-reply-threshold", 5000)
        try:
            reply, failed = self._run(function, name, not eval_mode, caller.resp, HOOK_EVERY if threshold > 0 else 0,
                                      nkeys, *argv[3:])
        finally:
            self.run = None
            if run.timed_out:
                self.server.busy.done(run)
        if failed:
            self.server.count_error(reply[1:].split(b" ", 1)[0].split(b"\r", 1)[0] + b" ")
        return reply


def _lua_number(v: Any) -> float | None:
    """lua_tonumber: numbers, and strings that read as numbers."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, bytes):
        text = v.strip()
        try:
            return float(int(text, 16)) if text.lower().startswith(b"0x") else float(text)
        except ValueError:
            return None
    return None


def _lua_text(v: Any) -> bytes | None:
    """lua_tolstring: strings, and numbers in Lua's %.14g; None for the rest."""
    if isinstance(v, bytes):
        return v
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return b"%.14g" % v
    return None


def _api_sha1hex(*args: Any) -> bytes:
    if len(args) != 1:
        raise Raise(b"ERR wrong number of arguments")
    return sha1hex(_lua_text(args[0]) or b"")


def _check_int(args: tuple[Any, ...], i: int, fname: str) -> int:
    """luaL_checkint: the i-th argument as a C int, or Lua's 'bad argument' error."""
    v = _lua_number(args[i - 1]) if i <= len(args) else None
    if v is None:
        got = "no value" if i > len(args) else _lua_type_name(args[i - 1])
        raise Raise(b"bad argument #%d to '%s' (number expected, got %s)" % (i, fname.encode(), got.encode()),
                    table=False)
    return int(v)


def _lua_type_name(v: Any) -> str:
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, bytes):
        return "string"
    return str(lua51.lua_type(v) or "userdata")


def _text(err: Any) -> bytes:
    if isinstance(err, bytes):
        return err
    return str(err).encode()


# -- RESP to Lua ------------------------------------------------------------------------------


def decode(reply: bytes, table_from: Any) -> tuple[int, Any]:
    """A command's encoded reply as the Lua value a script receives:
    (0, value), (1, status text) or (2, error text)."""
    t = reply[0]
    if t == 36:  # $
        if reply[1] == 45:  # $-1
            return 0, False
        start = reply.index(b"\r\n") + 2
        return 0, reply[start:-2]
    if t == 58:  # :
        return 0, int(reply[1:-2])
    if t == 43:  # +
        return 1, reply[1:-2]
    if t == 45:  # -
        return 2, reply[1:-2]
    value, _ = _parse(reply, 0, table_from)
    return 0, value


def _line(buf: bytes, pos: int) -> tuple[bytes, int]:
    end = buf.index(b"\r\n", pos)
    return buf[pos + 1 : end], end + 2


def _parse(buf: bytes, pos: int, table_from: Any) -> tuple[Any, int]:
    """One RESP value at pos, converted as Valkey's redisProtocolToLuaType does."""
    t = buf[pos]
    head, nxt = _line(buf, pos)
    if t == 36:  # $
        n = int(head)
        if n < 0:
            return False, nxt
        return buf[nxt : nxt + n], nxt + n + 2
    if t == 58:  # :
        return int(head), nxt
    if t == 43:  # +
        return table_from({b"ok": head}), nxt
    if t == 45:  # -
        return table_from({b"err": head}), nxt
    if t == 42:  # *
        n = int(head)
        if n < 0:
            return False, nxt
        items = []
        for _ in range(n):
            v, nxt = _parse(buf, nxt, table_from)
            items.append(v)
        return table_from(items), nxt
    if t == 37:  # % map
        n = int(head)
        m = {}
        for _ in range(n):
            k, nxt = _parse(buf, nxt, table_from)
            v, nxt = _parse(buf, nxt, table_from)
            m[k] = v
        return table_from({b"map": table_from(m)}), nxt
    if t == 126:  # ~ set
        n = int(head)
        s = {}
        for _ in range(n):
            k, nxt = _parse(buf, nxt, table_from)
            s[k] = True
        return table_from({b"set": table_from(s)}), nxt
    if t == 95:  # _ null
        return None, nxt
    if t == 35:  # # boolean
        return head == b"t", nxt
    if t == 44:  # , double
        return table_from({b"double": float(head)}), nxt
    if t == 40:  # ( big number
        return table_from({b"big_number": head}), nxt
    if t == 61:  # = verbatim
        n = int(head)
        body = buf[nxt : nxt + n]
        return table_from({b"verbatim_string": table_from({b"format": body[:3], b"string": body[4:]})}), nxt + n + 2
    raise ValueError(f"unexpected reply type {chr(t)!r}")
