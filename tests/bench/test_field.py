"""The field corpus (``selfix bench field``): its machinery on a tiny project made here (a git repository in a
mirror folder, no network), the classification of heals, and the corpus' own task files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from selfix_bench import realbugs
from selfix_bench.field import (
    FieldBug,
    FieldSettings,
    apply_bug,
    check_project,
    classify,
    heal_command,
    junit_counts,
    load_field_task,
    load_field_tasks,
    markdown_table,
    run_project,
    shareable,
)
from tests.helpers.action import git

CORPUS = Path(__file__).resolve().parents[2] / "bench" / "field"

CALC = """\
def add(a, b):
    return a + b


def clamp(x, low, high):
    return max(low, min(x, high))
"""

TESTS = """\
from calc import add, clamp


def test_add():
    assert add(2, 3) == 5


def test_add_zero():
    assert add(0, 4) == 4


def test_clamp():
    assert clamp(5, 0, 3) == 3
"""


@pytest.fixture
def tiny(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A task file for ``acme/tiny`` (its project in ``app/``, the CI running ``python -m pytest tests`` there)
    and the mirror folder holding the project's history."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "mirrors" / "acme+tiny"
    (repo / "app" / "calc").mkdir(parents=True)
    (repo / "app" / "tests").mkdir()
    (repo / "app" / "calc" / "__init__.py").write_text(CALC)
    (repo / "app" / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "tiny")
    task = {
        "schema": 1,
        "kind": "field",
        "id": "tiny",
        "repo": "acme/tiny",
        "commit": git(repo, "rev-parse", "HEAD"),
        "python": "",
        "install": [],
        "ci": {"argv": ["python", "-m", "pytest", "tests"], "folder": "app", "from": "made here"},
        "features": ["project in a subfolder"],
        "bug": {"path": "app/calc/__init__.py", "line": 2, "old": "a + b", "new": "a - b"},
    }
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "tiny.json").write_text(json.dumps(task))
    monkeypatch.setattr(realbugs, "_mirror_dir", tmp_path / "mirrors")
    return tmp_path / "tasks" / "tiny.json", tmp_path / "cache"


@pytest.mark.slow
def test_machinery_on_a_tiny_project(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    """Materialize the pinned commit, plant the bug, run the CI command in its folder (the JUnit report), heal
    from the report through the product's request, classify."""
    task_file, cache = tiny
    task = load_field_task(task_file)
    settings = FieldSettings(time_limit=120, isolation="none", cache=cache)
    check = check_project(task, settings)
    assert check["ok"], check
    assert check["pristine"]["failed"] == 0 and check["pristine"]["passed"] == 3
    assert check["planted_failing"] == ["tests.test_calc::test_add", "tests.test_calc::test_add_zero"]
    record = run_project(task, settings, tmp_path / "out")
    assert record["ci"]["failed"] == 2 and record["ci"]["passed"] == 1
    assert record["verdict"] in ("healed", "not healed", "selfix failed")
    assert record["reason"] or record["verdict"] == "healed"
    assert record["seconds"] > 0 and record["message"]
    if record["verdict"] == "healed":
        assert "a + b" in record["patch"]
    table = markdown_table([record], [task])
    assert "| tiny (acme/tiny/app) |" in table and "1 project(s)" in table


def test_the_heal_gets_the_ci_command_without_its_report_option(tiny: tuple[Path, Path]) -> None:
    task = load_field_task(tiny[0])
    assert heal_command(task, "/venv/bin/python") == ("/venv/bin/python", "-m", "pytest", "tests")


@pytest.mark.parametrize(
    ("stop", "message", "error", "expected"),
    [
        ("healed", "", "", ("healed", "")),
        ("hypotheses_exhausted", "every hypothesis was tried", "", ("not healed", "no candidate passed")),
        ("candidate_budget_exhausted", "", "", ("not healed", "candidate budget ran out")),
        ("report_tests_not_found", "the report's failing tests are not here", "", ("selfix failed", "mapping")),
        (
            "",
            "",
            "InputError: none of the failing tests in the JUnit report(s) maps to a pytest node id (first: a b)",
            ("selfix failed", "mapping"),
        ),
        ("sandbox_error", "pytest: error: unrecognized arguments: -n auto", "", ("selfix failed", "plugin")),
        ("sandbox_error", "could not collect", "", ("selfix failed", "sandbox")),
        (
            "not_reproducible",
            "the failing tests passed when re-run in the sandbox",
            "",
            ("selfix failed", "reproduction"),
        ),
        ("time_limit", "", "", ("selfix failed", "time")),
        ("", "", "SandboxError: the interpreter is unsupported", ("selfix failed", "interpreter")),
        ("", "", "SandboxError: something else", ("selfix failed", "error")),
    ],
)
def test_classify(stop: str, message: str, error: str, expected: tuple[str, str]) -> None:
    assert classify(stop, message, error) == expected


def test_a_time_limit_reached_while_searching_is_the_bugs_and_before_any_candidate_selfixs() -> None:
    assert classify("time_limit", "", candidates=354) == (
        "not healed",
        "time limit reached while searching (354 candidates)",
    )
    assert classify("time_limit", "", candidates=0) == ("selfix failed", "time")


def test_apply_bug_needs_the_text_once_on_its_line() -> None:
    text = "x = 1\ny = a + b\n"
    assert apply_bug(text, FieldBug("f.py", 2, "a + b", "a - b")) == "x = 1\ny = a - b\n"
    with pytest.raises(Exception, match="not once on line 1"):
        apply_bug(text, FieldBug("f.py", 1, "a + b", "a - b"))


def test_junit_counts(tmp_path: Path) -> None:
    report = tmp_path / "r.xml"
    report.write_text(
        '<testsuites><testsuite><testcase classname="t" name="a"/><testcase classname="t" name="b">'
        '<failure message="x"/></testcase><testcase classname="t" name="c"><error/></testcase>'
        '<testcase classname="t" name="d"><skipped/></testcase></testsuite></testsuites>'
    )
    assert junit_counts(report) == {"failed": 2, "passed": 1, "skipped": 1}
    assert junit_counts(tmp_path / "missing.xml") == {"failed": 0, "passed": 0, "skipped": 0}


def test_the_corpus_task_files_load_and_round_trip(tmp_path: Path) -> None:
    tasks = load_field_tasks(CORPUS)
    assert len(tasks) >= 20
    assert len({t.repo for t in tasks}) >= 19
    for task in tasks:
        assert len(task.commit) == 40 and task.python and task.ci_from and task.features
        assert task.ci_argv[0] == "python" and (task.test_command or task.ci_argv)[0] == "python"
        (tmp_path / f"{task.id}.json").write_text(task.to_json())
        again = load_field_task(tmp_path / f"{task.id}.json")
        assert (again.bug, again.install, again.ci_argv, again.folder) == (
            task.bug,
            task.install,
            task.ci_argv,
            task.folder,
        )


def test_a_record_names_no_home_folder_of_this_machine() -> None:
    inside = str(Path.home() / ".cache" / "selfix-bench" / "envs" / "x" / "site.py")
    assert shareable(f'File "{inside}", line 3') == 'File "~/.cache/selfix-bench/envs/x/site.py", line 3'
