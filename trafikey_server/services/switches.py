"""The switches DEBUG turns (commands/debug.py), in one place.

Valkey keeps each of its test switches as a field of its server struct; here
they are one small object on the server (``server.switches``), so a module
that honours one reads it without knowing the DEBUG command, and the command
has one thing to set. Each starts as Valkey starts it.
"""

from __future__ import annotations


class Switches:
    __slots__ = ("active_expire", "aof_flush_sleep", "pause_cron", "skip_checksum", "scripts_unrestricted",
                 "packed_threshold")

    def __init__(self) -> None:
        # SET-ACTIVE-EXPIRE: off leaves expiry to the lookups.
        self.active_expire = True
        # AOF-FLUSH-SLEEP: microseconds the log's writer waits before each
        # write (the test knob for the reply-after-write barrier).
        self.aof_flush_sleep = 0
        # PAUSE-CRON: the periodic work (expiry, save rules, rewrites, timeouts) stops.
        self.pause_cron = False
        # SET-SKIP-CHECKSUM-VALIDATION: RESTORE payloads and RDB files load
        # whatever their checksum says.
        self.skip_checksum = False
        # SET-DISABLE-DENY-SCRIPTS: scripts may call commands flagged noscript.
        self.scripts_unrestricted = False
        # QUICKLIST-PACKED-THRESHOLD, in bytes: kept and reported; lists here
        # have no packed nodes for it to move elements out of.
        self.packed_threshold = 1 << 30
