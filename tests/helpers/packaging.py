"""Running the packaging checkers: a dev-dependency binary beside the interpreter (or on PATH), skipped with a
reason where it is not installed, started in its own process group that a timeout kills whole."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKER_ACTION = REPO_ROOT / "action.yml"
COMPOSITE_ACTION = REPO_ROOT / "composite" / "action.yml"
LOCK = REPO_ROOT / "packaging" / "requirements.lock"


def tool(name: str, install_hint: str = "it comes with the dev extra: pip install -e '.[dev]'") -> str:
    beside = Path(sys.executable).with_name(name)
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed ({install_hint})")
    return found


def run(
    argv: Sequence[str], *, timeout: float = 120.0, cwd: Path = REPO_ROOT, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=None if env is None else dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"{argv[0]} did not finish within {timeout:.0f}s")
    return subprocess.CompletedProcess(list(argv), proc.returncode, stdout, stderr)


def script(name: str) -> ModuleType:
    """packaging/<name>.py as a module (loaded by path: the folder is no package, and `packaging` is PyPI's)."""
    path = REPO_ROOT / "packaging" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"selfix_packaging_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and the like look their module up
    spec.loader.exec_module(module)
    return module
