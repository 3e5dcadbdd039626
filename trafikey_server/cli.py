"""``trafikey-server [configfile] [--name value ...]``, as valkey-server."""

from __future__ import annotations

import os
import sys

from . import __version__
from .check import check_aof, check_rdb
from .server import run
from .services.config import ConfigError, parse_args
from .util.buildinfo import version_line

USAGE = """Usage: trafikey-server [/path/to/trafikey.conf] [options]
       trafikey-server -v or --version
       trafikey-server -h or --help
       trafikey-server --check-aof [--fix] <file.manifest|file.aof>
       trafikey-server --check-rdb <file.rdb>

Examples:
       trafikey-server (run the server with default conf)
       trafikey-server /etc/trafikey/6379.conf
       trafikey-server --port 7777
       trafikey-server --port 7777 --requirepass secret
       trafikey-server /etc/mytrafikey.conf --loglevel verbose
       trafikey-server --appendonly yes --enable-clock-command yes

Options are the config file's directives (see trafikey.conf) given as --name value.
"""


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-v", "--version"):
        print(version_line())
        return 0
    if args and args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    if args and args[0] in ("--check-aof", "--check-rdb"):
        return _check(args)
    try:
        config = parse_args(args)
    except ConfigError as e:
        print(f"\n*** FATAL CONFIG FILE ERROR (trafikey-server {__version__}) ***", file=sys.stderr)
        print(e, file=sys.stderr)
        return 1
    except OSError as e:
        print(f"Fatal error, can't open config file '{os.path.abspath(e.filename or '')}': {e.strerror}",
              file=sys.stderr)
        return 1
    return run(config)


def _check(args: list[str]) -> int:
    """valkey-check-aof / valkey-check-rdb: the same words and exit codes."""
    rest = args[1:]
    fix = "--fix" in rest
    files = [a for a in rest if a != "--fix"]
    if len(files) != 1 or (fix and args[0] == "--check-rdb"):
        if args[0] == "--check-aof":
            print("Usage: trafikey-server --check-aof [--fix] <file.manifest|file.aof>")
        else:
            print("Usage: trafikey-server --check-rdb <rdb-file-name>")
        return 1
    if args[0] == "--check-rdb":
        return check_rdb(files[0])
    return check_aof(files[0], fix)
