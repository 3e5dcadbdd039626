"""The registry of value types: one ``ValueType`` (``record.py``) per type,
found by the Python class of a value (``type(v)``), by TYPE's name, or by an
RDB type byte.

Adding a type is writing its module (its class, its commands' helpers, its
``ValueType``) and listing the record in ``TYPES`` below; TYPE, SCAN TYPE,
COPY, OBJECT ENCODING, MEMORY USAGE, DEBUG DIGEST, the RDB file, the AOF
rewrite and the server's listpack thresholds then serve it. ``register``
adds a record at run time the same way (tests use it for a toy type).

The hot typed reads (``Db.get_hash`` ...) keep their exact class tests:
a lookup here is for the paths that see every type.
"""

from __future__ import annotations

from .hash import HASH
from .list import LIST
from .record import ValueType
from .set import SET
from .stream import STREAM
from .string import STRING
from .zset import ZSET

TYPES: tuple[ValueType, ...] = (STRING, LIST, HASH, ZSET, SET, STREAM)

BY_CLASS: dict[type, ValueType] = {}
BY_NAME: dict[bytes, ValueType] = {}
BY_RDB_TYPE: dict[int, ValueType] = {}


def register(vt: ValueType) -> ValueType:
    """Make vt known by its classes, its name and its RDB type bytes; a
    class, name or byte already taken by another type is refused."""
    for cls in vt.classes:
        if BY_CLASS.get(cls, vt) is not vt:
            raise ValueError(f"{cls.__name__} is already the class of {BY_CLASS[cls].name!r}")
    if BY_NAME.get(vt.name, vt) is not vt:
        raise ValueError(f"a type named {vt.name!r} is already registered")
    for t in vt.rdb_types:
        if BY_RDB_TYPE.get(t, vt) is not vt:
            raise ValueError(f"RDB type {t} is already read by {BY_RDB_TYPE[t].name!r}")
    for cls in vt.classes:
        BY_CLASS[cls] = vt
    BY_NAME[vt.name] = vt
    for t in vt.rdb_types:
        BY_RDB_TYPE[t] = vt
    return vt


def unregister(vt: ValueType) -> None:
    """Forget a type registered with ``register``."""
    for cls in vt.classes:
        if BY_CLASS.get(cls) is vt:
            del BY_CLASS[cls]
    if BY_NAME.get(vt.name) is vt:
        del BY_NAME[vt.name]
    for t in vt.rdb_types:
        if BY_RDB_TYPE.get(t) is vt:
            del BY_RDB_TYPE[t]


def registered() -> list[ValueType]:
    """Every known type, each once, in registration order."""
    return list(BY_NAME.values())


def of(v: object) -> ValueType | None:
    """The type of a stored value (None for anything else)."""
    return BY_CLASS.get(type(v))


def type_name(v: object) -> bytes:
    """TYPE's answer for a value (``none`` for no value)."""
    vt = BY_CLASS.get(type(v))
    return b"none" if vt is None else vt.name


for _vt in TYPES:
    register(_vt)
