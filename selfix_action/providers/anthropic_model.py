"""Anthropic Messages API adapter (hosted, or any server speaking ``/v1/messages`` such as llama.cpp's).

Structured output through a forced tool ("tools"), a JSON Schema the server enforces (``output_config.format``,
"json-schema") or JSON asked for in the prompt ("json"); "auto" starts with tools and steps down when the server
shows it ignores them. Prompt caching on the stable prefix."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anthropic

from selfix_action.providers.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    TokenUsage,
    answer_instruction,
    parse_json_object,
)
from selfix_action.providers.sdk import SDKErrors, SDKModel, short

DEFAULT_MODEL = "claude-sonnet-4-6"
PROVIDER = "anthropic"
DEFAULT_FIXES = {"api_key": "ANTHROPIC_API_KEY (or --api-key)", "base_url": "--base-url", "model": "--model"}
# JSON Schema keywords Anthropic's structured outputs do not take (they answer 400): enforced by our own
# validation instead (pydantic, then a corrective re-ask).
UNSUPPORTED_FORMAT_KEYWORDS = frozenset({"minimum", "maximum", "minLength", "maxLength", "maxItems"})


class AnthropicModel(SDKModel[anthropic.Anthropic]):
    provider = PROVIDER
    default_model = DEFAULT_MODEL
    default_fixes = DEFAULT_FIXES
    errors = SDKErrors(
        status=anthropic.APIStatusError,
        timeout=anthropic.APITimeoutError,
        connection=anthropic.APIConnectionError,
        validation=anthropic.APIResponseValidationError,
        root=anthropic.AnthropicError,
    )

    def _new_client(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(api_key=self._api_key, base_url=self._base_url, timeout=self.timeout, max_retries=0)

    def _list_models(self, client: anthropic.Anthropic) -> list[Any]:
        return list(client.models.list(limit=1000))

    def _retrieve_model(self, client: anthropic.Anthropic) -> None:
        # Aliases ("claude-sonnet-4-6") are not in the listing, which holds dated ids; retrieve takes both.
        client.models.retrieve(self.model)

    def _status(self, exc: anthropic.APIStatusError) -> tuple[int, str, Mapping[str, str]]:
        return exc.status_code, exc.api_message or short(exc.message), exc.response.headers

    def _request(self, request: ModelRequest, mode: str) -> dict[str, Any]:
        # The stable prefix (tools, then system prompt and repository context) is identical for every
        # call of a run, so the breakpoint on its last block lets later calls read it from the cache.
        system: list[dict[str, Any]] = [{"type": "text", "text": request.system}]
        if request.context:
            system.append({"type": "text", "text": request.context})
        system[-1]["cache_control"] = {"type": "ephemeral"}
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        spec = next(t for t in request.tools if t.name == request.tool)
        messages[-1] = {**messages[-1], "content": messages[-1]["content"] + answer_instruction(mode, spec)}
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "system": system,
            "messages": messages,
        }
        if mode == "tools":
            kwargs["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.schema)} for t in request.tools
            ]
            kwargs["tool_choice"] = {"type": "tool", "name": request.tool, "disable_parallel_tool_use": True}
        elif mode == "json-schema":
            kwargs["output_config"] = {"format": {"type": "json_schema", "schema": output_format_schema(spec.schema)}}
        return kwargs

    def _create(self, client: anthropic.Anthropic, kwargs: dict[str, Any]) -> Any:
        return client.messages.create(**kwargs)

    def _response(self, answer: Any, tool: str, mode: str) -> ModelResponse:
        return _response(answer, tool, mode)


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
        raise ModelError(f"{PROVIDER}: the response is not a message ({short(repr(message))})", retryable=True) from exc
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
