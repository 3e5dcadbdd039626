"""The server's one source of random draws.

Every random choice the server makes (SPOP, SRANDMEMBER, HRANDFIELD,
ZRANDMEMBER, RANDOMKEY, eviction sampling, the Lua PRNG's seed, fault
rules drawn with a probability, ``run_id``) reads this generator, so that
seeding it once (``--seed``) makes a test that depends on a draw get the
same draw on every run. It lives among the utilities so that every layer,
value types included, can draw from it without reaching up to the server.
"""

from __future__ import annotations

import random

rng = random.Random()
