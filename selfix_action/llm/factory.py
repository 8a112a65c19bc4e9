"""Build the LLM engine the CLI asked for: provider adapter, budget and engine; keys from flags or env."""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfix_action.errors import InputError
from selfix_action.llm.budget import Budget, parse_prices, price_for
from selfix_action.llm.engine import DEFAULT_OUTPUT_TOKENS, LLMEngine
from selfix_action.providers.base import STRUCTURED_CHOICES, ChatModel, RetryPolicy
from selfix_action.providers.replay import ReplayModel
from selfix_action.repair.values import Evidence

if TYPE_CHECKING:  # the SDKs are imported only when their engine is chosen (below)
    from selfix_action.providers.anthropic_model import AnthropicModel
    from selfix_action.providers.openai_model import OpenAIModel

KINDS = ("anthropic", "openai")
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5-mini"}
ENV_KEYS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
ENV_BASE_URLS = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}
DISTRIBUTION = "selfix-action"


class LLMSetupError(InputError):
    """The LLM engine cannot be set up here (its SDK is missing, a cost cap without a price): bad input (exit 2)
    for an LLM engine alone; ``--engine auto`` runs the offline engine anyway and reports it."""


def sdk_requirement(package: str) -> str:
    """The pip requirement for a provider SDK as this installation declares it (its ``llm`` extra, e.g.
    ``openai>=3.57``), else the bare package name."""
    try:
        declared = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        declared = []
    for requirement in declared:
        spec = requirement.split(";", 1)[0].strip()
        name = re.split(r"[\s\[<>=!~(]", spec, maxsplit=1)[0]
        if name.lower() == package and "extra" in requirement:
            return spec.replace(" ", "")
    return package


