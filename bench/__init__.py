"""trafikey-server vs valkey-server 9.1.2: the benchmark harness (``python3 -m bench``).

See bench/README.md for what each section measures and how to read it.
"""
