"""A script running past busy-reply-threshold, with clients on each transport.

The busy-script loop accepts and serves TCP and unix-socket clients itself
(they are told BUSY and may SCRIPT KILL, as in Valkey); a TLS client's
bytes are records only the event loop's transport can read, so its request
waits for the script to end and is then answered in order.
"""

from __future__ import annotations

import time

from helpers.resp_wire import Wire, encode
from helpers.transports import Endpoints, dial


def test_busy_script_with_unix_and_tls_clients(net: Endpoints) -> None:
    admin = Wire(net.port)
    assert admin.call("CONFIG", "SET", "busy-reply-threshold", "50") == b"+OK\r\n"
    try:
        tls = dial(net, "tls")
        assert tls.call("PING") == b"+PONG\r\n"
        unix = dial(net, "unix")
        caller = dial(net, "tcp")
        caller.send_raw(encode("EVAL", "while true do end", "0"))
        deadline = time.monotonic() + 10
        while not unix.call("PING").startswith(b"-BUSY"):
            assert time.monotonic() < deadline, "the script never turned busy"
            time.sleep(0.01)
        late = dial(net, "unix")  # accepted by the busy loop itself
        assert late.call("PING").startswith(b"-BUSY Valkey is busy running a script.")
        tls.send_raw(encode("SET", "after-busy", "1"))
        assert late.call("SCRIPT", "KILL") == b"+OK\r\n"
        assert caller.read_reply().startswith(b"-ERR Script killed by user with SCRIPT KILL")
        assert tls.read_reply() == b"+OK\r\n"
        assert late.call("GET", "after-busy") == b"$1\r\n1\r\n"
        for w in (tls, unix, caller, late):
            w.close()
    finally:
        assert admin.call("CONFIG", "SET", "busy-reply-threshold", "5000") == b"+OK\r\n"
        admin.close()
