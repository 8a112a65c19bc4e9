from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_action.errors import InputError
from selfix_action.offline.templates import candidate_edits
from selfix_action.repair.values import TestResult, TestRun, TestStatus
from selfix_bench.generate import bug_report, splice_of
from selfix_bench.tasks import Bug, apply_bug, leak_reasons, load_task, load_tasks

TASKS = Path(__file__).parent / "fixtures" / "tasks"
SOURCE = "def f(xs, t):\n    count = 0\n    for x in xs:\n        if x > t:\n            count += 1\n    return count\n"


def test_committed_benchmark_tasks_are_valid() -> None:
    tasks = load_tasks(Path(__file__).parents[2] / "bench" / "tasks")
    assert len(tasks) >= 60
    assert len({t.source["name"] for t in tasks}) >= 2
    for task in tasks:
        assert task.source["kind"] == "sdist" and len(task.source["sha256"]) == 64
        assert task.f2p and task.p2p and not set(task.f2p) & set(task.p2p)
        assert len(task.f2p) <= 0.25 * (len(task.f2p) + len(task.p2p))
        assert "\n" not in task.bug.original and "\n" not in task.bug.mutated
        assert not leak_reasons(task.bug_report, task.bug, "")


def test_materialize_injects_the_bug_and_reference_fix_undoes_it(tmp_path: Path) -> None:
    task = load_task(TASKS / "tiny-count_above-compare.json")
    repo = task.materialize(tmp_path / "repo")
    buggy = (repo / "mathx.py").read_text()
    assert "x >= threshold" in buggy
    fixed, originals = task.reference_fix()
    assert fixed == {"mathx.py": (Path(task.base_dir) / "../tinylib/mathx.py").resolve().read_text()}
    assert originals == {"mathx.py": buggy}
    assert task.materialize(tmp_path / "fixed", fixed=True).joinpath("mathx.py").read_text() == fixed["mathx.py"]
    assert not (repo / "tasks").exists()  # the task file (and its reference fix) is not in the repo


def test_apply_bug_refuses_a_wrong_offset() -> None:
    with pytest.raises(InputError):
        apply_bug("abc", Bug("m.py", 1, 0, "b", "c"))


def test_bad_task_file_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text(json.dumps({"id": "x"}))
    with pytest.raises(InputError):
        load_tasks(tmp_path)


def test_leak_check_rejects_file_line_and_code() -> None:
    bug = Bug("pkg/mod.py", 4, 40, ">", ">=", "compare_replace")
    buggy = SOURCE.replace("x > t", "x >= t")
    clean = "1 test(s) fail:\n- `tests/test_mod.py::test_f`: AssertionError\n  assert 3 == 2\n"
    assert leak_reasons(clean, bug, buggy) == []
    assert any("file" in r for r in leak_reasons(clean + "see pkg/mod.py\n", bug, buggy))
    assert any("file" in r for r in leak_reasons(clean + 'File "mod.py"\n', bug, buggy))
    assert any("module" in r for r in leak_reasons(clean + "in pkg.mod\n", bug, buggy))
    assert any("line 4" in r for r in leak_reasons(clean + "at line 4\n", bug, buggy))
    assert any("line 4" in r for r in leak_reasons(clean + "mod:4 failed\n", bug, buggy))
    assert any("changed line" in r for r in leak_reasons(clean + "if x >= t:\n", bug, buggy))
    assert leak_reasons(clean + "took 14 s, line 40\n", bug, buggy) == []


def test_splice_of_keeps_one_line_edits_and_formatting() -> None:
    edits = candidate_edits(SOURCE, "m.py", [4])
    kinds = {e.template for e in edits}
    assert "compare_replace" in kinds
    for edit in edits:
        bug = splice_of("m.py", SOURCE, edit)
        if bug is None:
            continue
        assert bug.line == 4
        assert apply_bug(SOURCE, bug) == edit.new_source
    # a multi-line change is not a one-line bug
    two_lines = candidate_edits(SOURCE, "m.py", [5])
    multi = SOURCE.replace("    return count\n", "    count += 1\n    return count\n")
    fake = two_lines[0].__class__(**{**two_lines[0].__dict__, "new_source": multi})
    assert splice_of("m.py", SOURCE, fake) is None


def test_bug_report_holds_test_names_and_assertion_output_only() -> None:
    run = TestRun(
        results={
            "tests/test_m.py::test_a": TestResult(
                nodeid="tests/test_m.py::test_a",
                status=TestStatus.FAILED,
                exc_type="AssertionError",
                message="assert 3 == 2",
            )
        }
    )
    report = bug_report(run, ["tests/test_m.py::test_a"])
    assert "tests/test_m.py::test_a" in report and "assert 3 == 2" in report and "AssertionError" in report
