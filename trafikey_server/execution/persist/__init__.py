"""Persistence: what survives a restart of the server. RDB snapshots
(``rdb``, ``snapshot``, with ``crc64``) and the append-only log of effects
(``aof``, ``effects``, ``aofload``, ``manifest``, ``rewrite``), brought
together at start-up by ``startup``."""
