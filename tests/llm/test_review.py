"""The Reviewer and the independent second Patcher call (issue 33, items 3 and 4).

The Reviewer's request is checked on a scripted model (what it reads, the answer's schema, the corrective re-ask,
a spent budget); its verdict's weight on real heals of the CALC project in the real sandbox, the model a
scripted local server reached by the real SDK client. The second Patcher call is driven after a first Patcher
whose attempts failed and after an offline hand-over, and its request must hold no trace of either.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import ValidationError

from selfix_action.learn.hooks import outcome_fields, trace_header
from selfix_action.learn.trace_schema import parse_lines
from selfix_action.learn.viewer import render_html
from selfix_action.llm.budget import Budget
from selfix_action.llm.engine import LLMEngine
from selfix_action.llm.schemas import REVIEW_TOOL, ReviewAnswer, tool_specs
from selfix_action.providers.base import TokenUsage
from selfix_action.publish.render import pr_body
from selfix_action.repair.patches import unified_diff
from selfix_action.repair.protocols import EngineStopped
from selfix_action.repair.report import StopReason, render_markdown
from selfix_action.repair.review import Review, review_request
from selfix_action.repair.values import (
    CandidatePatch,
    Evidence,
    Frame,
    Hypothesis,
    SuspiciousFunction,
    SuspiciousLine,
    TestResult,
    TestStatus,
    Verification,
    VerifyStage,
)
from tests.helpers import calc_answers
from tests.helpers.calc_answers import anthropic_script, assert_healed, run
from tests.helpers.fake_providers import FakeProvider, anthropic_tool_use
from tests.helpers.llm_sandbox import CachedSandbox, TraceLog
from tests.helpers.queued_model import QueuedModel

ORIGINAL = "def add(a, b):\n    return a - b\n\n\ndef double(x):\n    return x * 2\n"
PATCHED = ORIGINAL.replace("a - b", "a + b")
HYPOTHESIS = Hypothesis(
    id="H1",
    rank=1,
    title="add subtracts instead of adding",
    confidence=0.9,
    file="calc.py",
    symbol="add",
    lines=(1, 2),
    reasoning="test_add fails with 2 - 3 == -1",
    proposed_fix="return the sum",
)
FAILURE = TestResult(
    nodeid="tests/test_calc.py::test_add",
    status=TestStatus.FAILED,
    exc_type="AssertionError",
    message="assert -1 == 5\n +  where -1 = add(2, 3)",
    frames=(Frame(file="calc.py", line=2, function="add", code="return a - b"),),
)
PARTIAL = {"verdict": "partial", "reason": "only ints are summed", "missed": "add('a', 'b') still fails"}


def engine_over(model: QueuedModel, **budget: Any) -> LLMEngine:
    return LLMEngine(model, Budget(model="scripted", **budget))


def a_review_request(behaviour: str = "") -> Any:
    return review_request(
        failures=(FAILURE,),
        hypothesis=HYPOTHESIS,
        diff=unified_diff({"calc.py": ORIGINAL}, {"calc.py": PATCHED}),
        originals={"calc.py": ORIGINAL},
        files={"calc.py": PATCHED},
        behaviour=behaviour,
    )


def test_the_reviewer_reads_the_failure_the_hypothesis_the_patch_the_edited_code_and_the_behaviour() -> None:
    model = QueuedModel({REVIEW_TOOL: [PARTIAL]})
    engine = engine_over(model)
    review = engine.review(a_review_request(behaviour="add(1, 2): -1 -> 3"))
    assert review == Review(verdict="partial", reason="only ints are summed", missed="add('a', 'b') still fails")
    ((context, question),) = model.prompts(REVIEW_TOOL)
    # The failure as the evidence has it: the test, its message, its project frame.
    assert "tests/test_calc.py::test_add" in context and "assert -1 == 5" in context
    assert "calc.py:2 in add: return a - b" in context
    # The edited function whole, as the patch leaves it, numbered; not the function it did not edit.
    assert "calc.py: add (lines 1-2)" in context and "    2 |     return a + b" in context
    assert "def double" not in context
    assert "add subtracts instead of adding" in question and "return the sum" in question
    assert "+    return a + b" in question and "-    return a - b" in question
    assert "add(1, 2): -1 -> 3" in question and "Role: Reviewer." in question
    usage = engine.usage().by_role["reviewer"]
    assert usage.calls == 1 and usage.input_tokens == 300 and usage.output_tokens == 40


def test_without_a_behaviour_table_the_reviewer_is_not_told_of_one() -> None:
    model = QueuedModel({REVIEW_TOOL: [{"verdict": "complete", "reason": "sums both operands"}]})
    review = engine_over(model).review(a_review_request())
    assert review is not None and review.verdict == "complete" and review.missed == ""
    ((_, question),) = model.prompts(REVIEW_TOOL)
    assert "Inputs whose outcome" not in question and "behaviour table" not in question


def test_the_review_schema_holds_three_verdicts_capped_strings_and_a_missed_case_for_doubt() -> None:
    tools = tool_specs()
    assert [t.name for t in tools][-1] == REVIEW_TOOL  # after the others: their cached prefix order is kept
    schema = tools[-1].schema
    assert schema["properties"]["verdict"]["enum"] == ["complete", "partial", "wrong"]
    assert schema["properties"]["reason"]["maxLength"] == 600
    assert schema["properties"]["missed"]["maxLength"] == 400
    assert set(schema["required"]) == {"verdict", "reason"}
    with pytest.raises(ValidationError, match="names the input or case"):
        ReviewAnswer.model_validate({"verdict": "wrong", "reason": "it forces the result"})
    assert ReviewAnswer.model_validate({"verdict": "complete", "reason": "ok"}).missed == ""


def test_an_unusable_review_is_asked_again_once_then_the_engine_says_it_cannot_review() -> None:
    model = QueuedModel(
        {REVIEW_TOOL: [{"verdict": "partial", "reason": "narrow"}, {"verdict": "maybe", "reason": "unsure"}]}
    )
    engine = engine_over(model)
    with pytest.raises(EngineStopped) as stopped:
        engine.review(a_review_request())
    assert (
        stopped.value.reason is StopReason.MODEL_ERROR and "the reviewer gave no usable answer" in stopped.value.detail
    )
    assert len(model.requests) == 2
    assert "names the input or case the patch gets wrong" in model.requests[1].messages[-1].content
    assert engine.usage().invalid_answers == 2 and engine.usage().by_role["reviewer"].calls == 2


def test_a_spent_budget_makes_no_review_call() -> None:
    model = QueuedModel({REVIEW_TOOL: [PARTIAL]})
    engine = engine_over(model, max_calls=1)
    engine.budget.record("patcher", TokenUsage(10, 10))
    with pytest.raises(EngineStopped) as stopped:
        engine.review(a_review_request())
    assert stopped.value.reason is StopReason.BUDGET_EXHAUSTED and "before the reviewer call" in stopped.value.detail
    assert model.requests == []


# -- the second solution ---------------------------------------------------------------------------------
DETECTIVE = {
    "hypotheses": [
        {
            "title": "add subtracts instead of adding",
            "confidence": 0.9,
            "file": "calc.py",
            "symbol": "add",
            "line_start": 1,
            "line_end": 2,
            "reasoning": "test_add fails with 2 - 3 == -1",
            "proposed_fix": "return the sum of the operands",
        }
    ]
}
FIRST_WRONG = {
    "explanation": "FIRST-ATTEMPT multiply",
    "edits": [{"file": "calc.py", "search": "a - b", "replace": "a * b"}],
}
FIRST_FIX = {"explanation": "FIRST-PATCH swap", "edits": [{"file": "calc.py", "search": "a - b", "replace": "b + a"}]}
SECOND = {"explanation": "sum the operands", "edits": [{"file": "calc.py", "search": "a - b", "replace": "a + b"}]}
PRIOR = (
    "## Already tried by selfix's offline repair templates\n- calc.py: PRIOR-MARKER `a // b` -> failed at fail_to_pass"
)


def calc_evidence() -> Evidence:
    return Evidence(
        f2p_tests=("tests/test_calc.py::test_add",),
        p2p_tests=("tests/test_calc.py::test_double",),
        failures=(FAILURE,),
        suspicious_lines=(SuspiciousLine(file="calc.py", line=2, score=1.0, function="add"),),
        suspicious_functions=(SuspiciousFunction(file="calc.py", name="add", start=1, end=2, score=1.0),),
        coverage_used=True,
    )


def test_the_second_patch_sees_the_hypothesis_and_the_code_but_no_first_patch_nor_any_attempt(
    calc: CachedSandbox,
) -> None:
    model = QueuedModel({"report_hypotheses": [DETECTIVE], "propose_edits": [FIRST_WRONG, FIRST_FIX, SECOND]})
    engine = engine_over(model)
    evidence = calc_evidence()
    (hypothesis,) = engine.hypotheses(evidence, calc, 1, prior_attempts=PRIOR)
    # The first Patcher: a failed attempt fed back, then a patch that passes.
    history: list[Verification] = []
    candidates: Iterator[CandidatePatch] = engine.candidates(hypothesis, evidence, calc, history)
    first = next(candidates)
    history.append(
        Verification(candidate_id=first.id, ok=False, stage=VerifyStage.F2P, detail="FIRST-VERDICT assert 6 == 5")
    )
    passing = next(candidates)
    assert "b + a" in passing.files["calc.py"]
    second = engine.second_patch(hypothesis, evidence, calc)
    assert second is not None and "return a + b" in second.files["calc.py"] and second.template == "llm-second"
    assert second.hypothesis_id == hypothesis.id and second.id != passing.id

    *first_calls, second_call = model.requests
    assert second_call.tool == "propose_edits"
    # What the first Patcher's retry saw (so the markers below would show if they leaked).
    retry = first_calls[-1]
    retry_text = retry.context + "\n".join(m.content for m in retry.messages)
    assert "PRIOR-MARKER" in retry_text and "a * b" in retry_text and "FIRST-VERDICT" in retry_text
    text = second_call.context + "\n".join(m.content for m in second_call.messages)
    for trace_of_the_first in ("PRIOR-MARKER", "FIRST-ATTEMPT", "FIRST-VERDICT", "FIRST-PATCH", "a * b", "b + a"):
        assert trace_of_the_first not in text, trace_of_the_first
    assert "Earlier attempts" not in text and len(second_call.messages) == 1
    # The same hypothesis and the same code as the first Patcher had.
    assert "add subtracts instead of adding" in text and "    2 |     return a - b" in text
    # Asked for the whole class of inputs the root cause reaches, not a copy of the first request.
    assert "right for every input the root cause reaches" in text
    assert "right for every input the root cause reaches" not in retry_text
    usage = engine.usage().by_role
    assert usage["patcher2"].calls == 1 and usage["patcher"].calls == 2


def test_the_broadening_patcher_sees_the_confirmed_patch_and_the_reviewers_case(calc: CachedSandbox) -> None:
    broader = {"explanation": "sum any operands", "edits": [{"file": "calc.py", "search": "a - b", "replace": "a + b"}]}
    model = QueuedModel({"report_hypotheses": [DETECTIVE], "propose_edits": [broader]})
    engine = engine_over(model)
    evidence = calc_evidence()
    (hypothesis,) = engine.hypotheses(evidence, calc, 1)
    diff = unified_diff({"calc.py": ORIGINAL}, {"calc.py": ORIGINAL.replace("a - b", "int(a) + int(b)")})
    review = Review(**PARTIAL)
    patch = engine.broaden(hypothesis, evidence, calc, diff, review)
    assert patch is not None and patch.template == "llm-broadened" and "return a + b" in patch.files["calc.py"]
    (call,) = [r for r in model.requests if r.tool == "propose_edits"]
    text = "\n".join(m.content for m in call.messages)
    # The hypothesis and the unpatched code, as the first Patcher had them, then the patch and the verdict.
    assert "add subtracts instead of adding" in text and "    2 |     return a - b" in text
    assert "+    return int(a) + int(b)" in text
    assert "judged it partial: only ints are summed" in text and "add('a', 'b') still fails" in text
    assert "apply to the unpatched code" in text
    assert engine.usage().by_role["broadener"].calls == 1


# -- the verdict's weight on real heals --------------------------------------------------------------------
def review_reply(verdict: dict[str, Any]) -> dict[str, Any]:
    return anthropic_script(review_patch=[anthropic_tool_use("review_patch", verdict)])


@pytest.mark.slow
def test_a_partial_verdict_caps_a_healed_patch_at_medium_and_says_why(calc: CachedSandbox, trace_log: TraceLog) -> None:
    # The Patcher's, the second solution's and, asked to broaden the patch, the same edit a third time.
    fix = anthropic_tool_use("propose_edits", calc_answers.FIX)
    provider = FakeProvider(by_tool={**review_reply(PARTIAL), "propose_edits": [fix, fix, fix]})
    report = run("anthropic", provider, calc, trace_log)
    assert_healed(report)
    # What the loop gave the reviewer: the failing test, the edited function whole as the sandbox's patched copy
    # reads (not its unedited neighbour), the hypothesis and the diff.
    (asked,) = provider.calls("review_patch")
    seen = asked.prompt_text()
    assert "tests/test_calc.py::test_add" in seen and "calc.py: add (lines 1-2)" in seen
    assert "    2 |     return a + b" in seen and "|     return x * 2" not in seen
    assert "add subtracts instead of adding" in seen and "+    return a + b" in seen
    # The behaviour probe's table: the inputs whose outcome the patch changed, unpatched -> patched.
    assert "Inputs whose outcome the patch changed" in seen
    assert "| `add` | `(2, 3)` | failing test | `returns -1` | `returns 5` |" in seen
    assert report.review == Review(verdict="partial", reason="only ints are summed", missed="add('a', 'b') still fails")
    assert report.confidence is not None and report.confidence.level == "medium"
    (capping,) = [r for r in report.confidence.reasons if r.level != "high"]
    assert capping.code == "review_partial"
    assert "only ints are summed" in capping.text and "add('a', 'b') still fails" in capping.text
    markdown = render_markdown(report)
    assert "Reviewer's verdict: **partial**: only ints are summed" in markdown
    (event,) = trace_log.steps("review")
    assert event["verdict"] == "partial" and event["confidence"] == "medium"
    # The two calls of the new evidence, each a role of its own in the usage (report.json, report.md).
    assert report.usage.by_role["reviewer"].calls == 1 and report.usage.by_role["patcher2"].calls == 1
    # Asked to broaden the patch the reviewer called partial, the Patcher gave the same program: it stays.
    assert report.usage.by_role["broadener"].calls == 1
    assert any("not broadened" in n and "the Patcher returned the same program" in n for n in report.notes)
    assert "| reviewer | 1 | 100 | 20 |" in markdown and "| patcher2 | 1 | 100 | 20 |" in markdown
    # The PR body and view.html say it too.
    body = pr_body(report, run_url="https://ci.example/run/1", fp="abc")
    assert "Reviewer's verdict: **partial**: only ints are summed" in body and "add('a', 'b') still fails" in body
    outcome = {"t": 1.0, "step": "outcome", "message": "healed", **outcome_fields(report)}
    lines = [json.dumps(trace_header(".", "anthropic")), json.dumps(outcome)]
    html = render_html(parse_lines(lines))
    card = html[html.index('id="review"') : html.index("</div>", html.index('id="review"'))]
    assert "<strong>partial</strong>" in card and "only ints are summed" in card and "add(&#x27;a&#x27;" in card
    assert json.loads(report.model_dump_json())["review"]["verdict"] == "partial"  # report.json


def test_a_complete_verdict_supports_high_and_lifts_nothing(calc: CachedSandbox, trace_log: TraceLog) -> None:
    complete = {"verdict": "complete", "reason": "it sums both operands"}
    healed = run("anthropic", FakeProvider(by_tool=review_reply(complete)), calc, trace_log)
    assert healed.confidence is not None and healed.confidence.level == "high"
    assert any(r.code == "review_complete" and r.level == "high" for r in healed.confidence.reasons)
    # A patch with no reproduction test of its own (both QA answers unusable) is medium without a review: the
    # complete verdict leaves it there.
    broken_qa = anthropic_tool_use(
        "write_reproduction_test", {"test_source": "x = 1  # no test", "expected_failure": "-"}
    )
    script = review_reply(complete)
    script["write_reproduction_test"] = [broken_qa, broken_qa]
    report = run("anthropic", FakeProvider(by_tool=script), calc, trace_log)
    assert_healed(report)
    assert report.review is not None and report.review.verdict == "complete"
    assert report.confidence is not None and report.confidence.level == "medium"
    assert any(r.code == "review_complete" for r in report.confidence.reasons)


def test_no_review_when_the_budget_is_spent_is_a_note_not_a_failed_heal(
    calc: CachedSandbox, trace_log: TraceLog
) -> None:
    report = run("anthropic", FakeProvider(by_tool=review_reply(PARTIAL)), calc, trace_log, max_calls=3)
    assert_healed(report)
    assert report.review is None and "reviewer" not in report.usage.by_role
    assert any(n.startswith("no review: LLM call budget of 3 call(s) spent") for n in report.notes), report.notes
    assert report.confidence is not None and not any(r.code.startswith("review_") for r in report.confidence.reasons)


def test_qa_settles_a_disagreement_from_the_table_of_inputs(calc: CachedSandbox) -> None:
    table = "| function | input | from | first patch | second patch |\n|---|---|---|---|---|\n"
    table += "| `add` | `('a', 'b')` | failing test, argument 1 as str | `raises TypeError` | `returns 'ab'` |"
    settling = {
        "test_source": "from calc import add\n\n\ndef test_strings():\n    assert add('a', 'b') == 'ab'\n",
        "expected_failure": "the first patch raises TypeError",
    }
    model = QueuedModel({"write_reproduction_test": [settling]})
    engine = engine_over(model)
    test = engine.settle(HYPOTHESIS, calc_evidence(), calc, table)
    assert test is not None and test.path == "test_settle_h1.py" and "add('a', 'b') == 'ab'" in test.source
    (request,) = model.requests
    text = "\n".join(m.content for m in request.messages)
    assert "Role: QA, settling a disagreement." in text and "`returns 'ab'`" in text
    assert "add subtracts instead of adding" in text
    assert engine.usage().by_role["settler"].calls == 1


SHAPES = '''\
class Shape:
    def __init__(self, name):
        self.name = name


class Square(Shape):
    """A square of one side."""

    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side + self.side

    def label(self):
        return self.name
'''


def test_an_edited_method_is_shown_with_its_class_statement_and_constructor_unedited() -> None:
    # luigi-2's partial fix: the method was right, the class' __init__ never called its base's. A reviewer shown
    # only the edited method cannot see that half; it sees how the class builds an object, marked unedited.
    patched = SHAPES.replace("self.side + self.side", "self.side * self.side")
    model = QueuedModel({REVIEW_TOOL: [PARTIAL]})
    request = review_request(
        failures=(FAILURE,),
        hypothesis=HYPOTHESIS,
        diff=unified_diff({"shapes.py": SHAPES}, {"shapes.py": patched}),
        originals={"shapes.py": SHAPES},
        files={"shapes.py": patched},
    )
    assert [(c.symbol, c.edited) for c in request.code] == [
        ("Square.area", True),
        ("Square", False),
        ("Square.__init__", False),
    ]
    engine_over(model).review(request)
    ((context, _),) = model.prompts(REVIEW_TOOL)
    edited, _, builders = context.partition("How the edited methods' classes build an object (not edited")
    assert "shapes.py: Square.area (lines 12-13)" in edited and "Square.__init__" not in edited
    assert "    6 | class Square(Shape):" in builders and '"""A square of one side."""' in builders
    assert "shapes.py: Square.__init__ (lines 9-10)" in builders and "self.side = side" in builders
    assert "def label" not in context and "class Shape:" not in context


def test_an_edited_constructor_or_function_brings_no_class_context() -> None:
    patched = SHAPES.replace("self.side = side", "self.side = abs(side)")
    request = review_request(
        failures=(FAILURE,),
        hypothesis=HYPOTHESIS,
        diff="",
        originals={"shapes.py": SHAPES, "calc.py": ORIGINAL},
        files={"shapes.py": patched, "calc.py": PATCHED},
    )
    assert [(c.file, c.symbol, c.edited) for c in request.code] == [
        ("calc.py", "add", True),
        ("shapes.py", "Square.__init__", True),
    ]
