"""The wire and the formats, above the utilities: RESP requests read
(``parser``, the compiled ``creader``) and replies written (``resp``),
argument cursors (``args``), the command table and its metadata
(``table``, ``commandinfo``, ``keyspecs``), and the RDB encodings
(``rdbformat``). Nothing here knows a client or a database."""
