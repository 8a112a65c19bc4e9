"""``build_engine``: keys and base URLs from flags or the environment, clear errors on bad input."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from selfix_action.errors import ExitCode, InputError
from selfix_action.llm.engine import LLMEngine
from selfix_action.llm.factory import LLMSetupError, build_engine
from selfix_action.providers.base import TokenUsage
from selfix_action.repair.protocols import EngineStopped

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
    assert usage.calls == 0 and usage.limits.max_calls == 10


def test_flags_win_over_the_environment() -> None:
    env = {"OPENAI_API_KEY": "sk-env", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    engine = build_engine(
        "openai",
        model="qwen2.5-coder:7b",
        base_url="http://127.0.0.1:11434/v1",
        api_key="ollama",
        env=env,
        request_timeout=30,
        price=(0.0, 0.0),  # a local server: no model in the price table, and free
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


def test_a_cost_cap_for_a_model_without_a_price_is_refused_with_how_to_give_one() -> None:
    with pytest.raises(LLMSetupError) as refused:
        build_engine("openai", model="qwen2.5-coder:7b", base_url=None, api_key="k", env={}, **LIMITS)
    message = str(refused.value)
    assert refused.value.exit_code == ExitCode.BAD_INPUT
    assert "'qwen2.5-coder:7b'" in message and "$1" in message
    assert "--price-per-mtok-in IN --price-per-mtok-out OUT" in message and "--max-cost 0" in message
    # A price given, or no dollar cap: it builds, and the price given is the one the budget counts with.
    priced = build_engine(
        "openai", model="qwen2.5-coder:7b", base_url=None, api_key="k", env={}, price=(0.5, 4.0), **LIMITS
    )
    assert priced.budget.price is not None and (priced.budget.price.input, priced.budget.price.output) == (0.5, 4.0)
    uncapped = {**LIMITS, "max_cost_usd": 0.0}
    assert build_engine("openai", model="qwen2.5-coder:7b", base_url=None, api_key="k", env={}, **uncapped)
    # The action names its own input to change and has no price input.
    with pytest.raises(LLMSetupError) as in_action:
        build_engine(
            "openai",
            model="qwen2.5-coder:7b",
            base_url=None,
            api_key="k",
            env={},
            fixes={"price": "", "max_cost": "the max_cost_usd input set to 0"},
            **LIMITS,
        )
    assert "--price" not in str(in_action.value) and "the max_cost_usd input set to 0" in str(in_action.value)


def test_the_price_given_beats_the_table_and_is_enforced() -> None:
    limits = {**LIMITS, "max_tokens": 0}  # the dollar cap alone
    engine = build_engine(
        "openai", model="gpt-5-mini", base_url=None, api_key="k", env={}, price=(1000.0, 1000.0), **limits
    )
    engine.budget.record("detective", TokenUsage(input_tokens=600, output_tokens=500))  # $1.10 at that price
    with pytest.raises(EngineStopped, match="cost budget"):
        engine.budget.check("patcher")


@pytest.mark.parametrize("package", ["openai", "anthropic"])
def test_a_missing_sdk_names_an_install_that_works(package: str, tmp_path: Path) -> None:
    """In a Python that cannot import the SDK, the error names the requirement this installation declares."""
    script = (
        "import sys\n"
        f"sys.modules[{package!r}] = None  # as where the package is not installed\n"
        "from selfix_action.cli import main\n"
        f"sys.exit(main(['fix', {str(tmp_path)!r}, '--engine', {package!r}, '--api-key', 'k', '--quiet']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == ExitCode.BAD_INPUT, proc.stderr
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    declared = next(r for r in pyproject["project"]["optional-dependencies"]["llm"] if r.startswith(package))
    assert f"pip install '{declared}'" in proc.stderr
    assert "selfix-action[llm]" not in proc.stderr  # not on PyPI
    # and what it names is satisfied by the SDK this environment (like the Docker image's lock) has installed
    assert Version(importlib.metadata.version(package)) in Requirement(declared).specifier
