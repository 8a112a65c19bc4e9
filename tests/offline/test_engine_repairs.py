"""The offline engine feeds the real-bug families what they need: the failing assertions' messages (string_edit)
and the project's files (keyword_add), and tries pairs of edits at the two top lines after every single edit."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from selfix_action.offline.engine import OfflineEngine
from selfix_action.repair.loop import HealingLoop
from selfix_action.repair.report import StopReason
from selfix_action.repair.values import Evidence, SuspiciousLine, TestResult, TestStatus
from selfix_action.sandbox.pytest_sandbox import PytestSandbox

SPREAD = "def spread(values):\n    low = max(values)\n    high = min(values)\n    return high - low\n"


class _Files:
    """What the engine reads from a sandbox: file text and the list of source files."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files

    def read_file(self, path: str) -> str:
        return self.files[path]

    def source_files(self) -> list[str]:
        return sorted(self.files)


def _evidence(file: str, lines: dict[int, float], function: str, message: str = "") -> Evidence:
    failure = TestResult(nodeid="tests/test_m.py::test_it", status=TestStatus.FAILED, message=message)
    return Evidence(
        f2p_tests=(failure.nodeid,),
        p2p_tests=(),
        failures=(failure,),
        suspicious_lines=tuple(
            SuspiciousLine(file=file, line=line, score=score, function=function) for line, score in lines.items()
        ),
        suspicious_functions=(),
        coverage_used=True,
    )


def test_pairs_of_the_two_top_lines_come_after_every_single_edit() -> None:
    engine = OfflineEngine()
    sandbox = _Files({"m.py": SPREAD})
    evidence = _evidence("m.py", {2: 1.0, 3: 0.9}, "spread")
    [hypothesis] = engine.hypotheses(evidence, sandbox, 1)  # type: ignore[arg-type]
    found = list(engine.candidates(hypothesis, evidence, sandbox, []))  # type: ignore[arg-type]
    templates = [c.template for c in found]
    first_pair = templates.index("edit_pair")
    assert set(templates[first_pair:]) == {"edit_pair"}  # tried late: nothing single after the first pair
    assert len(templates) - first_pair <= 16
    fixed = SPREAD.replace("max(values)", "@").replace("min(values)", "max(values)").replace("@", "min(values)")
    assert [c for c in found if c.files["m.py"] == fixed]
    assert len({c.files["m.py"] for c in found}) == len(found)  # no program twice


def test_the_failure_message_guides_a_string_edit() -> None:
    source = "def select(column):\n    return 'SELECT DISTINCT' + column\n"
    message = "assert 'SELECT DISTINCTname' == 'SELECT DISTINCT name'"
    engine = OfflineEngine()
    sandbox = _Files({"q.py": source})
    evidence = _evidence("q.py", {2: 1.0}, "select", message)
    [hypothesis] = engine.hypotheses(evidence, sandbox, 1)  # type: ignore[arg-type]
    found = [c for c in engine.candidates(hypothesis, evidence, sandbox, []) if c.template == "string_edit"]  # type: ignore[arg-type]
    assert [c.files["q.py"] for c in found] == [source.replace("'SELECT DISTINCT'", "'SELECT DISTINCT '")]


def test_a_keyword_the_callee_in_another_file_accepts_through_the_engine() -> None:
    files = {
        "app/__init__.py": "",
        "app/io.py": "def read(path, *, encoding='ascii'):\n    return open(path, encoding=encoding).read()\n",
        "app/main.py": "from app.io import read\n\n\ndef load(path, encoding):\n    return read(path)\n",
    }
    engine = OfflineEngine()
    sandbox = _Files(files)
    evidence = _evidence("app/main.py", {5: 1.0}, "load")
    [hypothesis] = engine.hypotheses(evidence, sandbox, 1)  # type: ignore[arg-type]
    found = [c for c in engine.candidates(hypothesis, evidence, sandbox, []) if c.template == "keyword_add"]  # type: ignore[arg-type]
    assert [c.files["app/main.py"] for c in found] == [
        files["app/main.py"].replace("read(path)", "read(path, encoding=encoding)")
    ]


@pytest.mark.slow
def test_heals_a_missing_space_from_the_assertion_in_the_real_sandbox(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    sandbox = make_sandbox(
        {
            "query.py": (
                "def select(column, distinct=False):\n"
                "    keyword = 'SELECT DISTINCT' if distinct else 'SELECT '\n"
                "    return keyword + column\n"
            ),
            "tests/test_query.py": (
                "from query import select\n"
                "\n"
                "\n"
                "def test_distinct():\n"
                "    assert select('name', distinct=True) == 'SELECT DISTINCT name'\n"
                "\n"
                "\n"
                "def test_plain():\n"
                "    assert select('name') == 'SELECT name'\n"
            ),
        }
    )
    report = HealingLoop(sandbox, OfflineEngine()).run().report
    assert report.stop_reason is StopReason.HEALED
    assert report.patch is not None and report.patch.template == "string_edit"
    assert "+    keyword = 'SELECT DISTINCT ' if distinct else 'SELECT '" in report.patch.diff
