"""Valkey's script libraries (cjson, cmsgpack, struct, bit) for lupa's Lua 5.1.

Valkey links four C libraries into its Lua interpreter; stock Lua 5.1 (and so
``lupa.lua51``) has none of them.  These are pure-Lua ports that reproduce
Valkey 9.1's behaviour byte for byte, including number formatting, error
texts and the C implementations' platform quirks (x86-64, glibc), so that
scripts see the same results and the same error messages on trafikey-server.

Pure Lua rather than Python callbacks: the libraries build and walk Lua
tables and Lua numbers, which is cheapest inside the VM, and Lua functions
keep ``type(cjson.encode) == "function"`` and let the error plumbing
(``_support.lua``) place errors at the caller's line the way luaL_error does.

``install(lua)`` loads them into a runtime.  The .lua sources sit next to
this file and ship as package data.

One thing a Lua function cannot do like a C one: survive a tail call.
``return cjson.decode(s)`` would lose the script's frame, and with it the
"user_script:1:" prefix and the function name in error messages.  Compile
scripts through ``untail_library_calls`` (``bytecode.py``) to keep them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .bytecode import untail_library_calls

if TYPE_CHECKING:
    import lupa.lua51

__all__ = ["LIBRARY_SOURCES", "install", "untail_library_calls"]

_HERE = Path(__file__).resolve().parent

# Chunk names of the library sources, as debug.getinfo reports them in
# ``source``.  An error handler that reports the script line an error came
# from (Valkey's "on @user_script:1.") must skip frames with these sources,
# the way Valkey's handler skips the C frame of a library function.
LIBRARY_SOURCES: frozenset[str] = frozenset(
    "=lualib/" + name for name in ("_support", "_bytes", "bit", "struct", "cmsgpack", "cjson")
)

_LIBRARIES = ("bit", "struct", "cmsgpack", "cjson")


def _source(name: str) -> bytes:
    """A library's Lua source, read from the package (it ships as package data)."""
    return (_HERE / f"{name}.lua").read_bytes()


def install(lua: lupa.lua51.LuaRuntime) -> None:
    """Define the globals ``cjson``, ``cmsgpack``, ``struct`` and ``bit``.

    Call this before the sandbox removes ``debug``, ``newproxy`` or anything
    else from the globals: the libraries capture what they use at load time.
    """
    support = lua.execute(_source("_support"), name="=lualib/_support")
    numbers = lua.execute(_source("_bytes"), name="=lualib/_bytes")
    g = lua.globals()
    for name in _LIBRARIES:
        g[name.encode()] = lua.execute(_source(name), support, numbers, name="=lualib/" + name)
