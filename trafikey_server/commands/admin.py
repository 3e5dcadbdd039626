"""Server rows a standalone server answers without the machinery behind them:
cluster routing words (READONLY, READWRITE, ASKING), ROLE of a primary
without replicas, REPLICAOF NO ONE (already a primary), and MODULE (no
loadable modules here, only the built-in Lua engine Valkey itself lists)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..execution.scripting.debugger import FORKED, SYNC
from ..protocol.args import Args
from ..protocol.resp import OK, array, bulk
from ..util.errors import CommandError
from ..util.parsing import to_int
from ..util.rand import rng
from ..util.versions import VALKEY_VERSION
from .connection import lua_module
from .control import local_client

if TYPE_CHECKING:
    from ..services.client import Client


def readonly(c: Client, argv: list[bytes]) -> bytes:
    # Valkey accepts the switch outside cluster mode: only CLIENT LIST shows it.
    c.readonly = True
    return OK


def readwrite(c: Client, argv: list[bytes]) -> bytes:
    c.readonly = False
    return OK


def asking(c: Client, argv: list[bytes]) -> bytes:
    raise CommandError(b"ERR This instance has cluster support disabled")


def role(c: Client, argv: list[bytes]) -> bytes:
    # A primary that never had a replica: no replication offset, no replicas.
    return b"*3\r\n" + bulk(b"master") + b":0\r\n*0\r\n"


_NO_REPLICATION = (b"ERR this server does not replicate: REPLICAOF and SLAVEOF serve only NO ONE, "
                   b"which leaves it the primary it always is")


def replicaof(c: Client, argv: list[bytes]) -> bytes:
    """REPLICAOF NO ONE is what a client sends to make sure it talks to a
    primary (failover scripts, client test suites); this server is always
    one, so it is Valkey's answer to a primary, no-op included. Another
    address is checked as Valkey checks it, then refused: a replica's
    stream is not served (docs/compatibility.md)."""
    a = Args(argv)
    if a.word() == b"no" and a.peek_word() == b"one":
        return OK
    if not 0 <= a.int(b"ERR Invalid master port") <= 65535:
        raise CommandError(b"ERR Invalid master port")
    raise CommandError(_NO_REPLICATION)


# -- LOLWUT -----------------------------------------------------------------------------

_NOT_INT = b"ERR value is not an integer or out of range"
_LOLWUT_SYNTAX = b"ERR Syntax error. Use: LOLWUT [columns rows] [real imaginary]"
_ART_CAPTIONS = {
    b"5": b"Georg Nees - schotter, plotter on paper, 1968.",
    b"6": b"Dedicated to the 8 bit game developers of past and present.\n"
          b"Original 8 bit image from Plaguemon by hikikomori.",
}


def _float(a: bytes) -> float | None:
    try:
        return float(a)
    except ValueError:
        return None


def _ints(args: list[bytes]) -> None:
    for a in args:
        if to_int(a) is None:
            raise CommandError(_NOT_INT)


def lolwut(c: Client, argv: list[bytes]) -> bytes:
    """Valkey draws random computer art for versions 5, 6 and 9 (the default);
    the art cannot be reproduced, so those answers keep only their caption and
    version line. Every other version gets Valkey's plain version line."""
    version = VALKEY_VERSION.encode()
    args = argv[1:]
    if len(argv) >= 3 and argv[1].lower() == b"version":
        ver = to_int(argv[2])
        if ver is None:
            raise CommandError(_NOT_INT)
        version = b"%d.0.0" % (ver & 0xFFFFFFFF)  # Valkey prints it as an unsigned int
        args = argv[3:]
    major = version.split(b".")[0]
    tail = b" Valkey ver. " + VALKEY_VERSION.encode() + b"\n"
    if major == b"5":
        _ints(args[:3])
        return c.r.verbatim(_ART_CAPTIONS[b"5"] + tail)
    if major == b"6":
        _ints(args[:2])
        return c.r.verbatim(_ART_CAPTIONS[b"6"] + tail)
    if major == b"9":
        if len(args) > 4 or any(to_int(a) is None for a in args[:2]) or any(_float(a) is None for a in args[2:]):
            raise CommandError(_LOLWUT_SYNTAX)
        real = float(args[2]) if len(args) > 2 else rng.uniform(-1, 1)
        imag = float(args[3]) if len(args) > 3 else rng.uniform(-1, 1)
        return c.r.verbatim(b"Ascii representation of Julia set with constant %.2f + %.2fi\n"
                            b"Don't forget to have fun!%s" % (real, imag, tail))
    return c.r.verbatim(b"Valkey ver." + VALKEY_VERSION.encode() + b"\n")