def build_engine(
    kind: str,
    *,
    model: str | None,
    base_url: str | None,
    api_key: str | None,
    max_calls: int,
    max_tokens: int,
    max_cost_usd: float,
    time_limit: float,
    prices: Mapping[str, Any] | None,
    env: Mapping[str, str],
    trace: Callable[..., None] | None = None,
    similar_fixes: Callable[[Evidence], str] | None = None,
    protected_paths: Sequence[str] = (),
    hypotheses: int = 3,
    patch_retries: int = 2,
    max_retries: int = 3,
    max_retry_wait: float = 30.0,
    request_timeout: float = 120.0,
    structured: str = "auto",
    samples: int = 1,
    max_asks: int = 8,
    fixes: Mapping[str, str] | None = None,
    max_output_tokens: int = 0,
    replay: Path | None = None,
    replay_then_server: bool = False,
    price: tuple[float, float] | None = None,
    preflight: bool = False,
) -> LLMEngine:
    """The LLM engine for ``kind`` ("anthropic" or "openai"). Flags win over ``env``; a cap <= 0 is no cap.

    ``max_retry_wait`` caps any single wait before a retry (a provider's ``retry-after`` included);
    ``request_timeout`` caps one request; ``structured`` (auto, tools, json-schema, json) picks how the server
    returns structured answers (auto: tools, stepping down when the server ignores them); ``samples`` Patcher
    answers per hypothesis when the budget allows; ``max_asks`` asks for more context per heal (0: none offered);
    ``max_output_tokens`` (> 0) caps every answer below the roles' defaults (a slow local server: one rambling
    answer cannot spend the run); ``fixes`` names, for the
    preflight's messages, the variable, flag or input that sets the key, the base URL and the model
    (``{"api_key": ..., "base_url": ..., "model": ...}``). ``replay``: a trace whose recorded answers stand in
    for the model (``providers.replay``; no key, no server; ``replay_then_server``: the server at ``base_url``
    answers the calls after the recorded ones). ``price``: USD per million input and output tokens of
    this run's model (over any table). A dollar cap (``max_cost_usd`` > 0) needs a price: with none known for the
    model, ``LLMSetupError`` says how to give one (``fixes["price"]``) or turn the cap off (``fixes["max_cost"]``).
    ``preflight``: check the key, the base URL and the model name now, by one cheap call (``ChatModel.preflight``;
    its ``ModelSetupError`` is a usage error), and show what it found in the engine's usage.
    """
    if kind not in KINDS:
        raise InputError(f"unknown engine {kind!r}: choose one of {', '.join(KINDS)}")
    key = (api_key or env.get(ENV_KEYS[kind], "")).strip()
    if replay is not None:
        key = key or "replay"  # no server is called
    if not key:
        local = " (any non-empty value works for local servers such as Ollama)" if kind == "openai" else ""
        raise InputError(f"the {kind} engine needs an API key: set {ENV_KEYS[kind]} or pass --api-key{local}")
    url = (base_url or env.get(ENV_BASE_URLS[kind], "")).strip() or None
    name = (model or "").strip() or DEFAULT_MODELS[kind]
    if hypotheses < 1:
        raise InputError("the number of hypotheses must be at least 1")
    if patch_retries < 0 or max_retries < 0:
        raise InputError("retry counts cannot be negative")
    if max_retry_wait < 0 or request_timeout <= 0:
        raise InputError("the retry wait cap cannot be negative and the request timeout must be positive")
    if structured not in STRUCTURED_CHOICES:
        raise InputError(f"structured output must be one of {', '.join(STRUCTURED_CHOICES)}, not {structured!r}")
    if max_output_tokens < 0:
        raise InputError("the output token cap cannot be negative")
    if samples < 1:
        raise InputError("the number of Patcher samples must be at least 1")
    if max_asks < 0:
        raise InputError("the number of asks cannot be negative (0: the model is offered none)")
    if price is not None:
        if min(price) < 0:
            raise InputError("a price per million tokens cannot be negative")
        prices = {**(prices or {}), name: {"input": price[0], "output": price[1]}}
    parse_prices(prices)  # a malformed price table is bad input, reported before any call
    retry = RetryPolicy(max_retries=max_retries, max_wait=max_retry_wait)
    where = {
        "api_key": f"{ENV_KEYS[kind]} (or --api-key)",
        "base_url": f"--base-url (or {ENV_BASE_URLS[kind]})",
        "model": "--model",
        "price": "--price-per-mtok-in IN --price-per-mtok-out OUT (USD per million tokens; 0 0 for a server that "
        "costs nothing) or a --prices table",
        "max_cost": "--max-cost 0 (no dollar cap: the call and token caps still bound the run)",
        **(fixes or {}),
    }
    chat: ChatModel
    if replay is not None:
        # --replay-then-server: the server (--base-url) answers what the recording does not hold, the calls after
        # the recorded ones (roles added since it was made); the same patches and verdicts otherwise.
        live = replay_then_server and url
        then = _chat_model(kind, name, url, key, retry, request_timeout, structured, where) if live else None
        chat = ReplayModel(replay, then=then)
        name = chat.model
    else:
        if max_cost_usd > 0 and price_for(name, prices) is None:
            # Without a price every call would count $0 and the cap would never stop anything.
            how = f"give its price with {where['price']}, or " if where["price"] else ""
            raise LLMSetupError(
                f"the cost cap of ${max_cost_usd:g} cannot be enforced: selfix knows no price for the model "
                f"{name!r}; {how}turn the dollar cap off with {where['max_cost']}"
            )
        chat = _chat_model(kind, name, url, key, retry, request_timeout, structured, where)
    budget = Budget(
        model=name,
        max_calls=max_calls,
        max_tokens=max_tokens,
        max_cost_usd=max_cost_usd,
        time_limit=time_limit,
        prices=prices,
    )
    return LLMEngine(
        chat,
        budget,
        preflight=chat.preflight() if preflight else None,
        hypotheses=hypotheses,
        patch_retries=patch_retries,
        protected_paths=protected_paths,
        trace=trace,
        similar_fixes=similar_fixes,
        samples=samples,
        max_asks=max_asks,
        output_tokens=(
            {role: min(tokens, max_output_tokens) for role, tokens in DEFAULT_OUTPUT_TOKENS.items()}
            if max_output_tokens > 0
            else None
        ),
    )


def _chat_model(
    kind: str,
    model: str,
    base_url: str | None,
    key: str,
    retry: RetryPolicy,
    timeout: float,
    structured: str,
    fixes: Mapping[str, str],
) -> ChatModel:
    # The SDKs are imported only when their engine is chosen: they are optional and slow to import.
    model_class: type[AnthropicModel] | type[OpenAIModel]
    try:
        if kind == "anthropic":
            from selfix_action.providers.anthropic_model import AnthropicModel as model_class
        else:
            from selfix_action.providers.openai_model import OpenAIModel as model_class
    except ImportError as exc:
        raise LLMSetupError(
            f"the {kind} engine needs the {kind!r} package, which this Python cannot import ({exc}): install it "
            f"into the environment selfix runs in with pip install '{sdk_requirement(kind)}'"
        ) from exc
    return model_class(
        api_key=key,
        model=model,
        base_url=base_url,
        timeout=timeout,
        retry=retry,
        structured=structured,
        fixes=fixes,
    )
