"""Running commands, above the services: ``dispatch`` checks and runs one
request (ACL, arity, MULTI queueing, statistics), ``persist`` keeps the RDB
file and the append-only log, ``scripting`` runs Lua, and
``named_snapshots`` saves and restores the keyspace in memory."""
