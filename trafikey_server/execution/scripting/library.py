"""FUNCTION libraries: named Lua libraries that register callable functions.

A library's code starts with ``#!lua name=<library>``; loading it runs the
code once (within 500 ms, as Valkey allows), with ``server.register_function``
as its only way to leave a mark, and keeps the functions it registered.
FCALL then calls a function by name (any case, as Valkey's function table
compares names) with its KEYS and ARGV as arguments. The texts of every
refusal, and the order of the checks, are Valkey 9's (functions.c,
function_lua.c).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lupa import lua51

from .engine import FLAG_NAMES, ApiFunction, Raise, ScriptError, first_line, lua_text, split_args

if TYPE_CHECKING:
    from .engine import Engine

_NAME = re.compile(rb"[A-Za-z0-9_]+")
_BAD_LIBRARY = (b"ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one "
                b"character long")
_BAD_FUNCTION = (b"ERR Function names can only contain letters, numbers, or underscores(_) and must be at least one "
                 b"character long")
FLAG_ORDER = (b"no-writes", b"allow-oom", b"allow-stale", b"no-cluster", b"allow-cross-slot-keys")
LOAD_TIMEOUT = 0.5  # seconds a library's code may run at FUNCTION LOAD


class Function:
    __slots__ = ("name", "callback", "flags", "description", "library")

    def __init__(self, name: bytes, callback: Any, flags: int, description: bytes | None, library: Library) -> None:
        self.name = name
        self.callback = callback
        self.flags = flags
        self.description = description
        self.library = library


class Library:
    __slots__ = ("name", "engine", "code", "functions")

    def __init__(self, name: bytes, engine: bytes, code: bytes) -> None:
        self.name = name
        self.engine = engine
        self.code = code
        self.functions: dict[bytes, Function] = {}


def _metadata(code: bytes) -> tuple[bytes, bytes, bytes]:
    """(engine, name, body) from the library's first line, with Valkey's
    refusals (functionExtractLibMetaData)."""
    if not code.startswith(b"#!"):
        raise ScriptError(b"ERR Missing library metadata")
    end = first_line(code)
    if end < 0:
        raise ScriptError(b"ERR Invalid library metadata")
    parts = split_args(code[:end])
    if not parts:
        raise ScriptError(b"ERR Invalid library metadata")
    engine = parts[0][2:]
    name = None
    for part in parts[1:]:
        if part[:5].lower() == b"name=":
            if name is not None:
                raise ScriptError(b"ERR Invalid metadata value, name argument was given multiple times")
            name = part[5:]
            continue
        raise ScriptError(b"ERR Invalid metadata value given: " + part.split(b"\0", 1)[0])
    if name is None:
        raise ScriptError(b"ERR Library name was not given")
    return engine, name, code[end:]


def _text(v: Any) -> bytes | None:
    """luaGetStringObject: strings and numbers (as Lua prints them)."""
    if isinstance(v, bool):
        return None
    return lua_text(v)


def _is_function(v: Any) -> bool:
    return lua51.lua_type(v) == "function" or isinstance(v, ApiFunction)


def _flags(table: Any) -> int | None:
    """luaRegisterFunctionReadFlags: the flags named in t[1], t[2], ... in
    any case; None for anything else."""
    flags = 0
    j = 1
    while True:
        v = table[j]
        if v is None:
            return flags
        text = _text(v)
        if text is None:
            return None
        bit = FLAG_NAMES.get(text.split(b"\0", 1)[0].lower())  # strcasecmp
        if bit is None:
            return None
        flags |= bit
        j += 1


class Libraries:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.libraries: dict[bytes, Library] = {}
        self.functions: dict[bytes, Function] = {}  # by lower-case name: FCALL finds them in any case
        self._pending: list[tuple[bytes, Any, int, bytes | None]] | None = None  # while a library loads

    def load(self, code: bytes, replace: bool, timeout: float = LOAD_TIMEOUT) -> bytes:
        """FUNCTION LOAD (Valkey's functionsCreateWithLibraryCtx); a timeout
        of 0 lets the code run as long as it takes (FUNCTION RESTORE)."""
        engine_name, name, body = _metadata(code)
        if not _NAME.fullmatch(name):
            raise ScriptError(_BAD_LIBRARY)
        if engine_name.split(b"\0", 1)[0].lower() != b"lua":  # looked up as a C string, named whole
            raise ScriptError(b"ERR Engine '%s' not found" % engine_name)
        old = self.libraries.get(name)
        if old is not None and not replace:
            raise ScriptError(b"ERR Library '%s' already exists" % name)
        lib = Library(name, engine_name, code)
        self._pending = []
        try:
            # compiled as a C string (luaL_loadbuffer with strlen): up to a NUL
            result = self.engine._load_library(body.split(b"\0", 1)[0], timeout)
            registered = self._pending
        finally:
            self._pending = None
        if result is not True:
            _, kind, err = result
            text = err if isinstance(err, bytes) else str(err).encode()
            if kind == b"compile":
                raise ScriptError(b"ERR Error compiling function: " + text)
            raise ScriptError(b"ERR Error registering functions: " + text)
        for fname, callback, flags, desc in registered:
            if not _NAME.fullmatch(fname):
                raise ScriptError(_BAD_FUNCTION)
            if fname in lib.functions:
                raise ScriptError(b"ERR Function already exists in the library")
            lib.functions[fname] = Function(fname, callback, flags, desc, lib)
        if not lib.functions:
            raise ScriptError(b"ERR No functions registered")
        for fname in lib.functions:
            owner = self.functions.get(fname.lower())
            if owner is not None and owner.library is not old:
                raise ScriptError(b"ERR Function %s already exists" % fname)
        if old is not None:
            self._unlink(old)
        self.libraries[name] = lib
        for fname, f in lib.functions.items():
            self.functions.setdefault(fname.lower(), f)
        return name

    def register(self, *args: Any) -> None:
        """server.register_function, called by a library's code."""
        if self._pending is None:
            raise Raise(b"ERR server.register_function can only be called on FUNCTION LOAD command")
        refused = self._read_args(args)
        if isinstance(refused, bytes):
            raise Raise(b"ERR " + refused)
        self._pending.append(refused)

    def _read_args(self, args: tuple[Any, ...]) -> bytes | tuple[bytes, Any, int, bytes | None]:
        """register_function's arguments, read as Valkey reads them: the
        function's (name, callback, flags, description), or a refusal text."""
        if len(args) < 1 or len(args) > 2:
            return b"wrong number of arguments to server.register_function"
        if len(args) == 2:
            name = _text(args[0])
            if name is None:
                return b"first argument to server.register_function must be a string"
            if not _is_function(args[1]):
                return b"second argument to server.register_function must be a function"
            return name, args[1], 0, None
        t = args[0]
        if lua51.lua_type(t) != "table":
            return (b"calling server.register_function with a single argument is only applicable to Lua table "
                    b"(representing named arguments).")
        name = callback = desc = None
        flags = 0
        for k, v in t.items():
            key = _text(k)
            if key is None:
                return b"named argument key given to server.register_function is not a string"
            key = key.lower()
            if key == b"function_name":
                name = _text(v)
                if name is None:
                    return b"function_name argument given to server.register_function must be a string"
            elif key == b"description":
                desc = _text(v)
                if desc is None:
                    return b"description argument given to server.register_function must be a string"
            elif key == b"callback":
                if not _is_function(v):
                    return b"callback argument given to server.register_function must be a function"
                callback = v
            elif key == b"flags":
                if lua51.lua_type(v) != "table":
                    return b"flags argument to server.register_function must be a table representing function flags"
                f = _flags(v)
                if f is None:
                    return b"unknown flag given"
                flags = f
            else:
                return b"unknown argument given to server.register_function"
        if name is None:
            return b"server.register_function must get a function name argument"
        if callback is None:
            return b"server.register_function must get a callback argument"
        return name, callback, flags, desc

    def find(self, name: bytes) -> Function | None:
        return self.functions.get(name.lower())

    def _unlink(self, lib: Library) -> None:
        for fname in lib.functions:
            f = self.functions.get(fname.lower())
            if f is not None and f.library is lib:
                del self.functions[fname.lower()]
        self.libraries.pop(lib.name, None)

    def delete(self, name: bytes) -> bool:
        lib = self.libraries.get(name)
        if lib is None:
            return False
        self._unlink(lib)
        return True

    def flush(self) -> None:
        self.libraries.clear()
        self.functions.clear()

    def restore(self, codes: list[bytes], policy: bytes) -> None:
        """FUNCTION RESTORE's libraries (Valkey's functionRestoreCommand):
        loaded into a context of their own first (a library named twice
        there is refused as FUNCTION LOAD refuses it), then swapped in
        (``flush``) or joined to the current ones (libraryJoin): a library
        already here is refused unless ``replace``, and a function of a
        library that stays is never overwritten. A refusal changes nothing."""
        saved = self.libraries, self.functions
        # Loaded here, where server.register_function reports to.
        self.libraries, self.functions = {}, {}
        try:
            for code in codes:
                self.load(code, False, 0)  # no time limit, as Valkey restores
            libraries, functions = self.libraries, self.functions
        finally:
            self.libraries, self.functions = saved
        if policy == b"flush":
            self.libraries, self.functions = libraries, functions
            return
        replaced: list[Library] = []
        for name in libraries:
            old = self.libraries.get(name)
            if old is None:
                continue
            if policy != b"replace":
                raise ScriptError(b"ERR Library %s already exists" % name)
            replaced.append(old)
        survivors = {k for k, f in self.functions.items() if f.library not in replaced}
        for key, f in functions.items():
            if key in survivors:
                raise ScriptError(b"ERR Function %s already exists" % f.name)
        for old in replaced:
            self._unlink(old)
        for name, lib in libraries.items():
            self.libraries[name] = lib
            for fname, f in lib.functions.items():
                self.functions.setdefault(fname.lower(), f)
