"""The library harness's own bookkeeping (python3 -m compat): how it reads
pytest's JUnit XML, counts reruns, and reads the list of tests that fail for
a library's own reason. Running the suites themselves needs a package index
(pip downloads the sdists) and minutes per library, so it is a command of its
own, not part of this suite."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from helpers.servers import ROOT, free_port

from compat.__main__ import known_failures, parse_known
from compat.libraries import LIBRARIES, Library
from compat.runner import SHIMS, Outcomes, fetch_sdist, lay_overlay, parse_junit, unpack_sdist

# The library harness's own tests: -m compat runs them, -m "not compat" leaves them out.
pytestmark = pytest.mark.compat

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_a.TestA" name="test_ok" time="0.1"/>
<testcase classname="tests.test_a.TestA" name="test_bad" time="0.1"><failure message="boom">x</failure></testcase>
<testcase classname="tests.test_a.TestA" name="test_skip" time="0"><skipped message="no pg">s</skipped></testcase>
<testcase classname="tests.test_b" name="test_teardown[1]" time="0.1"/>
<testcase classname="tests.test_b" name="test_teardown[1]" time="0.1"><error message="teardown">e</error></testcase>
</testsuite></testsuites>
"""


def test_junit_outcomes_keep_the_worse_of_a_doubled_case(tmp_path: Path) -> None:
    p = tmp_path / "r.xml"
    p.write_text(JUNIT)
    assert parse_junit(p) == {
        "tests.test_a.TestA::test_ok": "passed",
        "tests.test_a.TestA::test_bad": "failed",
        "tests.test_a.TestA::test_skip": "skipped",
        "tests.test_b::test_teardown[1]": "error",
    }


def test_a_test_passing_on_a_rerun_is_flaky_and_passes() -> None:
    oc = Outcomes()
    oc.add({"a": "passed", "b": "failed", "c": "error", "d": "skipped"})
    oc.add({"b": "passed", "c": "failed"})
    oc.add({"c": "failed"})
    assert oc.passed() == {"a", "b"}
    assert oc.flaky() == {"b"}
    assert oc.final("c") == "failed"
    assert oc.final("d") == "skipped"


DOC = """| command | why |
|---|---|
| other | `not-an-entry` | of another table |
<!-- library-failures:begin -->
| library | test | reason |
|---|---|---|
| huey | `huey.tests.test_x.T::test_y` | needs a module |
<!-- library-failures:end -->
| rq | `after::the_end` | not an entry either |
"""


def test_known_failures_come_from_their_table_only() -> None:
    assert parse_known(DOC) == {("huey", "huey.tests.test_x.T::test_y"): "needs a module"}
    assert parse_known(DOC.replace("<!-- library-failures:begin -->", "")) == {}
    known = known_failures()
    assert all(lib and tid and reason for (lib, tid), reason in known.items())
    text = (Path(__file__).resolve().parents[2] / "docs" / "compatibility.md").read_text()
    assert "<!-- library-failures:begin -->" in text and "<!-- library-failures:end -->" in text


def _sdist(tmp_path: Path) -> Path:
    src = tmp_path / "lib-1.0"
    (src / "tests").mkdir(parents=True)
    (src / "tests" / "test_a.py").write_text("from tests.helpers import x\n")
    return src


