"""trafikey-server: a Valkey-compatible server with EchoMQ's job core built in."""

__version__ = "0.1.0"
