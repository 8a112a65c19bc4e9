"""A JUnit report whose failing tests this checkout does not have (another commit's report) is said first and
exits 2, never "nothing to heal"; ``--heal-seen-failures`` heals what fails here instead.

The reports are real pytest JUnit XML, written by a run of the project before its tests were renamed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.errors import ExitCode
from tests.helpers.projects import junit_report, write_project

CALC = {
    "calc.py": "def add(a, b):\n    return a - b\n\n\ndef double(a):\n    return 2 * a\n",
    "tests/test_calc.py": "from calc import add, double\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_double():\n    assert double(2) == 4\n",
}


# Why the report's test did not resolve: the same name is collected here, from another module.
WHY = " (no test collected here has that name in tests.test_calc; same name: tests/test_arithmetic.py::test_add)"


def renamed_after_the_report(tmp_path: Path) -> tuple[Path, Path]:
    """The report of a run on the old layout; the checkout has the same tests under another file name."""
    repo = write_project(tmp_path / "p", CALC)
    report = junit_report(repo, tmp_path / "junit.xml")
    (repo / "tests" / "test_calc.py").rename(repo / "tests" / "test_arithmetic.py")
    return repo, report


def test_a_report_of_tests_not_here_says_so_first_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, report = renamed_after_the_report(tmp_path)

    code = main(["fix", str(repo), "--junit", str(report), "--quiet"])

    out = capsys.readouterr().out
    assert code == ExitCode.BAD_INPUT, out
    lines = out.splitlines()
    assert lines[0].startswith("selfix: report_tests_not_found: none of the failing tests in the JUnit report")
    assert lines[1] == (
        "selfix: the report names failing 1 test(s): tests/test_calc.py::test_add (no test collected here has that "
        "name in tests.test_calc; same name: tests/test_arithmetic.py::test_add), not in this checkout"
    )
    assert lines[2] == "selfix: failing here instead 1 test(s): tests/test_arithmetic.py::test_add"
    assert "nothing to heal" not in out
    assert "--heal-seen-failures" in lines[-1] and lines[-1].startswith("selfix: next step: ")
    head = (repo / ".selfix" / "report.md").read_text(encoding="utf-8").splitlines()[:10]
    assert head[0] == "# selfix: report tests not found"
    assert any(f"not in this checkout (1):** `tests/test_calc.py::test_add{WHY}`" in line for line in head)
    assert any("`tests/test_arithmetic.py::test_add`" in line for line in head)
    data = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert data["junit_missing"] == [f"tests/test_calc.py::test_add{WHY}"]
    assert data["seen_failures"] == ["tests/test_arithmetic.py::test_add"]
    assert data["exit_code"] == 2 and data["candidates_tried"] == 0


@pytest.mark.slow
def test_heal_seen_failures_heals_what_fails_here(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, report = renamed_after_the_report(tmp_path)

    code = main(["fix", str(repo), "--junit", str(report), "--quiet", "--heal-seen-failures"])

    out = capsys.readouterr().out
    assert code == ExitCode.HEALED, out
    data = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert data["f2p_tests"] == ["tests/test_arithmetic.py::test_add"]
    assert "tests/test_arithmetic.py::test_double" in data["p2p_tests"]  # the report's passing tests are another tree's
    assert "return a + b" in data["patch"]["diff"]
    assert data["junit_missing"] == [f"tests/test_calc.py::test_add{WHY}"]
    assert any("healing the 1 failing here instead, as asked" in note for note in data["notes"])
    assert "not in this checkout" in out.splitlines()[1]  # still said, right after the headline


@pytest.mark.slow
def test_a_report_of_tests_not_here_while_nothing_fails_here_is_still_not_nothing_to_heal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo, report = renamed_after_the_report(tmp_path)
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef double(a):\n    return 2 * a\n")
    for flags in ([], ["--heal-seen-failures"]):
        code = main(["fix", str(repo), "--junit", str(report), "--quiet", *flags])
        out = capsys.readouterr().out
        assert code == ExitCode.BAD_INPUT, out
        assert "no test fails here" in json.loads((repo / ".selfix" / "report.json").read_text())["notes"][-1]
        assert "nothing to heal" not in out


@pytest.mark.slow
def test_a_report_some_of_whose_failing_tests_are_here_heals_those_and_names_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(
        tmp_path / "p",
        {**CALC, "tests/test_gone.py": "def test_gone():\n    assert False\n"},
    )
    report = junit_report(repo, tmp_path / "junit.xml")
    (repo / "tests" / "test_gone.py").unlink()
    code = main(["fix", str(repo), "--junit", str(report), "--quiet"])
    out = capsys.readouterr().out
    assert code == ExitCode.HEALED, out
    assert out.splitlines()[1].startswith("selfix: the report names failing 1 test(s): tests/test_gone.py::test_gone")
    data = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert data["f2p_tests"] == ["tests/test_calc.py::test_add"] and data["seen_failures"] == []
