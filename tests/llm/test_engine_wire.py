"""The healing loop with the LLM engine over the real SDKs and a real pytest sandbox, the provider being a
scripted local server: rate limits, overload, server errors, bad keys, malformed answers, edits to tests,
repeated edits and budgets. Each test asserts the loop's outcome, the recorded usage and the stop reason."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from selfix_action.repair.report import StopReason
from tests.helpers.calc_answers import DETECTIVE, FIX, QA, anthropic_script, assert_healed, openai_script, run
from tests.helpers.fake_providers import (
    FakeProvider,
    anthropic_error,
    anthropic_tool_use,
    openai_error,
    openai_text,
    openai_tool_call,
)
from tests.helpers.llm_sandbox import CachedSandbox, TraceLog
from tests.helpers.projects import CALC

WRONG = {"explanation": "multiply", "edits": [{"file": "calc.py", "search": "a - b", "replace": "a * b"}]}
EDITS_TEST = {
    "explanation": "make the test expect subtraction",
    "edits": [{"file": "tests/test_calc.py", "search": "add(2, 3) == 5", "replace": "add(2, 3) == -1"}],
}


@pytest.mark.slow
def test_rate_limit_retry_after_is_honoured_but_capped(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(
        by_tool=anthropic_script(
            report_hypotheses=[
                anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "120"}),
                anthropic_tool_use("report_hypotheses", DETECTIVE),
            ]
        )
    )
    report = run("anthropic", provider, calc, trace_log)
    # Not 120 s: the wait was capped at max_retry_wait (the trace says what was waited, not a wall clock).
    assert_healed(report)
    # The three roles, the second solution's Patcher call and the reviewer.
    assert report.usage.retries == 1 and report.usage.calls == 5
    (retry,) = trace_log.steps("model_retry")
    assert retry["status"] == 429 and retry["requested_wait"] == 120 and retry["waited"] == 0.05
    assert "capped" in retry["message"]
    assert len(provider.requests) == 6  # the SDK did not retry on its own


@pytest.mark.slow
def test_overloaded_and_unavailable_are_retried(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(
        by_tool=anthropic_script(
            write_reproduction_test=[
                anthropic_error(529, "overloaded_error", "Overloaded", {"retry-after": "0.01"}),
                anthropic_tool_use("write_reproduction_test", QA),
            ],
            propose_edits=[
                anthropic_error(503, "api_error", "unavailable"),
                anthropic_tool_use("propose_edits", FIX),
                anthropic_tool_use("propose_edits", FIX),  # the second solution
            ],
        )
    )
    report = run("anthropic", provider, calc, trace_log)
    assert_healed(report)
    assert [r["status"] for r in trace_log.steps("model_retry")] == [529, 503]
    assert report.usage.retries == 2
    assert report.usage.by_role["qa"].calls == 1  # failed attempts are not billed calls


def test_server_error_then_success_openai(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(
        by_tool=openai_script(
            report_hypotheses=[
                openai_error(500, "server_error", "boom"),
                openai_tool_call("report_hypotheses", DETECTIVE, prompt_tokens=1200, cached_tokens=1000),
            ]
        )
    )
    report = run("openai", provider, calc, trace_log)
    assert_healed(report)
    detective = report.usage.by_role["detective"]
    assert detective.input_tokens == 200 and detective.cache_read_tokens == 1000
    assert report.usage.retries == 1


def test_server_error_that_persists_stops_with_model_error(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider([openai_error(500, "server_error", "boom")] * 5)
    report = run("openai", provider, calc, trace_log)
    assert report.stop_reason is StopReason.MODEL_ERROR and report.exit_code == 1
    assert len(provider.requests) == 3  # one try and max_retries=2
    assert any("HTTP 500" in note for note in report.notes)
    assert report.usage.calls == 0 and report.usage.retries == 2


def test_bad_key_stops_at_once(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider([anthropic_error(401, "authentication_error", "invalid x-api-key")] * 3)
    report = run("anthropic", provider, calc, trace_log)
    assert report.stop_reason is StopReason.MODEL_ERROR and report.exit_code == 1
    assert len(provider.requests) == 1
    (note,) = report.notes
    assert "rejected the API key (HTTP 401)" in note and "ANTHROPIC_API_KEY" in note
    assert report.usage.calls == 0 and not trace_log.steps("model_retry")


def test_malformed_json_gets_one_corrective_reask(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(
        by_tool=openai_script(
            report_hypotheses=[
                openai_tool_call("report_hypotheses", '{"hypotheses": [{"title": "add is wrong",'),
                openai_tool_call("report_hypotheses", DETECTIVE),
            ]
        )
    )
    report = run("openai", provider, calc, trace_log)
    assert_healed(report)
    reask = provider.calls("report_hypotheses")[1].body["messages"]
    assert reask[-2]["role"] == "assistant" and reask[-2]["content"].startswith('{"hypotheses"')
    assert "not valid JSON" in reask[-1]["content"]
    assert report.usage.invalid_answers == 1
    assert report.usage.by_role["detective"].calls == 2


def test_malformed_twice_is_a_failed_attempt(calc: CachedSandbox, trace_log: TraceLog) -> None:
    missing = {"explanation": "fix"}  # no edits
    provider = FakeProvider(
        by_tool=anthropic_script(
            propose_edits=[
                anthropic_tool_use("propose_edits", missing),
                anthropic_tool_use("propose_edits", {"edits": "a + b"}),
                anthropic_tool_use("propose_edits", FIX),
            ]
        )
    )
    report = run("anthropic", provider, calc, trace_log)
    assert_healed(report)
    assert report.usage.invalid_answers == 2 and report.usage.by_role["patcher"].calls == 3
    second = provider.calls("propose_edits")[1].prompt_text()
    assert "give at least one edit, or environment_problem" in second
    third = provider.calls("propose_edits")[2].prompt_text()
    assert "attempt 1: unusable answer" in third  # the failed attempt is part of the feedback
    assert report.candidates_tried == 1


def test_edit_to_a_test_file_is_refused(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(
        by_tool=anthropic_script(
            propose_edits=[
                anthropic_tool_use("propose_edits", EDITS_TEST),
                anthropic_tool_use("propose_edits", FIX),
            ]
        )
    )
    report = run("anthropic", provider, calc, trace_log)
    assert_healed(report)
    reask = provider.calls("propose_edits")[1].prompt_text()
    assert "refused, tests/test_calc.py is a test file" in reask
    assert report.candidates_tried == 1  # the refused edit never reached the sandbox
    assert "add(2, 3) == 5" in calc.read_file("tests/test_calc.py")


def test_search_text_that_does_not_match_gets_the_closest_region(calc: CachedSandbox, trace_log: TraceLog) -> None:
    near = {"explanation": "add", "edits": [{"file": "calc.py", "search": "return a-b", "replace": "return a+b"}]}
    provider = FakeProvider(
        by_tool=anthropic_script(
            propose_edits=[anthropic_tool_use("propose_edits", near), anthropic_tool_use("propose_edits", FIX)]
        )
    )
    report = run("anthropic", provider, calc, trace_log)
    assert_healed(report)
    reask = provider.calls("propose_edits")[1].prompt_text()
    assert "search text was not found" in reask and "    2 |     return a - b" in reask


@pytest.mark.slow
def test_failed_verification_is_fed_back_then_backtracks(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(
        by_tool=anthropic_script(
            propose_edits=[anthropic_tool_use("propose_edits", WRONG), anthropic_tool_use("propose_edits", FIX)]
        )
    )
    report = run("anthropic", provider, calc, trace_log)
    assert_healed(report)
    second = provider.calls("propose_edits")[1].prompt_text()
    assert "`a - b` -> `a * b` -> verification failed at fail_to_pass" in second
    assert report.hypotheses[0].rejections_by_stage == {"fail_to_pass": 1}


def test_repeated_identical_edit_stops_the_loop(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(
        by_tool=anthropic_script(propose_edits=[anthropic_tool_use("propose_edits", WRONG) for _ in range(3)])
    )
    report = run("anthropic", provider, calc, trace_log)
    assert report.stop_reason is StopReason.REPEATED_EDIT and report.exit_code == 1
    assert report.candidates_tried == 1
    assert "identical to one already tried" in provider.calls("propose_edits")[2].prompt_text()
    assert report.usage.by_role["patcher"].calls == 3


def test_call_budget(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(by_tool=anthropic_script())
    report = run("anthropic", provider, calc, trace_log, max_calls=2)
    assert report.stop_reason is StopReason.BUDGET_EXHAUSTED and report.exit_code == 1
    assert report.usage.calls == 2 and len(provider.requests) == 2
    assert any("call budget of 2" in note for note in report.notes)


def test_cost_budget_with_a_user_price(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(by_tool=anthropic_script())
    prices = {"claude-sonnet-4-6": {"input": 3000.0, "output": 15000.0}}  # $0.30 + $0.30 per call here
    report = run("anthropic", provider, calc, trace_log, max_cost_usd=0.5, prices=prices)
    assert report.stop_reason is StopReason.BUDGET_EXHAUSTED
    assert report.usage.calls == 1 and report.usage.cost_usd == pytest.approx(0.6)
    assert report.usage.price_per_million_tokens.input == 3000.0
    assert any("cost budget" in note for note in report.notes)


def test_token_and_time_budgets(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(by_tool=anthropic_script())
    report = run("anthropic", provider, calc, trace_log, max_tokens=100)
    assert report.stop_reason is StopReason.BUDGET_EXHAUSTED and report.usage.calls == 1
    report = run("anthropic", FakeProvider(by_tool=anthropic_script()), calc, trace_log, time_limit=1e-9)
    assert report.stop_reason is StopReason.TIME_LIMIT and report.usage.calls == 0


def test_json_mode_for_servers_without_tools(calc: CachedSandbox, trace_log: TraceLog) -> None:
    provider = FakeProvider(
        by_tool={},
        script=[
            openai_text(json.dumps(DETECTIVE)),
            openai_text("```json\n" + json.dumps(QA) + "\n```"),
            openai_text(json.dumps(FIX)),
        ],
    )
    # A local model has no price: no dollar cap (a cap it could not enforce is refused, see test_factory).
    report = run("openai", provider, calc, trace_log, structured="json", model="llama3.1:8b", max_cost_usd=0.0)
    assert_healed(report)
    first = provider.requests[0].body
    assert first["response_format"] == {"type": "json_object"} and "tools" not in first
    assert first["max_tokens"] > 0 and "max_completion_tokens" not in first  # a local server's parameter
    assert report.usage.model == "llama3.1:8b" and report.usage.price_known is False
    assert report.usage.cost_usd == 0


def test_hypothesis_about_an_unknown_file_is_dropped(calc: CachedSandbox, trace_log: TraceLog) -> None:
    ghost = {**DETECTIVE["hypotheses"][0], "file": "src/calc.py", "title": "a ghost file", "confidence": 0.95}
    mixed = {"hypotheses": [ghost, DETECTIVE["hypotheses"][0]]}
    provider = FakeProvider(
        by_tool=anthropic_script(report_hypotheses=[anthropic_tool_use("report_hypotheses", mixed) for _ in range(2)])
    )
    report = run("anthropic", provider, calc, trace_log)
    assert_healed(report)
    reask = provider.calls("report_hypotheses")[1].prompt_text()
    assert "'src/calc.py' is not one of the project's source files (did you mean calc.py?)" in reask
    assert [h.hypothesis.file for h in report.hypotheses] == ["calc.py"]  # the valid one was kept
    assert report.usage.invalid_answers == 2


def test_a_second_heal_of_the_same_project_reuses_every_test_run(
    project_sandbox: Callable[..., CachedSandbox], trace_log: TraceLog
) -> None:
    """What keeps these tests fast: the memoized sandbox answers a loop's runs of a project it has seen, though
    each loop asks with its own time limits (the heal's clock, the baseline's timings)."""
    first, second = project_sandbox(files=CALC), project_sandbox(files=CALC)
    assert_healed(run("anthropic", FakeProvider(by_tool=anthropic_script()), first, trace_log))
    assert_healed(run("anthropic", FakeProvider(by_tool=anthropic_script()), second, trace_log))
    assert second.real_runs == 0
