"""Pipelined writers with a model of their own keys, for kill -9 tests.

Each writer owns its keys, so the commands it sends are the only ones that
touch them and the keys' contents after any number of them can be computed
locally. Under ``kill -9`` the batch in flight may or may not have reached
the log, so after a restart the keys must equal the model after m commands
for some m between the acknowledged count and the sent count: an
acknowledged command lost, or any command applied out of order or twice,
gives a state no such m explains.

Every command is deterministic given the keys' contents: SPOP only ever
pops a set of one member or a whole set (COUNT at least its size), BLMOVE
is sent only when its source is not empty (so it never blocks), and a
pipelined batch's effects are applied to the model as it is built.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

State = dict[str, Any]  # key -> list (a list key) or set (a set key); absent keys are left out

LONG = "m" * 70  # a set member too long for listpack: the set turns hashtable


class ListSetWriter(threading.Thread):
    """One connection pipelining LPUSH, RPUSH, LPOP, LMOVE, BLMOVE, SADD,
    SREM, SMOVE and SPOP on five keys of its own, until the connection dies."""

    def __init__(self, port: int, tag: str, seed: int, batch: int = 16) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.keys = {n: f"{n}:{{{tag}}}" for n in ("l", "l2", "s", "s2", "sp")}
        self.rng = random.Random(seed)
        self.batch = batch
        self.sent: list[tuple[str, ...]] = []
        self.acked = 0
        self.model: State = {}
        self.pinned: int | None = None  # the m that explained the first restart
        self.counter = 0

    def _next_value(self) -> str:
        self.counter += 1
        return str(self.counter)

    def _member(self) -> str:
        r = self.rng.random()
        if r < 0.6:
            return str(self.rng.randrange(200))  # integers: intset while they last
        if r < 0.97:
            return f"e{self.rng.randrange(150)}"
        return LONG

    def _op(self) -> tuple[str, ...]:
        """A command whose effect the model can tell from the keys alone."""
        k, m = self.keys, self.model
        pick = self.rng.randrange(11)
        if pick <= 2:
            return ("LPUSH", k["l"], *[self._next_value() for _ in range(self.rng.randint(1, 3))])
        if pick == 3:
            return ("RPUSH", k["l"], self._next_value())
        if pick == 4:
            return ("LPOP", k["l"])
        if pick == 5:
            return ("LMOVE", k["l"], k["l2"], "LEFT", "RIGHT")
        if pick == 6 and m.get(k["l2"]):
            return ("BLMOVE", k["l2"], k["l"], "RIGHT", "LEFT", "0")
        if pick <= 7:
            return ("SADD", k["s"], *[self._member() for _ in range(self.rng.randint(1, 4))])
        if pick == 8:
            if self.rng.random() < 0.5:
                return ("SREM", k["s"], self._member())
            return ("SMOVE", k["s"], k["s2"], self._member())
        if pick == 9:
            if m.get(k["sp"]):
                return ("SPOP", k["sp"])  # one member: no choice to make
            return ("SADD", k["sp"], self._member())
        size = len(m.get(k["s2"], ()))
        return ("SPOP", k["s2"], str(size + self.rng.randint(0, 2)))  # the whole set

    def run(self) -> None:
        # No retries: a reply lost to the kill must count as unacknowledged.
        r = redis.Redis(port=self.port, socket_timeout=5, retry=Retry(NoBackoff(), 0))
        try:
            while True:
                pipe = r.pipeline(transaction=False)
                cmds = []
                for _ in range(self.batch):
                    cmd = self._op()
                    apply(self.model, cmd)
                    cmds.append(cmd)
                    pipe.execute_command(*cmd)
                self.sent += cmds
                pipe.execute()
                self.acked = len(self.sent)
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return

    def observe(self, r: redis.Redis) -> State:
        out: State = {}
        for key in self.keys.values():
            t = r.type(key)
            if t == b"list":
                out[key] = [x.decode() for x in r.lrange(key, 0, -1)]
            elif t == b"set":
                out[key] = {x.decode() for x in r.smembers(key)}
            elif t != b"none":
                out[key] = t
        return out

    def explained_by(self, seen: State) -> int | None:
        """The m in [acked, sent] whose model state equals what the server
        holds, or None."""
        model: State = {}
        for cmd in self.sent[: self.acked]:
            apply(model, cmd)
        for m in range(self.acked, len(self.sent) + 1):
            if m > self.acked:
                apply(model, self.sent[m - 1])
            if model == seen:
                return m
        return None


def apply(state: State, cmd: tuple[str, ...]) -> None:
    """The effect of one command of ListSetWriter on the model."""
    name, key, *rest = cmd
    if name in ("LPUSH", "RPUSH"):
        lst = state.setdefault(key, [])
        for v in rest:
            if name == "LPUSH":
                lst.insert(0, v)
            else:
                lst.append(v)
    elif name == "LPOP":
        if state.get(key):
            state[key].pop(0)
    elif name in ("LMOVE", "BLMOVE"):
        src = state.get(key)
        if src:
            v = src.pop(0) if rest[1] == "LEFT" else src.pop()
            dst = state.setdefault(rest[0], [])
            if rest[2] == "LEFT":
                dst.insert(0, v)
            else:
                dst.append(v)
    elif name == "SADD":
        state.setdefault(key, set()).update(rest)
    elif name == "SREM":
        state.get(key, set()).discard(rest[0])
    elif name == "SMOVE":
        src = state.get(key, set())
        if rest[1] in src:
            src.discard(rest[1])
            state.setdefault(rest[0], set()).add(rest[1])
    elif name == "SPOP":
        state.pop(key, None)  # a one-member set, or COUNT at least the size
    for k in [k for k, v in state.items() if not v]:
        del state[k]