# -- MODULE -----------------------------------------------------------------------------

_MODULE_OFF = (
    b'ERR MODULE command not allowed. If the enable-module-command option is set to "local", you can run it '
    b"from a local connection, otherwise you need to set this option in the configuration file, and then "
    b"restart the server."
)

_MODULE_HELP = [
    b"MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"LIST",
    b"    Return a list of loaded modules.",
    b"LOAD <path> [<arg> ...]",
    b"    Load a module library from <path>, passing to it any optional arguments.",
    b"LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    b"    Load a module library from <path>, while passing it module configurations and optional arguments.",
    b"UNLOAD <name>",
    b"    Unload a module.",
    b"HELP",
    b"    Print this help.",
]


def _protected(c: Client) -> None:
    """LOAD, LOADEX and UNLOAD are protected: refused unless enable-module-command allows this connection."""
    allowed = c.server.config.values.get("enable-module-command", "no")
    if allowed == "no" or (allowed == "local" and not local_client(c)):
        raise CommandError(_MODULE_OFF)


def module_help(c: Client, argv: list[bytes]) -> bytes:
    return array([b"+%s\r\n" % line for line in _MODULE_HELP])


def module_list(c: Client, argv: list[bytes]) -> bytes:
    return b"*1\r\n" + lua_module(c)


def module_load(c: Client, argv: list[bytes]) -> bytes:
    # No native module can be loaded into this server: every path fails as a bad library does in Valkey.
    _protected(c)
    raise CommandError(b"ERR Error loading the extension. Please check the server logs.")


def module_loadex(c: Client, argv: list[bytes]) -> bytes:
    _protected(c)
    raise CommandError(b"ERR Error loading the extension. Please check the server logs.")


def module_unload(c: Client, argv: list[bytes]) -> bytes:
    _protected(c)
    raise CommandError(b"ERR Error unloading module: no such module with that name")


# -- MEMORY MALLOC-STATS, MEMORY PURGE ----------------------------------------------------

def memory_malloc_stats(c: Client, argv: list[bytes]) -> bytes:
    # Python's allocator has no report in jemalloc's form: answer as Valkey built without jemalloc does.
    return bulk(b"Stats not supported for the current allocator")


def memory_purge(c: Client, argv: list[bytes]) -> bytes:
    # Nothing to hand back to the system on demand; Valkey without jemalloc answers the same.
    return OK


# -- CLIENT CAPA, CLIENT IMPORT-SOURCE ------------------------------------------------------

def client_capa(c: Client, argv: list[bytes]) -> bytes:
    # Unknown capabilities are ignored, as Valkey ignores them.
    for a in argv[2:]:
        if a.lower() == b"redirect":
            c.capa_redirect = True
    return OK


def client_import_source(c: Client, argv: list[bytes]) -> bytes:
    """Marks the connection as an import source (flag I). Turning it off is
    always allowed; anything else needs import-mode, as in Valkey."""
    word = argv[2].lower()
    if not c.server.config.values["import-mode"] and word != b"off":
        raise CommandError(b"ERR Server is not in import mode")
    if word == b"on":
        c.import_source = True
    elif word == b"off":
        c.import_source = False
    else:
        raise CommandError(b"ERR syntax error")
    return OK


