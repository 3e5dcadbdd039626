"""What the append-only file records under fault rules: a refused request
nothing, a request whose reply was lost, cut or held exactly what it wrote,
once, as a real lost reply leaves it (appendfsync always: the record is
written before any reply would have been)."""

from __future__ import annotations

import shutil
import tempfile

from helpers.aof_util import aof_server, logged, without_select
from helpers.resp_wire import Wire, encode


def test_the_log_after_each_kind() -> None:
    d = tempfile.mkdtemp(prefix="trafikey-faults-aof-")
    p = aof_server(d, "--appendfsync", "always", "--enable-fault-command", "yes", "--save", "")
    try:
        ctl = Wire(p.port)
        try:
            for kind, key in ((("ERROR", "LOADING"), "refused"), (("DROP",), "dropped"),
                              (("MOVED", "h:1"), "moved"), (("DROP-AFTER",), "lost"), (("CUT", 2), "cut")):
                assert ctl.call("TRAFIKEY.FAULT", "ADD", *kind, "KEY", key, "TIMES", 1).startswith(b":")
                w = Wire(p.port)
                try:
                    w.send_raw(encode("SET", key, "v") + encode("PING"))
                    if kind[0] in ("ERROR", "MOVED"):
                        assert w.read_reply().startswith(b"-")
                        assert w.read_reply() == b"+PONG\r\n"
                    else:
                        w.read_until_closed()
                finally:
                    w.close()
            assert ctl.call("TRAFIKEY.FAULT", "ADD", "DELAY", 0, "KEY", "held", "TIMES", 1).startswith(b":")
            assert ctl.call("SET", "held", "v") == b"+OK\r\n"
        finally:
            ctl.close()
        log = [c for c in without_select(logged(d)) if c[1] != b"{emq}:version"]  # the brand, at start
        assert log == [[b"SET", b"lost", b"v"], [b"SET", b"cut", b"v"], [b"SET", b"held", b"v"]]
    finally:
        p.stop()
        shutil.rmtree(d, ignore_errors=True)
