"""Stand-in for testcontainers: the server under test is already running."""
