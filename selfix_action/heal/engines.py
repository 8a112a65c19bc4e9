"""The engine a request asks for, with its hooks (trace, memory) given at construction. An LLM engine's key,
base URL and model name are checked here, by one cheap call, before any test runs: for an LLM engine alone a
problem is bad input (exit 2) then; for ``--engine auto`` the offline engine runs all the same and the problem
comes back with it (``EngineSetup.llm_problem``), to be reported once the offline engine had its try."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from selfix_action.errors import InputError, SelfixError
from selfix_action.heal.request import EngineChoice
from selfix_action.learn.hooks import memory_hooks
from selfix_action.learn.memory import Memory
from selfix_action.offline.engine import OfflineEngine
from selfix_action.repair.protocols import Engine
from selfix_action.repair.values import Evidence, Hypothesis

Trace = Callable[..., None]


@dataclass(frozen=True)
class EngineSetup:
    """The engine to heal with and, for ``--engine auto``, why its LLM engine could not be set up ("" if it was):
    the offline engine then heals alone."""

    engine: Engine
    llm_problem: str = ""


def build_engine(
    choice: EngineChoice,
    *,
    hypotheses: int,
    time_limit: float,
    protected_paths: Sequence[str],
    trace: Trace,
    memory: Callable[[], Memory | None] | None,
) -> EngineSetup:
    """The offline engine, or an LLM engine (its SDK imported only then). The memory feeds the offline engine's
    template order and the Detective's "similar past fixes" (``memory`` is looked up at each use; None: no
    memory); every prompt and response goes to ``trace``."""
    template_scores: Callable[[Evidence, Hypothesis], dict[str, float]] | None = None
    similar_fixes: Callable[[Evidence], str] | None = None
    if memory is not None:
        template_scores, similar_fixes = memory_hooks(memory, trace)
    if choice.kind == "offline":
        return EngineSetup(OfflineEngine(template_scores=template_scores))
    kind = choice.kind
    if kind == "auto":
        provider = auto_provider(choice) or ("openai" if choice.replay is not None else None)
        if provider is None:  # no key: the cheap path is the only one
            return EngineSetup(OfflineEngine(template_scores=template_scores))
        kind = provider
    try:
        from selfix_action.heal.cascade import CascadeEngine
        from selfix_action.llm.factory import LLMSetupError
        from selfix_action.llm.factory import build_engine as build_llm_engine
        from selfix_action.providers.base import ModelSetupError
    except ImportError as exc:  # a build without the LLM engines
        raise InputError(f"engine {choice.kind!r} is not part of this build; use the offline engine") from exc
    kwargs: dict[str, Any] = {
        "model": choice.model,
        "base_url": choice.base_url,
        "api_key": choice.api_key,
        "max_calls": choice.max_calls,
        "max_tokens": choice.max_tokens,
        "max_cost_usd": choice.max_cost_usd,
        "time_limit": time_limit,
        "prices": choice.prices,
        "env": choice.env,
        "protected_paths": tuple(protected_paths),
        "hypotheses": hypotheses,
        "max_retry_wait": choice.max_retry_wait,
        "request_timeout": choice.request_timeout,
        "structured": choice.structured,
        "samples": choice.samples,
        "max_asks": choice.max_asks,
        "max_output_tokens": choice.max_output_tokens,
        "fixes": dict(choice.fixes),
        "trace": trace,
        "similar_fixes": similar_fixes,
        "replay": choice.replay,
        "replay_then_server": choice.replay_then_server,
        "price": choice.price,
    }
    try:
        # Fail fast: a wrong key, base URL or model name is a usage error (exit 2) before the suite runs.
        llm = build_llm_engine(kind, preflight=True, **kwargs)
    except (LLMSetupError, ModelSetupError) as exc:
        if choice.kind != "auto":
            raise
        # The cheap path needs no model: it runs all the same, and the problem is reported after it.
        return EngineSetup(OfflineEngine(template_scores=template_scores), llm_problem=_problem(kind, exc))
    if choice.kind != "auto":
        return EngineSetup(llm)
    cascade = CascadeEngine(
        OfflineEngine(template_scores=template_scores),
        llm,
        offline_candidates=choice.offline_candidates,
        offline_seconds=max(1.0, time_limit * choice.offline_time_share),
        trace=trace,
    )
    return EngineSetup(cascade)


def _problem(kind: str, exc: SelfixError) -> str:
    return f"the {kind} engine could not be used, so only the offline engine ran: {exc}"


def auto_provider(choice: EngineChoice) -> str | None:
    """The LLM provider ``--engine auto`` falls back to: the one named, else the one whose key is in the
    environment (anthropic first), else, for a key given as a flag, openai with a base URL and anthropic
    without; None when there is no key at all."""
    if choice.provider:
        return choice.provider
    for kind, variable in (("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY")):
        if choice.env.get(variable, "").strip():
            return kind
    if (choice.api_key or "").strip():
        return "openai" if choice.base_url else "anthropic"
    return None
