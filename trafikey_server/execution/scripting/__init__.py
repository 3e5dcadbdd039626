"""Lua scripting as Valkey runs it: EVAL/EVALSHA scripts and FUNCTION
libraries on one embedded Lua 5.1 state (``engine``), the environment a
script sees (``prelude.lua``, and the libraries in ``lualib``), FUNCTION
libraries (``library``) and the busy-script loop that keeps a runaway
script killable (``busy``)."""
