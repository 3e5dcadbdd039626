"""Keep the caller's frame when a script tail-calls a library function.

In Valkey the library functions are C functions, and Lua 5.1 runs a tail
call to a C function as an ordinary call: ``return cjson.decode(s)`` keeps
the script's frame, so an error from decode reads "user_script:1: Expected
value ..." and an argument error names 'decode'.  Our libraries are Lua
functions, and a Lua tail call replaces the caller's frame: the same error
would come out with no position and with '?' for the name.

``untail_library_calls`` rewrites a compiled chunk (``string.dump`` output)
so that tail calls of the form ``return <global>.<name>(...)`` or
``return <global>:<name>(...)`` (any chain of constant-key fields rooted in a
global), and field calls named like one of the libraries' functions
(``return c.decode(...)`` after ``local c = cjson``), become ordinary calls
followed by the return the compiler already emits after every tail call.  A
Valkey script cannot create globals, so the first form only reaches the
built-in libraries; the second may catch a script's own table function of
the same name, which then merely keeps its caller's frame.  A script's own
local functions keep their tail calls, and with them Valkey's behaviour for
deep tail recursion.

Lua 5.1 binary chunk layout (lundump.c): a 12-byte header, then one function
prototype: source, line numbers, four bytes of sizes, the code, constants,
nested prototypes, debug information.
"""

from __future__ import annotations

import struct

OP_MOVE = 0
OP_GETGLOBAL = 5
OP_GETTABLE = 6
OP_SELF = 11
OP_CALL = 28
OP_TAILCALL = 29

# Opcodes that write register A (SELF, LOADNIL, CALL, VARARG and the loops
# write a range starting there); SETGLOBAL, SETUPVAL, SETTABLE, JMP, EQ, LT,
# LE, TEST, RETURN, SETLIST and CLOSE write no register.
_WRITES_A = frozenset(range(0, 38)) - {7, 8, 9, 22, 23, 24, 25, 26, 30, 34, 35}


class _Reader:
    """A cursor over a binary chunk, with the sizes its header declares."""

    def __init__(self, data: bytes) -> None:
        if data[:5] != b"\x1bLuaQ" or data[5] != 0:
            raise ValueError("not a Lua 5.1 binary chunk")
        endian = "<" if data[6] == 1 else ">"
        self.int_fmt = endian + {4: "i", 8: "q"}[data[7]]
        self.size_fmt = endian + {4: "I", 8: "Q"}[data[8]]
        self.int_size, self.size_size = data[7], data[8]
        if data[9] != 4:
            raise ValueError("unsupported instruction size")
        self.instr_fmt = endian + "I"
        self.number_size = data[10]
        self.data = data
        self.pos = 12

    def byte(self) -> int:
        self.pos += 1
        return self.data[self.pos - 1]

    def int(self) -> int:
        (v,) = struct.unpack_from(self.int_fmt, self.data, self.pos)
        self.pos += self.int_size
        return int(v)

    def string(self) -> bytes | None:
        (n,) = struct.unpack_from(self.size_fmt, self.data, self.pos)
        self.pos += self.size_size
        if n == 0:
            return None
        self.pos += n
        return self.data[self.pos - n : self.pos - 1]  # without the trailing NUL


def _fields(i: int) -> tuple[int, int, int, int]:
    """(opcode, A, B, C) of a 32-bit instruction."""
    return i & 0x3F, (i >> 6) & 0xFF, (i >> 23) & 0x1FF, (i >> 14) & 0x1FF


def _writer(code: list[int], pc: int, reg: int) -> int | None:
    """The index of the nearest instruction before pc that writes reg."""
    for j in range(pc - 1, -1, -1):
        op, a, b, _c = _fields(code[j])
        if op not in _WRITES_A:
            continue
        if a == reg or (op == OP_SELF and a + 1 == reg):
            return j
        # instructions that write a range of registers starting at A
        if op == 3 and a <= reg <= b:  # LOADNIL A..B
            return j
        if op in (OP_CALL, 37) and a <= reg:  # results (VARARG: values) from A up
            return j
    return None


# The functions of the four libraries: a field call with one of these names
# is taken for a library call whatever the table (local cjson = cjson, ...).
LIBRARY_FUNCTIONS = frozenset(
    b"encode decode encode_keep_buffer encode_max_depth decode_max_depth encode_invalid_numbers "
    b"decode_invalid_numbers encode_number_precision encode_sparse_array new "
    b"pack unpack unpack_one unpack_limit size "
    b"tobit tohex bnot band bor bxor lshift rshift arshift rol ror bswap "
    b"call pcall dump".split()  # server.call, server.pcall and string.dump are Lua functions too
)


def _library_call(code: list[int], consts: list[bytes | None], pc: int, reg: int) -> bool:
    """Whether register reg at pc holds <global>.<k1>.<k2>... (constant string
    keys), or a field named like a library function."""
    j = _writer(code, pc, reg)
    fields = 0
    while j is not None:
        op, a, b, c = _fields(code[j])
        if op == OP_MOVE and a == reg and fields == 0:  # a local holding the function
            reg = b
            j = _writer(code, j, reg)
            continue
        if op == OP_GETGLOBAL and a == reg:
            return fields > 0
        if op not in (OP_GETTABLE, OP_SELF) or a != reg or c < 256 or not isinstance(consts[c - 256], bytes):
            return False
        if fields == 0 and consts[c - 256] in LIBRARY_FUNCTIONS:
            return True
        if b != reg:
            return False
        fields += 1
        j = _writer(code, j, reg)
    return False


def _function(r: _Reader, out: bytearray) -> None:
    r.string()  # source
    r.int()  # linedefined
    r.int()  # lastlinedefined
    r.pos += 4  # nups, numparams, is_vararg, maxstacksize
    ncode = r.int()
    code_at = r.pos
    code = list(struct.unpack_from(r.instr_fmt[0] + "%dI" % ncode, r.data, code_at))
    r.pos += 4 * ncode
    consts: list[bytes | None] = []
    for _ in range(r.int()):
        t = r.byte()
        if t == 1:
            r.pos += 1
            consts.append(None)
        elif t == 3:
            r.pos += r.number_size
            consts.append(None)
        elif t == 4:
            consts.append(r.string() or b"")
        else:
            consts.append(None)
    for pc, ins in enumerate(code):
        op, a, _b, _c = _fields(ins)
        if op == OP_TAILCALL and _library_call(code, consts, pc, a):
            # TAILCALL A B 0 is always followed by RETURN A 0; CALL A B 0
            # leaves every result on the stack for that RETURN.
            struct.pack_into(r.instr_fmt, out, code_at + 4 * pc, (ins & ~0x3F) | OP_CALL)
    for _ in range(r.int()):
        _function(r, out)
    nlines = r.int()  # lineinfo
    r.pos += r.int_size * nlines
    for _ in range(r.int()):  # locvars
        r.string()
        r.pos += 2 * r.int_size
    for _ in range(r.int()):  # upvalue names
        r.string()


def untail_library_calls(chunk: bytes) -> bytes:
    """The chunk (``string.dump`` output) with tail calls of global library
    functions turned into ordinary calls; load it back with ``loadstring``."""
    r = _Reader(chunk)
    out = bytearray(chunk)
    _function(r, out)
    if r.pos != len(chunk):
        raise ValueError("trailing bytes after the main function")
    return bytes(out)
