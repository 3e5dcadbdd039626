"""A RedisContainer that starts nothing and names the server under test
(COMPAT_HOST, COMPAT_PORT), for suites whose conftest starts Redis in a
container."""

from __future__ import annotations

import os
from typing import Any


class RedisContainer:
    port = 6379

    def __init__(self, image: str = "redis:latest", **kwargs: Any) -> None:
        self.image = image

    def __enter__(self) -> RedisContainer:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def start(self) -> RedisContainer:
        return self

    def stop(self) -> None:
        return None

    def get_container_host_ip(self) -> str:
        return os.environ["COMPAT_HOST"]

    def get_exposed_port(self, port: int) -> int:
        return int(os.environ["COMPAT_PORT"])
