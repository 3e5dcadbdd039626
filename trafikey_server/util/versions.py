"""The Valkey (and Redis-compatibility) versions this server answers as.

Kept at the bottom of the package: HELLO, INFO, the RDB writer and the
start-up log all name them, and none of those may reach up to ``server``.
"""

from __future__ import annotations

VALKEY_VERSION = "9.1.2"
REDIS_COMPAT_VERSION = "7.2.4"
