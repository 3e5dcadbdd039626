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

While a script runs the server's clock stands still (TIME and key expiry
see the moment it started), and its reply is counted in the error and
command statistics as Valkey counts it.
"""

from __future__ import annotations

import hashlib
import math
import struct
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from lupa import lua51

from ...protocol.keyspecs import request_keys
from ...services.acl import CTX_LUA, error_text
from ...services.client import Client
from ...services.limits import NOREPLICAS, OOM
from ...util import native, rand
from ...util.errors import CommandError, wrong_args
from ...util.floats import format_double
from ...util.slots import keyslot
from ...util.versions import REDIS_COMPAT_VERSION, VALKEY_VERSION
from ..dispatch import call, unknown_command
from . import lualib
from .debugger import Debugging

if TYPE_CHECKING:
    from ...protocol.table import Command, Table
    from ...services.acl import Acl
    from ...services.config import Config
    from ...services.memory import Memory
    from ...services.switches import Switches
    from ...util.clock import Clock
    from ...util.log import Log
    from ...util.oom import OomScore
    from ..persist.aof import Aof
    from .busy import Busy
    from .debugger import Session
    from .library import Libraries


class EngineHost(Protocol):
    """What scripting uses of the server (server.py)."""

    acl: Acl
    aof: Aof | None
    busy: Busy
    clock: Clock
    config: Config
    disk_error: bytes | None
    log: Log
    maxmemory: int
    memory: Memory
    noreplicas: bool
    slot_checks: bool
    switches: Switches
    table: Table
    total_forks: int
    latest_fork_usec: int
    oom: OomScore

    def count_error(self, msg: bytes, custom: bool = False) -> None: ...
    def internal_client(self) -> Client: ...


# not __file__: compiled, that is the build's path
PRELUDE: Final = native.PACKAGE_DIR / "execution" / "scripting" / "prelude.lua"

# Shebang flags, as Valkey names them.
NO_WRITES: Final = 1
ALLOW_OOM: Final = 2
ALLOW_STALE: Final = 4
NO_CLUSTER: Final = 8
ALLOW_CROSS_SLOT: Final = 16
COMPAT: Final = 1 << 10  # no shebang: the behaviour of scripts written before flags existed
FLAG_NAMES: Final = {
    b"no-writes": NO_WRITES, b"allow-oom": ALLOW_OOM, b"allow-stale": ALLOW_STALE,
    b"no-cluster": NO_CLUSTER, b"allow-cross-slot-keys": ALLOW_CROSS_SLOT,
}

HOOK_EVERY: Final = 100_000  # Lua instructions between two looks at the clock, as Valkey
EVAL_CACHE: Final = 500  # scripts created by EVAL that are kept (SCRIPT LOAD ones always are)

_LL_MAX: Final = 2**63

# Refusals of a script's command, in Valkey's words.
UNKNOWN_FROM_SCRIPT: Final = b"ERR Unknown command called from script"
ARGS_FROM_SCRIPT: Final = b"ERR Wrong number of args calling command from script"
NOT_FROM_SCRIPT: Final = b"ERR This Valkey command is not allowed from script"


class ApiFunction:
    """A server API function as Lua sees it: a C function (a Python
    callable), printed as Lua prints a function."""

    __slots__ = ("fn", "text")

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.text = "function: 0x%012x" % (id(self) & 0xFFFFFFFFFFFF)

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def __str__(self) -> str:
        return self.text


class Raise(Exception):
    """Raised by a server API function to raise a Lua error: an error
    table ({err = msg}) like Valkey's luaPushError, or, for the errors
    Lua's own libraries raise (``table=False``), a message, positioned
    already as luaL_error/luaL_argerror place it."""

    def __init__(self, msg: bytes, table: bool = True, from_command: bool = False) -> None:
        super().__init__(msg)
        self.msg = msg
        self.table = table
        self.from_command = from_command


class LdbLua(NamedTuple):
    """The debugger's helpers in prelude.lua: what needs the Lua stack."""

    attach: Any  # attach(session or nil): the session the next runs are stepped by
    print: Any  # print(name) -> the value shown, or nil
    print_all: Any  # print_all() -> {"name = value", ...} of the current frame
    trace: Any  # trace() -> {{function name, line}, ...}, innermost first
    eval: Any  # eval(code) -> ok, value shown or error
    call: Any  # call(...) -> server.call(...), its error caught


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
                 "timed_out", "slot", "shutdown", "acl", "allow_oom", "ldb")

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
        self.shutdown = False  # ended by SHUTDOWN NOSAVE: the server exits without answering the caller
        self.timed_out = False
        self.start = time.monotonic()
        self.slot = -1
        # The caller's user when its commands must be checked (acl.User), else None.
        self.acl = None if caller.acl.unrestricted else caller.acl
        self.allow_oom = False
        self.ldb: Session | None = None  # the debugging session this run is stepped through