def test_the_overlay_adds_the_missing_files_and_follows_the_shims(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    shims = tmp_path / "shims"
    (shims / "lib" / "tests").mkdir(parents=True)
    (shims / "lib" / "tests" / "helpers.py").write_text("x = 1\n")
    (shims / "lib" / "tests" / "conftest.py").write_text("")
    monkeypatch.setattr("compat.runner.SHIMS", shims)
    lib = Library(name="lib", dist="lib", version="1.0", requirements=(), paths=("tests",), overlay="lib")
    src = _sdist(tmp_path)
    lay_overlay(lib, src)
    assert (src / "tests" / "helpers.py").read_text() == "x = 1\n"
    assert (src / "tests" / "conftest.py").exists()
    # a shim edited, one dropped: the next run lays the new text and removes the dropped file
    (shims / "lib" / "tests" / "helpers.py").write_text("x = 2\n")
    (shims / "lib" / "tests" / "conftest.py").unlink()
    lay_overlay(lib, src)
    assert (src / "tests" / "helpers.py").read_text() == "x = 2\n"
    assert not (src / "tests" / "conftest.py").exists()
    assert (src / "tests" / "test_a.py").read_text() == "from tests.helpers import x\n"


def test_the_overlay_never_replaces_a_file_the_sdist_ships(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shims = tmp_path / "shims"
    (shims / "lib" / "tests").mkdir(parents=True)
    (shims / "lib" / "tests" / "test_a.py").write_text("pass\n")
    monkeypatch.setattr("compat.runner.SHIMS", shims)
    lib = Library(name="lib", dist="lib", version="1.0", requirements=(), paths=("tests",), overlay="lib")
    src = _sdist(tmp_path)
    with pytest.raises(RuntimeError, match=r"the sdist ships tests/test_a\.py"):
        lay_overlay(lib, src)
    assert (src / "tests" / "test_a.py").read_text() == "from tests.helpers import x\n"


# An sdist pip can download with no network: its build backend is in the
# archive and needs nothing installed (pip download prepares its metadata).
TINY_BACKEND = """\
import os


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, "tinylib-1.0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\\nName: tinylib\\nVersion: 1.0\\n")
    return "tinylib-1.0.dist-info"
"""


def _tiny_index(tmp_path: Path) -> Path:
    top = tmp_path / "build" / "tinylib-1.0"
    (top / "tests").mkdir(parents=True)
    (top / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "tiny_backend"\nbackend-path = ["."]\n')
    (top / "tiny_backend.py").write_text(TINY_BACKEND)
    (top / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: tinylib\nVersion: 1.0\n")
    (top / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    index = tmp_path / "index"
    index.mkdir()
    with tarfile.open(index / "tinylib-1.0.tar.gz", "w:gz") as tf:
        tf.add(top, arcname="tinylib-1.0")
    return index


def test_the_sdist_is_downloaded_by_pip_with_the_users_configuration(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """fetch_sdist downloads through pip, so where pip is told to look (here
    no index and a local directory, as a mirror would be configured) is
    where the sdist comes from; once unpacked, it is not fetched again."""
    index = _tiny_index(tmp_path)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    for var in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    lib = Library(name="tiny", dist="tinylib", version="1.0", requirements=(), paths=("tests",))
    cache = tmp_path / "cache"
    src = fetch_sdist(lib, cache)
    assert src == cache / "src" / "tinylib-1.0"
    assert (src / "tests" / "test_x.py").read_text() == "def test_x():\n    pass\n"
    assert (src / ".complete").read_text() == "tinylib-1.0.tar.gz"
    assert [f.name for f in (cache / "sdists" / "tinylib-1.0").iterdir()] == ["tinylib-1.0.tar.gz"]
    # the mirror gone: the unpacked copy is used, pip is not asked
    (index / "tinylib-1.0.tar.gz").unlink()
    assert fetch_sdist(lib, cache) == src
    # nor is a version the mirror does not hold invented
    with pytest.raises(subprocess.CalledProcessError):
        fetch_sdist(Library(name="tiny", dist="tinylib", version="2.0", requirements=(), paths=()), cache)


def test_the_harness_names_no_package_index() -> None:
    """Where sdists come from is pip's configuration, the user's: no index
    address, nor a fetch of its own, in the harness."""
    for path in (ROOT / "compat").glob("*.py"):
        text = path.read_text()
        assert "pypi.org" not in text and "urllib" not in text, path.name


def test_an_old_zip_sdist_unpacks_too(tmp_path: Path) -> None:
    archive = tmp_path / "old-0.1.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("old-0.1/tests/test_a.py", "pass\n")
    (tmp_path / "out").mkdir()
    top = unpack_sdist(archive, tmp_path / "out")
    assert top == tmp_path / "out" / "old-0.1"
    assert (top / "tests" / "test_a.py").read_text() == "pass\n"


def test_every_overlay_and_shim_named_by_a_library_exists() -> None:
    for lib in LIBRARIES.values():
        for name in (*lib.shims, *([lib.overlay] if lib.overlay else [])):
            assert (SHIMS / name).is_dir(), (lib.name, name)


def test_a_killed_harness_leaves_no_server_or_suite_behind(tmp_path: Path) -> None:
    """compat.inner's run ends with its parent, however the parent dies, and
    stops its server and the suite: nothing keeps the port or runs on."""
    port = free_port()
    pidfile = tmp_path / "suite.pid"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    spec = {
        "netns": False,
        "server_argv": [sys.executable, "-m", "trafikey_server", "--port", str(port), "--save", "",
                        "--dir", str(tmp_path)],
        "server_cwd": str(tmp_path), "server_env": env, "server_log": str(tmp_path / "server.log"),
        "port": port,
        # stands in for the library's pytest: says it runs, then waits
        "pytest_argv": [sys.executable, "-c",
                        f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(120)"],
        "cwd": str(tmp_path), "env": env, "pytest_log": str(tmp_path / "pytest.log"), "run_timeout": 120,
    }
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    # The harness's place: a parent that runs compat.inner and is then killed outright.
    parent = subprocess.Popen([sys.executable, "-c",
                               "import subprocess, sys; subprocess.run(sys.argv[1:])",
                               sys.executable, "-m", "compat.inner", str(spec_path)], cwd=str(ROOT), env=env)
    try:
        deadline = time.monotonic() + 30
        while not (pidfile.exists() and pidfile.read_text()):
            assert time.monotonic() < deadline, "the run never started its suite"
            time.sleep(0.05)
        suite = int(pidfile.read_text())
        socket.create_connection(("127.0.0.1", port), timeout=2).close()  # the server is up
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            server_up = True
        except OSError:
            server_up = False
        suite_up = _alive(suite)
        if not server_up and not suite_up:
            break
        assert time.monotonic() < deadline, f"left behind: server {server_up}, suite {suite_up}"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie no one reaps yet counts as gone
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    return False
