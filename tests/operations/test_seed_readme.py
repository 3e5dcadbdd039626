"""The README's "Reproducible randomness" example, run as printed: its ini
file and its test, in a project of their own that pytest runs in a separate
process with the plugin's fixtures (as tests/operations runs the plugin)."""

from __future__ import annotations

import pytest
from helpers.plugin_project import run, user_project
from helpers.readme import code_blocks

pytest_plugins = ["pytester"]

HEADING = "Reproducible randomness"


@pytest.mark.slow
def test_readme_example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    (ini,) = code_blocks(HEADING, "ini")
    (code,) = code_blocks(HEADING, "python")
    assert "--seed 42" in ini
    project = user_project(pytester, monkeypatch)
    project.makeini(ini)
    project.makepyfile(test_readme=code)
    result = run(project)
    result.assert_outcomes(passed=1)
