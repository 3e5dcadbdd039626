"""The sorted set: a dict member -> score beside an ordered index.

The index is a ``SortedList`` of ``(score, member)`` pairs, which orders
exactly as Valkey does (by score, then by member bytes), so ZADD, ZREM, the
pops, ranks and range reads cost O(log n) and nothing copies the set.
"""

from __future__ import annotations

from sortedcontainers import SortedList


class ZSet:
    __slots__ = ("scores", "index", "big")

    def __init__(self) -> None:
        self.scores: dict[bytes, float] = {}
        self.index: SortedList = SortedList()
        self.big = False

    def __len__(self) -> int:
        return len(self.scores)

    def add(self, member: bytes, score: float) -> bool:
        """Insert or re-score; True if the member is new."""
        old = self.scores.get(member)
        if old is not None:
            if old == score:
                return False
            self.index.remove((old, member))
            self.index.add((score, member))
            self.scores[member] = score
            return False
        self.scores[member] = score
        self.index.add((score, member))
        return True

    def remove(self, member: bytes) -> bool:
        old = self.scores.pop(member, None)
        if old is None:
            return False
        self.index.remove((old, member))
        return True

    def pop_min(self) -> tuple[float, bytes]:
        score, member = self.index.pop(0)
        del self.scores[member]
        return score, member

    def pop_max(self) -> tuple[float, bytes]:
        score, member = self.index.pop()
        del self.scores[member]
        return score, member
