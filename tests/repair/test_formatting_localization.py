"""A ``__repr__`` pytest runs only to format a failing assertion's message is not code the test ran: it does not
top the localization, and a fix elsewhere is not capped for "editing the function ranked 2"."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from selfix_action.repair.loop import HealingLoop
from selfix_action.repair.report import StopReason
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.projects import write_project
from tests.helpers.scripted_engine import ScriptedEngine, hyp

SHELL = """\
class Command:
    def __init__(self, script):
        self.script = script

    def __eq__(self, other):
        return self.script == other.script

    def __repr__(self):
        shown = self.script.strip()
        return f"Command(script={shown!r})"


def force(command):
    if command.script.startswith("git push"):
        return Command(command.script + " --force")
    return command
"""
FIXED = SHELL.replace('" --force"', '" --force-with-lease"')
TESTS = """\
from shell import Command, force


def test_force_push():
    assert force(Command("git push")) == Command("git push --force-with-lease")


def test_other_commands_are_kept():
    assert force(Command("ls")) == Command("ls")
"""
PROJECT = {"shell.py": SHELL, "tests/test_shell.py": TESTS}


@pytest.mark.parametrize("collector", ["fallback", "always"])  # coverage.py; selfix's own line collector
def test_a_repr_run_only_to_format_the_failure_is_not_covered_by_the_failing_test(
    tmp_path: Path, collector: str
) -> None:
    repo = write_project(tmp_path / "p", PROJECT)
    command = [sys.executable, "-m", "pytest"]
    with PytestSandbox(repo, command, scratch_parent=tmp_path, line_collector=collector) as sandbox:
        run = sandbox.run_tests(coverage=True)
    assert run.coverage is not None and run.coverage_collector == sandbox.coverage_collector
    assert (run.coverage_collector == "coverage.py") == (collector == "fallback")
    covered = set(run.coverage["tests/test_shell.py::test_force_push"]["shell.py"])
    assert {3, 6, 14, 15} <= covered  # the constructor, __eq__ and force ran in the test
    assert not covered & {9, 10}  # __repr__ ran only while pytest formatted the message


@pytest.mark.slow
def test_a_fix_outside_the_repr_is_localized_and_not_capped_for_it(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    sandbox = make_sandbox(PROJECT)
    engine = ScriptedEngine([hyp("H1", 1)], {}, {"H1": [{"shell.py": FIXED}]})
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.HEALED
    assert "Command.__repr__" not in [f.name for f in report.suspicious_functions]
    codes = {r.code: r.level for r in report.confidence.reasons}
    assert codes.get("localized") == "high" and "not_localized" not in codes, report.confidence.reasons
