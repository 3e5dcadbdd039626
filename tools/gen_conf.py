"""Write trafikey.conf, the documented config file, from the option table.

Every option the server accepts (trafikey_server/services/config.py) is listed with
its kind, range or choices, aliases and default, as a commented-out line in
the syntax CONFIG REWRITE writes, so uncommenting a line changes nothing
until its value is edited. A test fails when the file and the table
disagree: run this after changing the table.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trafikey_server.services.config import Config, Option  # noqa: E402
from trafikey_server.services.config_rewrite import lines_for  # noqa: E402

OUT = ROOT / "trafikey.conf"

HEADER = """\
# trafikey-server configuration file, in valkey.conf syntax.
#
# Start the server with it as the first argument:
#
#     trafikey-server /path/to/trafikey.conf [--name value ...]
#
# Options given on the command line after the file override it, and
# CONFIG SET changes a running server; CONFIG REWRITE writes the running
# options back into the file the server started with, keeping its comments.
#
# Every option is listed below, commented out at its default value: remove
# the '#' and edit the value. The names, kinds, ranges and checks are
# Valkey 9.1's, so a valkey.conf written for Valkey loads here too; options
# that have no effect in this server are accepted (and refused with
# Valkey's errors) so that tools which set them keep working.
#
# Sizes take Valkey's units: 1k = 1000 bytes, 1kb = 1024 bytes, likewise
# m/mb and g/gb, case-insensitive.
"""

OWN = {
    "emq-brand": "The job-core brand written to {emq}:version at start (a connector reads it\n"
                 "# before it sends anything); 'none' writes none.",
    "enable-clock-command": "Enables TRAFIKEY.CLOCK, which freezes and moves the server's clock for\n"
                            "# tests (key expiry, leases, schedules). Never on a production server.",
    "enable-fault-command": "Enables TRAFIKEY.FAULT, whose rules answer chosen commands with errors,\n"
                            "# dropped or cut connections and delayed replies, for tests of a client's\n"
                            "# retry paths. Never on a production server.",
    "cluster-slot-checks": "Refuses keys of one command that hash to different slots (CROSSSLOT), as a\n"
                           "# cluster would, so a suite catches them before it meets a cluster.",
    "seed": "Seeds every random draw (SPOP, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER, RANDOMKEY,\n"
            "# eviction, the start of Lua's math.random, run_id), so that a run repeats them;\n"
            "# an integer, or empty to draw from the OS. CONFIG SET seed re-seeds at once.",
}


def describe(opt: Option) -> str:
    kind = {"int": "integer", "memory": "size", "bool": "yes or no", "string": "string",
            "enum": "one of", "octal": "octal", "special": "value"}[opt.kind]
    if opt.kind == "enum":
        kind = ("any of " if opt.multi else "one of ") + ", ".join(opt.choices)
    elif opt.low is not None and opt.high is not None and opt.kind in ("int", "memory"):
        kind += f", {opt.low} to {opt.high}"
        if opt.percent:
            kind += " (or N% of maxmemory)"
    notes = [kind]
    if opt.aliases:
        notes.append("also " + ", ".join(opt.aliases))
    if not opt.mutable:
        notes.append("set at start only")
    if opt.protected:
        notes.append("CONFIG SET needs enable-protected-configs")
    return f"{opt.name}: " + "; ".join(notes)


def block(opt: Option) -> list[str]:
    if opt.name == "dir":
        lines = ["dir ./"]
    elif opt.name == "rdma-bind":
        return [f"# {opt.name}: refused, there is no RDMA support", ""]
    else:
        lines = [line for line, _ in lines_for(opt, opt.default)]
    out = [f"# {describe(opt)}"]
    if opt.name in OWN:
        out.append(f"# {OWN[opt.name]}")
    out += [f"# {line}" for line in lines]
    return [*out, ""]


def render() -> str:
    config = Config()
    seen: set[str] = set()
    options = [o for o in config.options.values() if not (o.name in seen or seen.add(o.name))]  # type: ignore[func-returns-value]
    plain = sorted((o for o in options if not o.hidden and o.name not in OWN), key=lambda o: o.name)
    hidden = sorted((o for o in options if o.hidden), key=lambda o: o.name)
    own = [o for o in options if o.name in OWN]
    out = [HEADER, "################################ THIS SERVER'S OWN ################################", ""]
    for o in own:
        out += block(o)
    out += ["################################# VALKEY OPTIONS #################################", ""]
    for o in plain:
        out += block(o)
    out += ["######################## TESTING (CONFIG GET by exact name) ######################", ""]
    for o in hidden:
        out += block(o)
    while out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT.relative_to(ROOT)}")
