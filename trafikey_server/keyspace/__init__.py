"""The keyspace, above the values: ``Db`` holds keys, values and expiry
times, and its write calls carry every write's side effects (WATCH,
tracking, blocked clients, keyspace events), as Valkey's setKey, dbDelete
and notifyKeyspaceEvent do; ``access`` keeps the LRU/LFU fields."""