def _version_num(v: str) -> int:
    """"9.1.2" as 0x00090102, the form scripts compare against."""
    major, minor, patch = (int(x) for x in v.split("."))
    return (major << 16) | (minor << 8) | patch


def sha1hex(data: bytes) -> bytes:
    return hashlib.sha1(data).hexdigest().encode()


_SPACE: Final = b" \t\n\v\f\r"
_HEX: Final = b"0123456789abcdefABCDEF"
_ESCAPES: Final = {ord("n"): b"\n", ord("r"): b"\r", ord("t"): b"\t", ord("b"): b"\b", ord("a"): b"\a"}


def split_args(line: bytes) -> list[bytes] | None:
    """Valkey 9's sdssplitargs: words split by blanks, with "double" (C
    escapes, \\xHH) and 'single' quoted parts, a closing quote resuming
    the same word (as a shell does); None for an unterminated quote."""
    n = len(line)
    p = 0
    out: list[bytes] = []
    while True:
        while p < n and line[p] in _SPACE:
            p += 1
        if p >= n:
            return out
        cur = bytearray()
        inq = insq = False
        while p < n:
            c = line[p]
            if inq:
                if c == 92 and p + 3 < n and line[p + 1] == 120 and line[p + 2] in _HEX and line[p + 3] in _HEX:
                    cur.append(int(line[p + 2 : p + 4], 16))
                    p += 4
                    continue
                if c == 92 and p + 1 < n:
                    cur += _ESCAPES.get(line[p + 1], line[p + 1 : p + 2])
                    p += 2
                    continue
                if c == 34:
                    inq = False
                else:
                    cur.append(c)
            elif insq:
                if c == 92 and p + 1 < n and line[p + 1] == 39:
                    cur.append(39)
                    p += 2
                    continue
                if c == 39:
                    insq = False
                else:
                    cur.append(c)
            elif c in b" \n\r\t\0":
                break
            elif c == 34:
                inq = True
            elif c == 39:
                insq = True
            else:
                cur.append(c)
            p += 1
        if inq or insq:
            return None
        out.append(bytes(cur))


def first_line(body: bytes) -> int:
    """Where the shebang line ends (its line feed), as strchr finds it in
    the C string: -1 when a NUL or the end comes first."""
    end = body.find(b"\n")
    nul = body.find(b"\0")
    if end < 0 or 0 <= nul < end:
        return -1
    return end


def parse_shebang(body: bytes) -> tuple[int, int]:
    """(flags, length of the shebang line) of an EVAL body, as Valkey 9's
    evalExtractShebangFlags reads it (options before the engine's name);
    raises ScriptError with its texts."""
    if not body.startswith(b"#!"):
        return COMPAT, 0
    end = first_line(body)
    if end < 0:
        raise ScriptError(b"ERR Invalid script shebang")
    parts = split_args(body[:end])
    if not parts:
        raise ScriptError(b"ERR Invalid engine in script shebang")
    flags = 0
    for part in parts[1:]:
        if not part.startswith(b"flags="):
            raise ScriptError(b"ERR Unknown lua shebang option: " + part.split(b"\0", 1)[0])
        value = part[6:]
        for name in value.split(b",") if value else []:
            name = name.split(b"\0", 1)[0]  # compared as a C string
            bit = FLAG_NAMES.get(name)
            if bit is None:
                raise ScriptError(b"ERR Unexpected flag in script shebang: " + name)
            flags |= bit
    engine = parts[0][2:].split(b"\0", 1)[0]
    if engine.lower() != b"lua":
        raise ScriptError(b"ERR Could not find scripting engine '%s'" % engine)
    return flags, end


