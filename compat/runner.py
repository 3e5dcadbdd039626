"""Fetch, install, run and compare: the harness's steps for one library."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from trafikey_server.util.procs import free_port, valkey_binary

from .libraries import Library

ROOT = Path(__file__).resolve().parents[1]
SHIMS = Path(__file__).resolve().parent / "shims"
SERVERS = ("valkey", "trafikey")
RERUNS = 2


def default_cache() -> Path:
    return Path(os.environ.get("TRAFIKEY_COMPAT_CACHE") or Path(tempfile.gettempdir()) / "trafikey-compat")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ---- fetching and installing -------------------------------------------------

def pip_download(lib: Library, dest: Path) -> list[str]:
    """The command that downloads the library's pinned sdist into dest: pip
    itself, so the user's pip configuration (index, mirror, proxy,
    certificates) applies and pip checks the file against the index's hash,
    as for any install. A file pip finds already in dest is checked, not
    downloaded again."""
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
            "--disable-pip-version-check", "-q", f"{lib.dist}=={lib.version}", "-d", str(dest)]


def unpack_sdist(archive: Path, into: Path) -> Path:
    """Unpack an sdist (.tar.gz or, for old ones, .zip) into the empty
    directory into; the one directory at its top."""
    if archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(into)
    else:
        with tarfile.open(archive) as tf:
            tf.extractall(into, filter="data")
    tops = list(into.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        raise RuntimeError(f"{archive.name}: not one top directory but {sorted(t.name for t in tops)}")
    return tops[0]


def fetch_sdist(lib: Library, cache: Path) -> Path:
    """The unpacked sdist of the pinned version, downloaded by pip
    (pip_download) into cache/sdists/<dist>-<version>/; fetched and unpacked
    once per cache."""
    src = cache / "src" / f"{lib.dist}-{lib.version}"
    if (src / ".complete").exists():
        return src
    dest = cache / "sdists" / f"{lib.dist}-{lib.version}"
    dest.mkdir(parents=True, exist_ok=True)
    log(f"[{lib.name}] pip download {lib.dist}=={lib.version} (source distribution)")
    subprocess.run(pip_download(lib, dest), check=True)
    archives = [f for f in dest.iterdir() if f.is_file()]
    if len(archives) != 1:
        raise RuntimeError(f"{dest}: expected the one sdist of {lib.dist} {lib.version}, "
                           f"found {sorted(f.name for f in archives)}")
    (archive,) = archives
    if src.exists():
        shutil.rmtree(src)
    src.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=src.parent))
    unpack_sdist(archive, tmp).rename(src)
    tmp.rmdir()
    (src / ".complete").write_text(archive.name)
    return src


def ensure_venv(lib: Library, cache: Path, src: Path) -> Path:
    """A virtual environment of the library's own with it and its test
    requirements installed; rebuilt when the pins change. Records of one
    distribution with the same pins (redis-py in RESP2 and RESP3) share it."""
    stamp = json.dumps([lib.version, *lib.requirements])
    venv = cache / "venvs" / f"{lib.dist}-{lib.version}-{hashlib.sha256(stamp.encode()).hexdigest()[:8]}"
    marker = venv / ".compat-installed"
    if marker.exists() and marker.read_text() == stamp:
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    log(f"[{lib.name}] creating {venv}")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, str(src), *lib.requirements], check=True)
    marker.write_text(stamp)
    return venv


OVERLAID = ".compat-overlay"


def lay_overlay(lib: Library, src: Path) -> None:
    """Copy compat/shims/<overlay> over the unpacked sdist. The files laid
    last time are listed in the sdist's .compat-overlay, so a shim edited
    since is laid again; a file the sdist itself ships is refused."""
    if not lib.overlay:
        return
    base = SHIMS / lib.overlay
    manifest = src / OVERLAID
    ours = set(manifest.read_text().split("\n")) if manifest.exists() else set()
    files = {f.relative_to(base).as_posix(): f for f in sorted(base.rglob("*"))
             if f.is_file() and "__pycache__" not in f.parts}
    for rel in files:
        if (src / rel).exists() and rel not in ours:
            raise RuntimeError(f"{lib.name}: the sdist ships {rel}; the overlay must not replace it")
    laid: list[str] = []
    for rel, f in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, src / rel)
        laid.append(rel)
    for rel in ours - set(laid) - {""}:
        (src / rel).unlink(missing_ok=True)
    manifest.write_text("\n".join(laid))


# ---- servers -----------------------------------------------------------------

def server_argv(kind: str, port: int, datadir: Path) -> list[str]:
    if kind == "valkey":
        return [valkey_binary(), "--port", str(port), "--bind", "127.0.0.1", "-::1", "--save", "",
                "--appendonly", "no", "--dir", str(datadir)]
    return [sys.executable, "-m", "trafikey_server", "--port", str(port), "--bind", "127.0.0.1", "-::1",
            "--save", "", "--dir", str(datadir)]


def netns_available() -> bool:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    return subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0


def host_default_port_free() -> bool:
    """Whether this host's localhost:6379 (the suites' address) can be
    taken: the fallback where network namespaces are not allowed."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", 6379))
        except OSError:
            return False
    return True


