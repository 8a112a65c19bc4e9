"""OpenAI-compatible Chat Completions adapter: hosted OpenAI, and Ollama, vLLM or llama.cpp's server through a
base URL. Structured output through a forced function call ("tools"), a JSON Schema the server enforces
(``response_format: json_schema``, which llama.cpp turns into a grammar) or JSON mode with the schema in the
prompt ("json"); "auto" starts with tools and steps down when the server shows it ignores them. An answer given
as JSON text instead of a tool call is accepted in every mode."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import openai

from selfix_action.providers.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    TokenUsage,
    answer_instruction,
    parse_json_object,
)
from selfix_action.providers.sdk import SDKErrors, SDKModel, short

DEFAULT_MODEL = "gpt-5-mini"
PROVIDER = "openai"
DEFAULT_FIXES = {"api_key": "OPENAI_API_KEY (or --api-key)", "base_url": "--base-url", "model": "--model"}


class OpenAIModel(SDKModel[openai.OpenAI]):
    provider = PROVIDER
    default_model = DEFAULT_MODEL
    default_fixes = DEFAULT_FIXES
    errors = SDKErrors(
        status=openai.APIStatusError,
        timeout=openai.APITimeoutError,
        connection=openai.APIConnectionError,
        validation=openai.APIResponseValidationError,
        root=openai.OpenAIError,
    )

    @property
    def _token_param(self) -> str:
        # Hosted OpenAI takes max_completion_tokens; most OpenAI-compatible servers only know max_tokens.
        hosted = self._base_url is None or (urlsplit(self._base_url).hostname or "").endswith("openai.com")
        return "max_completion_tokens" if hosted else "max_tokens"

    def _new_client(self) -> openai.OpenAI:
        return openai.OpenAI(api_key=self._api_key, base_url=self._base_url, timeout=self.timeout, max_retries=0)

    def _list_models(self, client: openai.OpenAI) -> list[Any]:
        return list(client.models.list())

    def _retrieve_model(self, client: openai.OpenAI) -> None:
        client.models.retrieve(self.model)

    def _status(self, exc: openai.APIStatusError) -> tuple[int, str, Mapping[str, str]]:
        return exc.status_code, _detail(exc), exc.response.headers

    def _request(self, request: ModelRequest, mode: str) -> dict[str, Any]:
        # System prompt and repository context first and byte-identical across calls: providers that cache
        # prompt prefixes automatically (OpenAI, vLLM's prefix caching, llama.cpp's slots) can reuse them.
        system = request.system + ("\n\n" + request.context if request.context else "")
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, self._token_param: request.max_tokens}
        spec = next(t for t in request.tools if t.name == request.tool)
        messages[-1] = {**messages[-1], "content": messages[-1]["content"] + answer_instruction(mode, spec)}
        if mode == "tools":
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": dict(t.schema)},
                }
                for t in request.tools
            ]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": request.tool}}
        elif mode == "json-schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": spec.name, "description": spec.description, "schema": dict(spec.schema)},
            }
        else:
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    def _create(self, client: openai.OpenAI, kwargs: dict[str, Any]) -> Any:
        return client.chat.completions.create(**kwargs)

    def _response(self, completion: Any, tool: str, mode: str) -> ModelResponse:
        try:
            choice = completion.choices[0]
            message = choice.message
            raw = completion.usage
            cached = 0
            if raw is not None and raw.prompt_tokens_details is not None:
                cached = raw.prompt_tokens_details.cached_tokens or 0
            usage = TokenUsage(
                input_tokens=max(0, (raw.prompt_tokens or 0) - cached) if raw else 0,
                output_tokens=(raw.completion_tokens or 0) if raw else 0,
                cache_read_tokens=cached,
            )
            calls = [c for c in (message.tool_calls or []) if getattr(c, "function", None) is not None]
        except (AttributeError, IndexError, TypeError) as exc:  # a 200 whose body is not a completion
            raise ModelError(
                f"{PROVIDER}: the response is not a chat completion ({short(repr(completion))})",
                retryable=True,
            ) from exc
        model = completion.model or self.model
        stop = choice.finish_reason
        chosen = next((c for c in calls if c.function.name == tool), None)
        if chosen is not None:
            text = chosen.function.arguments or ""
            name: str | None = chosen.function.name
        else:
            text = message.content or ""
            name = None
        value, error = parse_json_object(text)
        if chosen is None and calls:
            error = f"the answer did not call the {tool} tool (it called {calls[0].function.name})"
            value = None
        cut = stop == "length"
        if cut:
            error = "the answer was cut off at the output token limit; answer more briefly"
        # Prose where a tool call (or schema-bound JSON) was asked for: the server does not support the mode.
        ignored = value is None and not cut and not calls and mode in ("tools", "json-schema")
        return ModelResponse(
            text,
            name or (tool if value is not None else None),
            value,
            usage,
            model,
            stop,
            error,
            structured=mode,
            mode_ignored=ignored,
        )


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return short(str(inner["message"]))
    return short(exc.message)
