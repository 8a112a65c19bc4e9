"""The Hypothesis library for property tests, importable by the project's own interpreter.

A property test (``repair.properties``) runs in the project's interpreter like every test. Where the project's
environment already has Hypothesis, that copy is used. Otherwise selfix's own pip installs one for the project's
Python version (``--python-version X.Y --only-binary=:all:``: wheels only, so no code of a package runs at
install time, and the release pip picks is one that still supports that Python: Hypothesis dropped 3.8 and 3.9
in later releases) into a cache folder per version under the user's cache dir, reused by later heals.

The cache folder is never put on PYTHONPATH: its copy of attrs or sortedcontainers would shadow the project's own
for every test. It is copied into the sandbox's scratch area (the user's home is hidden from the runs) and the
property test's conftest appends it to ``sys.path`` (after site-packages), so only property runs see it and the
project's own packages win. Without it (no network, pip fails), property evidence is skipped with the reason.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from selfix_action.errors import SandboxError
from selfix_action.sandbox.process import Limits, ProcessResult, run_process

PIP_SECONDS = 180.0  # one install of Hypothesis and its few pure-Python dependencies
_READY = ".selfix-ready"  # written last: a folder without it is a half-done install, never used
# What pip needs from the caller's environment to reach the user's index (a mirror, a proxy, its certificates).
_PIP_ENV = re.compile(
    r"^(PATH|HOME|PIP_\w+|https?_proxy|HTTPS?_PROXY|no_proxy|NO_PROXY|SSL_CERT_\w+|REQUESTS_CA_BUNDLE)$"
)


def default_cache_root(env: Mapping[str, str]) -> Path:
    """The user's cache dir (``$XDG_CACHE_HOME``, else ``~/.cache``) / selfix / hypothesis."""
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME") or Path.home()) / ".cache")
    return Path(base) / "selfix" / "hypothesis"


def parse_probe(stdout: str) -> tuple[str, bool] | None:
    """The project interpreter's answer to ``PROBE``: its version ("3.11") and whether it imports Hypothesis."""
    match = re.search(r"^(\d+\.\d+) (True|False)$", stdout.strip(), re.MULTILINE)
    return (match.group(1), match.group(2) == "True") if match else None


# Run by the project's interpreter, inside the sandbox, with the test runs' path.
PROBE = (
    "import importlib.util, sys\n"
    "print('%d.%d' % sys.version_info[:2], importlib.util.find_spec('hypothesis') is not None)\n"
)


def install_argv(python_version: str, target: Path) -> list[str]:
    """selfix's own pip, installing Hypothesis for ``python_version`` into ``target``. pip evaluates markers
    against selfix's Python, not the target's, so the backport Hypothesis needs before 3.11 is named here."""
    packages = ["hypothesis"]
    major, minor = (int(part) for part in python_version.split("."))
    if (major, minor) < (3, 11):
        packages.append("exceptiongroup>=1.0.0")
    return [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-input",
        "--no-compile",
        "--only-binary=:all:",
        "--python-version",
        python_version,
        "--target",
        str(target),
        *packages,
    ]


def pip_env(source: Mapping[str, str]) -> dict[str, str]:
    env = {name: value for name, value in source.items() if _PIP_ENV.match(name)}
    env.setdefault("PATH", os.defpath)
    env["PYTHONNOUSERSITE"] = "1"
    return env


Runner = Callable[[list[str], Path, Mapping[str, str], float], ProcessResult]


def _run_pip(argv: list[str], cwd: Path, env: Mapping[str, str], seconds: float) -> ProcessResult:
    return run_process(argv, cwd=cwd, env=env, limits=Limits(wall_seconds=seconds, memory_bytes=None))


def cached_install(
    python_version: str,
    cache_root: Path,
    env_source: Mapping[str, str],
    run: Runner = _run_pip,
) -> tuple[Path | None, str]:
    """The cache folder holding Hypothesis for ``python_version``, installed now if it is not there yet; (None,
    why) when pip could not install it."""
    folder = cache_root / f"py{python_version}"
    if (folder / _READY).is_file():
        return folder, ""
    try:
        cache_root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".py{python_version}-", dir=cache_root))
    except OSError as exc:
        return None, f"the cache folder {cache_root} cannot be written: {exc}"
    try:
        try:
            result = run(install_argv(python_version, staging / "lib"), staging, pip_env(env_source), PIP_SECONDS)
        except SandboxError as exc:
            return None, f"pip could not start: {exc}"
        if result.timed_out or result.returncode != 0 or not (staging / "lib" / "hypothesis").is_dir():
            why = "timed out" if result.timed_out else f"exit {result.returncode}"
            tail = " ".join((result.stderr or result.stdout).strip().splitlines()[-2:])[:300]
            return None, f"pip could not install Hypothesis for Python {python_version} ({why}): {tail}".rstrip(": ")
        (staging / "lib" / _READY).write_text("ok\n", encoding="utf-8")
        try:
            os.rename(staging / "lib", folder)  # atomic: another heal sees the whole folder or none
        except OSError:
            if not (folder / _READY).is_file():  # not a concurrent heal's finished copy: a real failure
                return None, f"the cache folder {folder} cannot be written"
        return folder, ""
    finally:
        shutil.rmtree(staging, ignore_errors=True)
