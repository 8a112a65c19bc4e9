"""Property tests from the hypothesis (issue 33, item 1): QA's Hypothesis-library property test, run in the real
sandbox on the project's interpreter with the Hypothesis selfix provides, gated on the unpatched code and run on
each candidate that passed everything else (real SDK, scripted server, real sandbox, real Hypothesis)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from selfix_action.learn.trace_schema import Trace, TraceHeader, parse_lines
from selfix_action.learn.viewer import render_html
from selfix_action.publish.render import pr_body
from selfix_action.repair.properties import FAILING_PREFIXES, counterexample, gate, outcome
from selfix_action.repair.report import HealReport, StopReason, render_markdown
from selfix_action.repair.values import Frame, TestResult, TestRun, TestStatus, VerifyStage
from selfix_action.sandbox.hypothesis_lib import install_argv
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.calc_answers import run
from tests.helpers.fake_providers import FakeProvider, anthropic_tool_use
from tests.helpers.llm_sandbox import CachedSandbox, TraceLog, project_digest
from tests.helpers.projects import write_project
from tests.helpers.property_answers import COMPLETE, DETECTIVE, HOLDS_ALREADY, ITEMS, PARTIAL, TWO_HUNKS, qa_answer


def _script(qa: dict[str, object], *patches: dict[str, object]) -> FakeProvider:
    return FakeProvider(
        by_tool={
            "report_hypotheses": [anthropic_tool_use("report_hypotheses", DETECTIVE)],
            "write_reproduction_test": [anthropic_tool_use("write_reproduction_test", qa)],
            "propose_edits": [anthropic_tool_use("propose_edits", patch) for patch in patches],
        }
    )


def _trace(log: TraceLog) -> Trace:
    """The heal's trace as ``selfix view`` reads it back from trace.jsonl."""
    lines = [TraceHeader().model_dump_json(), *(json.dumps(event, default=str) for event in log.events)]
    return parse_lines(lines)


def _reasons(report: HealReport) -> dict[str, str]:
    assert report.confidence is not None
    return {reason.code: reason.text for reason in report.confidence.reasons}


@pytest.mark.slow
def test_a_property_with_a_counterexample_before_and_none_on_the_patch_is_evidence_for_it(
    items_sandbox: CachedSandbox, trace_log: TraceLog
) -> None:
    report = run("anthropic", _script(qa_answer(), COMPLETE), items_sandbox, trace_log)
    assert report.stop_reason is StopReason.HEALED, report.notes
    assert report.patch is not None and "isinstance(value, (list, tuple))" in report.patch.diff
    record = report.hypotheses[0].property_test
    assert record is not None and record.used, record
    # The shrunk counterexample on the unpatched code, as Hypothesis printed it.
    assert record.counterexample.startswith(tuple(f"{p}: test_single_value_is_one_item(" for p in FAILING_PREFIXES))
    assert "AssertionError" in record.counterexample
    assert record.held_on_patch is True and record.examples >= 100
    assert f"in {record.examples} generated example(s)" in _reasons(report)["property_holds"]


@pytest.mark.slow
def test_a_partial_fix_that_passes_the_tests_is_rejected_by_the_property_and_the_complete_one_wins(
    items_sandbox: CachedSandbox, trace_log: TraceLog
) -> None:
    provider = _script(qa_answer(), PARTIAL, COMPLETE)
    report = run("anthropic", provider, items_sandbox, trace_log)
    assert report.stop_reason is StopReason.HEALED, report.notes
    assert report.patch is not None and "isinstance(value, (list, tuple))" in report.patch.diff
    (rejection,) = report.hypotheses[0].rejections
    assert rejection.candidate_id == "H1-P1" and rejection.stage is VerifyStage.PROPERTY
    # The partial patch passed the failing test and the example QA test; the property found a bytes value.
    first_verdict = trace_log.steps("verify")[0]
    assert first_verdict["stage"] == "property_test" and "counterexample" in first_verdict["detail"]
    assert "value=b" in rejection.detail
    # The counterexample reaches the next Patcher prompt.
    _, second, *_second_solution = provider.calls("propose_edits")  # then the second solution's call
    assert "property_test" in second.prompt_text() and "test_single_value_is_one_item(" in second.prompt_text()
    assert "value=b" in second.prompt_text()
    record = report.hypotheses[0].property_test
    assert record is not None and record.rejected == ("H1-P1",) and record.held_on_patch is True
    # report.md, the PR body and view.html show the property test, its counterexample and its verdict on the patch.
    markdown = render_markdown(report)
    assert "- Property test: a counterexample on the unpatched code, none on the patch in" in markdown
    assert "rejected H1-P1 as partial fix(es)" in markdown and record.counterexample.splitlines()[0] in markdown
    assert "@given(st.one_of(st.integers(), st.text(), st.binary()))" in markdown
    body = pr_body(report, run_url="https://ci.example/run/1", fp="fp")
    assert "property test: a counterexample on the unpatched code, none on the patch in" in body
    assert record.counterexample.splitlines()[0] in body
    page = render_html(_trace(trace_log))
    assert '<table id="properties">' in page and "counterexample found: used" in page
    assert "counterexample: partial fix" in page and f"held in {record.examples} example(s)" in page