# -- SCRIPT DEBUG ---------------------------------------------------------------------------

def script_debug(c: Client, argv: list[bytes]) -> bytes:
    """Debugging for the client's next EVAL (scripting/debugger.py): YES in
    a forked child, SYNC in the server itself, NO off. Checks in Valkey's
    order. The debugger talks on the client's socket directly, which a TLS
    connection does not allow here."""
    if len(argv) > 4:
        raise CommandError(b"ERR unknown subcommand or wrong number of arguments for 'DEBUG'. Try SCRIPT HELP.")
    if c.in_exec:  # inside EXEC the transaction's replies are pending, as in a pipeline
        raise CommandError(b"ERR SCRIPT DEBUG must be called outside a pipeline")
    if len(argv) == 4 and argv[3].lower() != b"lua":
        raise CommandError(b"ERR No scripting engine found with name '%s' to enable debug" % argv[3])
    mode = argv[2].lower()
    if mode == b"no":
        c.lua_debug = 0
        return OK
    if mode in (b"yes", b"sync"):
        if c.fd < 0 or (c.transport is not None and c.transport.get_extra_info("sslcontext") is not None):
            raise CommandError(b"ERR SCRIPT DEBUG is not supported on TLS connections")
        c.lua_debug = SYNC if mode == b"sync" else FORKED
        return OK
    raise CommandError(b"ERR Use SCRIPT DEBUG YES/SYNC/NO")


# -- LATENCY GRAPH ----------------------------------------------------------------------------

_GRAPH_COLS = 80
_GRAPH_ROWS = 4
_FILL = "_o#"


def _ago(seconds: int) -> str:
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm" % (seconds // 60)
    if seconds < 86400:
        return "%dh" % (seconds // 3600)
    return "%dd" % (seconds // 86400)


def _sparkline_range(samples: list[tuple[int, str]], low: int, high: int) -> list[str]:
    """Valkey's filled sparkline: rows of _o#| under the curve, a blank line,
    then each sample's label written downwards."""
    relmax = (high - low) or 1
    steps = len(_FILL) * _GRAPH_ROWS
    lines: list[str] = []
    row = 0
    while True:
        more = False
        chars = [" "] * len(samples)
        for j, (value, label) in enumerate(samples):
            if row < _GRAPH_ROWS:
                step = min(max(int(int((value - low) * steps) / relmax), 0), steps - 1)
                idx = step - (_GRAPH_ROWS - row - 1) * len(_FILL)
                more = True
                if 0 <= idx < len(_FILL):
                    chars[j] = _FILL[idx]
                elif idx >= len(_FILL):
                    chars[j] = "|"
            elif row == _GRAPH_ROWS:  # the margin between the curve and the labels
                more = True
                break
            elif len(label) > row - _GRAPH_ROWS - 1:
                more = True
                chars[j] = label[row - _GRAPH_ROWS - 1]
        if not more:
            return lines
        row += 1
        lines.append("".join(chars) + "\n")


def latency_graph(c: Client, argv: list[bytes]) -> bytes:
    series = c.server.observer.latency.get(argv[2].decode(errors="replace"))
    if series is None or not series.samples:
        raise CommandError(b"ERR No samples available for event '%s'" % argv[2])
    now = int(time.time())
    samples = [(ms, _ago(now - when)) for when, ms in series.samples]
    low = min(ms for ms, _ in samples)
    high = max(ms for ms, _ in samples)
    out = ["%s - high %d ms, low %d ms (all time high %d ms)\n" % (argv[2].decode(errors="replace"), high, low,
                                                                    series.max), "-" * _GRAPH_COLS + "\n"]
    for j in range(0, len(samples), _GRAPH_COLS):
        if j:
            out.append("\n")
        out.extend(_sparkline_range(samples[j:j + _GRAPH_COLS], low, high))
    return c.r.verbatim("".join(out).encode())
