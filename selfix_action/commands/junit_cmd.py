"""Body of ``selfix junit``: read JUnit/xUnit reports and print what they say.

Every readable file is printed even when another file in the same call is broken; each broken file gets one
``selfix: error: <path>: <reason>`` line on stderr and makes the exit code 2.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import TextIO

from selfix_action.errors import ExitCode
from selfix_action.junit import JUnitReport, Outcome, TestCaseResult, parse_reports

MAX_TEXT_LINES = 20

_LABELS = {
    Outcome.PASSED: "PASSED",
    Outcome.FAILED: "FAILED",
    Outcome.ERROR: "ERROR",
    Outcome.SKIPPED: "SKIPPED",
}


def _title(case: TestCaseResult) -> str:
    if case.nodeid:
        return case.nodeid
    if not case.classname or case.classname == case.name:
        return case.name
    return f"{case.classname}::{case.name}"


def _location(case: TestCaseResult) -> str:
    if not case.file:
        return ""
    return case.file if case.line is None else f"{case.file}:{case.line}"


def _indent(text: str, prefix: str) -> list[str]:
    return [f"{prefix}{line}".rstrip() for line in text.splitlines()]


def _case_lines(case: TestCaseResult) -> list[str]:
    head = f"{_LABELS[case.outcome]:<7} {_title(case)}"
    if len(case.runs) > 1:
        runs = ", ".join(run.value for run in case.runs)
        head += f"  [{len(case.runs)} runs: {runs}{'; flaky' if case.flaky else ''}]"
    if case.duration is not None:
        head += f"  ({case.duration:.3f}s)"
    location = _location(case)
    if location:
        head += f"  {location}"
    lines = [head]
    if case.outcome is Outcome.PASSED:
        return lines
    if case.message:
        lines.extend(_indent(case.message, "    "))
    if case.text:
        body = case.text.splitlines()
        shown = body[:MAX_TEXT_LINES]
        lines.extend(_indent("\n".join(shown), "      "))
        if len(body) > len(shown):
            lines.append(f"      ... ({len(body) - len(shown)} more lines)")
    return lines


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _summary(report: JUnitReport, n_files: int) -> str:
    """Counts of runs, as the files record them (a repeated case counts once per run), then the flaky cases."""
    counts = Counter(run for case in report.cases for run in case.runs)
    line = (
        f"{counts[Outcome.PASSED]} passed, {counts[Outcome.FAILED]} failed, "
        f"{_plural(counts[Outcome.ERROR], 'error')}, {counts[Outcome.SKIPPED]} skipped "
        f"in {_plural(n_files, 'file')}"
    )
    repeated = [case for case in report.cases if len(case.runs) > 1]
    if repeated:
        flaky = sum(case.flaky for case in repeated)
        line += f" ({_plural(len(repeated), 'case')} ran more than once, {flaky} flaky)"
    return line


def run_junit(paths: Sequence[str], as_json: bool, out: TextIO, err: TextIO) -> int:
    """Print the test cases of every report in ``paths``; return 0, or 2 if any file could not be read."""
    if not paths:
        err.write("selfix: error: no JUnit report given\n")
        return int(ExitCode.BAD_INPUT)

    report = parse_reports(paths)
    for error in report.errors:
        err.write(f"selfix: error: {error.path}: {error.reason}\n")

    if as_json:
        out.write(json.dumps(report.model_dump(mode="json"), indent=2))
        out.write("\n")
    else:
        for case in report.cases:
            out.write("\n".join(_case_lines(case)) + "\n")
        out.write(_summary(report, len(paths) - len(report.errors)) + "\n")

    return int(ExitCode.BAD_INPUT) if report.errors else 0
