"""Real-bug tasks: builder, validator and scorer against a tiny git repository made here (no network).

The repository has a buggy commit and a fixing commit (the fix in ``pkg/calc.py`` plus a new test in
``tests/test_calc.py``); ``tests/test_more.py`` is a test file the fix does not touch, so it becomes the task's
hidden tests. Every verdict comes from real pytest runs in selfix's sandbox on trees rebuilt from the git history.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from selfix_bench import realbugs
from selfix_bench.kinds import load_bench_tasks
from selfix_bench.realbugs import RealBugTask, build_task, code_units, compare_to_fix
from selfix_bench.report import realbug_section, score_realbugs

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

URL = "https://example.invalid/acme/calc"

BUGGY_CALC = '''\
def clamp(x, low, high):
    """Clamp x into [low, high]."""
    if x < low:
        return low
    if x > high:
        return low
    return x


def scale(x, k):
    return x * k
'''

FIXED_CALC = BUGGY_CALC.replace("    if x > high:\n        return low\n", "    if x > high:\n        return high\n")

TEST_CALC = """\
from pkg.calc import clamp


def test_low():
    assert clamp(-1, 0, 10) == 0


def test_mid():
    assert clamp(5, 0, 10) == 5
"""

NEW_TEST = """

def test_high():
    assert clamp(15, 0, 10) == 10
"""

TEST_MORE = """\
from pkg.calc import clamp, scale


def test_other_bounds():
    assert clamp(25, 0, 20) == 20


