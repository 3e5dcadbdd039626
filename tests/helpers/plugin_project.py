"""A small project that uses the pytest plugin as a user's project does:
made with ``pytester``, run by pytest in a process of its own, importing
this checkout, with the plugin loaded through its entry point when the
package is installed and by name when it is not."""

from __future__ import annotations

import os
from importlib.metadata import entry_points

import pytest

from .servers import ROOT

PLUGIN = "trafikey_server.pytest_plugin"


def plugin_args() -> list[str]:
    installed = {ep.value for ep in entry_points(group="pytest11")}
    return [] if PLUGIN in installed else ["-p", PLUGIN]


def user_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """``pytester``, with this checkout first on the path of the runs it makes."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return pytester


def run(project: pytest.Pytester, *args: str, timeout: float = 120) -> pytest.RunResult:
    return project.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", *args, timeout=timeout)
