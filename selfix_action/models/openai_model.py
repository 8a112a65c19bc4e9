"""OpenAI-compatible Chat Completions adapter: hosted OpenAI, and Ollama, vLLM or llama.cpp's server through a
base URL. Structured output through a forced function call ("tools") or JSON mode ("json") for servers
without tool support; an answer given as JSON text instead of a tool call is accepted too."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Literal
from urllib.parse import urlsplit

import openai

from selfix_action.models.base import (
    ModelError,
    ModelRequest,
    ModelResponse,
    RetryPolicy,
    TokenUsage,
    parse_json_object,
    status_error,
    with_retries,
)

DEFAULT_MODEL = "gpt-5-mini"
DEFAULT_TIMEOUT = 120.0
PROVIDER = "openai"

Structured = Literal["tools", "json"]


class OpenAIModel:
    provider = PROVIDER

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        structured: Structured = "tools",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.model = model
        self.retry = retry or RetryPolicy()
        self.structured = structured
        self._sleep = sleep
        # Hosted OpenAI takes max_completion_tokens; most OpenAI-compatible servers only know max_tokens.
        hosted = base_url is None or (urlsplit(base_url).hostname or "").endswith("openai.com")
        self._token_param = "max_completion_tokens" if hosted else "max_tokens"
        # We retry ourselves so that no single wait exceeds the policy's cap (see base.with_retries).
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)

    def complete(self, request: ModelRequest) -> ModelResponse:
        response, retries = with_retries(
            lambda: self._response(self._call(request), request.tool), self.retry, self._sleep
        )
        return replace(response, retries=retries)

    def _call(self, request: ModelRequest) -> Any:
        # System prompt and repository context first and byte-identical across calls: providers that cache
        # prompt prefixes automatically (OpenAI, vLLM's prefix caching, llama.cpp's slots) can reuse them.
        system = request.system + ("\n\n" + request.context if request.context else "")
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        kwargs: dict[str, Any] = {self._token_param: request.max_tokens}
        if self.structured == "tools":
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": dict(t.schema)},
                }
                for t in request.tools
            ]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": request.tool}}
        else:
            spec = next(t for t in request.tools if t.name == request.tool)
            messages[-1] = {
                "role": messages[-1]["role"],
                "content": f"{messages[-1]['content']}\n\nAnswer with only a JSON object "
                f"({spec.description}) matching this JSON Schema:\n{json.dumps(spec.schema)}",
            }
            kwargs["response_format"] = {"type": "json_object"}
        try:
            return self._client.chat.completions.create(model=self.model, messages=messages, **kwargs)  # type: ignore[arg-type]
        except openai.APIStatusError as exc:
            raise status_error(exc.status_code, PROVIDER, _detail(exc), exc.response.headers) from exc
        except openai.APITimeoutError as exc:
            raise ModelError(f"{PROVIDER}: request timed out", retryable=True) from exc
        except openai.APIConnectionError as exc:
            raise ModelError(f"{PROVIDER}: cannot connect ({_short(str(exc))})", retryable=True) from exc
        except openai.APIResponseValidationError as exc:
            raise ModelError(f"{PROVIDER}: unreadable response ({_short(str(exc))})", retryable=True) from exc
        except ValueError as exc:  # a body that is not JSON (a proxy's error page)
            raise ModelError(f"{PROVIDER}: unreadable response ({_short(str(exc))})", retryable=True) from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"{PROVIDER}: {_short(str(exc))}") from exc

    def _response(self, completion: Any, tool: str) -> ModelResponse:
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
                f"{PROVIDER}: the response is not a chat completion ({_short(repr(completion))})",
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
        if stop == "length":
            error = "the answer was cut off at the output token limit; answer more briefly"
        return ModelResponse(text, name or (tool if value is not None else None), value, usage, model, stop, error)


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return _short(str(inner["message"]))
    return _short(exc.message)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
