"""Pub/sub commands: SUBSCRIBE and its family, PUBLISH, SPUBLISH, PUBSUB.

The subscribe family answers with confirmation frames instead of a reply
(arrays in RESP2, pushes in RESP3), one per argument. Valkey sends them as
pushes: they follow the (empty) reply, and CLIENT REPLY OFF does not silence
them; inside EXEC they take their place in the transaction's reply. What a
subscribed client may still run is checked by dispatch before the handler
runs. The tables and the delivery live in the pub/sub service
(``server.pubsub``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..protocol.resp import array_header, bulk, bulks
from ..util.errors import CommandError
from ..util.glob import match

if TYPE_CHECKING:
    from ..services.client import Client


def _confirm(c: Client, frames: bytes) -> bytes:
    if c.in_exec:
        return frames
    c.push(frames)
    return b""


def subscribe(c: Client, argv: list[bytes]) -> bytes:
    ps = c.server.pubsub
    return _confirm(c, b"".join([ps.subscribe(c, ch) for ch in argv[1:]]))


def psubscribe(c: Client, argv: list[bytes]) -> bytes:
    ps = c.server.pubsub
    return _confirm(c, b"".join([ps.psubscribe(c, pat) for pat in argv[1:]]))


def ssubscribe(c: Client, argv: list[bytes]) -> bytes:
    # EXEC denies blocking to what it runs: unlike SUBSCRIBE, SSUBSCRIBE
    # has no exception for transactions in Valkey.
    if c.in_exec:
        raise CommandError(b"ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
    ps = c.server.pubsub
    return _confirm(c, b"".join([ps.ssubscribe(c, ch) for ch in argv[1:]]))


def unsubscribe(c: Client, argv: list[bytes]) -> bytes:
    ps = c.server.pubsub
    if len(argv) == 1:
        return _confirm(c, ps.unsubscribe_all(c, 0))
    return _confirm(c, b"".join([ps.unsubscribe(c, ch) for ch in argv[1:]]))


def punsubscribe(c: Client, argv: list[bytes]) -> bytes:
    ps = c.server.pubsub
    if len(argv) == 1:
        return _confirm(c, ps.unsubscribe_all(c, 1))
    return _confirm(c, b"".join([ps.punsubscribe(c, pat) for pat in argv[1:]]))


def sunsubscribe(c: Client, argv: list[bytes]) -> bytes:
    ps = c.server.pubsub
    if len(argv) == 1:
        return _confirm(c, ps.unsubscribe_all(c, 2))
    return _confirm(c, b"".join([ps.sunsubscribe(c, ch) for ch in argv[1:]]))


def publish(c: Client, argv: list[bytes]) -> bytes:
    return b":%d\r\n" % c.server.pubsub.publish(argv[1], argv[2])


def spublish(c: Client, argv: list[bytes]) -> bytes:
    return b":%d\r\n" % c.server.pubsub.publish_shard(argv[1], argv[2])


# -- PUBSUB ------------------------------------------------------------------------------

_HELP: Final = [
    b"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    b"CHANNELS [<pattern>]",
    b"    Return the currently active channels matching a <pattern> (default: '*').",
    b"NUMPAT",
    b"    Return number of subscriptions to patterns.",
    b"NUMSUB [<channel> ...]",
    b"    Return the number of subscribers for the specified channels, excluding",
    b"    pattern subscriptions(default: no channels).",
    b"SHARDCHANNELS [<pattern>]",
    b"    Return the currently active shard level channels matching a <pattern> (default: '*').",
    b"SHARDNUMSUB [<shardchannel> ...]",
    b"    Return the number of subscribers for the specified shard level channel(s)",
    b"HELP",
    b"    Print this help.",
]


def _syntax(argv: list[bytes]) -> CommandError:
    return CommandError(b"ERR unknown subcommand or wrong number of arguments for '%s'. Try PUBSUB HELP."
                        % argv[1].split(b"\0", 1)[0][:128])


def _names(table: dict[bytes, dict], argv: list[bytes]) -> bytes:
    if len(argv) > 3:
        raise _syntax(argv)
    if len(argv) == 2:
        return bulks(list(table))
    pat = argv[2]
    return bulks([ch for ch in table if match(pat, ch)])


def _numsub(table: dict[bytes, dict], argv: list[bytes]) -> bytes:
    out = [array_header((len(argv) - 2) * 2)]
    for ch in argv[2:]:
        out.append(bulk(ch))
        out.append(b":%d\r\n" % len(table.get(ch, ())))
    return b"".join(out)


def pubsub_channels(c: Client, argv: list[bytes]) -> bytes:
    return _names(c.server.pubsub.channels, argv)


def pubsub_shardchannels(c: Client, argv: list[bytes]) -> bytes:
    return _names(c.server.pubsub.shard_channels, argv)


def pubsub_numsub(c: Client, argv: list[bytes]) -> bytes:
    return _numsub(c.server.pubsub.channels, argv)


def pubsub_shardnumsub(c: Client, argv: list[bytes]) -> bytes:
    return _numsub(c.server.pubsub.shard_channels, argv)


def pubsub_numpat(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) != 2:
        raise _syntax(argv)
    return b":%d\r\n" % len(c.server.pubsub.patterns)


def pubsub_help(c: Client, argv: list[bytes]) -> bytes:
    if len(argv) != 2:
        raise _syntax(argv)
    return b"".join([array_header(len(_HELP))] + [b"+%s\r\n" % line for line in _HELP])
