from __future__ import annotations

import math

from selfix_action.repair.localize import function_spans, localize, ochiai
from selfix_action.repair.values import Frame, TestResult, TestStatus

SOURCE = """\
def pick(xs, k):
    if k > len(xs):
        return None
    total = 0
    for x in xs[:k]:
        total += x
    return total


class Box:
    def size(self):
        return 1
"""


def failure(nodeid: str, frames: tuple[Frame, ...] = ()) -> TestResult:
    return TestResult(nodeid=nodeid, status=TestStatus.FAILED, exc_type="AssertionError", frames=frames)


def test_ochiai_formula() -> None:
    assert ochiai(0, 5, 2) == 0.0
    assert ochiai(2, 0, 2) == 1.0
    assert math.isclose(ochiai(1, 3, 2), 1 / math.sqrt(2 * 4))


def test_function_spans_are_qualified_with_statement_lines() -> None:
    spans = {s.name: s for s in function_spans("m.py", SOURCE)}
    assert set(spans) == {"pick", "Box.size"}
    assert spans["pick"].statement_lines == frozenset({2, 3, 4, 5, 6, 7})
    assert (spans["Box.size"].start, spans["Box.size"].end) == (11, 12)


def test_lines_only_failing_tests_run_rank_first() -> None:
    coverage = {
        "t::fail": {"m.py": [2, 4, 5, 6, 7]},
        "t::pass1": {"m.py": [2, 3]},
        "t::pass2": {"m.py": [2, 4, 5, 7]},
    }
    found = localize([failure("t::fail")], ["t::pass1", "t::pass2"], coverage, {"m.py": SOURCE})
    assert found.coverage_used
    top = found.lines[0]
    assert (top.file, top.line, top.score, top.function) == ("m.py", 6, 1.0, "pick")
    scores = {s.line: s.score for s in found.lines}
    assert scores[2] < scores[4] < scores[6]
    assert 3 not in scores  # never run by a failing test
    assert found.functions[0].name == "pick"


def test_traceback_frames_add_weight_and_break_ties() -> None:
    coverage = {"t::fail": {"m.py": [2, 4]}}
    frames = (Frame(file="tests/t.py", line=3, function="test"), Frame(file="m.py", line=4, function="pick"))
    found = localize([failure("t::fail", frames)], [], coverage, {"m.py": SOURCE})
    assert found.lines[0].line == 4
    assert found.lines[0].score > found.lines[1].score


def test_without_coverage_the_called_functions_are_suspects() -> None:
    test_source = "from m import pick\n\ndef test_pick():\n    assert pick([1, 2], 1) == 1\n"
    found = localize(
        [failure("tests/test_m.py::test_pick")], [], None, {"m.py": SOURCE}, {"tests/test_m.py": test_source}
    )
    assert not found.coverage_used
    assert "no per-test coverage" in found.note
    assert {s.line for s in found.lines} == {2, 3, 4, 5, 6, 7}
    assert {s.function for s in found.lines} == {"pick"}


def test_module_constants_are_blamed_through_the_lines_that_read_them() -> None:
    source = "LIMIT = 4\n\n\ndef over(x):\n    return x > LIMIT\n\n\ndef half(x):\n    return x / 2\n"
    coverage = {"t::fail": {"m.py": [5]}, "t::pass": {"m.py": [9]}}
    found = localize([failure("t::fail")], ["t::pass"], coverage, {"m.py": source})
    scores = {s.line: s.score for s in found.lines}
    assert scores[1] == 1.0  # read only by the failing test, like line 5
    assert scores[5] == 1.0
    assert 9 not in scores
