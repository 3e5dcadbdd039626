"""The server's one source of random draws.

Every random choice the server makes (SPOP, SRANDMEMBER, HRANDFIELD,
ZRANDMEMBER, RANDOMKEY, eviction sampling, the Lua PRNG's seed, fault
rules drawn with a probability, ``run_id``) reads this generator, so that
seeding it once (``--seed``) makes a test that depends on a draw get the
same draw on every run. It lives among the utilities so that every layer,
value types included, can draw from it without reaching up to the server.

``rng`` is never rebound: seeding happens in place, so a module may keep
one of its bound methods (``randrange = rng.randrange``) on a hot path.
A draw reproduces across processes as long as what it indexes is in an
order the commands decided (dicts, lists, sorted indexes), never in a
Python ``set``'s order, which follows the per-process string hash.

Draws made once per seeding rather than per command (``run_id``, the Lua
generator's start) come from ``derived`` generators of their own, fixed by
the seed and what they are for: they take nothing from ``rng``, so the
commands after a ``CONFIG SET seed N`` draw exactly what they draw after a
start with ``--seed N``.
"""

from __future__ import annotations

import random
import secrets

rng = random.Random()

# The seed ``rng`` was last given; None while it is seeded from the OS.
seed: int | None = None

_MASK64 = (1 << 64) - 1


def reseed(value: int | None) -> None:
    """Restart ``rng`` from ``value`` (an integer of 64 bits, negative
    ones included), or from the OS's entropy when None."""
    global seed
    seed = value
    # random.seed takes the absolute value of an int: as unsigned 64 bits
    # instead, -1 and 1 stay different seeds.
    rng.seed(None if value is None else value & _MASK64)


def parse(text: str) -> int | None:
    """The config's ``seed`` text (empty, or an integer) as ``reseed`` takes it."""
    return int(text) if text else None


def derived(purpose: str) -> random.Random | None:
    """A generator for one purpose, fixed by the seed (None while there is
    none). Seeded from text, which Python hashes with SHA-512, so it is the
    same in every process whatever its string hash seed."""
    if seed is None:
        return None
    return random.Random(f"{seed & _MASK64}:{purpose}")


def token_hex(nbytes: int, purpose: str) -> str:
    """``nbytes`` random bytes in hex: the OS's when unseeded, else drawn
    from the purpose's derived generator."""
    g = derived(purpose)
    if g is None:
        return secrets.token_hex(nbytes)
    return g.randbytes(nbytes).hex()
