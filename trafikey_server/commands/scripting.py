"""Scripting commands: EVAL and its relatives, SCRIPT, FUNCTION and FCALL.

The Lua side lives in ``scripting/``; these handlers parse the request,
find or create the script, make Valkey's checks before a script starts
(key count, read-only calls of writing scripts) and hand it to the engine.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..execution.dispatch import busy_error
from ..execution.scripting.debugger import debug_eval
from ..execution.scripting.engine import COMPAT, FLAG_NAMES, NO_WRITES, Script, ScriptError
from ..execution.scripting.library import FLAG_ORDER
from ..protocol.args import cstr, error_text
from ..protocol.rdbformat import RdbError, Reader, compressing, encode_string
from ..protocol.resp import OK, array_header, bulk, integer, status
from ..util import glob
from ..util.crc64 import crc64
from ..util.errors import CommandError
from ..util.parsing import to_int
from .dump import DUMP_VERSION, footer_ok

if TYPE_CHECKING:
    from ..execution.scripting.debugger import Session
    from ..services.client import Client

NOSCRIPT = b"NOSCRIPT No matching script."
_RO_WRITE = b"ERR Can not execute a script with write flag using *_ro command."
_TOO_MANY_KEYS = b"ERR Number of keys can't be greater than number of args"
_NEGATIVE_KEYS = b"ERR Number of keys can't be negative"


def _numkeys(argv: list[bytes], bad: bytes | None = None) -> int:
    n = to_int(argv[2])
    if n is None:
        raise CommandError(bad or b"ERR value is not an integer or out of range")
    if n > len(argv) - 3:
        raise CommandError(_TOO_MANY_KEYS)
    if n < 0:
        raise CommandError(_NEGATIVE_KEYS)
    return n


def _run_script(c: Client, script: Script, argv: list[bytes], nkeys: int, ro: bool,
                ldb: Session | None = None) -> bytes:
    engine = c.server.scripting
    flags = script.flags
    if ro and not flags & COMPAT and not flags & NO_WRITES:
        raise CommandError(_RO_WRITE)
    engine.touch(script)
    return engine.execute(c, script.function, script.sha, True, flags, ro, argv, nkeys, ldb)


def _eval(c: Client, argv: list[bytes], ro: bool) -> bytes:
    if c.server.observer.monitors:  # before the commands it runs, as Valkey feeds it
        c.server.observer.feed(c, argv)
    if c.lua_debug:  # SCRIPT DEBUG YES|SYNC: this EVAL is a debugging session
        return debug_eval(c.server.scripting, c, argv[1], lambda ldb: _eval_script(c, argv, ro, ldb))
    return _eval_script(c, argv, ro, None)


def _eval_script(c: Client, argv: list[bytes], ro: bool, ldb: Session | None) -> bytes:
    nkeys = _numkeys(argv)
    engine = c.server.scripting
    try:
        script = engine.create(argv[1], loaded=False)
    except ScriptError as e:
        raise CommandError(e.msg) from None
    return _run_script(c, script, argv, nkeys, ro, ldb)


def _evalsha(c: Client, argv: list[bytes], ro: bool) -> bytes:
    if c.server.observer.monitors:  # before the commands it runs, as Valkey feeds it
        c.server.observer.feed(c, argv)
    sha = argv[1]
    if len(sha) != 40:
        raise CommandError(NOSCRIPT)  # before the key count, as Valkey checks
    if c.lua_debug:
        raise CommandError(b"ERR Please use EVAL instead of EVALSHA for debugging")
    nkeys = _numkeys(argv)
    script = c.server.scripting.scripts.get(sha.lower())
    if script is None:
        raise CommandError(NOSCRIPT)
    return _run_script(c, script, argv, nkeys, ro)


def eval(c: Client, argv: list[bytes]) -> bytes:
    return _eval(c, argv, False)


def eval_ro(c: Client, argv: list[bytes]) -> bytes:
    return _eval(c, argv, True)


def evalsha(c: Client, argv: list[bytes]) -> bytes:
    return _evalsha(c, argv, False)


def evalsha_ro(c: Client, argv: list[bytes]) -> bytes:
    return _evalsha(c, argv, True)


# -- SCRIPT ------------------------------------------------------------------------------


def script_load(c: Client, argv: list[bytes]) -> bytes:
    try:
        script = c.server.scripting.create(argv[2], loaded=True)
    except ScriptError as e:
        raise CommandError(e.msg) from None
    return bulk(script.sha)


def script_exists(c: Client, argv: list[bytes]) -> bytes:
    scripts = c.server.scripting.scripts
    out = [array_header(len(argv) - 2)]
    for sha in argv[2:]:
        out.append(integer(1 if sha.lower() in scripts else 0))
    return b"".join(out)


def _flush_mode(argv: list[bytes], what: bytes) -> None:
    if len(argv) > 3 or (len(argv) == 3 and argv[2].lower() not in (b"sync", b"async")):
        raise CommandError(what)


def script_flush(c: Client, argv: list[bytes]) -> bytes:
    _flush_mode(argv, b"ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    c.server.scripting.flush()
    c.server.scripting.count_engine_reset(c)
    return OK


def script_show(c: Client, argv: list[bytes]) -> bytes:
    script = c.server.scripting.scripts.get(argv[2].lower())
    if script is None:
        raise CommandError(NOSCRIPT)
    return bulk(script.body)


def _kill(c: Client, eval_mode: bool) -> bytes:
    run = c.server.scripting.run
    if run is None:
        raise CommandError(b"NOTBUSY No scripts in execution right now.")
    if run.dirty:
        raise CommandError(
            b"UNKILLABLE Sorry the script already executed write commands against the dataset. You can either "
            b"wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
        )
    if eval_mode != run.eval_mode:
        raise CommandError(busy_error(c.server, run.eval_mode))
    run.killed = True
    return OK


def script_kill(c: Client, argv: list[bytes]) -> bytes:
    return _kill(c, True)


_SCRIPT_HELP = (
    b"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"DEBUG (YES|SYNC|NO) [<engine_name>]",
    b"    Set the debug mode for subsequent scripts executed of the specified engine.",
    b"    Default engine name: 'lua'",
    b"EXISTS <sha1> [<sha1> ...]",
    b"    Return information about the existence of the scripts in the script cache.",
    b"FLUSH [ASYNC|SYNC]",
    b"    Flush the Lua scripts cache. Very dangerous on replicas.",
    b"    When called without the optional mode argument, the behavior is determined",
    b"     by the lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    b"    * ASYNC: Asynchronously flush the scripts cache.",
    b"    * SYNC: Synchronously flush the scripts cache.",
    b"KILL",
    b"    Kill the currently executing Lua script.",
    b"LOAD <script>",
    b"    Load a script into the scripts cache without executing it.",
    b"SHOW <sha1>",
    b"    Show a script from the scripts cache.",
    b"HELP",
    b"    Print this help.",
)


def _help(lines: tuple[bytes, ...]) -> bytes:
    return array_header(len(lines)) + b"".join(status(line) for line in lines)


def script_help(c: Client, argv: list[bytes]) -> bytes:
    return _help(_SCRIPT_HELP)


# -- FUNCTION and FCALL --------------------------------------------------------------------


def function_load(c: Client, argv: list[bytes]) -> bytes:
    replace = False
    i = 2
    while i < len(argv) - 1:
        arg = argv[i]
        i += 1
        if arg.lower() == b"replace":
            replace = True
            continue
        raise CommandError(b"ERR Unknown option given: " + error_text(arg))
    if i >= len(argv):
        raise CommandError(b"ERR Function code is missing")
    try:
        name = c.server.scripting.libraries.load(argv[i], replace)
    except ScriptError as e:
        raise CommandError(e.msg) from None
    return bulk(name)


def function_delete(c: Client, argv: list[bytes]) -> bytes:
    if not c.server.scripting.libraries.delete(argv[2]):
        raise CommandError(b"ERR Library not found")
    return OK


def function_flush(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) > 3:
        raise CommandError(
            b"ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP." % (
                argv[1][:128].replace(b"\r", b" ").replace(b"\n", b" "), argv[0].upper()))
    _flush_mode(argv, b"ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
    c.server.scripting.libraries.flush()
    c.server.scripting.count_engine_reset(c)
    return OK


def function_kill(c: Client, argv: list[bytes]) -> bytes:
    return _kill(c, False)


def function_list(c: Client, argv: list[bytes]) -> bytes:
    with_code = False
    pattern: bytes | None = None
    i = 2
    while i < len(argv):
        arg = argv[i]
        low = arg.lower()
        if not with_code and low == b"withcode":
            with_code = True
        elif pattern is None and low == b"libraryname":
            if i >= len(argv) - 1:
                raise CommandError(b"ERR library name argument was not given")
            i += 1
            pattern = argv[i]
        else:
            raise CommandError(b"ERR Unknown argument " + cstr(arg))
        i += 1
    r = c.r
    libs = list(c.server.scripting.libraries.libraries.values())
    if pattern is not None:
        libs = [lib for lib in libs if glob.match(pattern.lower(), lib.name.lower())]
    out = [array_header(len(libs))]
    for lib in libs:
        out.append(r.map_header(4 if with_code else 3))
        out.append(bulk(b"library_name") + bulk(lib.name) + bulk(b"engine") + bulk(b"LUA"))
        out.append(bulk(b"functions") + array_header(len(lib.functions)))
        for f in lib.functions.values():
            out.append(r.map_header(3) + bulk(b"name") + bulk(f.name) + bulk(b"description"))
            out.append(r.null if f.description is None else bulk(cstr(f.description)))
            names = [n for n in FLAG_ORDER if f.flags & FLAG_NAMES[n]]
            out.append(bulk(b"flags") + r.set_header(len(names)) + b"".join(status(n) for n in names))
        if with_code:
            out.append(bulk(b"library_code") + bulk(lib.code))
    return b"".join(out)


# RDB_OPCODE_FUNCTION2 (a library's code) and the pre-GA form Valkey refuses.
_OP_FUNCTION2 = 245
_OP_FUNCTION_PRE_GA = 246
_RESTORE_POLICIES = (b"append", b"replace", b"flush")


def function_dump(c: Client, argv: list[bytes]) -> bytes:
    """Valkey's functionDumpCommand: each library's code after the
    FUNCTION2 opcode, as its RDB files hold them, then DUMP's footer, so
    the payload restores on Valkey and the other way round."""
    with compressing(bool(c.server.config.values.get("rdbcompression", True))):
        out = b"".join(bytes((_OP_FUNCTION2,)) + encode_string(lib.code)
                       for lib in c.server.scripting.libraries.libraries.values())
    out += DUMP_VERSION.to_bytes(2, "little")
    return bulk(out + crc64(out).to_bytes(8, "little"))


def function_restore(c: Client, argv: list[bytes]) -> bytes:
    """Valkey's functionRestoreCommand: the policy, the footer, then every
    library of the payload read before any is kept."""
    if len(argv) > 4:
        raise CommandError(
            b"ERR unknown subcommand or wrong number of arguments for '%s'. Try %s HELP." % (
                argv[1][:128].replace(b"\r", b" ").replace(b"\n", b" "), argv[0].upper()))
    policy = b"append"
    if len(argv) == 4:
        policy = cstr(argv[3]).lower()
        if policy not in _RESTORE_POLICIES:
            raise CommandError(b"ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
    data = argv[2]
    if not footer_ok(c, data):
        raise CommandError(b"ERR DUMP payload version or checksum are wrong")
    r = Reader(data)
    codes = []
    # Up to the footer; a library's code may run into it, as in Valkey.
    while len(data) - r.p > 10:
        op = r.byte()
        if op == _OP_FUNCTION_PRE_GA:
            raise CommandError(b"ERR Pre-GA function format not supported")
        if op != _OP_FUNCTION2:
            raise CommandError(b"ERR given type is not a function")
        try:
            codes.append(r.string())
        except (RdbError, IndexError, ValueError):
            raise CommandError(b"ERR Failed loading library payload") from None
    try:
        c.server.scripting.libraries.restore(codes, policy)
    except ScriptError as e:
        raise CommandError(e.msg) from None
    return OK


def function_stats(c: Client, argv: list[bytes]) -> bytes:
    engine = c.server.scripting
    run = engine.run
    if run is not None and run.eval_mode:
        raise CommandError(busy_error(c.server, True))
    r = c.r
    out = [r.map_header(2), bulk(b"running_script")]
    if run is None:
        out.append(r.null)
    else:
        out.append(r.map_header(3) + bulk(b"name") + bulk(run.name) + bulk(b"command"))
        out.append(array_header(len(run.argv)) + b"".join(bulk(a) for a in run.argv))
        out.append(bulk(b"duration_ms") + integer(int((time.monotonic() - run.start) * 1000)))
    libs = engine.libraries
    out.append(bulk(b"engines") + r.map_header(1) + bulk(b"LUA") + r.map_header(2))
    out.append(bulk(b"libraries_count") + integer(len(libs.libraries)))
    out.append(bulk(b"functions_count") + integer(len(libs.functions)))
    return b"".join(out)


_FUNCTION_HELP = (
    b"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"LOAD [REPLACE] <FUNCTION CODE>",
    b"    Create a new library with the given library name and code.",
    b"DELETE <LIBRARY NAME>",
    b"    Delete the given library.",
    b"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    b"    Return general information on all the libraries:",
    b"    * Library name",
    b"    * The engine used to run the Library",
    b"    * Functions list",
    b"    * Library code (if WITHCODE is given)",
    b"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    b"STATS",
    b"    Return information about the current function running:",
    b"    * Function name",
    b"    * Command used to run the function",
    b"    * Duration in MS that the function is running",
    b"    If no function is running, return nil",
    b"    In addition, returns a list of available engines.",
    b"KILL",
    b"    Kill the current running function.",
    b"FLUSH [ASYNC|SYNC]",
    b"    Delete all the libraries.",
    b"    When called without the optional mode argument, the behavior is determined by the",
    b"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    b"    * ASYNC: Asynchronously flush the libraries.",
    b"    * SYNC: Synchronously flush the libraries.",
    b"DUMP",
    b"    Return a serialized payload representing the current libraries, can be restored using FUNCTION "
    b"RESTORE command",
    b"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    b"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    b"    control how to handle existing libraries (default APPEND):",
    b"    * FLUSH: delete all existing libraries.",
    b"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    b"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    b"      libraries with the new libraries (notice that even on this option there is a chance of failure",
    b"      in case of functions name collision with another library).",
    b"HELP",
    b"    Print this help.",
)


def function_help(c: Client, argv: list[bytes]) -> bytes:
    return _help(_FUNCTION_HELP)


def _fcall(c: Client, argv: list[bytes], ro: bool) -> bytes:
    if c.server.observer.monitors:  # before the commands it runs, as Valkey feeds it
        c.server.observer.feed(c, argv)
    engine = c.server.scripting
    f = engine.libraries.find(argv[1])
    if f is None:
        raise CommandError(b"ERR Function not found")
    nkeys = _numkeys(argv, b"ERR Bad number of keys provided")
    if ro and not f.flags & NO_WRITES:
        raise CommandError(_RO_WRITE)
    return engine.execute(c, f.callback, f.name, False, f.flags, ro, argv, nkeys)


def fcall(c: Client, argv: list[bytes]) -> bytes:
    return _fcall(c, argv, False)


def fcall_ro(c: Client, argv: list[bytes]) -> bytes:
    return _fcall(c, argv, True)

