"""keyspace."""
