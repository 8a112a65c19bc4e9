"""``selfix fix`` on a monorepo whose project lives in ``backend/`` (its own pyproject.toml; CI runs
``cd backend && pytest --junitxml=../reports/junit.xml``): healed from the repository's root with that report, the
folder found from it or named by ``--working-directory``; the patch and ``--apply`` are repository-relative; a
folder outside the repository is bad input and changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.errors import ExitCode
from tests.helpers.action import BACKEND, FIXED_CALC
from tests.helpers.projects import write_project


def _monorepo(root: Path) -> tuple[Path, Path]:
    repo = write_project(root / "mono", {"README.md": "monorepo\n", "docs/index.md": "docs\n", **BACKEND})
    report = repo / "reports" / "junit.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=../reports/junit.xml"],
        cwd=repo / "backend",
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert report.is_file()
    return repo, report


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["--working-directory", "backend"]], ids=["found", "named"])
def test_a_project_in_a_subfolder_heals_from_its_ci_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    repo, report = _monorepo(tmp_path)

    code = main(["fix", str(repo), "--junit", str(report), "--apply", "--quiet", *flags])

    out = capsys.readouterr()
    assert code == ExitCode.HEALED, out
    assert (repo / "backend" / "calc.py").read_text() == FIXED_CALC and not (repo / "calc.py").exists()
    data = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert data["project_folder"] == "backend" and data["patch"]["files"] == ["backend/calc.py"]
    assert data["f2p_tests"] == ["tests/test_calc.py::test_limit"]  # the project's node ids, as its CI's
    assert ("found from the report" in out.err) == (not flags)


@pytest.mark.parametrize(
    ("folder", "error"),
    [
        ("../elsewhere", "working_directory must be a folder inside the repository"),
        ("frontend", "working_directory is not a folder of the repository"),
    ],
)
def test_a_working_directory_outside_the_repository_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: str, error: str
) -> None:
    repo, report = _monorepo(tmp_path)

    code = main(["fix", str(repo), "--junit", str(report), "--working-directory", folder])

    assert code == ExitCode.BAD_INPUT
    assert error in capsys.readouterr().err
    assert not (repo / ".selfix").exists() and "return 9" in (repo / "backend" / "calc.py").read_text()
