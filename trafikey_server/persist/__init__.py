"""Persistence: what survives a restart of the server."""