# ---- one run -----------------------------------------------------------------

@dataclass
class Outcomes:
    """Per test id (``classname::name`` from the JUnit XML): the outcome of
    each attempt, 'passed', 'failed', 'error' or 'skipped'."""

    attempts: dict[str, list[str]] = field(default_factory=dict)

    def add(self, results: dict[str, str]) -> None:
        for tid, outcome in results.items():
            self.attempts.setdefault(tid, []).append(outcome)

    def final(self, tid: str) -> str:
        tries = self.attempts.get(tid, [])
        if "passed" in tries:
            return "passed"
        return tries[-1] if tries else "absent"

    def passed(self) -> set[str]:
        return {t for t in self.attempts if self.final(t) == "passed"}

    def flaky(self) -> set[str]:
        return {t for t, tries in self.attempts.items() if tries[0] != "passed" and "passed" in tries}

    def to_json(self) -> dict[str, list[str]]:
        return self.attempts


RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


def parse_junit(path: Path) -> dict[str, str]:
    """Each test case's outcome; a case reported twice (a failure in the test
    and an error in its teardown) keeps the worse."""
    results: dict[str, str] = {}
    if not path.exists():
        return results
    for case in ET.parse(path).getroot().iter("testcase"):
        tid = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
        if tid not in results or RANK[outcome] > RANK[results[tid]]:
            results[tid] = outcome
    return results


def fill(text: str, host: str, port: int) -> str:
    return text.format(host=host, port=port, url=f"redis://{host}:{port}/0")


