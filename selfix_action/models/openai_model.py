"""OpenAI-compatible Chat Completions adapter: hosted OpenAI, and Ollama, vLLM or llama.cpp's server through a
base URL. Structured output through a forced function call ("tools"), a JSON Schema the server enforces
(``response_format: json_schema``, which llama.cpp turns into a grammar) or JSON mode with the schema in the
prompt ("json"); "auto" starts with tools and steps down when the server shows it ignores them. An answer given
as JSON text instead of a tool call is accepted in every mode."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import openai

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

DEFAULT_MODEL = "gpt-5-mini"
DEFAULT_TIMEOUT = 120.0
PROVIDER = "openai"
DEFAULT_FIXES = {"api_key": "OPENAI_API_KEY (or --api-key)", "base_url": "--base-url", "model": "--model"}


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
        # Hosted OpenAI takes max_completion_tokens; most OpenAI-compatible servers only know max_tokens.
        hosted = base_url is None or (urlsplit(base_url).hostname or "").endswith("openai.com")
        self._token_param = "max_completion_tokens" if hosted else "max_tokens"
        self._client = self._new_client()

    @property
    def structured(self) -> str:
        return self._ladder.current

    def step_down(self) -> str | None:
        return self._ladder.step_down()

    def _new_client(self) -> openai.OpenAI:
        # We retry ourselves so that no single wait exceeds the policy's cap (see base.with_retries).
        return openai.OpenAI(api_key=self._api_key, base_url=self._base_url, timeout=self.timeout, max_retries=0)

    def _drop_connections(self, err: ModelError) -> None:
        """After a timeout, close the pooled connections: the server sees the abandoned request's socket close
        (llama.cpp then cancels its task) rather than finishing it while the retry waits for the slot."""
        if err.timed_out:
            self._client.close()
            self._client = self._new_client()

    # -- the cheap check before the run ---------------------------------------------------------------
    def preflight(self) -> PreflightResult:
        try:
            models = list(self._client.with_options(timeout=min(self.timeout, 30.0)).models.list())
        except openai.APIStatusError as exc:
            raise preflight_status_error(PROVIDER, exc.status_code, _detail(exc), self.fixes) from exc
        except openai.APIConnectionError as exc:
            raise ModelSetupError(
                f"{PROVIDER}: cannot reach the server ({_short(str(exc))}). Check {self.fixes['base_url']}.",
                fix=self.fixes["base_url"],
            ) from exc
        except (openai.OpenAIError, ValueError) as exc:  # a body that is not a model list
            raise ModelSetupError(
                f"{PROVIDER}: GET /v1/models gave no model list ({_short(str(exc))}). Check {self.fixes['base_url']}.",
                fix=self.fixes["base_url"],
            ) from exc
        return preflight_result(PROVIDER, self.model, models, self.fixes, self._retrievable, self._ladder)

    def _retrievable(self) -> bool:
        try:
            self._client.with_options(timeout=min(self.timeout, 30.0)).models.retrieve(self.model)
        except (openai.OpenAIError, ValueError):
            return False
        return True

    # -- one structured completion ------------------------------------------------------------------------
    def complete(self, request: ModelRequest) -> ModelResponse:
        return complete_stepping_down(
            lambda mode, deadline: self._response(self._call(request, mode, deadline), request.tool, mode),
            request,
            self._ladder,
            self.retry,
            self._sleep,
            self._clock,
            self._drop_connections,
        )

    def _call(self, request: ModelRequest, mode: str, deadline: float | None) -> Any:
        # System prompt and repository context first and byte-identical across calls: providers that cache
        # prompt prefixes automatically (OpenAI, vLLM's prefix caching, llama.cpp's slots) can reuse them.
        system = request.system + ("\n\n" + request.context if request.context else "")
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        messages += [{"role": m.role, "content": m.content} for m in request.messages]
        kwargs: dict[str, Any] = {self._token_param: request.max_tokens}
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
        client = self._client
        if deadline is not None:
            left = deadline - self._clock()
            if left <= 0:
                raise ModelError(f"{PROVIDER}: no time left for the request", timed_out=True)
            client = client.with_options(timeout=min(self.timeout, left))
        try:
            return client.chat.completions.create(model=self.model, messages=messages, **kwargs)  # type: ignore[arg-type]
        except openai.APIStatusError as exc:
            raise status_error(exc.status_code, PROVIDER, _detail(exc), exc.response.headers) from exc
        except openai.APITimeoutError as exc:
            raise ModelError(f"{PROVIDER}: request timed out", retryable=True, timed_out=True) from exc
        except openai.APIConnectionError as exc:
            raise ModelError(f"{PROVIDER}: cannot connect ({_short(str(exc))})", retryable=True) from exc
        except openai.APIResponseValidationError as exc:
            raise ModelError(f"{PROVIDER}: unreadable response ({_short(str(exc))})", retryable=True) from exc
        except ValueError as exc:  # a body that is not JSON (a proxy's error page)
            raise ModelError(f"{PROVIDER}: unreadable response ({_short(str(exc))})", retryable=True) from exc
        except openai.OpenAIError as exc:
            raise ModelError(f"{PROVIDER}: {_short(str(exc))}") from exc

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
            return _short(str(inner["message"]))
    return _short(exc.message)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
