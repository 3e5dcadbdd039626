"""The EchoMQ job core, run natively: one module per family of verbs.

``core`` holds what they share (the request's shape, the refusals, the
plan through which every write is made); ``admit`` (ENQUEUE, SCHEDULE),
``claim``, ``lease`` (EXTEND, EXTENDS), ``settle`` (COMPLETE, FAIL),
``move`` (DELAY, REQUEUE, RESCHEDULE, REPROCESS), ``sweep`` (PROMOTE,
STALLED.CHECK) and ``version`` hold the verbs. Each verb is a handler
registered in the command table like any other command. See
docs/job-core.md for the contract they keep.
"""
