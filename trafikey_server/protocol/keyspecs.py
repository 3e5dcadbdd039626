"""Which arguments of a request are keys, read from the row's key specs.

Valkey describes every command's keys as data (``key_specs``: where the
search begins, by index or after a keyword, then a range or a count of keys)
and answers COMMAND GETKEYS, ACL key checks and cluster routing from that
description. The rows in the command table carry the same specs, so the
same walk serves COMMAND GETKEYS / GETKEYSANDFLAGS here and, later, the
cluster slot check.

The walk follows Valkey's ``getKeysUsingKeySpecs``: a spec that cannot be
satisfied by the arguments (keyword missing after the search start, a key
count that is not a number, keys running past the end) makes the whole
extraction invalid rather than partial, because a caller routing a request
must not act on half of its keys.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..util.errors import CommandError
from ..util.parsing import to_int
from .args import word

if TYPE_CHECKING:
    from .table import Command, Table

INVALID_COMMAND = b"ERR Invalid command specified"
NO_KEYS = b"ERR The command has no key arguments"
BAD_ARITY = b"ERR Invalid number of arguments specified for command"
BAD_ARGUMENTS = b"ERR Invalid arguments specified for command"

KeyRef = tuple[int, tuple[str, ...]]


def _set_flags(argv: Sequence[bytes]) -> list[KeyRef]:
    """SET's key flags depend on its arguments (Valkey's setGetKeys): with
    GET the old value is read, so RW+access; otherwise it is overwritten."""
    for a in argv[3:]:
        # Valkey compares a C string: "get" followed by a NUL matches too.
        if a[:3].lower() == b"get" and (len(a) == 3 or a[3] == 0):
            return [(1, ("RW", "access", "update"))]
    return [(1, ("OW", "update"))]


def _bitfield_flags(argv: Sequence[bytes]) -> list[KeyRef]:
    """BITFIELD only reads its key when every operation is a GET (with
    OVERFLOW between): Valkey's bitfieldGetKeys. Anything else, a syntax
    error included, counts as a write."""
    i, argc = 2, len(argv)
    while i < argc:
        w, rest = word(argv[i]), argc - i - 1
        if w == b"get" and rest >= 2:
            i += 3
        elif w == b"overflow" and rest >= 1:
            i += 2
        else:
            return [(1, ("RW", "access", "update"))]
    return [(1, ("RO", "access"))]


def _sort_keys(argv: Sequence[bytes]) -> list[KeyRef]:
    """SORT's keys (Valkey's sortGetKeys): the sorted key, and the key
    after the last STORE found while skipping the arguments of LIMIT, GET
    and BY. The specs cannot say it: STORE may come anywhere."""
    out: list[KeyRef] = [(1, ("RO", "access"))]
    store = 0
    argc = len(argv)
    i = 2
    while i < argc:
        w = word(argv[i])
        if w == b"limit":
            i += 2
        elif w in (b"get", b"by"):
            i += 1
        elif w == b"store" and i + 1 < argc:
            store = i + 1
        i += 1
    if store:
        out.append((store, ("OW", "update")))
    return out


def _sort_ro_keys(argv: Sequence[bytes]) -> list[KeyRef]:
    """SORT_RO reads one key, its first argument (sortROGetKeys)."""
    return [(1, ("RO", "access"))]


_MIGRATE_SKIP = {b"copy": 0, b"replace": 0, b"auth": 1, b"auth2": 2}


def _migrate_keys(argv: Sequence[bytes]) -> list[KeyRef]:
    """MIGRATE's keys (migrateGetKeys): its key argument, or everything
    after KEYS (none when the key argument is not empty, a syntax error
    MIGRATE itself reports); the option values before KEYS are skipped.
    Valkey asks that function only when its keyword spec finds a KEYS
    before the last argument; otherwise the key argument is the key."""
    first, num = 3, 1
    argc = len(argv)
    if not any(word(a) == b"keys" for a in argv[1:argc - 1]):
        return [(3, ("RW", "access", "delete"))]
    i = 6
    while i < argc:
        w = word(argv[i])
        if w == b"keys":
            if argv[3]:
                num = 0
            else:
                first, num = i + 1, argc - i - 1
            break
        i += _MIGRATE_SKIP.get(w, 0) + 1
    return [(first + k, ("RW", "access", "delete")) for k in range(num)]


def _georadius_keys(argv: Sequence[bytes]) -> list[KeyRef]:
    """GEORADIUS[BYMEMBER]'s keys (georadiusGetKeys): the source, and the
    key after the last STORE or STOREDIST from the sixth argument on (the
    later one wins, as in the command)."""
    out: list[KeyRef] = [(1, ("RO", "access"))]
    store = 0
    argc = len(argv)
    i = 5
    while i < argc:
        w = word(argv[i])
        if w in (b"store", b"storedist") and i + 1 < argc:
            store = i + 1
            i += 1
        i += 1
    if store:
        out.append((store, ("OW", "update")))
    return out


# Valkey resolves key specs flagged ``variable_flags`` with a per-command
# function (its getkeys_proc) instead of the spec's declared flags, and
# falls back to that function when the specs are incomplete (SORT's keys
# come from its options). Rows are matched by name; a row without an entry
# here keeps its spec flags.
_VARIABLE_FLAGS: dict[str, Callable[[Sequence[bytes]], list[KeyRef]]] = {
    "set": _set_flags, "bitfield": _bitfield_flags, "sort": _sort_keys, "sort_ro": _sort_ro_keys,
    "migrate": _migrate_keys,
    "georadius": _georadius_keys, "georadiusbymember": _georadius_keys,
}


def resolve(table: Table, argv: Sequence[bytes]) -> Command:
    """The row a full request names (a subcommand's row for containers), as
    COMMAND GETKEYS looks it up."""
    cmd = table.lookup(argv[0]) if argv else None
    if cmd is not None and cmd.subcommands and len(argv) >= 2:
        cmd = cmd.subcommands.get(argv[1].lower())
    if cmd is None:
        raise CommandError(INVALID_COMMAND)
    return cmd


def has_keys(cmd: Command) -> bool:
    return any("not_key" not in spec.get("flags", ()) for spec in cmd.key_specs)


def _begin(spec: dict[str, Any], argv: Sequence[bytes]) -> int:
    """Index of the first key of the spec, or 0 when its keyword is absent."""
    bs = spec.get("begin_search", {})
    s = bs.get("spec", {})
    kind = bs.get("type")
    if kind == "index":
        return int(s.get("index", 0))
    if kind != "keyword":
        return -1
    argc = len(argv)
    startfrom = int(s.get("startfrom", 0))
    keyword = str(s.get("keyword", "")).encode().lower()
    start = startfrom if startfrom > 0 else argc + startfrom
    end = argc - 1 if startfrom > 0 else 1
    i = start
    step = 1 if start <= end else -1
    # The end index itself is never examined: a keyword there (forwards) has
    # no key after it, and index 0 (backwards) is the command name.
    while i != end:
        if i >= argc or i < 1:
            break
        if argv[i].lower() == keyword:
            return i + 1
        i += step
    return 0


def _spec_range(spec: dict[str, Any], argv: Sequence[bytes]) -> tuple[int, int, int] | None:
    """(first, last, step) of one spec, or None when the arguments do not fit it."""
    first = _begin(spec, argv)
    if first == 0:
        return (0, -1, 1)  # keyword not found: the spec contributes no keys
    if first < 0:
        return None
    argc = len(argv)
    fk = spec.get("find_keys", {})
    s = fk.get("spec", {})
    kind = fk.get("type")
    if kind == "range":
        step = int(s.get("keystep", 1))
        lastkey = int(s.get("lastkey", 0))
        limit = int(s.get("limit", 0))
        if lastkey >= 0:
            last = first + lastkey
        elif not limit:
            last = argc + lastkey
        else:
            last = first + ((argc - first) // limit + lastkey)
    elif kind == "keynum":
        step = int(s.get("keystep", 1))
        idx = first + int(s.get("keynumidx", 0))
        if idx >= argc:
            return None
        numkeys = to_int(argv[idx])
        if numkeys is None or numkeys < 0:
            return None
        first += int(s.get("firstkey", 1))
        # Valkey 9.1 steps over the keynum keys (MSETEX: key value pairs).
        last = first + (numkeys - 1) * max(step, 1)
    else:
        return None
    if last >= argc or last < first or first >= argc:
        return None
    return first, last, max(step, 1)


def extract(cmd: Command, argv: Sequence[bytes]) -> list[KeyRef] | None:
    """Positions and access flags of the keys in argv, or None when the
    arguments do not fit the specs (Valkey's invalid_spec)."""
    resolver = _VARIABLE_FLAGS.get(cmd.name)
    if resolver is not None:
        return resolver(argv)
    out: list[KeyRef] = []
    argc = len(argv)
    for spec in cmd.key_specs:
        flags = tuple(spec.get("flags", ()))
        if "not_key" in flags:
            continue
        rng = _spec_range(spec, argv)
        if rng is None:
            return None
        first, last, step = rng
        out.extend((i, flags) for i in range(first, last + 1, step) if i < argc)
        if "incomplete" in flags:
            return None
    return out


def _checked(cmd: Command, argv: Sequence[bytes]) -> list[KeyRef]:
    if not has_keys(cmd):
        raise CommandError(NO_KEYS)
    if not cmd.arity_ok(len(argv)):
        raise CommandError(BAD_ARITY)
    refs = extract(cmd, argv)
    if not refs:
        if "no_mandatory_keys" in cmd.flags:
            return []
        raise CommandError(BAD_ARGUMENTS)
    return refs


def keys_of(cmd: Command, argv: Sequence[bytes]) -> list[int]:
    """Positions in argv (argv[0] is the command name) of the request's keys,
    refused with COMMAND GETKEYS's errors when it has none or does not fit."""
    return [pos for pos, _ in _checked(cmd, argv)]


def keys_and_flags(cmd: Command, argv: Sequence[bytes]) -> list[KeyRef]:
    """As ``keys_of``, with each key's access flags (GETKEYSANDFLAGS)."""
    return _checked(cmd, argv)


def request_keys(cmd: Command, argv: Sequence[bytes]) -> list[bytes]:
    """The keys a request names, for routing checks; none when the
    arguments do not fit the specs (the command itself will refuse them)."""
    refs = extract(cmd, argv)
    if not refs:
        if cmd.key_specs and cmd.first_key and all("not_key" in spec.get("flags", ()) for spec in cmd.key_specs):
            # Shard channels (SSUBSCRIBE, SPUBLISH, ...) are no keys, but a
            # cluster routes them by their slot all the same: Valkey reads
            # them from the command's legacy key range.
            last = cmd.last_key if cmd.last_key >= 0 else len(argv) + cmd.last_key
            return list(argv[cmd.first_key:last + 1:max(cmd.key_step, 1)])
        return []
    return [argv[pos] for pos, _ in refs]
