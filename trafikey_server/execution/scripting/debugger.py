"""The Lua debugger (SCRIPT DEBUG YES|SYNC, as ``valkey-cli --ldb`` drives it).

A client that asked for debugging has its next EVAL run as a session:
the script stops on its first line and the client talks to the debugger
over its own socket, in blocking reads and writes, until the script ends
(Valkey's ldb). In SYNC mode the server itself stops meanwhile and the
script's writes stay; in YES mode a forked child runs the session on a
copy of the dataset, and the server goes on. Either way the client is
closed when the session ends.

The debugger speaks as Valkey's: every answer is an array of status lines
(``* Stopped at 1, stop reason = step over``, ``-> 1   return 1``,
``<reply> "OK"``, ...), and its commands arrive as RESP arrays parsed by
the small forgiving parser Valkey uses for them. What needs the Lua stack
(locals, a backtrace, eval) is in prelude.lua; the rest is here.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ...services.observe import quote
from ...util.errors import CommandError
from ...util.parsing import to_int
from ..persist import child

if TYPE_CHECKING:
    from ...services.client import Client
    from ...util.log import Log
    from .engine import Engine

SYNC: Final = 1  # SCRIPT DEBUG SYNC: the server waits on the session
FORKED: Final = 2  # SCRIPT DEBUG YES: a child runs the session on a copy

MAXLEN_DEFAULT: Final = 256  # replies and values logged are cut at this many bytes
BREAKPOINTS_MAX: Final = 64
CBUF_MAX: Final = 1 << 20  # a debugger request that grows past this is refused

HELP: Final = (
    b"LUA debugger help:",
    b"[h]elp               Show this help.",
    b"[max]len [len]       Trim logged replies to len. Specifying zero as",
    b"                     <len> means unlimited. If no <len> is specified,",
    b"                     the current value is shown. Usage: maxlen [len]",
    b"[s]tep               Run current line and stop again.",
    b"[n]ext               Alias for step.",
    b"[c]ontinue           Run till next breakpoint.",
    b"[l]ist [line] [ctx]  List source code around a specific line. If no",
    b"                     line is specified the list is printed around the",
    b"                     current line. [ctx] specifies how many lines to",
    b"                     show before/after [line].",
    b"[w]hole              List all source code. Alias for 'list 1 1000000'.",
    b"[p]rint [var]        Show the value of the specified variable [var].",
    b"                     Can also show global vars KEYS and ARGV. If no",
    b"                     [var] is specidied, shows the value of all local",
    b"                     variables.",
    b"[b]reak [line|-line] Add/Remove a breakpoint to the specified line.",
    b"                     If no [line] is specified, it shows all",
    b"                     breakpoints. When line = 0, it removes all",
    b"                     breakpoints.",
    b"[t]race              Show a backtrace.",
    b"[e]val <code>        Execute some Lua code (in a different callframe).",
    b"[v]alkey <cmd>       Execute a command.",
    b"[a]bort              Stop the execution of the script. In sync mode",
    b"                     dataset changes will be retained.",
)

# The debugger's commands as Valkey 9.1.2 matches them: the whole name, or
# exactly its first `prefix` letters, any case; then the argument count
# (at least `least`, at most `most`; -1 for no limit).
COMMANDS: Final = (
    (b"help", 1, 0, 0), (b"maxlen", 3, 0, 1), (b"step", 1, 0, 0), (b"next", 1, 0, 0),
    (b"continue", 1, 0, 0), (b"list", 1, 0, 2), (b"whole", 1, 0, 0), (b"print", 1, 0, 1),
    (b"break", 1, 0, 1), (b"trace", 1, 0, 0), (b"eval", 1, 1, -1), (b"valkey", 1, 1, -1),
    (b"redis", 1, 1, -1), (b"server", 0, 1, -1), (b"abort", 1, 0, 0),
)

UNKNOWN: Final = b"<error> Unknown debugger command or wrong number of arguments."


def find_command(argv: list[bytes]) -> bytes | None:
    """The debugger command a request names, or None (unknown, or a
    count it does not take). Names compare as C strings: a NUL ends them."""
    given = argv[0]
    as_c = given.split(b"\0", 1)[0].lower()
    nargs = len(argv) - 1
    for name, prefix, least, most in COMMANDS:
        if as_c == name or (prefix and len(given) == prefix and given.lower() == name[:prefix]):
            if least <= nargs and (most < 0 or nargs <= most):
                return name
    return None


def atoi(s: bytes) -> int:
    """C's atoi: optional blanks and sign, then digits; 0 when none."""
    s = s.lstrip(b" \t\n\v\f\r")
    sign = 1
    if s[:1] in (b"-", b"+"):
        sign = -1 if s[:1] == b"-" else 1
        s = s[1:]
    n = 0
    for ch in s:
        if not 48 <= ch <= 57:
            break
        n = n * 10 + ch - 48
    return max(-(2**31), min(2**31 - 1, sign * n))


