"""A tiny installable project for the setup command (``pip install -e .``), installed offline: setuptools from the
local pip cache (a wheel copied into the project), the project and its one dependency from local folders
(``--no-index --no-build-isolation``). With no index to install pytest from, the setup command's last step adds
a ``.pth`` to the project's environment naming selfix's site-packages (what ``pip install pytest`` would give it).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest

from selfix_action.sandbox.isolation import Isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_action.sandbox.setup import SetupResult, project_env_source, run_setup_command
from tests.helpers.isolation import python_for
from tests.helpers.projects import write_project

SELFIX_SITE = sysconfig.get_paths()["purelib"]
TEST_ID = "tests/test_value.py::test_value"


def _setuptools_wheel() -> Path:
    """The newest setuptools wheel (>= 70: no ``wheel`` package needed) in the local pip cache."""
    found = []
    for root in (Path.home() / ".cache" / "pip", Path("/root/.cache/pip")):
        for wheel in root.glob("wheels/**/setuptools-*-py3-none-any.whl"):
            match = re.match(r"setuptools-(\d+)\.", wheel.name)
            if match and int(match.group(1)) >= 70:
                found.append((int(match.group(1)), wheel))
    if not found:
        pytest.skip("no setuptools >= 70 wheel in the local pip cache to install offline with")
    return max(found)[1]


PYPROJECT = """[build-system]
requires = ["setuptools>=70"]
build-backend = "setuptools.build_meta"

[project]
name = "tinypkg"
version = "0.1"

[tool.setuptools]
packages = ["tinypkg"]
"""
DEP_PYPROJECT = """[build-system]
requires = ["setuptools>=70"]
build-backend = "setuptools.build_meta"

[project]
name = "tinydep"
version = "0.1"

[tool.setuptools]
py-modules = ["tinydep"]
"""
TEST_VALUE = """import tinydep
import tinypkg


def test_value():
    assert tinydep.DEP == "dep"
    assert tinypkg.VALUE == "patched", tinypkg.__file__
"""
STANDIN = f"""import pathlib, sysconfig
site = pathlib.Path(sysconfig.get_paths()["purelib"])
(site / "selfix-test-pytest.pth").write_text({SELFIX_SITE!r} + "\\n")
"""


def tiny_project(root: Path, extra: dict[str, str] | None = None, pyproject: str = PYPROJECT) -> Path:
    files = {
        "pyproject.toml": pyproject,
        "tinypkg/__init__.py": 'VALUE = "original"\n',
        "tests/test_value.py": TEST_VALUE,
        "pytest.ini": "[pytest]\ntestpaths = tests\n",
        "deps/tinydep/pyproject.toml": DEP_PYPROJECT,
        "deps/tinydep/tinydep.py": 'DEP = "dep"\n',
        "standin_pytest.py": STANDIN,
        **(extra or {}),
    }
    repo = write_project(root, files)
    (repo / "wheels").mkdir()
    wheel = _setuptools_wheel()
    shutil.copy(wheel, repo / "wheels" / wheel.name)
    return repo


def install_command(*, editable: bool = True) -> str:
    steps = [
        "pip install -q --no-index wheels/setuptools-*.whl",
        "pip install -q --no-index --no-build-isolation ./deps/tinydep",
        f"pip install -q --no-index --no-build-isolation {'-e ' if editable else ''}.",
        "python standin_pytest.py",
    ]
    return 'sh -c "' + " && ".join(steps) + '"'


def env_source() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", os.defpath), "LANG": "C.UTF-8"}


def run_setup(repo: Path, isolation: Isolation | None, command: str | None = None, **kwargs: object) -> SetupResult:
    base_python = python_for(isolation) if isolation is not None else sys.executable
    return run_setup_command(
        command or install_command(),
        repo=repo,
        env_source=kwargs.pop("env_source", None) or env_source(),  # type: ignore[arg-type]
        wall_seconds=240,
        isolation=isolation,
        base_python=base_python,
        **kwargs,  # type: ignore[arg-type]
    )


def heal_sandbox(repo: Path, setup: SetupResult, isolation: Isolation | None, tmp_path: Path) -> PytestSandbox:
    """A sandbox of the heal's kind: the project environment's interpreter, its bin first on PATH."""
    return PytestSandbox(
        repo,
        [str(setup.python), "-m", "pytest"],
        limits=Limits(wall_seconds=120),
        env_source=project_env_source(env_source(), setup.venv),
        scratch_parent=tmp_path,
        isolation=isolation,
        hot=False,
    )


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))
