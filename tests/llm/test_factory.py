"""``build_engine``: keys and base URLs from flags or the environment, clear errors on bad input."""

from __future__ import annotations

from typing import Any

import pytest

from selfix_action.errors import InputError
from selfix_action.llm.engine import LLMEngine
from selfix_action.llm.factory import build_engine

LIMITS: dict[str, Any] = {"max_calls": 10, "max_tokens": 1000, "max_cost_usd": 1.0, "time_limit": 60.0, "prices": None}


def test_anthropic_from_the_environment() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-env", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9/"}
    engine = build_engine("anthropic", model=None, base_url=None, api_key=None, env=env, **LIMITS)
    assert isinstance(engine, LLMEngine)
    assert engine.name == "anthropic:claude-sonnet-4-6"
    client = engine.model._client  # type: ignore[attr-defined]
    assert str(client.base_url).startswith("http://127.0.0.1:9") and client.max_retries == 0
    assert client.timeout == 120.0
    usage = engine.usage()
    assert usage["calls"] == 0 and usage["limits"]["max_calls"] == 10


def test_flags_win_over_the_environment() -> None:
    env = {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    engine = build_engine(
        "openai",
        model="qwen2.5-coder:7b",
        base_url="http://127.0.0.1:11434/v1",
        api_key="ollama",
        env=env,
        request_timeout=30,
        **LIMITS,
    )
    assert engine.name == "openai:qwen2.5-coder:7b"
    client = engine.model._client  # type: ignore[attr-defined]
    assert str(client.base_url).startswith("http://127.0.0.1:11434/v1") and client.api_key == "ollama"
    assert client.max_retries == 0 and client.timeout == 30


@pytest.mark.parametrize(("kind", "variable"), [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")])
def test_missing_key(kind: str, variable: str) -> None:
    with pytest.raises(InputError, match=variable):
        build_engine(kind, model=None, base_url=None, api_key=None, env={variable: "  "}, **LIMITS)


def test_bad_input() -> None:
    with pytest.raises(InputError, match="unknown engine"):
        build_engine("gemini", model=None, base_url=None, api_key="k", env={}, **LIMITS)
    with pytest.raises(InputError, match="price"):
        build_engine(
            "anthropic", model=None, base_url=None, api_key="k", env={}, **{**LIMITS, "prices": {"m": "cheap"}}
        )
    with pytest.raises(InputError, match="structured"):
        build_engine("openai", model=None, base_url=None, api_key="k", env={}, structured="xml", **LIMITS)
