"""Error replies, raised by handlers and encoded once by the dispatcher.

A handler raises instead of returning an error reply so that a refusal can be
thrown from any depth of argument parsing, and so that the dispatcher alone
decides how it is counted (INFO errorstats) and encoded. The texts are
Valkey's, to the byte: clients and test suites match on them.
"""

from __future__ import annotations


class CommandError(Exception):
    """A reply of the form ``-CODE message``; ``msg`` holds ``CODE message``."""

    __slots__ = ("msg",)

    def __init__(self, msg: bytes | str) -> None:
        self.msg = msg.encode() if isinstance(msg, str) else msg

    def reply(self) -> bytes:
        return b"-" + self.msg + b"\r\n"

    @property
    def code(self) -> bytes:
        return self.msg.split(b" ", 1)[0]


WRONGTYPE_MSG = b"WRONGTYPE Operation against a key holding the wrong kind of value"
NOT_INTEGER_MSG = b"ERR value is not an integer or out of range"
NOT_FLOAT_MSG = b"ERR value is not a valid float"
SYNTAX_MSG = b"ERR syntax error"


class WrongType(CommandError):
    def __init__(self) -> None:
        super().__init__(WRONGTYPE_MSG)


def wrongtype() -> CommandError:
    return CommandError(WRONGTYPE_MSG)


def syntax() -> CommandError:
    return CommandError(SYNTAX_MSG)


def not_integer() -> CommandError:
    return CommandError(NOT_INTEGER_MSG)


def not_float() -> CommandError:
    return CommandError(NOT_FLOAT_MSG)


def wrong_args(name: bytes | str) -> CommandError:
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    return CommandError(f"ERR wrong number of arguments for '{name.lower()}' command")


class ProtocolError(Exception):
    """Malformed input on the wire; the connection is answered and closed."""

    def __init__(self, msg: str) -> None:
        super().__init__(msg)
        self.msg = msg

    def reply(self) -> bytes:
        # latin-1: a byte quoted from the input goes back as that one byte.
        return b"-ERR Protocol error: " + self.msg.encode("latin-1") + b"\r\n"