def test_scale():
    assert scale(2, 3) == 6
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A mirror directory holding ``acme+calc``: the buggy commit and the developers' fix on top."""
    mirrors = tmp_path_factory.mktemp("mirrors")
    repo = mirrors / "acme+calc"
    (repo / "pkg").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "calc.py").write_text(BUGGY_CALC)
    (repo / "tests" / "test_calc.py").write_text(TEST_CALC)
    (repo / "tests" / "test_more.py").write_text(TEST_MORE)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "buggy")
    buggy = _git(repo, "rev-parse", "HEAD")
    (repo / "pkg" / "calc.py").write_text(FIXED_CALC)
    (repo / "tests" / "test_calc.py").write_text(TEST_CALC + NEW_TEST)
    (repo / "CHANGES.md").write_text("fixed clamp\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "fix clamp above high")
    fixed = _git(repo, "rev-parse", "HEAD")
    return {"mirrors": str(mirrors), "buggy": buggy, "fixed": fixed}


@pytest.fixture(scope="module")
def built(history: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> tuple[RealBugTask, Path]:
    cache = tmp_path_factory.mktemp("cache")
    realbugs.set_mirror_dir(Path(history["mirrors"]))
    outcome = build_task("calc", 1, URL, history["buggy"], history["fixed"], None, ["tests"], cache=cache)
    assert outcome.task is not None, outcome.reason
    return outcome.task, cache


@pytest.mark.slow
def test_builder_splits_fix_from_test_change_and_validates(built: tuple[RealBugTask, Path]) -> None:
    task, _ = built
    assert task.fix_paths == ("pkg/calc.py",)  # CHANGES.md is documentation, not the fix
    assert task.test_paths == ("tests/test_calc.py",)
    assert task.test_modules == ("tests/test_calc.py",)
    assert task.f2p == ("tests/test_calc.py::test_high",)
    assert set(task.p2p) == {"tests/test_calc.py::test_low", "tests/test_calc.py::test_mid"}
    assert task.hidden_paths == ("tests/test_more.py",)
    assert set(task.hidden) == {"tests/test_more.py::test_other_bounds", "tests/test_more.py::test_scale"}
    assert task.fix_lines == 2 and task.fix_kind == "single-line"
    assert "test_high" in task.bug_report and "return high" not in task.bug_report


def test_task_file_round_trips_and_loads_beside_mutant_tasks(built: tuple[RealBugTask, Path], tmp_path: Path) -> None:
    task, _ = built
    (tmp_path / f"{task.id}.json").write_text(task.to_json())
    mutant = Path(__file__).parent.parent.parent / "bench" / "tasks"
    first_mutant = sorted(mutant.glob("*.json"))[0]
    shutil.copy(first_mutant, tmp_path / first_mutant.name)
    loaded = {t.id: t for t in load_bench_tasks(tmp_path)}
    again = loaded[task.id]
    assert isinstance(again, RealBugTask)
    assert (again.f2p, again.p2p, again.hidden, again.source) == (task.f2p, task.p2p, task.hidden, task.source)
    assert not isinstance(loaded[first_mutant.stem], RealBugTask)
    data = json.loads(task.to_json())
    assert data["source"]["buggy_commit"] == task.source["buggy_commit"] and "fixed_commit" in data["source"]


def test_the_tool_sees_the_test_change_but_never_the_fix(built: tuple[RealBugTask, Path], tmp_path: Path) -> None:
    task, cache = built
    repo = task.materialize(tmp_path / "repo", cache=cache)
    assert (repo / "pkg" / "calc.py").read_text() == BUGGY_CALC
    assert "test_high" in (repo / "tests" / "test_calc.py").read_text()
    assert not (repo / ".git").exists() and not (repo / "CHANGES.md").exists()


def _judge(task: RealBugTask, cache: Path, tmp_path: Path, calc: str | None) -> dict[str, object]:
    files = {} if calc is None else {"pkg/calc.py": calc}
    return task.judge(files, task.python(), tmp_path, cache=cache)


def test_developers_fix_is_resolved_and_correct(built: tuple[RealBugTask, Path], tmp_path: Path) -> None:
    task, cache = built
    verdict = _judge(task, cache, tmp_path, FIXED_CALC)
    assert verdict["resolved"] and verdict["correct"] and verdict["correct_ast"]
    assert not verdict["plausible_wrong"]


def test_overfitted_patch_is_plausible_but_wrong(built: tuple[RealBugTask, Path], tmp_path: Path) -> None:
    """``return 10`` passes the developers' new test, differs from their tree and fails a hidden test."""
    task, cache = built
    overfitted = BUGGY_CALC.replace("        return low\n    return x", "        return 10\n    return x")
    verdict = _judge(task, cache, tmp_path, overfitted)
    assert verdict["resolved"] and verdict["plausible_wrong"] and not verdict["correct"]
    assert verdict["ast_differs"] == ["pkg/calc.py::clamp"] and verdict["hidden_failing"] == 1


def test_other_tree_passing_the_hidden_tests_is_correct(built: tuple[RealBugTask, Path], tmp_path: Path) -> None:
    task, cache = built
    patched = BUGGY_CALC.replace("        return low\n    return x", "        return min(x, high)\n    return x")
    verdict = _judge(task, cache, tmp_path, patched)
    assert verdict["resolved"] and verdict["correct"] and verdict["correct_tests"] and not verdict["correct_ast"]


def test_hidden_tests_vouch_only_for_a_patch_in_the_fixed_files(
    built: tuple[RealBugTask, Path], tmp_path: Path
) -> None:
    """A patch that guts shared code elsewhere (here: a helper module the fix never touched) stays wrong."""
    task, cache = built
    patched = BUGGY_CALC.replace("        return low\n    return x", "        return min(x, high)\n    return x")
    files = {"pkg/calc.py": patched, "pkg/helper.py": "HELPER = 1\n"}
    verdict = task.judge(files, task.python(), tmp_path, cache=cache)
    assert verdict["resolved"] and verdict["plausible_wrong"] and not verdict["correct_tests"]
    assert verdict["outside_fix_files"] == ["pkg/helper.py"]


def test_test_edits_of_the_tool_never_count(built: tuple[RealBugTask, Path], tmp_path: Path) -> None:
    task, cache = built
    files = {"tests/test_calc.py": TEST_CALC}  # deleting the failing test is not a fix
    verdict = task.judge(files, task.python(), tmp_path, cache=cache)
    assert not verdict["resolved"] and not verdict["correct"] and not verdict["plausible_wrong"]
    assert verdict["edited_files"] == [] and verdict["f2p_failing"] == 1


def test_builder_drops_a_bug_whose_test_does_not_fail(history: dict[str, str], tmp_path: Path) -> None:
    realbugs.set_mirror_dir(Path(history["mirrors"]))
    # Reversed: the "fix" reintroduces the bug; the new test then fails on the fixed side only.
    outcome = build_task("calc", 2, URL, history["fixed"], history["buggy"], None, ["tests"], cache=tmp_path)
    assert outcome.task is None
    assert "no test module" in outcome.reason or "no test fails" in outcome.reason


def test_normalized_ast_ignores_docstrings_comments_and_layout() -> None:
    reformatted = FIXED_CALC.replace('    """Clamp x into [low, high]."""\n', "    # no docstring\n").replace(
        "return x * k", "return (x *\n            k)"
    )
    assert code_units(reformatted) == code_units(FIXED_CALC)
    same = compare_to_fix({"pkg/calc.py": reformatted}, {"pkg/calc.py": FIXED_CALC}, {"pkg/calc.py": BUGGY_CALC})
    assert same.same and same.changed == ("pkg/calc.py::clamp",)
    negated = "def f(a):\n    return a is not None and a not in ()\n"
    assert code_units("def f(a):\n    return not a is None and not a in ()\n") == code_units(negated)
    swapped = FIXED_CALC.replace("if x < low", "if low > x")
    other = compare_to_fix({"pkg/calc.py": swapped}, {"pkg/calc.py": FIXED_CALC}, {"pkg/calc.py": BUGGY_CALC})
    assert not other.same and other.differing == ("pkg/calc.py::clamp",)
    elsewhere = compare_to_fix(
        {"pkg/calc.py": FIXED_CALC, "pkg/extra.py": "X = 1\n"}, {"pkg/calc.py": FIXED_CALC}, {"pkg/calc.py": BUGGY_CALC}
    )
    assert not elsewhere.same and elsewhere.differing == ("pkg/extra.py::<module>",)
    broken = compare_to_fix({"pkg/calc.py": "def (:\n"}, {"pkg/calc.py": FIXED_CALC}, {"pkg/calc.py": BUGGY_CALC})
    assert not broken.same and "does not parse" in broken.reason


def test_report_scores_three_ways_with_intervals_and_pairs() -> None:
    def rec(task: str, resolved: bool, correct: bool, confidence: object = None) -> dict[str, object]:
        return {
            "id": task,
            "kind": "realbug",
            "library": task.split("-")[0],
            "template": "single-line",
            "resolved": resolved,
            "correct": correct,
            "correct_ast": correct,
            "plausible_wrong": resolved and not correct,
            "confidence": confidence,
        }

    after = [rec("a-1", True, True, {"level": "high"}), rec("a-2", True, False, "low"), rec("b-1", False, False)]
    before = [rec("a-1", False, False), rec("a-2", True, False), rec("b-1", False, False)]
    assert score_realbugs(after) == {
        "tasks": 3,
        "resolved": 2,
        "correct": 1,
        "plausible_wrong": 1,
        "correct_ast": 1,
        "correct_tests_only": 0,
    }
    text = "\n".join(realbug_section(after, "after", before, "before"))
    assert "2/3 = 66.7% (20.8%-93.9%)" in text  # resolved, 95% Wilson
    assert "| a-1 | correct | high |" in text and "| a-2 | plausible but wrong | low |" in text
    assert "- resolved: both 1, only `after` 1, only `before` 0, neither 1 of 3; p = 1" in text
    assert "- correct: both 0, only `after` 1, only `before` 0, neither 2 of 3" in text


def test_release_notes_are_never_part_of_the_fix() -> None:
    """ansible adds a ``changelogs/fragments/*.yml`` note with every fix: kept in the fix, no patch of the tool
    could ever have the developers' syntax tree (non-Python files must match line for line)."""
    assert realbugs.is_doc_path("changelogs/fragments/66604-powershell-unc-paths.yml")
    assert realbugs.is_doc_path("CHANGELOG.md") and realbugs.is_doc_path("docs/index.rst")
    assert not realbugs.is_doc_path("lib/ansible/plugins/shell/powershell.py")
    assert not realbugs.is_doc_path("blib2to3/pygram.pyi")
