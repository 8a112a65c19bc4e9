"""Anthropic Messages API adapter (hosted, or any server speaking ``/v1/messages`` such as llama.cpp's).

Structured output through a forced tool ("tools"), a JSON Schema the server enforces (``output_config.format``,
"json-schema") or JSON asked for in the prompt ("json"); "auto" starts with tools and steps down when the server
shows it ignores them. Prompt caching on the stable prefix."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import anthropic

from selfix_action.models.base import (
    ModeLadder,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSetupError,
    PreflightResult,
    RetryPolicy,
    TokenUsage,
    answer_instruction,
    complete_stepping_down,
    parse_json_object,
    preflight_result,
    preflight_status_error,
    status_error,
)

DEFAULT_MODEL = "claude-sonnet-4-6"
DEFAULT_TIMEOUT = 120.0
PROVIDER = "anthropic"
DEFAULT_FIXES = {"api_key": "ANTHROPIC_API_KEY (or --api-key)", "base_url": "--base-url", "model": "--model"}
# JSON Schema keywords Anthropic's structured outputs do not take (they answer 400): enforced by our own
# validation instead (pydantic, then a corrective re-ask).
UNSUPPORTED_FORMAT_KEYWORDS = frozenset({"minimum", "maximum", "minLength", "maxLength", "maxItems"})


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
        structured: str = "auto",
        fixes: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = model
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.fixes = {**DEFAULT_FIXES, **(fixes or {})}
        self._ladder = ModeLadder(structured)
        self._sleep = sleep
        self._clock = clock
        self._api_key = api_key
        self._base_url = base_url
        self._client = self._new_client()

    @property
    def structured(self) -> str:
        return self._ladder.current

    def step_down(self) -> str | None:
        return self._ladder.step_down()

    def _new_client(self) -> anthropic.Anthropic:
        # The SDK's own retries honour any retry-after uncapped: we retry ourselves (base.with_retries).
        return anthropic.Anthropic(api_key=self._api_key, base_url=self._base_url, timeout=self.timeout, max_retries=0)

    def _drop_connections(self, err: ModelError) -> None:
        """After a timeout, close the pooled connections so the server sees the abandoned request go."""
        if err.timed_out:
            self._client.close()
            self._client = self._new_client()

    # -- the cheap check before the run ---------------------------------------------------------------
    def preflight(self) -> PreflightResult:
        client = self._client.with_options(timeout=min(self.timeout, 30.0))
        try:
            models = list(client.models.list(limit=1000))
        except anthropic.APIStatusError as exc:
            detail = exc.api_message or _short(exc.message)
            raise preflight_status_error(PROVIDER, exc.status_code, detail, self.fixes) from exc
        except anthropic.APIConnectionError as exc:
            raise ModelSetupError(
                f"{PROVIDER}: cannot reach the server ({_short(str(exc))}). Check {self.fixes['base_url']}.",
                fix=self.fixes["base_url"],
            ) from exc
        except (anthropic.AnthropicError, ValueError) as exc:
            raise ModelSetupError(
                f"{PROVIDER}: GET /v1/models gave no model list ({_short(str(exc))}). Check {self.fixes['base_url']}.",
                fix=self.fixes["base_url"],
            ) from exc
        return preflight_result(PROVIDER, self.model, models, self.fixes, self._retrievable, self._ladder)

    def _retrievable(self) -> bool:
        # Aliases ("claude-sonnet-4-6") are not in the listing, which holds dated ids; retrieve takes both.
        try:
            self._client.with_options(timeout=min(self.timeout, 30.0)).models.retrieve(self.model)
        except (anthropic.AnthropicError, ValueError):
            return False
        return True

    # -- one structured completion ------------------------------------------------------------------------
    def complete(self, request: ModelRequest) -> ModelResponse:
        return complete_stepping_down(
            lambda mode, deadline: _response(self._call(request, mode, deadline), request.tool, mode),
            request,
            self._ladder,
            self.retry,
            self._sleep,
            self._clock,
            self._drop_connections,
        )

    def _call(self, request: ModelRequest, mode: str, deadline: float | None) -> Any:
        # The stable prefix (tools, then system prompt and repository context) is identical for every
        # call of a run, so the breakpoint on its last block lets later calls read it from the cache.
        system: list[dict[str, Any]] = [{"type": "text", "text": request.system}]
        if request.context:
            system.append({"type": "text", "text": request.context})
        system[-1]["cache_control"] = {"type": "ephemeral"}
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        spec = next(t for t in request.tools if t.name == request.tool)
        messages[-1] = {**messages[-1], "content": messages[-1]["content"] + answer_instruction(mode, spec)}
        kwargs: dict[str, Any] = {}
        if mode == "tools":
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.schema)} for t in request.tools
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": request.tool, "disable_parallel_tool_use": True}
        elif mode == "json-schema":
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": output_format_schema(spec.schema)}}
        client = self._client
        if deadline is not None:
            left = deadline - self._clock()
            if left <= 0:
                raise ModelError(f"{PROVIDER}: no time left for the request", timed_out=True)
            client = client.with_options(timeout=min(self.timeout, left))
        try:
            return client.messages.create(
                model=self.model,
                max_tokens=request.max_tokens,
                system=system,  # type: ignore[arg-type]
                messages=messages,  # type: ignore[arg-type]
                **kwargs,
            )
        except anthropic.APIStatusError as exc:
            detail = exc.api_message or _short(exc.message)
            raise status_error(exc.status_code, PROVIDER, detail, exc.response.headers) from exc
        except anthropic.APITimeoutError as exc:
            raise ModelError(f"{PROVIDER}: request timed out", retryable=True, timed_out=True) from exc
        except anthropic.APIConnectionError as exc:
            raise ModelError(f"{PROVIDER}: cannot connect ({_short(str(exc))})", retryable=True) from exc
        except anthropic.APIResponseValidationError as exc:
            raise ModelError(f"{PROVIDER}: unreadable response ({_short(str(exc))})", retryable=True) from exc
        except ValueError as exc:  # a body that is not JSON (a proxy's error page)
            raise ModelError(f"{PROVIDER}: unreadable response ({_short(str(exc))})", retryable=True) from exc
        except anthropic.AnthropicError as exc:
            raise ModelError(f"{PROVIDER}: {_short(str(exc))}") from exc


def output_format_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as Anthropic's structured outputs take it: every object closed, the keywords they refuse
    dropped (enums, types and required fields stay)."""

    def clean(node: Any, names: bool = False) -> Any:
        if isinstance(node, dict):
            out = {
                k: clean(v, names=not names and k == "properties")
                for k, v in node.items()
                if names or k not in UNSUPPORTED_FORMAT_KEYWORDS
            }
            if not names and out.get("type") == "object":
                out["additionalProperties"] = False
            if not names and isinstance(out.get("minItems"), int) and out["minItems"] > 1:
                out["minItems"] = 1
            return out
        if isinstance(node, list):
            return [clean(item) for item in node]
        return node

    cleaned: dict[str, Any] = clean(dict(schema))  # an object schema in, an object schema out
    return cleaned


