"""The codebase stays ruff clean: part of the test command, so CI enforces it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _ruff() -> str:
    candidate = Path(sys.executable).with_name("ruff")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (it comes with the dev extra: pip install -e '.[dev]')")
    return found


def test_ruff_check_is_clean() -> None:
    proc = subprocess.run([_ruff(), "check", "."], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