@pytest.mark.slow
def test_minimization_keeps_a_hunk_the_property_needs(items_sandbox: CachedSandbox, trace_log: TraceLog) -> None:
    report = run("anthropic", _script(qa_answer(), TWO_HUNKS), items_sandbox, trace_log)
    assert report.stop_reason is StopReason.HEALED, report.notes
    assert report.patch is not None and report.patch.hunks == 2, report.patch
    assert "(int, float, str)" in report.patch.diff and "isinstance(value, bytes)" in report.patch.diff
    # The patch without its bytes hunk passed the tests; the property's counterexample kept the hunk.
    trial = [e for e in trace_log.steps("property") if e.get("candidate") == "a minimized patch"]
    assert [e["held"] for e in trial] == [False] and "value=b" in trial[0]["detail"]
    record = report.hypotheses[0].property_test
    assert record is not None and record.held_on_patch is True and record.rejected == ()


@pytest.mark.slow
def test_a_property_that_holds_on_the_unpatched_code_is_not_used(
    items_sandbox: CachedSandbox, trace_log: TraceLog
) -> None:
    # Without a usable property, the partial patch passes every check that is left.
    report = run("anthropic", _script(qa_answer(HOLDS_ALREADY), PARTIAL), items_sandbox, trace_log)
    assert report.stop_reason is StopReason.HEALED, report.notes
    assert report.patch is not None and "(int, float, str)" in report.patch.diff
    record = report.hypotheses[0].property_test
    assert record is not None and not record.used and record.held_on_patch is None
    assert "found no counterexample on the unpatched code" in record.note
    assert "property_holds" not in _reasons(report)
    assert [s["used"] for s in trace_log.steps("property")] == [False]


@pytest.mark.slow
def test_without_hypothesis_property_evidence_is_skipped_with_a_note(tmp_path: Path, trace_log: TraceLog) -> None:
    # No package index and no pip configuration: pip cannot install Hypothesis, as on a machine without network.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update({"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1"})
    repo = write_project(tmp_path / "items", ITEMS)
    inner = PytestSandbox(
        repo,
        [sys.executable, "-m", "pytest"],
        limits=Limits(wall_seconds=60),
        env_source=env,
        scratch_parent=tmp_path,
        hypothesis_cache=tmp_path / "empty-cache",
    )
    with inner:
        report = run("anthropic", _script(qa_answer(), COMPLETE), CachedSandbox(inner, project_digest(repo)), trace_log)
    assert report.stop_reason is StopReason.HEALED, report.notes
    record = report.hypotheses[0].property_test
    assert record is not None and not record.used
    assert record.note.startswith("skipped: Hypothesis is not installed for the project and pip could not install")
    assert any(note.startswith("property tests skipped: ") for note in report.notes)
    assert "property_holds" not in _reasons(report)
    assert not (tmp_path / "empty-cache" / f"py{sys.version_info[0]}.{sys.version_info[1]}").exists()


def test_the_counterexample_is_hypothesis_falsifying_example_with_its_error() -> None:
    message = "assert ['a'] == ['ab']\nFalsifying example: test_p(\n    value='ab',\n)"
    result = TestResult(
        nodeid="_selfix_qa/property_h1/test_property_h1.py::test_p",
        status=TestStatus.FAILED,
        exc_type="AssertionError",
        message=message,
        frames=(Frame(file="_selfix_qa/property_h1/test_property_h1.py", line=8, function="test_p"),),
    )
    assert counterexample(result) == (
        "Falsifying example: test_p(\n    value='ab',\n)\n"
        "AssertionError at _selfix_qa/property_h1/test_property_h1.py:8: assert ['a'] == ['ab']"
    )
    # A failure without Hypothesis' block is no counterexample.
    plain = result.model_copy(update={"message": "assert 1 == 2"})
    assert counterexample(plain) == ""
    verdict = outcome(TestRun(results={result.nodeid: plain}), "_selfix_qa/property_h1/test_property_h1.py")
    assert not verdict.held and "Falsifying" not in verdict.detail


def test_hypothesis_is_resolved_for_the_project_python_with_the_backport_before_3_11() -> None:
    old = install_argv("3.8", Path("/cache/py3.8"))
    assert old[old.index("--python-version") + 1] == "3.8" and "--only-binary=:all:" in old
    assert "exceptiongroup>=1.0.0" in old
    assert "exceptiongroup>=1.0.0" not in install_argv("3.12", Path("/cache/py3.12"))


def test_a_property_test_broken_in_its_own_code_or_its_use_of_hypothesis_is_not_evidence() -> None:
    module = "_selfix_qa/property_h1/test_property_h1.py"
    frame = Frame(file=module, line=6, function="test_p")

    def judged(exc_type: str, message: str) -> str:
        result = TestResult(
            nodeid=f"{module}::test_p", status=TestStatus.FAILED, exc_type=exc_type, message=message, frames=(frame,)
        )
        found = gate(TestRun(results={result.nodeid: result}), module, {module: "x"}, "x")
        assert found.gated is None and not found.record.used
        return found.record.note

    # A name the test never imported, raised in its own lines, even with Hypothesis' report attached.
    assert "raised in the test itself" in judged("NameError", "name 'st' is not defined\nFailing test case: t()")
    assert "InvalidArgument" in judged("InvalidArgument", "max_examples=-1 should be at least one")
    assert (
        "could not be collected"
        in gate(TestRun(error="pytest collected no test (exit 5)"), module, {}, "x").record.note
    )
