"""Command handlers, one module per family, named by the table's ``handler``
field (``hash.hset`` is ``hset`` in ``commands/hash.py``)."""