def run_once(lib: Library, kind: str, src: Path, venv: Path, out: Path, attempt: int,
             paths: tuple[str, ...], netns: bool, run_timeout: int, default_port: bool) -> dict[str, str]:
    """One pytest run of the suite against a fresh server of ``kind``;
    ``attempt`` > 0 reruns only what failed before (pytest's --lf).
    ``default_port``: the server takes localhost:6379 (in a namespace of
    its own, or on the host when that port is free)."""
    port = 6379 if default_port else free_port()
    host = "127.0.0.1"
    datadir = Path(tempfile.mkdtemp(prefix=f"compat-{kind}-"))
    junit = out / f"{kind}-{attempt}.xml"
    argv = [str(venv / "bin" / "python"), "-m", "pytest", *paths, *(fill(a, host, port) for a in lib.pytest_args),
            f"--junitxml={junit}", "-o", "junit_family=xunit1", "-o", f"cache_dir={out / ('cache-' + kind)}",
            f"--timeout={lib.timeout}", "-q", "-p", "no:cov", "-W", "ignore::pytest.PytestUnraisableExceptionWarning"]
    if attempt:
        argv += ["--lf", "--lfnf=none"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = str(venv / "bin") + os.pathsep + env.get("PATH", "")
    env["VIRTUAL_ENV"] = str(venv)
    env["COMPAT_HOST"] = host
    env["COMPAT_PORT"] = str(port)
    if lib.shims:
        env["PYTHONPATH"] = os.pathsep.join(str(SHIMS / s) for s in lib.shims)
    for k, v in lib.env.items():
        env[k] = fill(v, host, port)
    server_env = dict(os.environ)
    server_env["PYTHONPATH"] = str(ROOT) + os.pathsep + server_env.get("PYTHONPATH", "")
    spec = {
        "netns": netns, "port": port,
        "server_argv": server_argv(kind, port, datadir), "server_cwd": str(datadir), "server_env": server_env,
        "server_log": str(out / f"{kind}-{attempt}.server.log"),
        "pytest_argv": argv, "pytest_log": str(out / f"{kind}-{attempt}.pytest.log"),
        "cwd": str(src), "env": env, "run_timeout": run_timeout,
    }
    spec_path = out / f"{kind}-{attempt}.spec.json"
    spec_path.write_text(json.dumps(spec, indent=1))
    inner = [sys.executable, "-m", "compat.inner", str(spec_path)]
    if netns:
        inner = ["unshare", "-n", *inner]
    inner_env = dict(os.environ)
    inner_env["PYTHONPATH"] = str(ROOT)
    rc = subprocess.run(inner, cwd=str(ROOT), env=inner_env).returncode
    shutil.rmtree(datadir, ignore_errors=True)
    results = parse_junit(junit)
    log(f"[{lib.name}] {kind} attempt {attempt}: pytest rc={rc}, {len(results)} cases, "
        f"{sum(1 for o in results.values() if o == 'passed')} passed")
    return results


def run_library(lib: Library, cache: Path, out: Path, subset: bool, netns: bool, run_timeout: int,
                default_port: bool) -> dict:
    src = fetch_sdist(lib, cache)
    venv = ensure_venv(lib, cache, src)
    lay_overlay(lib, src)
    out.mkdir(parents=True, exist_ok=True)
    paths = lib.subset if subset and lib.subset else lib.paths
    per_server: dict[str, Outcomes] = {}
    broken: list[str] = []  # servers against which the suite ran no test at all (see the pytest log)
    for kind in SERVERS:
        oc = Outcomes()
        oc.add(run_once(lib, kind, src, venv, out, 0, paths, netns, run_timeout, default_port))
        for attempt in range(1, RERUNS + 1):
            failing = [t for t in oc.attempts if oc.final(t) in ("failed", "error")]
            if kind != "valkey":
                # Only a failure Valkey does not share can count against this
                # server: when there is none, a rerun (of everything that
                # failed: pytest's --lf) would change nothing.
                ok_on_valkey = per_server["valkey"].passed()
                failing = [t for t in failing if t in ok_on_valkey]
            if not failing:
                break
            oc.add(run_once(lib, kind, src, venv, out, attempt, paths, netns, run_timeout, default_port))
        per_server[kind] = oc
        if not oc.attempts:
            broken.append(kind)
    v, t = per_server["valkey"], per_server["trafikey"]
    valkey_flaky = v.flaky()
    gap = sorted(x for x in v.passed() - t.passed() if x not in valkey_flaky)
    return {
        "library": lib.name, "dist": lib.dist, "version": lib.version, "subset": subset,
        "paths": list(paths),
        "cases": len(set(v.attempts) | set(t.attempts)),
        "passed_valkey": len(v.passed()), "passed_trafikey": len(t.passed()),
        "gap": gap, "no_tests_ran": broken,
        "flaky_valkey": sorted(valkey_flaky), "flaky_trafikey": sorted(t.flaky()),
        "passed_trafikey_not_valkey": sorted(t.passed() - v.passed()),
        "outcomes": {k: o.to_json() for k, o in per_server.items()},
    }
