"""The compiled kernels have what their users state of them.

A kernel is loaded by name (util/native.py), so mypy never reads it: the
module that uses one types it with a Protocol of what it uses (values/zset.py's
ScoreIndex, network/connection.py's KernelReader), and checks its pure twin
against it. Here, where the kernels are built, each compiled class is checked
to have every member its Protocol names.
"""

from __future__ import annotations

from typing import Protocol

import pytest

from trafikey_server.network.connection import KernelReader
from trafikey_server.util import native
from trafikey_server.values.zset import ScoreIndex


class _Empty(Protocol):
    pass


def members(proto: type) -> set[str]:
    """The methods, properties and attributes a Protocol class names."""
    own = set(vars(proto)) - set(vars(_Empty)) - {"__annotations__", "__protocol_attrs__"}
    own -= {"__mypyc_attrs__", "__getstate__", "__setstate__", "__new__"}  # what mypyc adds, compiled
    return own | set(vars(proto).get("__annotations__", {}))


def test_members_are_read_off_the_protocol() -> None:
    assert {"add", "bisect_left", "islice", "__len__", "__getitem__", "__reversed__"} <= members(ScoreIndex)
    assert members(KernelReader) == {"idle", "len", "open_bulk", "open_args", "feed"}


@pytest.mark.parametrize("kernel, name, proto", [
    ("values.cindex", "ScoreIndex", ScoreIndex),
    ("protocol.creader", "Reader", KernelReader),
])
def test_the_compiled_class_has_what_its_protocol_names(kernel: str, name: str, proto: type) -> None:
    mod = native.load(kernel)
    if mod is None:
        pytest.skip(f"{kernel} is not built (or the pure path is forced): {native.describe()}")
    cls = getattr(mod, name)
    missing = sorted(m for m in members(proto) if not hasattr(cls, m))
    assert not missing, f"{kernel}.{name} lacks {missing}, which {proto.__qualname__} states"
