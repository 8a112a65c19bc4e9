"""A QA answer that does not parse gets its parse error back once; a second bad one falls back to the failing
tests as the hypothesis's reproduction, and the heal goes on (real SDK, scripted server, real sandbox)."""

from __future__ import annotations

from tests.helpers.calc_answers import DETECTIVE, FIX, anthropic_script, assert_healed, run
from tests.helpers.fake_providers import FakeProvider, anthropic_tool_use
from tests.helpers.llm_sandbox import CachedSandbox, TraceLog

BROKEN = {"test_source": "def test_qa(:\n    assert add(2, 2) == 4\n", "expected_failure": "AssertionError"}


def test_unparsable_qa_answers_get_the_error_back_once_then_the_failing_tests_serve(
    calc: CachedSandbox, trace_log: TraceLog
) -> None:
    provider = FakeProvider(
        by_tool=anthropic_script(
            report_hypotheses=[anthropic_tool_use("report_hypotheses", DETECTIVE)],
            write_reproduction_test=[
                anthropic_tool_use("write_reproduction_test", BROKEN),
                anthropic_tool_use(
                    "write_reproduction_test",
                    {"test_source": "x = 1  # no test here", "expected_failure": "AssertionError"},
                ),
            ],
            propose_edits=[anthropic_tool_use("propose_edits", FIX)],
        )
    )
    report = run("anthropic", provider, calc, trace_log)
    assert_healed(report)
    first, second = provider.calls("write_reproduction_test")
    # The re-ask carries the parse error of the first answer, and the answer itself.
    assert "does not parse" not in first.prompt_text()
    assert "test_source does not parse" in second.prompt_text() and "def test_qa(:" in second.prompt_text()
    (fallback,) = trace_log.steps("qa_fallback")
    assert fallback["hypothesis"] == "H1" and "test_source" in fallback["problem"]
    (exposure,) = trace_log.steps("expose")
    assert exposure["qa_path"] is None and "failing test" in exposure["message"]
    assert report.usage.invalid_answers == 2 and report.usage.by_role["qa"].calls == 2