def _lrand48_seed(seed: int) -> int:
    return ((seed & 0xFFFFFFFF) << 16) | 0x330E


class Engine:
    def __init__(self, server: EngineHost, libraries: Callable[[Engine], Libraries]) -> None:
        """``libraries`` builds the FUNCTION side (library.Libraries, which
        is built on this module), given this engine."""
        self.server = server
        self.lua = lua51.LuaRuntime(
            encoding=None, unpack_returned_tuples=True, register_eval=False, register_builtins=False
        )
        # server.call and server.pcall as C functions of the Lua state
        # (cbridge.pyx), when built; else lupa calls _api_call and _api_pcall.
        # The closures hold run_argv as a plain pointer: self keeps it alive.
        self._run_argv: Callable[[list[bytes] | bytes], bytes | tuple[int, bytes]] = self.run_argv
        c_calls: Any = None
        if _k is not None and _k.__file__ is not None and _k.bind(lua51.__file__):
            opener = self.lua.eval(b"package.loadlib")(_k.__file__.encode(), b"trafikey_bridge_open")
            if not isinstance(opener, tuple):  # (nil, message, where): not loaded
                c_calls = opener(_k.register(self._run_argv))
        lualib.install(self.lua)
        self.client = server.internal_client()
        self.client.in_script = True
        self.debugging = Debugging(server.log)
        self.run: Run | None = None
        self.scripts: dict[bytes, Script] = {}
        self.evicted = 0
        self._eval_lru: OrderedDict[bytes, None] = OrderedDict()
        # Valkey's generator starts at lrand48's fixed state and is never
        # seeded again but by math.randomseed; a --seed moves its start.
        self._rand = 0x1234ABCD330E
        self.reseed_random()
        versions = self.lua.table_from({
            b"REDIS_VERSION_NUM": _version_num(REDIS_COMPAT_VERSION), b"REDIS_VERSION": REDIS_COMPAT_VERSION.encode(),
            b"VALKEY_VERSION_NUM": _version_num(VALKEY_VERSION), b"VALKEY_VERSION": VALKEY_VERSION.encode(),
            b"SERVER_NAME": b"valkey",
        })
        table_from = self.lua.table_from
        self.table_from = table_from
        self.state = table_from({b"resp": 2})
        self.libraries = libraries(self)
        api = {
            b"sha1hex": _api_sha1hex, b"log": self._api_log,
            b"setresp": self._api_setresp, b"set_repl": self._api_set_repl, b"acl_check_cmd": self._api_acl_check,
            b"random": self._api_random, b"randomseed": self._api_randomseed,
            b"register_function": self.libraries.register,
        }
        py = table_from({
            **{k: ApiFunction(f) for k, f in api.items()},
            # Scripts see server.call and server.pcall only through the
            # prelude's Lua wrappers, never these: no ApiFunction frame on
            # the path of every command a script runs.
            b"call": self._api_call, b"pcall": self._api_pcall,
            b"unwrap": self._unwrap, b"double": self._double, b"hook": self._hook,
            b"killed_message": self._killed_message, b"state": self.state,
            b"call_table": self._api_call_table, b"pcall_table": self._api_pcall_table,
            b"untail": lualib.untail_library_calls,
        })
        self.c_bridge = isinstance(c_calls, tuple)
        if self.c_bridge:
            py[b"c_call"], py[b"c_pcall"] = c_calls
        internal = table_from([n.encode() for n in sorted(lualib.LIBRARY_SOURCES)])
        fns = self.lua.execute(PRELUDE.read_bytes(), py, versions, internal, name="=prelude")
        # run(function, name, is_fcall, resp, hook, nkeys, *args) -> (reply, its error
        # replies (a Lua table indexed from 1) or nil, whether the call failed)
        self._run: Callable[..., tuple[bytes, Any, bool]] = fns[b"run"]
        self._compile = fns[b"compile"]
        self._load_library = fns[b"load_library"]
        self._argmsg = fns[b"argmsg"]
        self._errmsg = fns[b"errmsg"]
        ldb = fns[b"ldb"]
        self.ldb_lua = LdbLua(ldb[b"attach"], ldb[b"print"], ldb[b"print_all"], ldb[b"trace"], ldb[b"eval"],
                              ldb[b"call"])
        global _ARRAY, _HASHED
        _ARRAY = fns[b"array"]
        _HASHED = fns[b"hashed"]

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
        raise Raise(_error_text(v), from_command=kind == 2)

    def _api_pcall(self, *args: Any) -> Any:
        """server.pcall: as server.call, but an error reply is returned as a table."""
        kind, v = self._command(args)
        if kind == 0:
            return v
        if kind == 1:
            return self.table_from({b"ok": v})
        if kind == 2:
            return self.table_from({b"err": _error_text(v), b"ignore_error_stats_update": True})
        return self.table_from({b"err": _error_text(v)})

    def _api_call_table(self, args: Any, n: int) -> Any:
        """server.call with more arguments than a Python call from Lua can
        take: they come as a table of n values (nils kept)."""
        return self._api_call(*[args[i] for i in range(1, n + 1)])

    def _api_pcall_table(self, args: Any, n: int) -> Any:
        return self._api_pcall(*[args[i] for i in range(1, n + 1)])

    def _command(self, args: tuple[Any, ...]) -> tuple[int, Any]:
        """Run a script's command: (0, Lua value), (1, status), (2, error
        reply, or a refusal of the command, both counted in the error
        statistics already) or (3, a refusal of the arguments, not counted).
        The path of server.call where the C bridge is not built."""
        reply = self.run_argv(_argv(args))
        if not isinstance(reply, bytes):
            return reply
        t = reply[0]
        if t == 58:  # :
            return 0, int(reply[1:-2])
        if t == 36 and reply[1] != 45:  # a bulk string
            return 0, reply[reply.index(b"\r\n") + 2 : -2]
        return decode(reply, self.table_from)

    def run_argv(self, argv: list[bytes] | bytes) -> bytes | tuple[int, bytes]:
        """The command a script calls, given its argv (or the refusal of its
        arguments): the encoded reply, or (2, refusal counted in the error
        statistics) or (3, refusal not counted). What both bridges run: the
        C one (cbridge.pyx) turns the reply into Lua values itself.

        The common case (a command spelled as the table or in capitals, the
        right arity, no special flags) is tested inline."""
        run = self.run
        if run is None:
            return 3, b"ERR server.call can only be used inside a script"
        ldb = run.ldb
        if ldb is not None and not ldb.in_call:
            return ldb.call(self.run_argv, argv)  # logged while stepping
        if isinstance(argv, bytes):
            return 3, argv
        cmd = self.server.table.fast.get(argv[0])
        if cmd is None:
            try:
                cmd = self._lookup(argv)
            except CommandError as e:
                return self._refuse(None, e.msg)
            if cmd is None:
                return self._refuse(None, UNKNOWN_FROM_SCRIPT)
        a = cmd.arity
        if (len(argv) != a) if a > 0 else (len(argv) < -a):
            return self._refuse(cmd, ARGS_FROM_SCRIPT)
        if cmd.noscript and not self.server.switches.scripts_unrestricted:
            return self._refuse(cmd, NOT_FROM_SCRIPT)
        if run.acl is not None:
            reason, pos = run.acl.denial(cmd, argv)
            if reason:
                self.server.acl.log.denial(self.client, cmd, argv, reason, pos, CTX_LUA)
                return self._refuse(cmd, b"ERR ACL failure in script: " + error_text(reason, run.acl, cmd))
        if run.read_only and (cmd.write or cmd.may_replicate):
            # PUBLISH too: may-replicate commands count as writes in scripts.
            return self._refuse(cmd, b"ERR Write commands are not allowed from read-only scripts.")
        if cmd.write:
            if not run.dirty:
                # Valkey's checks before a script's first write: it cannot
                # stop halfway once it has changed something.
                server = self.server
                if server.disk_error is not None:  # MISCONF: the last save or AOF write failed
                    return self._refuse(cmd, server.disk_error)
                if server.noreplicas:
                    return self._refuse(cmd, NOREPLICAS)
                if cmd.denyoom and server.maxmemory and not run.allow_oom and server.memory.oom:
                    return self._refuse(cmd, OOM)
            run.dirty = True
        if self.server.slot_checks and cmd.key_specs:
            err = self._slot_error(run, cmd, argv)
            if err is not None:
                return self._refuse(cmd, err)
        reply = call(self.client, cmd, argv)
        run.caller.tot_cmds += 1  # Valkey counts a script's commands for its caller too
        return reply

    def command_flags(self, cmd: Command, argv: list[bytes]) -> tuple[bool, bool]:
        """(write, deny-oom) of an EVAL or FCALL request, as Valkey's
        evalGetCommandFlags and fcallGetCommandFlags give them: a script
        that declares flags is a deny-oom write unless they say otherwise;
        one that does not (or is unknown) has its command's flags."""
        flags = COMPAT
        name = cmd.bname
        if name.startswith(b"fcall"):
            f = self.libraries.find(argv[1])
            if f is not None:
                flags = f.flags
        elif name.startswith(b"evalsha"):
            if len(argv[1]) == 40:
                script = self.scripts.get(argv[1].lower())
                if script is not None:
                    flags = script.flags
        else:
            script = self.scripts.get(sha1hex(argv[1]))
            if script is not None:
                flags = script.flags
            else:
                try:
                    flags = parse_shebang(argv[1])[0]
                except ScriptError:
                    pass
        if flags & COMPAT:
            return cmd.write, cmd.denyoom
        return not flags & NO_WRITES, not flags & (NO_WRITES | ALLOW_OOM)

    def _refuse(self, cmd: Command | None, msg: bytes) -> tuple[int, bytes]:
        """A command refused before it ran, counted as Valkey's scriptCall
        counts it (an error reply, and a rejected call of the command)."""
        if cmd is not None:
            cmd.rejected_calls += 1
        self.server.count_error(msg)
        return 2, msg

    def _lookup(self, argv: list[bytes], strict: bool = False) -> Command | None:
        """The command argv names, or None for an unknown command. An
        unknown subcommand of a known container is refused as a client
        would be refused (CommandError), as Valkey 9 does for scripts;
        ``strict`` (acl_check_cmd) makes it an unknown command instead."""
        table = self.server.table
        cmd = table.commands.get(argv[0])
        if cmd is None:
            cmd = table.commands.get(argv[0].lower())
            if cmd is None:
                return None
        if cmd.subcommands and len(argv) >= 2:
            sub = cmd.subcommands.get(argv[1].lower())
            if sub is None and not strict:
                sub_name = argv[1].split(b"\0", 1)[0][:128].replace(b"\r", b" ").replace(b"\n", b" ")
                raise CommandError(b"ERR unknown subcommand '%s'. Try %s HELP." % (sub_name, cmd.bname.upper()))
            return sub
        return cmd

    def refusal_reply(self, argv: list[bytes], msg: bytes) -> bytes | None:
        """What a client would have been answered where a script's command
        was refused with msg, for the debugger's log; None where Valkey logs
        the refusal alone."""
        if msg == UNKNOWN_FROM_SCRIPT:
            return unknown_command(argv).msg
        try:
            cmd = self._lookup(argv)
        except CommandError:
            return None
        if cmd is None:
            return None
        if msg == ARGS_FROM_SCRIPT:
            return wrong_args(cmd.full_name).msg
        if msg == NOT_FROM_SCRIPT:
            return b"ERR command '%s' is not allowed on script mode" % cmd.full_name.encode()
        return None

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
        parts = [lua_text(a) for a in args[1:]]
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
        argv = _argv(args)
        if isinstance(argv, bytes):
            raise Raise(argv)
        cmd = self._lookup(argv, strict=True)
        if cmd is None:
            raise Raise(b"ERR Invalid command passed to server.acl_check_cmd()")
        run = self.run
        return run is None or run.acl is None or not run.acl.denial(cmd, argv)[0]

    def _argerror(self, narg: int, extramsg: bytes) -> Raise:
        """luaL_argerror from an API function: the text names the function
        as its caller called it and carries the caller's position."""
        return Raise(self._argmsg(narg, extramsg), table=False)

    def _check_int(self, args: tuple[Any, ...], i: int) -> int:
        """luaL_checkint: the i-th argument as a C int, or Lua's 'bad argument' error."""
        v = _lua_number(args[i - 1]) if i <= len(args) else None
        if v is None:
            got = b"no value" if i > len(args) else _lua_type_name(args[i - 1]).encode()
            raise self._argerror(i, b"number expected, got " + got)
        return _c_int(v)

    def _api_random(self, *args: Any) -> float | int:
        """math.random on Valkey's generator (lrand48, scaled as its Lua patch does)."""
        self._rand = (0x5DEECE66D * self._rand + 0xB) & 0xFFFFFFFFFFFF
        r = ((self._rand >> 17) % 0x7FFFFFFF) / 0x7FFFFFFF
        n = len(args)
        if n == 0:
            return r
        if n == 1:
            u = self._check_int(args, 1)
            if u < 1:
                raise self._argerror(1, b"interval is empty")
            return math.floor(r * u) + 1
        if n == 2:
            lo = self._check_int(args, 1)
            hi = self._check_int(args, 2)
            if lo > hi:
                raise self._argerror(2, b"interval is empty")
            return math.floor(r * _c_int(hi - lo + 1)) + lo  # u - l + 1 in C int arithmetic
        raise Raise(self._errmsg(b"wrong number of arguments"), table=False)

    def _api_randomseed(self, *args: Any) -> None:
        self._rand = _lrand48_seed(self._check_int(args, 1))

    def reseed_random(self) -> None:
        """With a server seed (util/rand.py), math.random starts as after a
        math.randomseed of a number drawn from it; without one it is left as
        it is, which at start is Valkey's fixed state."""
        g = rand.derived("lua")
        if g is not None:
            self._rand = _lrand48_seed(g.getrandbits(32))

    def _double(self, d: float, resp: int) -> bytes:
        s = format_double(float(d))  # lupa hands integral numbers over as int
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

    def may_write(self, name: bytes, argv: list[bytes]) -> bool | None:
        """Whether EVAL, EVALSHA or FCALL (or their _RO forms) may write,
        judged from the script's declared flags as Valkey's getCommandFlags
        does (CLIENT PAUSE WRITE lets a no-writes script run); None for a
        script without flags, or one not found, where the command's own
        flags decide."""
        if name == b"eval" or name == b"eval_ro":
            script = self.scripts.get(sha1hex(argv[1]))
            if script is not None:
                flags = script.flags
            else:
                try:
                    flags, _ = parse_shebang(argv[1])
                except ScriptError:
                    return None
        elif name == b"evalsha" or name == b"evalsha_ro":
            script = self.scripts.get(argv[1].lower())
            if script is None:
                return None
            flags = script.flags
        else:
            f = self.libraries.find(argv[1])
            if f is None:
                return None
            flags = f.flags
        if flags & COMPAT:
            return None
        return not flags & NO_WRITES

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
        f, err = self._compile(body[skip:])
        if f is None:
            # addReplyErrorFormat: CR and LF become blanks
            text = _text(err).replace(b"\r", b" ").replace(b"\n", b" ")
            raise ScriptError(b"ERR Error compiling script (new function): " + text)
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

    def count_engine_reset(self, caller: Client) -> None:
        """SCRIPT FLUSH and FUNCTION FLUSH give Valkey 9.1 a new Lua engine,
        whose start reads a setting with a command call (CONFIG GET
        lua-enable-insecure-api): the flushing client's tot-cmds, the
        command statistics and the slow log all see it."""
        root = self.server.table.commands.get(b"config")
        cmd = root.subcommands.get(b"get") if root is not None else None
        if cmd is None:
            return
        call(self.client, cmd, [b"CONFIG", b"GET", b"lua-enable-insecure-api"])
        caller.tot_cmds += 1

    def execute(self, caller: Client, function: Any, name: bytes, eval_mode: bool, flags: int, ro: bool,
                argv: list[bytes], nkeys: int, ldb: Session | None = None) -> bytes:
        """Run a script (EVAL) or a function (FCALL) for the caller, whose
        request is argv; the reply, encoded. With ``ldb`` the script runs
        stepped by that debugging session, and no busy check runs: the
        debugger notices a runaway script itself."""
        read_only = ro or (not flags & COMPAT and bool(flags & NO_WRITES))
        cross = bool(flags & (COMPAT | ALLOW_CROSS_SLOT))
        run = Run(caller, argv, name, eval_mode, read_only, cross)
        run.allow_oom = not flags & COMPAT and bool(flags & ALLOW_OOM)
        if self.server.slot_checks and nkeys:
            run.slot = keyslot(argv[3])
        c = self.client
        c.db = caller.db
        c.set_protocol(2)
        c.user = caller.user
        c.acl = caller.acl
        self.run = run
        threshold = self.server.config.values.get("busy-reply-threshold", 5000)
        if ldb is not None:
            run.ldb = ldb
            threshold = 0
            self.ldb_lua.attach(ldb)
        # Time stands still while a script runs: TIME and key expiry see the
        # moment it started (Valkey's command time snapshot).
        clock = self.server.clock
        snapshot = None
        if clock.frozen_ms is None:
            clock.frozen_ms = snapshot = clock.ms()
        aof = self.server.aof
        if aof is not None:
            aof.begin()  # the script's writes are logged as one MULTI/EXEC
        try:
            reply, errors, failed = self._run(function, name, not eval_mode, caller.resp,
                                              HOOK_EVERY if threshold > 0 else 0, nkeys, *argv[3:])
        finally:
            if ldb is not None:
                self.ldb_lua.attach(None)
            if aof is not None:
                aof.end()
            if snapshot is not None and clock.frozen_ms == snapshot:
                clock.frozen_ms = None
            self.run = None
            if run.timed_out:
                self.server.busy.done(run)
        if run.shutdown:
            return b""
        if failed:
            # A reply holding an error reply: the call failed, as Valkey's commandstats count it.
            cmd = self.server.table.lookup(argv[0])
            if cmd is not None:
                cmd.failed_calls += 1
        if errors is not None:
            # The error replies the script's reply holds, as afterErrorReply
            # counts them: the code is the first word, if a blank ends it
            # within 32 bytes of the "-"; else ERR.
            for i in range(1, len(errors) + 1):
                line = errors[i]
                space = line.find(b" ", 0, 32)
                self.server.count_error((line[1:space] if space > 0 else b"ERR") + b" ", custom=True)
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


