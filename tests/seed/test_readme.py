"""The README's "Reproducible randomness" example, run as printed: its ini
file and its test, in a project of their own that pytest runs in a separate
process with the plugin's fixtures (as tests/operations runs the plugin)."""

from __future__ import annotations

import os
from importlib.metadata import entry_points

import pytest
from helpers.readme import code_blocks
from helpers.servers import ROOT

pytest_plugins = ["pytester"]

PLUGIN = "trafikey_server.pytest_plugin"
HEADING = "Reproducible randomness"


def test_readme_example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    (ini,) = code_blocks(HEADING, "ini")
    (code,) = code_blocks(HEADING, "python")
    assert "--seed 42" in ini
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    pytester.makeini(ini)
    pytester.makepyfile(test_readme=code)
    installed = {ep.value for ep in entry_points(group="pytest11")}
    plugin = [] if PLUGIN in installed else ["-p", PLUGIN]
    result = pytester.runpytest_subprocess(*plugin, "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1)
