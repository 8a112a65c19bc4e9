"""A project installed editable in its environment (a monorepo's ``pip install -e packages/api``): the install
points into the repository, which the runs must not use (the sandbox hides it; where nothing hides it, the tests
would import the unpatched original and every candidate would fail). The package's folder in the scratch copy
goes on ``sys.path`` instead, so the patched copy is what the tests import.

The command, ``pytest packages/api/tests`` from the root, makes the package's folder pytest's rootdir (its
pyproject.toml): node ids are relative to it, not to where pytest starts, and a run of chosen tests still finds
them (cold, and in the hot worker)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox, editable_folders
from tests.helpers.projects import write_project

API = "tests/test_api.py::test_total"  # pytest's rootdir: the package's folder, its pyproject.toml
BUGGY = "def total(items):\n    return sum(items) - 1\n"
FIXED = "def total(items):\n    return sum(items)\n"


def _venv_with_editable_install(tmp_path: Path, repo: Path) -> Path:
    """A real virtual environment whose site-packages holds an editable install of ``packages/api`` (the
    ``__editable__`` .pth setuptools writes for a src layout), and selfix's own packages (pytest) by a .pth."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "__editable__.api-1.0.pth").write_text(f"{repo / 'packages' / 'api' / 'src'}\n")
    (site / "_selfix_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin" / "python"


def test_the_editable_install_is_the_scratch_copys_package(tmp_path: Path) -> None:
    repo = write_project(
        tmp_path / "mono",
        {
            "README.md": "mono\n",
            "packages/api/pyproject.toml": "[project]\nname = 'api'\nversion = '1.0'\n",
            "packages/api/src/api/__init__.py": BUGGY,
            "packages/api/tests/test_api.py": "from api import total\n\n\ndef test_total():\n"
            "    assert total([1, 2]) == 3\n",
        },
    )
    python = _venv_with_editable_install(tmp_path, repo)
    assert editable_folders(str(python), repo.resolve(), tmp_path / "copy") == ()  # no such copy: nothing

    with PytestSandbox(
        repo, [str(python), "-m", "pytest", "packages/api/tests"], limits=Limits(wall_seconds=60)
    ) as box:
        assert box._editable == (box.root / "packages" / "api" / "src",)
        assert box.run_tests().results[API].status is TestStatus.FAILED
        with box.patched({"packages/api/src/api/__init__.py": FIXED}):
            patched = box.run_tests([API])
            assert box.start_hot_worker(), box.hot_unavailable
            checked = box.run_tests([API], stop_first=True, warm=True)  # the hot worker's check
    assert patched.results[API].status is TestStatus.PASSED, patched.output_tail
    assert checked.results[API].status is TestStatus.PASSED and box.hot_runs == 1, checked.output_tail
