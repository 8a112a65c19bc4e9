"""Opt-in smoke test against the real Anthropic API: ``pytest -m live`` with ``ANTHROPIC_API_KEY`` set.

It heals a copy of one bundled example with small budgets (a few cents at most) and checks that the run ends
with a named reason and recorded usage; whether the model finds the fix is not asserted.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from selfix_action.llm.factory import build_engine
from selfix_action.repair.loop import HealingLoop
from selfix_action.repair.report import StopReason
from tests.helpers.llm_sandbox import CachedSandbox, TraceLog


@pytest.mark.live
def test_live_anthropic_smoke(project_sandbox: Callable[..., CachedSandbox], trace_log: TraceLog) -> None:
    sandbox = project_sandbox(example="age_check")
    engine = build_engine(
        "anthropic",
        model=os.environ.get("SELFIX_LIVE_MODEL"),
        base_url=None,
        api_key=None,
        max_calls=12,
        max_tokens=120_000,
        max_cost_usd=0.5,
        time_limit=300.0,
        prices=None,
        env=os.environ,
        trace=trace_log,
    )
    report = HealingLoop(sandbox, engine, trace=trace_log).run().report
    assert report.stop_reason in set(StopReason)
    assert report.usage.calls >= 1 and report.usage.input_tokens > 0
    assert trace_log.steps("model_call")