def _c_end(buf: bytes, start: int) -> int:
    """Where a C string read from start stops (its first NUL)."""
    z = buf.find(b"\0", start)
    return len(buf) if z < 0 else z


def parse_request(buf: bytes) -> tuple[list[bytes] | None, bool]:
    """A debugger request from the bytes read so far, as Valkey's
    ldbReplParseCommand reads it (on C strings: a NUL ends a header line):
    (argv, False) when whole, (None, False) to read more, (None, True) on
    a protocol error. Arguments are 1 to 1024 bytes, at most 1024 of them."""
    if not buf:
        return None, False
    star = buf.find(b"*", 0, _c_end(buf, 0))
    if star < 0:
        return None, True
    end = buf.find(b"\r\n", star, _c_end(buf, star))
    if end < 0:
        return None, False
    argc = atoi(buf[star + 1 : end])
    if argc <= 0 or argc > 1024:
        return None, True
    p = end + 2
    argv: list[bytes] = []
    while len(argv) < argc:
        if p >= len(buf) or buf[p] == 0:
            return None, False
        if buf[p] != 36:  # $
            return None, True
        end = buf.find(b"\r\n", p, _c_end(buf, p))
        if end < 0:
            return None, False
        n = atoi(buf[p + 1 : end])
        p = end + 2
        if n <= 0 or n > 1024:
            return None, True
        if p + n + 2 > len(buf):
            return None, False
        argv.append(buf[p : p + n])
        p += n
        if buf[p : p + 2] != b"\r\n":
            return None, True
        p += 2
    return argv, False


def _line(reply: bytes, pos: int) -> tuple[bytes, int]:
    end = reply.index(b"\r\n", pos)
    return reply[pos:end], end + 2


def human(reply: bytes, pos: int = 0) -> tuple[bytes, int]:
    """A RESP reply as the debugger logs it (Valkey's ldbRespToHuman)."""
    t = reply[pos : pos + 1]
    head, p = _line(reply, pos + 1)
    if t == b":":
        return head, p
    if t == b"$":
        n = int(head)
        if n == -1:
            return b"NULL", p
        return quote(reply[p : p + n]), p + n + 2
    if t in (b"+", b"-"):
        return quote(t + head), p
    if t in (b"*", b"~", b"%"):
        n = int(head)
        if n == -1:
            return b"NULL", p
        parts = []
        for _ in range(n):
            item, p = human(reply, p)
            if t == b"%":
                value, p = human(reply, p)
                item += b" => " + value
            parts.append(item)
        body = b",".join(parts)
        return (b"[" + body + b"]" if t == b"*" else b"~(" + body + b")" if t == b"~" else b"{" + body + b"}"), p
    if t == b"_":
        return b"(null)", p
    if t == b"#":
        return (b"#true" if head[:1] == b"t" else b"#false"), p
    if t == b",":
        return b"(double) " + head, p
    return b"", len(reply)


