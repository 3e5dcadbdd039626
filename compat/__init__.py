"""Real libraries' own test suites against trafikey-server and Valkey 9.1.2.

For each library in ``libraries.py`` (a pinned version), the harness has pip
download its source distribution (``pip download --no-deps --no-binary
:all:``, so the user's pip configuration applies: index, mirror, proxy) into
a cache directory outside the repository, installs the library and its test dependencies into a virtual
environment of its own there, and runs the library's test suite twice: once
against a fresh valkey-server 9.1.2 and once against a fresh trafikey-server,
each pointed at the way the library's tests expect (most of them use
``localhost:6379`` and nothing else, so by default each run happens in a
network namespace of its own where the server owns port 6379). Per-test
outcomes come from pytest's JUnit XML; failed tests are rerun up to twice on
both servers so a flaky test is told apart from a broken one. Nothing of the
libraries is kept in this repository.

Run ``python3 -m compat --help``.
"""
