"""Project interpreters: one of each Python this machine has, in a virtual environment with pytest, built once
per test session (tests/sandbox/test_project_pythons.py, the behaviour probe's oldest-Python test)."""

from __future__ import annotations

import fcntl
import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.isolation import traversable

PROJECT_PYTHONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")


def find_interpreter(version: str) -> str | None:
    """An interpreter of ``version`` on this machine: pyenv's newest ``3.X.*``, else ``python3.X`` on PATH (a
    pyenv shim is a shell script that needs pyenv itself, which the sandbox does not show)."""
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found = sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"))
    if found:
        return found[-1]
    on_path = shutil.which(f"python{version}")
    return on_path if on_path and "/shims/" not in on_path else None


def shared_venv_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Shared by the xdist workers (the parent of each worker's base temp dir), so each venv is built once.
    root = tmp_path_factory.getbasetemp().parent / "project-pythons"
    root.mkdir(exist_ok=True)
    return traversable(root)


def project_venv(venv_root: Path, version: str) -> Path:
    """A venv of ``version`` with pytest, built once per test session (skipped with the reason if it can't be)."""
    interpreter = find_interpreter(version)
    if interpreter is None:
        pytest.skip(f"no Python {version} on this machine (neither python{version} on PATH nor pyenv's)")
    venv = venv_root / f"py{version}"
    python = venv / "bin" / "python"
    with open(venv_root / f"py{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / "ready").exists():
            shutil.rmtree(venv, ignore_errors=True)
            for argv in ([interpreter, "-m", "venv", str(venv)], [str(python), "-m", "pip", "install", "-q", "pytest"]):
                proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
                if proc.returncode != 0:
                    pytest.skip(f"could not build a Python {version} venv with pytest: {proc.stderr.strip()[-300:]}")
            (venv / "ready").touch()
    return python
