"""The small interface between the LLM engine and a provider: one request in, one typed response out.

Adapters translate every SDK exception into a ``ModelError`` (a ``SelfixError``) and retry transient failures
themselves, so that a ``retry-after`` of minutes is honoured only up to ``RetryPolicy.max_wait`` and every
wait is reported in the response (never silent).
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

from selfix_action.errors import ExitCode, SelfixError

T = TypeVar("T")


# -- errors ------------------------------------------------------------------------------------------
class ModelError(SelfixError):
    """The model could not be used: a provider error that retries did not cure, or an unusable reply."""

    exit_code = ExitCode.NOT_HEALED

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.retries: tuple[RetryNote, ...] = ()


class ModelAuthError(ModelError):
    """The provider rejected the credentials (401/403): retrying cannot help."""

    exit_code = ExitCode.BAD_INPUT


class ModelRateLimited(ModelError):
    """429 (rate limit or quota) that outlasted the retries."""


# -- request and response ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ToolSpec:
    """A function the model must call with arguments matching ``schema`` (JSON Schema, no $refs)."""

    name: str
    description: str
    schema: Mapping[str, Any]


@dataclass(frozen=True)
class Message:
    role: Literal["user", "assistant"]
    content: str


@dataclass(frozen=True)
class ModelRequest:
    """``system`` and ``context`` form the stable prefix (cached where the provider allows); ``tools`` are
    the same for every call of a run so the prefix stays byte-identical; ``tool`` names the one to call."""

    system: str
    context: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]
    tool: str
    max_tokens: int = 2048

    def as_messages(self) -> list[dict[str, str]]:
        """Provider-neutral view for the trace: every prompt part, in order."""
        return [
            {"role": "system", "content": self.system},
            {"role": "context", "content": self.context},
            *({"role": m.role, "content": m.content} for m in self.messages),
        ]


@dataclass(frozen=True)
class TokenUsage:
    """Tokens of one call. ``input_tokens`` excludes cached ones; cache reads and writes are counted apart."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass(frozen=True)
class RetryNote:
    """One wait before a retry: why, what the provider asked for, what we actually waited."""

    attempt: int
    status: int | None
    reason: str
    requested_wait: float | None
    waited: float

    def describe(self) -> str:
        asked = f", provider asked for {self.requested_wait:g}s" if self.requested_wait is not None else ""
        capped = " (capped)" if self.requested_wait is not None and self.requested_wait > self.waited else ""
        return f"retry {self.attempt} after {self.reason}: waited {self.waited:.2f}s{capped}{asked}"


@dataclass(frozen=True)
class ModelResponse:
    """What the model said: ``text`` is the raw answer (for a tool call, its JSON arguments); ``tool_input``
    the parsed arguments, or None with ``parse_error`` saying why they could not be read."""

    text: str
    tool_name: str | None
    tool_input: dict[str, Any] | None
    usage: TokenUsage
    model: str
    stop_reason: str | None = None
    parse_error: str | None = None
    retries: tuple[RetryNote, ...] = field(default_factory=tuple)


class ChatModel(Protocol):
    """One structured completion per call. Implementations: ``AnthropicModel``, ``OpenAIModel``."""

    provider: str
    model: str

    def complete(self, request: ModelRequest) -> ModelResponse: ...


# -- retries -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RetryPolicy:
    """Our own retry loop (SDK clients get ``max_retries=0``) so that no single wait exceeds ``max_wait``."""

    max_retries: int = 3
    max_wait: float = 30.0
    base_delay: float = 0.5
    max_backoff: float = 8.0

    def wait_for(self, retry_number: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_wait)
        backoff = min(self.base_delay * 2 ** (retry_number - 1), self.max_backoff)
        return min(backoff * (1 - 0.25 * random.random()), self.max_wait)


def with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, tuple[RetryNote, ...]]:
    """Run ``call`` (which raises only ``ModelError``), retrying the retryable ones with capped waits."""
    notes: list[RetryNote] = []
    attempt = 0
    while True:
        try:
            return call(), tuple(notes)
        except ModelError as err:
            err.retries = tuple(notes)
            if not err.retryable or attempt >= policy.max_retries:
                raise
            attempt += 1
            wait = policy.wait_for(attempt, err.retry_after)
            reason = f"HTTP {err.status}" if err.status else "a connection error"
            notes.append(RetryNote(attempt, err.status, reason, err.retry_after, wait))
            sleep(wait)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the provider asks us to wait: ``retry-after-ms``, ``retry-after`` (seconds or HTTP date)."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - time.time())


RETRYABLE_STATUSES = frozenset({408, 409, 429})


def status_error(status: int, provider: str, detail: str, headers: Mapping[str, str] | None) -> ModelError:
    """The ``ModelError`` for an HTTP error status from ``provider``."""
    retry_after = parse_retry_after(headers)
    if status in (401, 403):
        what = "rejected the API key" if status == 401 else "refused access with this API key"
        return ModelAuthError(
            f"{provider} {what} (HTTP {status}): {detail}. Check the key "
            f"({provider.upper()}_API_KEY or --api-key) and the base URL.",
            status=status,
        )
    if status == 429:
        return ModelRateLimited(
            f"{provider} rate limit or quota (HTTP 429): {detail}",
            status=status,
            retryable=True,
            retry_after=retry_after,
        )
    retryable = status in RETRYABLE_STATUSES or status >= 500
    kind = "overloaded" if status == 529 else "server error" if status >= 500 else "request error"
    return ModelError(
        f"{provider} {kind} (HTTP {status}): {detail}",
        status=status,
        retryable=retryable,
        retry_after=retry_after,
    )


def parse_json_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """A JSON object from model text (tolerating a fenced ```json block); (value, None) or (None, error)."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        stripped = stripped.rsplit("```", 1)[0]
    if not stripped:
        return None, "the answer was empty"
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        return None, f"the answer is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if not isinstance(value, dict):
        return None, f"the answer is JSON but not an object (got {type(value).__name__})"
    return value, None
