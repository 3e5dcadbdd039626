"""COMMAND INFO / DOCS replies encoded from the table rows.

The rows are Valkey's own COMMAND output captured as JSON, so encoding them
back with Valkey's shape rules (flag lists are sets of simple strings, the
rest bulk/int/map/array) reproduces its bytes. Encoded rows are cached per
protocol because the table never changes while the server runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .resp import ENCODERS, Encoder, array, bulk, integer

if TYPE_CHECKING:
    from .table import Command

_SET_KEYS = frozenset({"flags", "doc_flags"})
# Lists Valkey sends as RESP3 sets of ordinary values.
_VALUE_SET_KEYS = frozenset({"history"})
_info_cache: dict[tuple[int, int], bytes] = {}
_docs_cache: dict[tuple[int, int], bytes] = {}


def _status_set(r: Encoder, items: list[str]) -> bytes:
    return r.set_header(len(items)) + b"".join(b"+%s\r\n" % s.encode() for s in items)


def _value(r: Encoder, v: Any, key: str = "") -> bytes:
    if isinstance(v, bool):
        return integer(int(v))
    if isinstance(v, int):
        return integer(v)
    if isinstance(v, str):
        return bulk(v.encode())
    if isinstance(v, dict):
        return r.map([(bulk(k.encode()), _value(r, x, k)) for k, x in v.items()])
    if isinstance(v, list):
        if key in _SET_KEYS:
            return _status_set(r, v)
        if key in _VALUE_SET_KEYS:
            return r.set_header(len(v)) + b"".join(_value(r, x) for x in v)
        return array([_value(r, x) for x in v])
    return r.null


def info(cmd: Command, proto: int) -> bytes:
    """The 10-element COMMAND INFO entry of one row."""
    key = (id(cmd), proto)
    out = _info_cache.get(key)
    if out is None:
        r = ENCODERS[proto]
        tips = r.set_header(len(cmd.tips)) + b"".join(bulk(t.encode()) for t in cmd.tips)
        specs = r.set_header(len(cmd.key_specs)) + b"".join(_value(r, s) for s in cmd.key_specs)
        subs = array([info(s, proto) for s in cmd.subcommands.values()])
        out = array([
            bulk(cmd.bname), integer(cmd.arity), _status_set(r, cmd.flags),
            integer(cmd.first_key), integer(cmd.last_key), integer(cmd.key_step),
            _status_set(r, cmd.acl_categories), tips, specs, subs,
        ])
        _info_cache[key] = out
    return out


def docs(cmd: Command, proto: int) -> bytes:
    """The docs map of one row (without its name)."""
    key = (id(cmd), proto)
    out = _docs_cache.get(key)
    if out is None:
        r = ENCODERS[proto]
        pairs = [(bulk(k.encode()), _value(r, v, k)) for k, v in cmd.docs.items()]
        if cmd.subcommands:
            pairs.append((bulk(b"subcommands"), r.map(
                [(bulk(s.bname), docs(s, proto)) for s in cmd.subcommands.values()])))
        out = r.map(pairs)
        _docs_cache[key] = out
    return out