def lua_text(v: Any) -> bytes | None:
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
    return sha1hex(lua_text(args[0]) or b"")


def _c_int(v: float) -> int:
    """(int)(ptrdiff_t)v, as luaL_checkint converts on x86-64: truncation,
    then the low 32 bits; what C leaves undefined is what the CPU gives."""
    if v != v or v in (math.inf, -math.inf) or not -_LL_MAX <= v < _LL_MAX:
        n = -_LL_MAX
    else:
        n = int(v)
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


_BITS: Final = struct.Struct("<Q")
_DOUBLE: Final = struct.Struct("<d")
_LL_HALF: Final = float((_LL_MAX - 1) // 2)  # (double)(LLONG_MAX / 2): the bound of double2ll


def _number_arg(d: float) -> bytes:
    """A Lua number as a command argument, as luaArgsToServerArgv writes it:
    the integer when double2ll takes it, else fpconv_dtoa (whose NaN keeps
    its sign: 0/0 is -nan on x86)."""
    if d != d:
        return b"-nan" if _BITS.unpack(_DOUBLE.pack(d))[0] >> 63 else b"nan"
    if -_LL_HALF <= d <= _LL_HALF and d == int(d):
        return b"%d" % int(d)
    return format_double(d)


def _argv(args: tuple[Any, ...]) -> list[bytes] | bytes:
    """A script's command arguments as strings, or the refusal's text."""
    if not args:
        return b"ERR Please specify at least one argument for this call"
    argv: list[bytes] = []
    for a in args:
        t = type(a)
        if t is bytes:
            argv.append(a)
        elif t is int or t is float:
            argv.append(_number_arg(float(a)))
        else:
            return b"ERR Command arguments must be strings or integers"
    return argv


def _lua_type_name(v: Any) -> str:
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, bytes):
        return "string"
    if isinstance(v, ApiFunction):
        return "function"
    return str(lua51.lua_type(v) or "userdata")


