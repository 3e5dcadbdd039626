"""Rewrite the table of Valkey's own test suite in native mode.

docs/compatibility.md gives, between the ``<!-- native:begin -->`` and
``<!-- native:end -->`` markers, what this server passes of each unit of
Valkey's TCL suite run in native mode (the harness starts the server
itself, with config files, restarts and files on disk) beside what
valkey-server 9.1.2 passes, and names every test of a unit still short of
Valkey's count with the reason it fails here. The table is derived, never
hand-kept: this script reads the runner's output and logs; the reasons
for known shortfalls are the list below, matched by the test's name.

Usage: python tools/gen_native_table.py BASELINE RUN [RUN ...]
BASELINE is the runner's output for valkey-server 9.1.2 (unit lines); each
RUN is a runner output file, its log directory beside it named by the
``# ... logs: DIR`` line it printed. A unit run again in a later RUN takes
that run's count; a unit in no RUN keeps the count and the failing tests
the table already gives, so a few units can be run again alone.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "compatibility.md"
BEGIN = "<!-- native:begin -->"
END = "<!-- native:end -->"

UNIT = re.compile(r"^(\S+) passed=(\d+) failed=(\d+) skipped=(\d+) aborted=(yes|no)(?:\s+#.*)?$")
FAILED = re.compile(r"^\[(?:err|exception)\]: (.+?)(?: in tests/\S+)?$")

# Why a test fails here, by a part of its name (the first that matches).
REASONS: tuple[tuple[str, str], ...] = (
    ("sanitize-dump-payload", "sanitize-dump-payload: Valkey 9.1.2's build lacks it too"),
    ("corrupt payload", "needs sanitize-dump-payload (Valkey 9.1.2's build lacks it)"),
    ("replica", "replication is not served"),
    ("to slave", "replication is not served"),
    ("Replication tests", "replication is not served"),
    ("setup replication", "replication is not served"),
    ("would propagate", "replication is not served"),
    ("NOSUB", "an older test: valkey-server 9.1.2 fails it too"),
    ("from non-subscribed channels", "an older test: valkey-server 9.1.2 fails it too"),
    ("Extended Redis Compatibility", "an older test: valkey-server 9.1.2 fails it too"),
    ("Test scripting debug protocol parsing", "an older test: valkey-server 9.1.2 fails it too"),
    ("Shebang support for lua engine", "an older test: valkey-server 9.1.2 fails it too"),
    ("not allowed inside a transaction", "an older test: valkey-server 9.1.2 fails it too"),
    ("MULTI with SAVE", "an older test: valkey-server 9.1.2 fails it too"),
    ("MULTI with SHUTDOWN", "an older test: valkey-server 9.1.2 fails it too"),
    ("evicted events", "the job core's brand key {emq}:version is evicted first (db 0)"),
    ("Keyspace notifications: new key test", "follows the failure before it (maxmemory left set)"),
    ("publish to self", "follows the failures before it (their subscribers left open)"),
    ("unsubscribe inside multi", "follows the failures before it (their subscribers left open)"),
    ("SCAN unknown type", "the job core's brand key {emq}:version is counted in INFO keyspace"),
    ("SCAN with expired keys", "the job core's brand key {emq}:version is counted in INFO keyspace"),
    ("shared objects", "Valkey's shared integers and in-place INCR are not modelled (OBJECT REFCOUNT, addresses)"),
    ("modify objects in-place", "Valkey's shared integers and in-place INCR are not modelled"),
    ("HTSTATS", "DEBUG HTSTATS (hash table internals) is not served"),
    ("rehash", "DEBUG HTSTATS (hash table internals) is not served"),
    ("resize empty dict", "DEBUG HTSTATS (hash table internals) is not served"),
    ("Process title", "the process title is Python's command line"),
    ("CLIENT LIST", "an older test: valkey-server 9.1.2 fails it too"),
    ("CLIENT INFO", "an older test: valkey-server 9.1.2 fails it too"),
    ("CLIENT KILL with illegal arguments", "an older test: valkey-server 9.1.2 fails it too"),
    ("CONFIG sanity", "an older test: valkey-server 9.1.2 fails it too"),
    ("Test child sending info", "copy-on-write sizes are not reported by the child"),
    ("RDB stream encoding", "needs sanitize-dump-payload (Valkey 9.1.2's build lacks it)"),
    ("LATENCY of expire events", "the expiry here frees the test's set in less than its 20 ms threshold"),
    ("LATENCY GRAPH can output the expire", "the expiry here frees the test's set in less than its 20 ms threshold"),
    ("oom-score-adj works as expected", "it turns the server into a replica (replication is not served)"),
    ("integers are", "Valkey's shared integers are not modelled (OBJECT REFCOUNT)"),
    ("Shared integers", "Valkey's shared integers are not modelled (OBJECT REFCOUNT)"),
    ("propagation with eviction", "replication is not served"),
    ("slave buffer", "replication is not served"),
    ("Lazy-expire should not be wrapped", "replication is not served (the test reads a replication stream)"),
    ("should not propagate the read command", "replication is not served (the test reads a replication stream)"),
    ("propagated as absolute timestamp in milliseconds in AOF", "the job core's brand key {emq}:version is "
                                                               "written at start-up"),
    ("bind-source-addr", "replication is not served"),
    ("no-touch mode", "CLIENT NO-TOUCH is kept as a flag only: a read still updates the key's LRU/LFU field"),
    ("lazy free a stream", "lazyfree's effort of a stream's consumer groups is not counted as Valkey counts it"),
    ("Library names can only contain", "an older test: valkey-server 9.1.2 answers with another text"),
    ("test registration with", "an older test: valkey-server 9.1.2 answers with another text (Function names ...)"),
    ("allow stale", "replication is not served"),
    ("read-only slaves", "replication is not served"),
    ("BYRADIUS and BYBOX one must exist", "an older test: valkey-server 9.1.2 answers with another text"),
    ("primaryauth", "replication is not served"),
    ("shebang flag on replica", "replication is not served"),
    ("allow-stale", "replication is not served"),
    ("WAIT", "replication is not served"),
    ("valkey-check-aof", "valkey-check-aof is not shipped"),
    ("Short read", "valkey-check-aof is not shipped"),
    ("Truncate AOF to specific timestamp", "valkey-check-aof is not shipped"),
    ("Setup slave", "replication is not served"),
    ('key "pid" not known', "the harness lost its server list after a refused REPLICAOF (an error, not an "
                            "assertion) and stopped the unit"),
    ("FLUSHDB / FLUSHALL should persist in AOF", "the job core's brand key {emq}:version is written at start-up"),
    ("MULTI with FLUSHALL and AOF", "the job core's brand key {emq}:version is written at start-up"),
    ("Generate timestamp annotations in AOF", "the job core's brand key {emq}:version is written at start-up"),
    ("Server started empty", "the job core's brand key {emq}:version is written at start-up"),
    ("RDB load info", "the job core's brand key {emq}:version is written at start-up"),
    ("RDB encoding loading test", "the job core's brand key {emq}:version is written at start-up"),
    ("Can't start the Valkey server", "a start-up the harness did not see through (see the unit's log)"),
)


def reason(test: str) -> str:
    for part, why in REASONS:
        if part in test:
            return why
    return "not analysed yet"


def units(text: str) -> dict[str, tuple[int, bool]]:
    """Each unit's passed count and whether it was aborted."""
    out: dict[str, tuple[int, bool]] = {}
    for line in text.splitlines():
        m = UNIT.match(line.strip())
        if m:
            out[m.group(1)] = (int(m.group(2)), m.group(5) == "yes")
    return out


