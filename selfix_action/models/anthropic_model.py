"""Anthropic Messages API adapter: tool use for structured output, prompt caching on the stable prefix."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import anthropic

from selfix_action.models.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    RetryPolicy,
    TokenUsage,
    status_error,
    with_retries,
)

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_TIMEOUT = 120.0
PROVIDER = "anthropic"


class AnthropicModel:
    provider = PROVIDER

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        # The SDK's own retries honour any retry-after uncapped: we retry ourselves (base.with_retries).
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)

    def complete(self, request: ModelRequest) -> ModelResponse:
        response, retries = with_retries(lambda: _response(self._call(request), request.tool), self.retry, self._sleep)
        return replace(response, retries=retries)

    def _call(self, request: ModelRequest) -> Any:
        # The stable prefix (tools, then system prompt and repository context) is identical for every
        # call of a run, so the breakpoint on its last block lets later calls read it from the cache.
        system: list[dict[str, Any]] = [{"type": "text", "text": request.system}]
        if request.context:
            system.append({"type": "text", "text": request.context})
        system[-1]["cache_control"] = {"type": "ephemeral"}
        tools = [{"name": t.name, "description": t.description, "input_schema": dict(t.schema)} for t in request.tools]
        try:
            return self._client.messages.create(
                model=self.model,
                max_tokens=request.max_tokens,
                system=system,  # type: ignore[arg-type]
                messages=[{"role": m.role, "content": m.content} for m in request.messages],
                tools=tools,  # type: ignore[arg-type]
                tool_choice={"type": "tool", "name": request.tool, "disable_parallel_tool_use": True},
            )
        except anthropic.APIStatusError as exc:
            detail = exc.api_message or _short(exc.message)
            raise status_error(exc.status_code, PROVIDER, detail, exc.response.headers) from exc
        except anthropic.APITimeoutError as exc:
            raise ModelError(f"{PROVIDER}: request timed out", retryable=True) from exc
        except anthropic.APIConnectionError as exc:
            raise ModelError(f"{PROVIDER}: cannot connect ({_short(str(exc))})", retryable=True) from exc
        except anthropic.APIResponseValidationError as exc:
            raise ModelError(f"{PROVIDER}: unreadable response ({_short(str(exc))})", retryable=True) from exc
        except ValueError as exc:  # a body that is not JSON (a proxy's error page)
            raise ModelError(f"{PROVIDER}: unreadable response ({_short(str(exc))})", retryable=True) from exc
        except anthropic.AnthropicError as exc:
            raise ModelError(f"{PROVIDER}: {_short(str(exc))}") from exc


def _response(message: Any, tool: str) -> ModelResponse:
    try:
        blocks = list(message.content)
        raw_usage = message.usage
        usage = TokenUsage(
            input_tokens=raw_usage.input_tokens or 0,
            output_tokens=raw_usage.output_tokens or 0,
            cache_read_tokens=raw_usage.cache_read_input_tokens or 0,
            cache_write_tokens=raw_usage.cache_creation_input_tokens or 0,
        )
    except (AttributeError, TypeError) as exc:  # a 200 whose body is not a message
        raise ModelError(
            f"{PROVIDER}: the response is not a message ({_short(repr(message))})", retryable=True
        ) from exc
    calls = [b for b in blocks if getattr(b, "type", None) == "tool_use"]
    texts = "\n".join(b.text for b in blocks if getattr(b, "type", None) == "text")
    chosen = next((c for c in calls if c.name == tool), None)
    if chosen is None:
        called = ", ".join(c.name for c in calls)
        error = f"the answer did not call the {tool} tool" + (f" (it called {called})" if called else "")
        return ModelResponse(texts, None, None, usage, message.model, message.stop_reason, error)
    tool_input = chosen.input if isinstance(chosen.input, dict) else None
    error = None if tool_input is not None else "the tool arguments are not a JSON object"
    if message.stop_reason == "max_tokens":
        error = "the answer was cut off at the output token limit; answer more briefly"
    text = json.dumps(chosen.input, ensure_ascii=False)
    return ModelResponse(text, chosen.name, tool_input, usage, message.model, message.stop_reason, error)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
