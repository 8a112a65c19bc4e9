"""End-to-end runs of the healing loop with the LLM engine on copies of the bundled examples, the model being a
scripted local server that speaks the provider's wire format to the real SDK.

The seed walk-through: three hypotheses, the top one wrong (its QA test passes on the buggy code, so it is
rejected), the second exposed, patched (a first patch breaks a passing test and is fed back), then verified.
And a run where every hypothesis fails ends in a clear not-healed report.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from selfix_action.repair.loop import HealingLoop
from selfix_action.repair.report import StopReason, render_markdown
from tests.helpers.age_check import (
    AGE_DETECTIVE,
    PATCH_RIGHT,
    PATCH_TOO_WIDE,
    QA_RIGHT,
    QA_WRONG,
    edit,
    engine_for,
    qa,
)
from tests.helpers.fake_providers import (
    FakeProvider,
    anthropic_tool_use,
    openai_tool_call,
    serve,
)
from tests.helpers.llm_sandbox import CachedSandbox, TraceLog

pytestmark = pytest.mark.slow


def test_seed_walkthrough_anthropic(project_sandbox: Callable[..., CachedSandbox], trace_log: TraceLog) -> None:
    sandbox = project_sandbox(example="age_check")
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [
                anthropic_tool_use(
                    "report_hypotheses", AGE_DETECTIVE, input_tokens=900, output_tokens=400, cache_write=1500
                )
            ],
            "write_reproduction_test": [
                anthropic_tool_use("write_reproduction_test", QA_WRONG, input_tokens=300, cache_read=1500),
                anthropic_tool_use("write_reproduction_test", QA_RIGHT, input_tokens=300, cache_read=1500),
            ],
            "propose_edits": [
                anthropic_tool_use("propose_edits", PATCH_TOO_WIDE, input_tokens=400, cache_read=1500),
                anthropic_tool_use("propose_edits", PATCH_RIGHT, input_tokens=500, cache_read=1500),
            ],
        }
    )
    with serve(provider) as url:
        engine = engine_for("anthropic", url, trace_log)
        result = HealingLoop(sandbox, engine, trace=trace_log).run()
    report = result.report

    assert report.stop_reason is StopReason.HEALED and report.exit_code == 0
    assert [h.hypothesis.title for h in report.hypotheses] == [
        "years_until_adult miscounts the years left",
        "is_adult uses > so an 18-year-old is not an adult",
        "ADULT_AGE constant is wrong",
    ]
    h1, h2, h3 = report.hypotheses
    assert not h1.exposed and "passes on the unpatched code" in h1.exposure
    assert h2.exposed and "AssertionError" in h2.exposure
    assert h2.outcome.startswith("healed") and h2.candidates_tried == 2
    assert h2.rejections_by_stage == {"pass_to_pass": 1}
    assert "merged with a near-duplicate" in h2.hypothesis.reasoning
    assert h2.hypothesis.lines[0] == 6 and h2.hypothesis.lines[-1] == 13
    assert h3.outcome == "not reached"
    assert report.patch is not None
    assert "-    return age > ADULT_AGE\n+    return age >= ADULT_AGE\n" in report.patch.diff
    assert result.files is not None and "age >= ADULT_AGE" in result.files["age_check.py"]

    # The failed patch came back to the Patcher as pruned feedback before its second try.
    second_patch = provider.calls("propose_edits")[1].prompt_text()
    assert "pass_to_pass" in second_patch and "test_almost_eighteen_is_not_adult" in second_patch
    assert "age > ADULT_AGE - 1" in second_patch
    # Each Patcher request shows the reproduction test itself, not only how it failed: what the patch must satisfy.
    first_patch = provider.calls("propose_edits")[0].prompt_text()
    assert "The test (_selfix_qa/test_qa_h2.py):" in first_patch and "assert is_adult(18) is True" in first_patch

    # Usage per role, as reported.
    usage = report.usage
    assert usage.provider == "anthropic" and usage.model == "claude-sonnet-4-6"
    assert usage.calls == 5
    assert {role: u.calls for role, u in usage.by_role.items()} == {"detective": 1, "qa": 2, "patcher": 2}
    assert usage.by_role["detective"].cache_write_tokens == 1500
    assert usage.by_role["qa"].cache_read_tokens == 3000
    assert usage.input_tokens == 900 + 600 + 900
    assert usage.output_tokens == 400 + 4 * 20
    expected_cost = (2400 * 3.0 + 480 * 15.0 + 6000 * 0.3 + 1500 * 3.75) / 1e6
    assert usage.cost_usd == pytest.approx(expected_cost, abs=1e-6)

    # Every prompt and response is in the trace.
    calls = trace_log.steps("model_call")
    assert [c["role"] for c in calls] == ["detective", "qa", "qa", "patcher", "patcher"]
    assert all(c["prompt"][0]["role"] == "system" and c["response"] for c in calls)
    assert "is_adult" in calls[0]["prompt"][1]["content"]  # the context: slices of the suspects
    # The stable prefix is byte-identical across the roles that share the context, and marked for caching (the
    # reviewer, unscripted here, reads a context of its own: the same system prompt, then its patch's evidence).
    systems = [r.body["system"] for r in provider.requests if r.tool != "review_patch"]
    assert all(s == systems[0] for s in systems)
    (review_system, *_) = [r.body["system"] for r in provider.requests if r.tool == "review_patch"]
    assert review_system[0] == systems[0][0] and review_system[1] != systems[0][1]
    assert systems[0][-1]["cache_control"] == {"type": "ephemeral"}
    assert "healed" in render_markdown(report)


def test_every_hypothesis_fails_openai(project_sandbox: Callable[..., CachedSandbox], trace_log: TraceLog) -> None:
    sandbox = project_sandbox(example="age_check")
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [openai_tool_call("report_hypotheses", AGE_DETECTIVE)],
            "write_reproduction_test": [
                openai_tool_call("write_reproduction_test", QA_WRONG, cached_tokens=80),  # passes: rejected
                # Broken (the module has no such name), twice: asked again once, then the failing tests serve.
                *[
                    openai_tool_call(
                        "write_reproduction_test",
                        qa("from age_check import is_grown_up\n\n\ndef test_qa():\n    assert is_grown_up(18)\n"),
                        cached_tokens=80,
                    )
                ]
                * 2,
                openai_tool_call("write_reproduction_test", QA_RIGHT, cached_tokens=80),
            ],
            "propose_edits": [
                openai_tool_call("propose_edits", edit("age_check.py", "ADULT_AGE = 18", new), cached_tokens=80)
                for new in ("ADULT_AGE = 19", "ADULT_AGE = 20")
            ]
            + [
                openai_tool_call(
                    "propose_edits",
                    edit("age_check.py", "return age > ADULT_AGE", f"return age > ADULT_AGE + {n}"),
                    cached_tokens=80,
                )
                for n in (1, 2)
            ],
        }
    )
    with serve(provider) as url:
        engine = engine_for("openai", url, trace_log, patch_retries=1)
        report = HealingLoop(sandbox, engine, trace=trace_log).run().report

    assert report.stop_reason is StopReason.HYPOTHESES_EXHAUSTED
    assert report.exit_code == 1 and report.patch is None
    h1, h2, h3 = report.hypotheses
    assert "passes on the unpatched code" in h1.exposure
    # A broken QA test is no evidence against its hypothesis: it still gets its Patcher tries.
    assert h2.exposed and "stayed broken" in h2.exposure and "CollectionError" in h2.exposure
    assert h2.candidates_tried == 2
    assert h3.exposed and h3.candidates_tried == 2
    assert h3.outcome == "rejected: none of 2 candidate(s) passed verification"
    assert h3.rejections_by_stage == {"fail_to_pass": 2}
    usage = report.usage
    assert usage.calls == 1 + 4 + 4
    assert usage.by_role["patcher"].cache_read_tokens == 4 * 80
    assert usage.by_role["patcher"].input_tokens == 4 * (100 - 80)
    assert usage.model == "gpt-5-mini" and usage.cost_usd > 0
    markdown = render_markdown(report)
    assert "hypotheses exhausted" in markdown
    # The request shape is Chat Completions with a forced function call; the base URL path is kept.
    first = provider.requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.body["tool_choice"] == {"type": "function", "function": {"name": "report_hypotheses"}}
    assert first.body["messages"][0]["role"] == "system"
