"""The engine a request asks for, with its hooks (trace, memory) given at construction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from selfix_action.engine.models import Evidence, Hypothesis
from selfix_action.engine.protocols import Engine
from selfix_action.errors import InputError
from selfix_action.heal.request import EngineChoice
from selfix_action.learn.hooks import memory_hooks
from selfix_action.learn.memory import Memory
from selfix_action.offline.engine import OfflineEngine

Trace = Callable[..., None]


def build_engine(
    choice: EngineChoice,
    *,
    hypotheses: int,
    time_limit: float,
    protected_paths: Sequence[str],
    trace: Trace,
    memory: Callable[[], Memory | None] | None,
) -> Engine:
    """The offline engine, or an LLM engine (its SDK imported only then). The memory feeds the offline engine's
    template order and the Detective's "similar past fixes" (``memory`` is looked up at each use; None: no
    memory); every prompt and response goes to ``trace``."""
    template_scores: Callable[[Evidence, Hypothesis], dict[str, float]] | None = None
    similar_fixes: Callable[[Evidence], str] | None = None
    if memory is not None:
        template_scores, similar_fixes = memory_hooks(memory, trace)
    if choice.kind == "offline":
        return OfflineEngine(template_scores=template_scores)
    try:
        from selfix_action.llm.factory import build_engine as build_llm_engine
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
        "trace": trace,
        "similar_fixes": similar_fixes,
    }
    return build_llm_engine(choice.kind, **kwargs)
