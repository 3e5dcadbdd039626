"""Persistence: RDB snapshots (``rdb``, ``snapshot``) and their checksum (``crc64``)."""
