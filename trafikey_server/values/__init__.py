"""The value types, above the protocol: one module per type (``string``,
``list``, ``hash``, ``set``, ``zset``, ``stream``, ``hyperloglog``) holding
its structure, the operations its commands share and its ``ValueType``
record; ``registry`` lists the records for the code that treats every type.
A value knows nothing of the key or the database it is stored under."""