class Session:
    """One debugging session: the debugging client's socket, the source
    it steps through, its breakpoints and the log lines not yet sent."""

    def __init__(self, fd: int, body: bytes, forked: bool, lua: Any, threshold: Callable[[], int],
                 explain: Callable[[list[bytes], bytes], bytes | None]) -> None:
        self.fd = fd
        self.forked = forked
        self.lua = lua  # prelude.lua's ldb helpers
        self.threshold = threshold  # busy-reply-threshold now, ms
        self.explain = explain  # a refused command's reply as a client would get it (Engine.refusal_reply)
        src = body.rstrip(b"\r\n")
        self.lines = src.split(b"\n") if src else []
        self.logs: list[bytes] = []
        self.cbuf = b""
        self.step = True
        self.luabp = False
        self.breakpoints: list[int] = []
        self.maxlen = MAXLEN_DEFAULT
        self.hint_sent = False
        self.currentline = -1
        self.start = time.monotonic()
        self.in_call = False  # a command of the script running now (logged once)

    # -- the socket ---------------------------------------------------------------------------

    def open(self) -> None:
        """Blocking I/O on the client's socket, a send given up after 5 s."""
        os.set_blocking(self.fd, True)
        self._send_timeout(5)

    def close(self) -> None:
        os.set_blocking(self.fd, False)
        self._send_timeout(0)

    def _send_timeout(self, seconds: int) -> None:
        try:
            s = socket.socket(fileno=os.dup(self.fd))
        except OSError:
            return
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, seconds.to_bytes(8, "little") + bytes(8))
        except OSError:
            pass
        finally:
            s.close()

    def write(self, data: bytes) -> None:
        """Write it all, or give up quietly: the next read notices a peer
        that has gone."""
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.fd, view)
            except OSError:
                return
            view = view[n:]

    # -- the log ------------------------------------------------------------------------------

    def log(self, entry: bytes) -> None:
        self.logs.append(entry)

    def log_cut(self, entry: bytes) -> None:
        """A reply or a value, cut at maxlen (with a hint the first time)."""
        if self.maxlen and len(entry) > self.maxlen:
            self.logs.append(entry[: self.maxlen] + b" ...")
            if not self.hint_sent:
                self.hint_sent = True
                self.logs.append(b"<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.")
            return
        self.logs.append(entry)

    def send(self) -> None:
        """The lines logged so far, as an array of status replies."""
        out = [b"*%d\r\n" % len(self.logs)]
        for entry in self.logs:
            out.append(b"+" + entry.replace(b"\r", b" ").replace(b"\n", b" ") + b"\r\n")
        self.logs = []
        self.write(b"".join(out))

    def source_line(self, n: int) -> bytes:
        if 1 <= n <= len(self.lines):
            return self.lines[n - 1]
        return b"<out of range source code line>"

    def log_source_line(self, n: int) -> None:
        bp = n in self.breakpoints
        current = n == self.currentline
        prefix = b"->#" if current and bp else b"-> " if current else b"  #" if bp else b"   "
        self.log(b"%s%-3d %s" % (prefix, n, self.source_line(n)))

    def list_lines(self, around: int, context: int) -> None:
        for n in range(1, len(self.lines) + 1):
            if around == 0 or abs(around - n) <= context:
                self.log_source_line(n)

    # -- what the script does -----------------------------------------------------------------

    def debug(self, text: bytes) -> None:
        """server.debug(...): its values, already shown by prelude.lua."""
        self.log(b"<debug> line %d: %s" % (self.currentline, text))

    def call(self, run_argv: Callable[[list[bytes] | bytes], bytes | tuple[int, bytes]],
             argv: list[bytes] | bytes) -> bytes | tuple[int, bytes]:
        """A command of the script: while stepping, logged with its reply
        (or the refusal) as Valkey logs them."""
        self.in_call = True
        try:
            if not self.step or isinstance(argv, bytes):
                return run_argv(argv)
            shown = [b"<command>"]
            for j, a in enumerate(argv):
                if j == 10:
                    shown.append(b" ... (%d more)" % (len(argv) - j - 1))
                    break
                shown.append(b" " + a)
            self.log(b"".join(shown))
            reply = run_argv(argv)
        finally:
            self.in_call = False
        if isinstance(reply, tuple):
            # Refused before it ran: what a client would have been answered,
            # then the script's error (Valkey's own words lack the code).
            msg = reply[1]
            answer = self.explain(argv, msg)
            if answer is not None:
                self.log_cut(b"<reply> " + quote(b"-" + answer))
            self.log(b"<error> " + (msg[4:] if msg.startswith(b"ERR ") else b"-" + msg + b"\r\n"))
            return reply
        try:
            self.log_cut(b"<reply> " + human(reply)[0])
        except (ValueError, IndexError):
            pass
        if reply[:1] == b"-":
            self.log(b"<error> " + reply)
        return reply

    def line(self, n: int, count_event: bool) -> bytes | None:
        """The line hook: stop here when stepping, at a breakpoint, after
        server.breakpoint(), or when the script has run past the busy
        threshold without stopping. An error for the script to raise, or None."""
        self.currentline = n
        bp = n in self.breakpoints or self.luabp
        timeout = False
        if count_event and not self.step and not bp:
            limit = self.threshold() or 5000
            if (time.monotonic() - self.start) * 1000 < limit:
                return None
            timeout = self.step = True
        if not (self.step or bp):
            return None
        reason = b"step over"
        if bp:
            reason = b"server.breakpoint() called" if self.luabp else b"break point"
        elif timeout:
            reason = b"timeout reached, infinite loop?"
        self.step = self.luabp = False
        self.log(b"* Stopped at %d, stop reason = %s" % (n, reason))
        self.log_source_line(n)
        self.send()
        go_on, err = self.repl()
        if err is not None:
            return err
        if not go_on and timeout:
            return b"ERR timeout during Lua debugging with client closing connection"
        self.start = time.monotonic()
        return None

    # -- the debugger's commands --------------------------------------------------------------

    def read_request(self) -> tuple[list[bytes] | None, bytes | None]:
        """The next request: (argv, None); (None, None) when the client is
        gone; (None, error) for the script to raise."""
        while True:
            argv, bad = parse_request(self.cbuf)
            if argv is not None:
                self.cbuf = b""  # what came after it in the same read goes too, as in Valkey
                return argv, None
            if bad:
                return None, b"ERR protocol error"
            try:
                data = os.read(self.fd, 1024)
            except OSError:
                data = b""
            if not data:
                # The client is gone: the script runs on without stopping.
                self.step = False
                self.breakpoints.clear()
                return None, None
            self.cbuf += data
            if len(self.cbuf) > CBUF_MAX:
                self.cbuf = b""
                return None, b"ERR max client buffer reached"

    def repl(self) -> tuple[bool, bytes | None]:
        """Serve requests until one lets the script go on: (whether the
        client is still there, an error for the script to raise)."""
        while True:
            argv, err = self.read_request()
            if argv is None:
                return False, err
            name = find_command(argv)
            if name == b"step" or name == b"next":
                self.step = True
                return True, None
            if name == b"continue":
                return True, None
            if name == b"abort":
                return True, b"ERR script aborted for user request"
            if name is None:
                self.log(UNKNOWN)
            elif name == b"help":
                self.logs.extend(HELP)
            elif name == b"trace":
                self.trace()
            elif name == b"maxlen":
                self.set_maxlen(argv)
            elif name == b"break":
                self.set_break(argv)
            elif name == b"eval":
                ok, value, compiled = self.lua.eval(b" ".join(argv[1:]))
                if ok:
                    self.log_cut(b"<retval> " + value)
                elif compiled:
                    self.log(b"<error> " + value)
                else:
                    self.log(b"Error compiling code: " + value)
            elif name in (b"valkey", b"redis", b"server"):
                self.step = True  # the command and its reply are logged
                try:
                    self.lua.call(*argv[1:])
                finally:
                    self.step = False
            elif name == b"print":
                self.print(argv)
            elif name == b"list":
                around, ctx = self.currentline, 5
                if len(argv) > 1:
                    num = atoi(argv[1])
                    if num > 0:
                        around = num
                if len(argv) > 2:
                    ctx = atoi(argv[2])
                self.list_lines(around, ctx)
            else:  # whole
                self.list_lines(1, 1000000)
            self.send()

    def print(self, argv: list[bytes]) -> None:
        if len(argv) == 2:
            value = self.lua.print(argv[1].split(b"\0", 1)[0])
            if value is None:
                self.log(b"No such variable.")
            else:
                self.log_cut(b"<value> " + value)
            return
        shown = self.lua.print_all()
        if not len(shown):
            self.log(b"No local variables in the current context.")
        for i in range(1, len(shown) + 1):
            self.log_cut(b"<value> " + shown[i])

    def trace(self) -> None:
        frames = self.lua.trace()
        if not len(frames):
            self.log(b"<error> Can't retrieve Lua stack.")
        for i in range(1, len(frames) + 1):
            name, line = frames[i][1], frames[i][2]
            self.log(b"%s %s:" % (b"In" if i == 1 else b"From", name))
            self.log_source_line(int(line))

    def set_maxlen(self, argv: list[bytes]) -> None:
        if len(argv) == 1:
            self.log(b"Current maxlen is %d" % self.maxlen)
            return
        n = to_int(argv[1])
        if n is None or n < 0:
            self.log(b"<error> Invalid maxlen value.")
            return
        self.hint_sent = True  # the user knows about it now
        self.maxlen = 60 if 0 < n <= 60 else n
        if self.maxlen:
            self.log(b"<value> replies are truncated at %d bytes." % self.maxlen)
        else:
            self.log(b"<value> replies are not truncated.")

    def set_break(self, argv: list[bytes]) -> None:
        bps = self.breakpoints
        if len(argv) == 1:
            if not bps:
                self.log(b"No breakpoints set. Use 'b <line>' to add one.")
                return
            self.log(b"%d breakpoints set:" % len(bps))
            for n in bps:
                self.log_source_line(n)
            return
        for arg in argv[1:]:
            line = to_int(arg)
            if line is None:
                self.log(b"Invalid argument:'%s'" % arg)
                continue
            n = line
            if n == 0:
                bps.clear()
                self.log(b"All breakpoints removed.")
            elif n > 0:
                if len(bps) == BREAKPOINTS_MAX:
                    self.log(b"Too many breakpoints set.")
                elif 1 <= n <= len(self.lines) and n not in bps:
                    bps.append(n)
                    self.list_lines(n, 1)
                else:
                    self.log(b"Wrong line number.")
            elif -n in bps:
                bps.remove(-n)
                self.log(b"Breakpoint removed.")
            else:
                self.log(b"No breakpoint in the specified line.")