def _response(message: Any, tool: str, mode: str) -> ModelResponse:
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
    cut = message.stop_reason == "max_tokens"
    cut_error = "the answer was cut off at the output token limit; answer more briefly"
    chosen = next((c for c in calls if c.name == tool), None)
    error: str | None
    if chosen is None:
        if calls:
            called = ", ".join(c.name for c in calls)
            error = f"the answer did not call the {tool} tool (it called {called})"
            return ModelResponse(texts, None, None, usage, message.model, message.stop_reason, error, structured=mode)
        # A text answer: JSON asked for in the prompt or by the schema, or a server that ignored the tool.
        value, error = parse_json_object(texts)
        if mode == "tools" and value is None:
            error = f"the answer did not call the {tool} tool"
        if cut:
            error = cut_error
        ignored = value is None and not cut and mode in ("tools", "json-schema")
        name = tool if value is not None else None
        return ModelResponse(
            texts, name, value, usage, message.model, message.stop_reason, error, structured=mode, mode_ignored=ignored
        )
    tool_input = chosen.input if isinstance(chosen.input, dict) else None
    error = None if tool_input is not None else "the tool arguments are not a JSON object"
    if cut:
        error = cut_error
    text = json.dumps(chosen.input, ensure_ascii=False)
    return ModelResponse(
        text, chosen.name, tool_input, usage, message.model, message.stop_reason, error, structured=mode
    )


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
