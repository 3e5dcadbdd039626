"""Publish/subscribe: who listens to which channel, pattern or shard channel,
and delivery of a published message to each of them.

The server keeps, per channel (pattern, shard channel), the subscribed
clients in subscription order; each client keeps its own subscriptions
(``Client.channels``, ``patterns``, ``shard_channels``) and their total
(``Client.subscriptions``, Valkey's pubsub flag: the client is in pub/sub
mode while it is not zero). A message goes to the channel's subscribers
first, then to the subscribers of each matching pattern, as Valkey's
pubsubPublishMessage; every frame goes out through ``Client.push``, which
keeps it in order with the receiver's own replies.

A frame is built once per protocol per publish, whatever the number of
receivers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ..protocol.resp import bulk
from ..util.glob import match
from .acl import refresh

if TYPE_CHECKING:
    from .client import Client

Subscribers = dict["Client", None]

_MESSAGE: Final = b"$7\r\nmessage\r\n"
_PMESSAGE: Final = b"$8\r\npmessage\r\n"
_SMESSAGE: Final = b"$8\r\nsmessage\r\n"
HEADER3: Final = {2: b"*3\r\n", 3: b">3\r\n"}
HEADER4: Final = {2: b"*4\r\n", 3: b">4\r\n"}
NULL: Final = {2: b"$-1\r\n", 3: b"_\r\n"}

# The reply words of the subscribe family, by kind: (subscribe, unsubscribe).
CHANNEL_WORDS: Final = (b"$9\r\nsubscribe\r\n", b"$11\r\nunsubscribe\r\n")
PATTERN_WORDS: Final = (b"$10\r\npsubscribe\r\n", b"$12\r\npunsubscribe\r\n")
SHARD_WORDS: Final = (b"$10\r\nssubscribe\r\n", b"$12\r\nsunsubscribe\r\n")


def notice(c: Client, word: bytes, name: bytes | None, count: int) -> bytes:
    """One (un)subscribe confirmation: ``[word, name or null, count]``,
    an array in RESP2 and a push in RESP3."""
    return b"%s%s%s:%d\r\n" % (HEADER3[c.resp], word, NULL[c.resp] if name is None else bulk(name), count)


class PubSub:
    """The server's subscription tables (``server.pubsub``)."""

    __slots__ = ("server", "channels", "patterns", "shard_channels", "clients")

    def __init__(self, server: object) -> None:
        self.server = server
        self.channels: dict[bytes, Subscribers] = {}
        self.patterns: dict[bytes, Subscribers] = {}
        self.shard_channels: dict[bytes, Subscribers] = {}
        # Clients in pub/sub mode (INFO clients: pubsub_clients).
        self.clients = 0

    # -- delivery ----------------------------------------------------------------------

    def publish(self, channel: bytes, message: bytes) -> int:
        """Deliver to the channel's subscribers, then to those of every
        matching pattern; the number of frames sent (a client subscribed
        both ways counts, and is sent, once per subscription)."""
        receivers = 0
        subs = self.channels.get(channel)
        if subs:
            receivers = _deliver(subs, HEADER3, _MESSAGE + bulk(channel) + bulk(message))
        if self.patterns:
            tail = b""
            for pattern, psubs in list(self.patterns.items()):
                if not match(pattern, channel):
                    continue
                if not tail:
                    tail = bulk(channel) + bulk(message)
                receivers += _deliver(psubs, HEADER4, _PMESSAGE + bulk(pattern) + tail)
        return receivers

    def publish_shard(self, channel: bytes, message: bytes) -> int:
        """SPUBLISH: shard channels ignore patterns."""
        subs = self.shard_channels.get(channel)
        if not subs:
            return 0
        return _deliver(subs, HEADER3, _SMESSAGE + bulk(channel) + bulk(message))

    # -- subscribing ---------------------------------------------------------------------

    def subscribe(self, c: Client, channel: bytes) -> bytes:
        """Valkey's pubsubSubscribeChannel: the confirmation frame."""
        if channel not in c.channels:
            c.channels[channel] = None
            self.channels.setdefault(channel, {})[c] = None
            self._count(c, 1)
        return notice(c, CHANNEL_WORDS[0], channel, len(c.channels) + len(c.patterns))

    def psubscribe(self, c: Client, pattern: bytes) -> bytes:
        if pattern not in c.patterns:
            c.patterns[pattern] = None
            self.patterns.setdefault(pattern, {})[c] = None
            self._count(c, 1)
        return notice(c, PATTERN_WORDS[0], pattern, len(c.channels) + len(c.patterns))

    def ssubscribe(self, c: Client, channel: bytes) -> bytes:
        if channel not in c.shard_channels:
            c.shard_channels[channel] = None
            self.shard_channels.setdefault(channel, {})[c] = None
            self._count(c, 1)
        return notice(c, SHARD_WORDS[0], channel, len(c.shard_channels))

    def unsubscribe(self, c: Client, channel: bytes) -> bytes:
        if channel in c.channels:
            _drop(c.channels, self.channels, c, channel)
            self._count(c, -1)
        return notice(c, CHANNEL_WORDS[1], channel, len(c.channels) + len(c.patterns))

    def punsubscribe(self, c: Client, pattern: bytes) -> bytes:
        if pattern in c.patterns:
            _drop(c.patterns, self.patterns, c, pattern)
            self._count(c, -1)
        return notice(c, PATTERN_WORDS[1], pattern, len(c.channels) + len(c.patterns))

    def sunsubscribe(self, c: Client, channel: bytes) -> bytes:
        if channel in c.shard_channels:
            _drop(c.shard_channels, self.shard_channels, c, channel)
            self._count(c, -1)
        return notice(c, SHARD_WORDS[1], channel, len(c.shard_channels))

    def unsubscribe_all(self, c: Client, kind: int) -> bytes:
        """UNSUBSCRIBE (0), PUNSUBSCRIBE (1), SUNSUBSCRIBE (2) without
        arguments: one confirmation per subscription dropped, or a single
        one with a null name when there was none."""
        one = (self.unsubscribe, self.punsubscribe, self.sunsubscribe)[kind]
        mine = (c.channels, c.patterns, c.shard_channels)[kind]
        if not mine:
            words = (CHANNEL_WORDS, PATTERN_WORDS, SHARD_WORDS)[kind]
            count = len(c.shard_channels) if kind == 2 else len(c.channels) + len(c.patterns)
            return notice(c, words[1], None, count)
        return b"".join([one(c, name) for name in list(mine)])

    def drop_client(self, c: Client) -> None:
        """Disconnection and RESET: every subscription goes, silently."""
        if not c.subscriptions:
            return
        for name in c.channels:
            _forget(self.channels, c, name)
        for name in c.patterns:
            _forget(self.patterns, c, name)
        for name in c.shard_channels:
            _forget(self.shard_channels, c, name)
        c.channels = {}
        c.patterns = {}
        c.shard_channels = {}
        self._count(c, -c.subscriptions)

    def _count(self, c: Client, delta: int) -> None:
        """Keep the client's total; entering or leaving pub/sub mode changes
        what a RESP2 client may run (dispatch's fast path is closed to it
        while subscribed, see acl.refresh) and the pubsub_clients count."""
        before = c.subscriptions
        c.subscriptions = after = before + delta
        if (before == 0) != (after == 0):
            self.clients += 1 if after else -1
            refresh(c)


def _deliver(subs: Subscribers, headers: dict[int, bytes], body: bytes) -> int:
    f2 = f3 = b""
    n = 0
    # A copy: a push over the output-buffer limit closes its receiver, and a
    # receiver's own disconnection must not disturb this loop.
    for c in list(subs):
        if c.resp == 2:
            if not f2:
                f2 = headers[2] + body
            c.push(f2)
        else:
            if not f3:
                f3 = headers[3] + body
            c.push(f3)
        n += 1
    return n


def _drop(mine: dict[bytes, None], table: dict[bytes, Subscribers], c: Client, name: bytes) -> None:
    del mine[name]
    _forget(table, c, name)


def _forget(table: dict[bytes, Subscribers], c: Client, name: bytes) -> None:
    subs = table.get(name)
    if subs is not None:
        subs.pop(c, None)
        if not subs:
            del table[name]
