"""trafikey-server: a Valkey-compatible server with EchoMQ's job core built in."""

from .util import native as _native

__version__ = "0.1.0"

_native.install()  # the typed core compiled or pure, decided before any of it is imported
