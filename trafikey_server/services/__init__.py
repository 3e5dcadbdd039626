"""Server-wide services, above the keyspace: clients and their state,
ACLs, configuration, keyspace notifications, pub/sub, client tracking,
blocking, memory and eviction, limits, pauses, fault rules and the
observers (SLOWLOG, LATENCY, MONITOR). Each is one object the server owns."""