def _text(err: Any) -> bytes:
    if isinstance(err, bytes):
        return err
    return str(err).encode()


# -- RESP to Lua ------------------------------------------------------------------------------

_ARRAY: Any = None  # prelude's array(...): {...} of exactly its arguments
_HASHED: Any = None  # prelude's hashed(k, v, ...): their table, its hash part sized first


def _hashed(pairs: list[Any], table_from: Any) -> Any:
    """A map's or set's table as Valkey builds it (sized, then filled in
    order), so pairs() walks it in Valkey's order; a null key makes no entry."""
    flat = [x for k, v in pairs if k is not None for x in (k, v)]
    if _HASHED is None or len(flat) > 7000:
        return table_from(dict(zip(flat[::2], flat[1::2], strict=True)))
    return _HASHED(*flat)


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
        return 2, reply[1:-2]  # made into an error table by the caller (_error_text)
    value, _ = _parse(reply, 0, table_from)
    return 0, value


def _error_text(msg: bytes) -> bytes:
    """An error reply's text in a Lua error table, as luaPushErrorBuff
    makes it: read as a C string (up to a NUL), an error code before the
    first blank (else ERR)."""
    msg = msg.split(b"\0", 1)[0]
    code, sp, rest = msg.partition(b" ")
    if not sp:
        return b"ERR " + msg
    return code + b" " + rest.strip(b"\r\n")


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
        return table_from({b"err": _error_text(head)}), nxt
    if t == 42:  # *
        n = int(head)
        if n < 0:
            return False, nxt
        items = []
        holes = False
        for _ in range(n):
            v, nxt = _parse(buf, nxt, table_from)
            if v is None:
                holes = True
            items.append(v)
        if holes and _ARRAY is not None and n <= 7000:
            # RESP3 nulls: an array part of exactly n slots, as lua_createtable(n, 0), so that # finds the same border
            return _ARRAY(*items), nxt
        return table_from(items), nxt
    if t == 37:  # % map
        n = int(head)
        m = []
        for _ in range(n):
            k, nxt = _parse(buf, nxt, table_from)
            v, nxt = _parse(buf, nxt, table_from)
            m.append((k, v))
        return table_from({b"map": _hashed(m, table_from)}), nxt
    if t == 126:  # ~ set
        n = int(head)
        s = []
        for _ in range(n):
            k, nxt = _parse(buf, nxt, table_from)
            s.append((k, True))
        return table_from({b"set": _hashed(s, table_from)}), nxt
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
    if t == 124:  # | attribute: read past its pairs, the reply is what follows
        for _ in range(2 * int(head)):
            _, nxt = _parse(buf, nxt, table_from)
        return _parse(buf, nxt, table_from)
    raise ValueError(f"unexpected reply type {chr(t)!r}")


# server.call and server.pcall in C, when built (cbridge.pyx: the same
# conversions as _argv and decode, straight between the Lua stack and RESP).
_k: Final = native.load("execution.scripting.cbridge")
