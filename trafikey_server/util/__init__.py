"""Utilities, the lowest layer: what every other layer may use and that
knows nothing of the server — errors and their texts (``errors``), number
parsing and formatting (``parsing``, ``floats``, ``longdouble``), the clock,
glob matching, randomness, logging, and the loader of the compiled kernels
(``native``)."""
