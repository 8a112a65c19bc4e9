"""Scripted model answers that heal the CALC project (tests/helpers/projects.py), the scripts that play them over
either provider's wire format, and one heal of it by the LLM engine built through the factory."""

from __future__ import annotations

from typing import Any

from selfix_action.llm.factory import build_engine
from selfix_action.repair.loop import HealingLoop
from selfix_action.repair.report import HealReport, StopReason
from tests.helpers.fake_providers import FakeProvider, Reply, anthropic_tool_use, openai_tool_call, serve
from tests.helpers.llm_sandbox import CachedSandbox, TraceLog

DETECTIVE = {
    "hypotheses": [
        {
            "title": "add subtracts instead of adding",
            "confidence": 0.9,
            "file": "calc.py",
            "symbol": "add",
            "line_start": 1,
            "line_end": 2,
            "reasoning": "test_add fails with 2 - 3 == -1; add is the only suspect",
            "proposed_fix": "return a + b",
        }
    ]
}
QA = {
    "test_source": "from calc import add\n\n\ndef test_qa():\n    assert add(2, 2) == 4\n",
    "expected_failure": "AssertionError",
}
FIX = {"explanation": "add the operands", "edits": [{"file": "calc.py", "search": "a - b", "replace": "a + b"}]}
REVIEW = {"verdict": "complete", "reason": "add returns the sum of its operands for every input"}


def anthropic_script(**overrides: list[Reply]) -> dict[str, list[Reply]]:
    script = {
        "report_hypotheses": [anthropic_tool_use("report_hypotheses", DETECTIVE)],
        "write_reproduction_test": [anthropic_tool_use("write_reproduction_test", QA)],
        # The Patcher's, then the second solution's (an independent Patcher call once the patch is confirmed).
        "propose_edits": [anthropic_tool_use("propose_edits", FIX), anthropic_tool_use("propose_edits", FIX)],
        "review_patch": [anthropic_tool_use("review_patch", REVIEW)],
    }
    script.update(overrides)
    return script


def openai_script(**overrides: list[Reply]) -> dict[str, list[Reply]]:
    script = {
        "report_hypotheses": [openai_tool_call("report_hypotheses", DETECTIVE)],
        "write_reproduction_test": [openai_tool_call("write_reproduction_test", QA)],
        "propose_edits": [openai_tool_call("propose_edits", FIX), openai_tool_call("propose_edits", FIX)],
        "review_patch": [openai_tool_call("review_patch", REVIEW)],
    }
    script.update(overrides)
    return script


def run(
    kind: str,
    provider: FakeProvider,
    sandbox: CachedSandbox,
    trace: TraceLog,
    **overrides: Any,
) -> HealReport:
    with serve(provider) as url:
        settings: dict[str, Any] = {
            "model": None,
            "base_url": url if kind == "anthropic" else url + "/v1",
            "api_key": "test-key",
            "max_calls": 20,
            "max_tokens": 100_000,
            "max_cost_usd": 1.0,
            "time_limit": 300.0,
            "prices": None,
            "env": {},
            "trace": trace,
            "max_retry_wait": 0.05,
            "max_retries": 2,
        }
        settings.update(overrides)
        engine = build_engine(kind, **settings)
        return HealingLoop(sandbox, engine, trace=trace).run().report


def assert_healed(report: HealReport) -> None:
    assert report.stop_reason is StopReason.HEALED, report.notes
    assert report.patch is not None and report.patch.files == ("calc.py",)
    assert "+    return a + b" in report.patch.diff
