"""python3 -m compat [--libraries rq,huey] [--subset]: run the libraries'
suites against Valkey 9.1.2 and trafikey-server and compare.

Exit status 1 when a test that passes on Valkey fails on trafikey-server and
is not listed, with its reason, in docs/compatibility.md (or when a listed
one no longer fails: the list must not hide anything)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from .libraries import LIBRARIES
from .runner import ROOT, default_cache, host_default_port_free, netns_available, run_library

KNOWN = ROOT / "docs" / "compatibility.md"
# a row of the known-failures table: | library | test id | reason |
ROW = re.compile(r"^\|\s*([\w.-]+)\s*\|\s*`([^`]+)`\s*\|\s*(.+?)\s*\|\s*$")


def known_failures() -> dict[tuple[str, str], str]:
    """The tests that cannot pass for a reason of the library's own,
    (library, test id) -> reason, from docs/compatibility.md."""
    return parse_known(KNOWN.read_text()) if KNOWN.exists() else {}


def parse_known(text: str) -> dict[tuple[str, str], str]:
    """The rows of the table between the library-failures markers; the
    document's other tables are not read."""
    start, end = text.find("<!-- library-failures:begin -->"), text.find("<!-- library-failures:end -->")
    if start < 0 or end < start:
        return {}
    return {(m[1], m[2]): m[3] for line in text[start:end].splitlines() if (m := ROW.match(line))}


def markdown(results: list[dict], known: dict[tuple[str, str], str]) -> str:
    lines = ["| library | version | tests | passing on Valkey 9.1.2 | passing on trafikey-server | gap |",
             "|---|---|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['library']} | {r['version']} | {r['cases']} | {r['passed_valkey']} | "
                     f"{r['passed_trafikey']} | {len(r['gap'])} |")
    for r in results:
        lines += ["", f"## {r['library']} {r['version']}" + (" (subset)" if r["subset"] else "")]
        if r["gap"]:
            lines.append("Passing on Valkey, not on trafikey-server:")
            lines += [f"- `{t}`" + (f" (listed: {known[(r['library'], t)]})" if (r["library"], t) in known else "")
                      for t in r["gap"]]
        for key, title in (("flaky_valkey", "Flaky on Valkey (not counted)"),
                           ("flaky_trafikey", "Passed on trafikey-server only when rerun"),
                           ("passed_trafikey_not_valkey", "Passing on trafikey-server, not on Valkey")):
            if r[key]:
                lines.append(f"{title}:")
                lines += [f"- `{t}`" for t in r[key]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m compat", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--libraries", default=",".join(LIBRARIES),
                    help=f"comma-separated, from: {', '.join(LIBRARIES)} (default: all)")
    ap.add_argument("--subset", action="store_true", help="each library's fixed representative subset (CI)")
    ap.add_argument("--cache", type=Path, default=None,
                    help="where sdists, sources and virtual environments go (default: $TRAFIKEY_COMPAT_CACHE "
                         "or <tmp>/trafikey-compat)")
    ap.add_argument("--out", type=Path, default=None, help="results directory (default: <cache>/results/<time>)")
    ap.add_argument("--no-netns", action="store_true",
                    help="run the servers on the host instead of in a network namespace each: on "
                         "localhost:6379 when it is free, else on free ports (suites with a fixed address "
                         "then cannot reach them)")
    ap.add_argument("--run-timeout", type=int, default=3600, help="seconds one pytest run may take")
    args = ap.parse_args(argv)
    names = [n for n in args.libraries.split(",") if n]
    unknown = [n for n in names if n not in LIBRARIES]
    if unknown:
        ap.error(f"unknown libraries: {', '.join(unknown)}")
    cache = (args.cache or default_cache()).resolve()
    out = (args.out or cache / "results" / time.strftime("%Y%m%d-%H%M%S")).resolve()
    netns = not args.no_netns and netns_available()
    default_port = netns or host_default_port_free()
    if not netns:
        print("servers on the host's " + ("localhost:6379" if default_port else "free ports (6379 is taken)")
              + (", no network namespaces here" if not args.no_netns else ""), file=sys.stderr)
    known = known_failures()
    results = []
    for name in names:
        results.append(run_library(LIBRARIES[name], cache, out / name, args.subset, netns, args.run_timeout,
                                   default_port))
        (out / "results.json").write_text(json.dumps(results, indent=1))
    report = markdown(results, known)
    (out / "report.md").write_text(report)
    print(report)
    print(f"results: {out}")
    status = 0
    for r in results:
        if r["no_tests_ran"]:
            print(f"{r['library']}: no test ran against {', '.join(r['no_tests_ran'])}", file=sys.stderr)
            status = 1
        unlisted = [t for t in r["gap"] if (r["library"], t) not in known]
        if unlisted:
            print(f"{r['library']}: {len(unlisted)} tests pass on Valkey and fail here, unlisted", file=sys.stderr)
            status = 1
        if not r["subset"]:
            stale = [t for (lib, t) in known if lib == r["library"] and t not in r["gap"]]
            if stale:
                print(f"{r['library']}: listed in {KNOWN.name} but not failing: {', '.join(stale)}", file=sys.stderr)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
