"""Where the project lives: the working_directory option checked, the folder found from a report or the
repository (ambiguity keeps the root), protected patterns read from the project, the patch put back in
repository-relative paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.errors import InputError
from selfix_action.heal.project import (
    checked_folder,
    moved_diff,
    node_project,
    project_folder,
    project_patterns,
)
from selfix_action.repair.reported import ReportedTest
from tests.helpers.projects import write_project

XUNIT2 = ReportedTest("tests.test_calc", "test_limit")
XUNIT1 = ReportedTest("tests.test_calc", "test_limit", "tests/test_calc.py")


def _mono(root: Path, *projects: str) -> Path:
    files = {"README.md": "x\n"}
    for name in projects:
        files |= {f"{name}/pyproject.toml": "", f"{name}/tests/test_calc.py": "def test_limit():\n    pass\n"}
    return write_project(root, files)


@pytest.mark.parametrize("case", [XUNIT1, XUNIT2], ids=["xunit1", "xunit2"])
def test_the_folder_holding_the_reports_tests_is_found(tmp_path: Path, case: ReportedTest) -> None:
    repo = _mono(tmp_path / "r", "services/api", "web")
    (repo / "web" / "tests" / "test_calc.py").unlink()

    found = project_folder(repo, "", [case])

    assert found.path == "services/api" and "found from the report" in found.note


def test_tests_at_the_root_or_in_two_folders_keep_the_root(tmp_path: Path) -> None:
    repo = _mono(tmp_path / "r", "api", "web")
    assert project_folder(repo, "", [XUNIT2]).path == ""  # both hold it: ambiguous
    write_project(repo, {"tests/test_calc.py": ""})
    assert project_folder(repo, "", [XUNIT2]).path == ""  # the root holds it


def test_without_a_report_the_one_project_of_a_bare_root_is_found(tmp_path: Path) -> None:
    repo = _mono(tmp_path / "r", "backend")
    assert project_folder(repo, "", []).path == "backend"
    write_project(repo, {"pyproject.toml": ""})
    assert project_folder(repo, "", []).path == ""


def test_the_option_wins_and_dot_is_the_root(tmp_path: Path) -> None:
    repo = _mono(tmp_path / "r", "api", "web")
    assert project_folder(repo, "web/", [XUNIT2]).path == "web"
    assert project_folder(repo, ".", [XUNIT2]).path == ""


@pytest.mark.parametrize("bad", ["/etc", "../x", "api/../../x", "missing"])
def test_a_folder_outside_or_missing_is_refused(tmp_path: Path, bad: str) -> None:
    repo = _mono(tmp_path / "r", "api")
    with pytest.raises(InputError, match="working_directory"):
        checked_folder(repo, bad)


def test_a_folder_through_a_link_is_refused(tmp_path: Path) -> None:
    repo = _mono(tmp_path / "r", "api")
    (repo / "link").symlink_to(tmp_path)
    with pytest.raises(InputError, match="symbolic link"):
        checked_folder(repo, "link/r")


def test_protected_patterns_are_read_from_the_project() -> None:
    patterns = ["backend/legacy/*", "*/migrations/*", "frontend/*", "backend*"]
    assert project_patterns(patterns, "backend") == ("legacy/*", "*/migrations/*", "*")
    assert project_patterns(patterns, "") == tuple(patterns)


def test_the_diff_moves_its_headers_only() -> None:
    diff = (
        "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n"
        "--- a/sql comment\n+x = 1\n"
        "diff --git a/new.py b/new.py\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+y = 2\n"
    )
    assert moved_diff(diff, "backend") == (
        "diff --git a/backend/app.py b/backend/app.py\n--- a/backend/app.py\n+++ b/backend/app.py\n@@ -1,2 +1,2 @@\n"
        "--- a/sql comment\n+x = 1\n"
        "diff --git a/backend/new.py b/backend/new.py\n--- /dev/null\n+++ b/backend/new.py\n@@ -0,0 +1 @@\n+y = 2\n"
    )


JS_PROJECT = {
    "package.json": '{"name": "calc", "scripts": {"test": "mocha"}}\n',
    "package-lock.json": "{}\n",
    "src/math.js": "module.exports = { add: (a, b) => a - b };\n",
    "test/math.test.js": "it('adds', () => {});\n",
    "node_modules/node-gyp/gyp/pylib/gyp/common.py": "x = 1\n",  # installed packages say nothing of the project
}


def test_a_javascript_project_is_found_and_a_mixed_repository_is_healed_as_python(tmp_path: Path) -> None:
    js = write_project(tmp_path / "js", JS_PROJECT)
    found = node_project(js)
    assert found is not None and (found.runner, found.package_manager) == ("mocha", "npm")
    mixed = write_project(tmp_path / "mixed", {**JS_PROJECT, "backend/app.py": "x = 1\n"})
    assert node_project(mixed) is None
    assert node_project(write_project(tmp_path / "py", {"tests/test_x.py": "def test_x():\n    pass\n"})) is None
    odd = write_project(tmp_path / "odd", {"package.json": '{"scripts": {"test": "ava"}}'})
    with pytest.raises(InputError, match="JavaScript/TypeScript project, but no test runner selfix knows"):
        node_project(odd)


def test_selfix_fix_on_a_javascript_project_with_the_offline_engine_exits_2_saying_why_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    js = write_project(tmp_path / "js", JS_PROJECT)
    before = sorted(p.relative_to(js) for p in js.rglob("*"))
    assert main(["fix", str(js)]) == 2
    err = capsys.readouterr().err
    assert "the offline engine heals Python only" in err and "needs the LLM engine" in err
    assert sorted(p.relative_to(js) for p in js.rglob("*")) == before


def test_a_javascript_project_where_node_is_missing_names_the_composite_variant(tmp_path: Path) -> None:
    """The action's Docker image carries no node: the heal stops before anything runs, saying what to use."""
    from selfix_action.heal import EngineChoice, HealRequest, heal

    js = write_project(tmp_path / "js", JS_PROJECT)
    request = HealRequest(
        repo=js,
        test_cmd=("mocha",),
        out_dir=tmp_path / "out",
        engine=EngineChoice(kind="openai", api_key="k", base_url="http://127.0.0.1:9/v1", model="m"),
        env_source={"PATH": str(tmp_path / "empty")},
    )
    with pytest.raises(InputError, match="node is not installed where selfix runs: use the composite variant"):
        heal(request)
    assert not (tmp_path / "out").exists()
