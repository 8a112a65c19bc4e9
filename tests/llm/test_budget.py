"""Budgets: calls, tokens, dollars (per-model prices, user overrides) and wall time."""

from __future__ import annotations

import json

import pytest

from selfix_action.errors import InputError
from selfix_action.llm.budget import Budget, Price, parse_prices, price_for
from selfix_action.providers.base import TokenUsage
from selfix_action.repair.protocols import EngineStopped
from selfix_action.repair.report import HealReport, PreflightUsage, StopReason, Usage

CALL = TokenUsage(input_tokens=1000, output_tokens=200, cache_read_tokens=4000, cache_write_tokens=100)


def test_prices_by_longest_prefix_and_overrides() -> None:
    sonnet = price_for("claude-sonnet-4-6")
    assert sonnet == Price(3.0, 15.0, 0.3, 3.75)
    assert price_for("claude-opus-4-5-20251101") == Price(5.0, 25.0, 0.5, 6.25)
    assert price_for("gpt-5-mini-2025-08-07") == Price(0.25, 2.0, 0.025, 0.25)
    assert price_for("llama3.1:8b") is None
    assert price_for("llama3.1:8b", {"llama": [0.0, 0.0]}) == Price(0.0, 0.0, 0.0, 0.0)
    override = {"claude-sonnet-4": {"input": 1, "output": 2, "cache_read": 0.1}}
    assert price_for("claude-sonnet-4-6", override) == Price(1.0, 2.0, 0.1, 1.0)
    with pytest.raises(InputError, match="USD per million"):
        parse_prices({"x": {"input": 1}})
    with pytest.raises(InputError, match="unknown key"):
        parse_prices({"x": {"input": 1, "output": 2, "reasoning": 3}})


def test_cost_and_usage_per_role() -> None:
    budget = Budget(model="claude-sonnet-4-6")
    cost = budget.record("detective", CALL)
    assert cost == pytest.approx((1000 * 3 + 200 * 15 + 4000 * 0.3 + 100 * 3.75) / 1e6)
    budget.record("patcher", CALL)
    usage = budget.usage()
    assert usage.calls == 2 and usage.tokens == 2 * 5300
    assert usage.by_role["detective"].calls == 1 and usage.by_role["qa"].calls == 0
    assert usage.cost_usd == pytest.approx(2 * cost)
    assert usage.price_known is True


@pytest.mark.parametrize(
    ("limits", "reason", "text"),
    [
        ({"max_calls": 1}, StopReason.BUDGET_EXHAUSTED, "call budget of 1"),
        ({"max_tokens": 5000}, StopReason.BUDGET_EXHAUSTED, "token budget"),
        ({"max_cost_usd": 0.001}, StopReason.BUDGET_EXHAUSTED, "cost budget"),
    ],
)
def test_caps(limits: dict, reason: StopReason, text: str) -> None:
    budget = Budget(model="claude-sonnet-4-6", **limits)
    budget.check("detective")
    budget.record("detective", CALL)
    with pytest.raises(EngineStopped) as caught:
        budget.check("qa")
    assert caught.value.reason is reason and text in caught.value.detail and "qa" in caught.value.detail


def test_wall_time() -> None:
    now = [0.0]
    budget = Budget(model="m", time_limit=10, clock=lambda: now[0])
    budget.check("detective")
    now[0] = 10.5
    with pytest.raises(EngineStopped) as caught:
        budget.check("patcher")
    assert caught.value.reason is StopReason.TIME_LIMIT


def test_zero_means_no_cap_and_unknown_price_costs_nothing() -> None:
    budget = Budget(model="llama3.1:8b", max_calls=0, max_tokens=0, max_cost_usd=0, time_limit=0)
    for _ in range(50):
        budget.record("qa", CALL)
    budget.check("qa")
    assert budget.usage().cost_usd == 0 and budget.usage().price_known is False


def test_output_allowance_never_exceeds_the_token_budget() -> None:
    budget = Budget(model="m", max_tokens=6000)
    assert budget.output_allowance(2000) == 2000
    budget.record("qa", CALL)  # 5300 spent
    assert budget.output_allowance(2000) == 700


# The keys report.json has always carried under "usage" for an LLM engine (readers: users, the benchmark).
REPORT_USAGE_KEYS = {
    "calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "tokens", "cost_usd",
    "model_seconds", "by_role", "retries", "invalid_answers", "asks", "elapsed_seconds", "price_per_million_tokens",
    "price_known", "limits", "provider", "model", "structured",
}  # fmt: skip


def test_the_usage_written_to_report_json_keeps_its_keys_and_reads_back_the_same() -> None:
    budget = Budget(model="claude-sonnet-4-6", max_calls=10)
    budget.record("detective", CALL, seconds=1.5)
    budget.asks = 2
    usage = budget.usage().model_copy(update={"provider": "anthropic", "model": "claude-sonnet-4-6"})
    report = HealReport(
        repo=".", engine="anthropic:claude-sonnet-4-6", stop_reason=StopReason.HEALED, explanation="", exit_code=0,
        usage=usage,
    )  # fmt: skip
    written = json.loads(report.model_dump_json())["usage"]
    assert set(written) == REPORT_USAGE_KEYS  # preflight and offline only when there is one
    assert set(written["by_role"]["detective"]) == {
        "calls", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "tokens", "cost_usd",
        "model_seconds",
    }  # fmt: skip
    assert written["limits"] == {
        "max_calls": 10, "max_tokens": 400_000, "max_cost_usd": 2.0, "time_limit_seconds": 900.0, "max_asks": 0,
    }  # fmt: skip
    assert written["tokens"] == 5300 and written["asks"] == 2 and written["by_role"]["qa"]["calls"] == 0
    assert HealReport.model_validate_json(report.model_dump_json()).usage == usage
    with_preflight = usage.model_copy(update={"preflight": PreflightUsage(models_listed=3, note="ok")})
    assert with_preflight.model_dump()["preflight"] == {"models_listed": 3, "note": "ok"}
    # The offline engine spends nothing: its usage is written as it always was, {}.
    offline = report.model_copy(update={"usage": Usage()})
    assert json.loads(offline.model_dump_json())["usage"] == {}
    assert HealReport.model_validate_json(offline.model_dump_json()).usage == Usage()
