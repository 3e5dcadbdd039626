"""Log lines in Valkey's format: ``pid:M 02 Dec 2026 18:47:36.382 * text``.

Logging is for start-up, shutdown and rare events; nothing on the command
path logs, so the level check is the only cost a disabled line has.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

LEVELS = {"debug": 0, "verbose": 1, "notice": 2, "warning": 3, "nothing": 4}
DEBUG, VERBOSE, NOTICE, WARNING = 0, 1, 2, 3
_MARKS = ".-*#"


class Log:
    def __init__(self, level: str = "notice", path: str = "") -> None:
        self.level = LEVELS.get(level, 2)
        self.path = path
        self.pid = os.getpid()

    def _stream(self) -> TextIO:
        return sys.stdout

    def write(self, level: int, text: str) -> None:
        if level < self.level:
            return
        now = time.time()
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.localtime(now)) + ".%03d" % (int(now * 1000) % 1000)
        self.raw(level, f"{self.pid}:M {stamp} {_MARKS[level]} {text}\n")

    def raw(self, level: int, text: str) -> None:
        """Text as it is, with no stamp (Valkey's LL_RAW: the logo); every
        line goes out through here."""
        if level < self.level:
            return
        if self.path:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()

    def debug(self, text: str) -> None:
        self.write(0, text)

    def verbose(self, text: str) -> None:
        self.write(1, text)

    def notice(self, text: str) -> None:
        self.write(2, text)

    def warning(self, text: str) -> None:
        self.write(3, text)


# The start-up logo: its right-hand lines carry what Valkey's carries (the
# version, the mode, the port and the PID, which Valkey's own test harness
# reads back from the log to know the server it started is up).
_LOGO = r"""
          .--------.
        .'  .----.  '.
       /   /      \   \_________________________________    {name} {version} (Valkey {compat} compatible) {bits} bit
      |   |        |    __________________________________|
      |   |        |   |      |  |    |  |    |  |            Running in {mode} mode
       \   \      /   /       |__|    |  |    |__|            Port: {port}
        '.  '----'  .'                |__|                    PID: {pid}
          '--------'
"""


def logo(name: str, version: str, compat: str, mode: str, port: int, pid: int) -> str:
    """The logo, filled in, as the log shows it under always-show-logo."""
    return _LOGO.format(name=name, version=version, compat=compat, bits=64, mode=mode, port=port, pid=pid) + "\n"