def failures(run: Path, names: set[str]) -> dict[str, list[str]]:
    """Each unit's failed test names, from the log directory a run names
    (a unit's logs are named after it, / as _, retries included)."""
    m = re.search(r"logs: (\S+)", run.read_text())
    out: dict[str, list[str]] = {}
    if not m or not Path(m.group(1)).is_dir():
        return out
    logs = sorted(Path(m.group(1)).iterdir())
    for unit in names:
        prefix = unit.replace("/", "_") + ".log"
        found = out.setdefault(unit, [])
        for log in logs:
            if not log.name.startswith(prefix):
                continue
            for line in log.read_text(errors="replace").splitlines():
                f = FAILED.match(line)
                if f and f.group(1) not in found:
                    found.append(f.group(1))
    return out


def table(baseline: dict[str, tuple[int, bool]], here: dict[str, tuple[int, bool]],
          failed: dict[str, list[str]]) -> str:
    lines = ["| unit | trafikey-server | Valkey 9.1.2 |", "|---|--:|--:|"]
    ours_total = theirs_total = 0
    short: list[str] = []
    for unit in sorted(set(baseline) | set(here)):
        theirs = baseline.get(unit, (0, False))[0]
        ours, aborted = here.get(unit, (0, False))
        ours_total += ours
        theirs_total += theirs
        mark = " (aborted)" if aborted else ""
        lines.append(f"| {unit} | {ours}{mark} | {theirs} |")
        if ours < theirs:
            tests = failed.get(unit, [])
            short.append(f"- {unit} ({ours} of {theirs}): " + ("; ".join(
                f"{t} — {reason(t)}" for t in tests) if tests else "no log kept"))
    lines.append(f"| **total** | **{ours_total}** | **{theirs_total}** |")
    return "\n".join(lines) + "\n\nUnits short of Valkey's count, and the tests failing there:\n\n" + "\n".join(short)


ROW = re.compile(r"^\| (\S+) \| (\d+)( \(aborted\))? \| \d+ \|$")
SHORT = re.compile(r"^- (\S+) \(\d+ of \d+\): (.*)$")


def kept(doc: str) -> tuple[dict[str, tuple[int, bool]], dict[str, list[str]]]:
    """The counts and failing tests the table gives now."""
    here: dict[str, tuple[int, bool]] = {}
    failed: dict[str, list[str]] = {}
    for line in doc.splitlines():
        m = ROW.match(line)
        if m:
            here[m.group(1)] = (int(m.group(2)), m.group(3) is not None)
        m = SHORT.match(line)
        if m and m.group(2) != "no log kept":
            failed[m.group(1)] = [t.rsplit(" — ", 1)[0] for t in m.group(2).split("; ")]
    return here, failed


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__)
        return 64
    baseline = units(Path(argv[1]).read_text())
    doc = DOC.read_text()
    start, end = doc.index(BEGIN) + len(BEGIN), doc.index(END)
    here, failed = kept(doc[start:end])
    for name in argv[2:]:
        run = Path(name)
        counts = units(run.read_text())
        here.update(counts)
        failed.update(failures(run, set(counts)))
    DOC.write_text(doc[:start] + "\n" + table(baseline, here, failed) + "\n" + doc[end:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
