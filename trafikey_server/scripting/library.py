"""FUNCTION libraries: named Lua libraries that register callable functions.

A library's code starts with ``#!lua name=<library>``; loading it runs the
code once, with ``server.register_function`` as its only way to leave a
mark, and keeps the functions it registered. FCALL then calls a function
by name with its KEYS and ARGV as arguments. The texts of every refusal
are Valkey's.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from lupa import lua51

from .engine import FLAG_NAMES, Raise, ScriptError

if TYPE_CHECKING:
    from .engine import Engine

_NAME = re.compile(rb"[A-Za-z0-9_]+")
_BAD_NAME = (b"Library names can only contain letters, numbers, or underscores(_) and must be at least one "
             b"character long")
FLAG_ORDER = (b"no-writes", b"allow-oom", b"allow-stale", b"no-cluster", b"allow-cross-slot-keys")


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
    """(engine, name, body) from the library's first line, with Valkey's refusals."""
    if not code.startswith(b"#!"):
        raise ScriptError(b"ERR Missing library metadata")
    end = code.find(b"\n")
    if end < 0:
        raise ScriptError(b"ERR Invalid library metadata")
    parts = code[:end].split()
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
        raise ScriptError(b"ERR Invalid metadata value given: " + part)
    if name is None:
        raise ScriptError(b"ERR Library name was not given")
    return engine, name, code[end:]


def _flags(table: Any) -> int | None:
    flags = 0
    j = 1
    while True:
        v = table[j]
        if v is None:
            return flags
        if isinstance(v, (int, float)):
            v = str(v).encode()
        if not isinstance(v, bytes):
            return None
        bit = FLAG_NAMES.get(v.lower())
        if bit is None:
            return None
        flags |= bit
        j += 1


class Libraries:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.libraries: dict[bytes, Library] = {}
        self.functions: dict[bytes, Function] = {}

    def load(self, code: bytes, replace: bool) -> bytes:
        engine_name, name, body = _metadata(code)
        if not _NAME.fullmatch(name):
            raise ScriptError(b"ERR " + _BAD_NAME)
        if engine_name != b"lua":
            raise ScriptError(b"ERR Engine '%s' not found" % engine_name)
        old = self.libraries.get(name)
        if old is not None and not replace:
            raise ScriptError(b"ERR Library '%s' already exists" % name)
        lib = Library(name, engine_name, code)

        def register(*args: Any) -> None:
            refused = self._register(lib, args)
            if refused is not None:
                raise Raise(b"ERR " + refused)

        result = self.engine._load_library(body, register)
        if result is not True:
            _, kind, err = result
            text = err if isinstance(err, bytes) else str(err).encode()
            if kind == b"compile":
                raise ScriptError(b"ERR Error compiling function: " + text)
            raise ScriptError(b"ERR Error registering functions: " + text)
        if not lib.functions:
            raise ScriptError(b"ERR No functions registered")
        for fname in lib.functions:
            owner = self.functions.get(fname)
            if owner is not None and owner.library is not old:
                raise ScriptError(b"ERR Function %s already exists" % fname)
        if old is not None:
            self._unlink(old)
        self.libraries[name] = lib
        for fname, f in lib.functions.items():
            self.functions[fname] = f
        return name

    def _register(self, lib: Library, args: tuple[Any, ...]) -> bytes | None:
        """server.register_function's checks; the refusal text, or None."""
        if len(args) < 1 or len(args) > 2:
            return b"wrong number of arguments to server.register_function"
        desc = None
        flags = 0
        if len(args) == 1:
            t = args[0]
            if lua51.lua_type(t) != "table":
                return (b"calling server.register_function with a single argument is only applicable to Lua table "
                        b"(representing named arguments).")
            name = callback = None
            for k, v in t.items():
                if not isinstance(k, (bytes, int, float)):
                    return b"named argument key given to server.register_function is not a string"
                key = k if isinstance(k, bytes) else str(k).encode()
                key = key.lower()
                if key == b"function_name":
                    if not isinstance(v, (bytes, int, float)):
                        return b"function_name argument given to server.register_function must be a string"
                    name = v if isinstance(v, bytes) else str(v).encode()
                elif key == b"description":
                    if not isinstance(v, (bytes, int, float)):
                        return b"description argument given to server.register_function must be a string"
                    desc = v if isinstance(v, bytes) else str(v).encode()
                elif key == b"callback":
                    if lua51.lua_type(v) != "function":
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
        else:
            name, callback = args
            if not isinstance(name, (bytes, int, float)):
                return b"first argument to server.register_function must be a string"
            if isinstance(name, (int, float)):
                name = str(name).encode()
            if lua51.lua_type(callback) != "function":
                return b"second argument to server.register_function must be a function"
        if not _NAME.fullmatch(name):
            return _BAD_NAME
        if name in lib.functions:
            return b"Function already exists in the library"
        lib.functions[name] = Function(name, self.engine._bind(callback), flags, desc, lib)
        return None

    def _unlink(self, lib: Library) -> None:
        for fname in lib.functions:
            if self.functions.get(fname) is not None and self.functions[fname].library is lib:
                del self.functions[fname]
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

