"""F2P and P2P from JUnit reports: every run counts, a failing run never hides behind a passing one."""

from __future__ import annotations

from pathlib import Path

from selfix_action.heal.pipeline import failure_sets


def _report(path: Path, cases: str) -> Path:
    path.write_text(f'<testsuite name="s">{cases}</testsuite>')
    return path


def _case(name: str, failure: str = "") -> str:
    body = f'<failure message="{failure}">{failure}</failure>' if failure else ""
    return f'<testcase classname="tests.test_a" name="{name}" file="tests/test_a.py">{body}</testcase>'


def test_a_case_failing_in_any_run_is_f2p_only_and_named_flaky(tmp_path: Path) -> None:
    first = _report(tmp_path / "a.xml", _case("test_x") + _case("test_x", "boom") + _case("test_y"))
    second = _report(tmp_path / "b.xml", _case("test_z", "bad") + _case("test_y"))
    third = _report(tmp_path / "c.xml", _case("test_z"))
    warnings: list[str] = []
    f2p, p2p = failure_sets([first, second, third], strict=True, warn=warnings.append)
    assert [t.label for t in f2p] == ["tests/test_a.py::test_x", "tests/test_a.py::test_z"]
    assert [t.label for t in p2p] == ["tests/test_a.py::test_y"]
    assert warnings == [
        "2 failing test(s) also passed in another run of the report(s) (flaky): "
        "tests/test_a.py::test_x, tests/test_a.py::test_z"
    ]


def test_steady_results_give_no_warning(tmp_path: Path) -> None:
    report = _report(tmp_path / "a.xml", _case("test_x", "boom") + _case("test_x", "boom") + _case("test_y"))
    warnings: list[str] = []
    f2p, p2p = failure_sets([report], strict=True, warn=warnings.append)
    assert [t.label for t in f2p] == ["tests/test_a.py::test_x"] and [t.label for t in p2p] == [
        "tests/test_a.py::test_y"
    ]
    assert warnings == []


def test_a_node_runners_case_failing_in_one_run_is_f2p_only_too(tmp_path: Path) -> None:
    """Named the Node way (file and full title), a case failing in one report and passing in another is still
    F2P only: the runs are matched by the report's own names, not by how selfix names the test."""
    from selfix_action.heal.pipeline import node_reported, reported_cases, split_cases

    def case(name: str, failure: str = "") -> str:
        body = f'<failure message="{failure}">{failure}</failure>' if failure else ""
        return f'<testcase classname="math" name="{name}" file="test/math.spec.js">{body}</testcase>'

    first = _report(tmp_path / "a.xml", case("adds", "boom") + case("subtracts"))
    second = _report(tmp_path / "b.xml", case("adds") + case("subtracts"))
    warnings: list[str] = []
    cases = reported_cases([first, second], strict=True, warn=warnings.append)
    f2p, p2p = split_cases(cases, warn=warnings.append, name=node_reported("mocha"))
    assert [(t.file, t.full_title) for t in f2p] == [("test/math.spec.js", "math adds")]
    assert [(t.file, t.full_title) for t in p2p] == [("test/math.spec.js", "math subtracts")]
    assert warnings == [
        "1 failing test(s) also passed in another run of the report(s) (flaky): test/math.spec.js: math adds"
    ]