class Debugging:
    """The debugging sessions forked for SCRIPT DEBUG YES that are still
    running: collected by the cron, killed when the server shuts down."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.children: list[int] = []

    def cron(self) -> None:
        self.children = [pid for pid in self.children if child.reap(pid) is None]

    def kill_all(self) -> None:
        for pid in self.children:
            self.log.notice(f"Killing debugging session {pid}")
            child.kill(pid)
        self.children = []


def debug_eval(engine: Engine, c: Client, body: bytes, work: Callable[[Session], bytes]) -> bytes:
    """EVAL for a client that asked for debugging (Valkey's
    evalGenericCommandWithDebugging): ``work`` runs the EVAL stepped by a
    session on the client's socket, here (SYNC) or in a forked child (YES).
    Either way the client is closed once the session is over: here after
    the EVAL's reply; the child writes that reply itself and the server
    drops the client at once."""
    server, debugging = engine.server, engine.debugging
    mode = c.lua_debug
    c.lua_debug = 0

    def threshold() -> int:
        return int(server.config.values.get("busy-reply-threshold", 5000))

    session = Session(c.fd, body, mode == FORKED, engine.ldb_lua, threshold, engine.refusal_reply)
    if mode == FORKED:
        def run_child() -> None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            server.log.notice("Valkey forked for debugging eval")
            server.aof = None  # the parent's log: the child's writes are its own
            session.open()
            try:
                reply = work(session)
            except CommandError as e:
                reply = b"-" + e.msg + b"\r\n"
            session.log(b"<endsession>")
            session.send()
            session.write(reply)
            server.log.notice("Lua debugging session child exiting")

        try:
            pid = child.fork(server, run_child, "Lua debugging session")
        except OSError as e:
            raise CommandError(b"ERR Fork() failed: can't run EVAL in debugging mode: "
                               + os.strerror(e.errno or 0).encode()) from None
        debugging.children.append(pid)
        c.closing = True  # closed in this process without a reply: the child answers
        return b""
    server.log.notice("Valkey synchronous debugging eval session started")
    session.open()
    try:
        return work(session)
    finally:
        session.log(b"<endsession>")
        session.send()
        server.log.notice("Valkey synchronous debugging eval session ended")
        session.close()
        c.closing = True  # the reply, then the end of the connection, ends the session
