"""The small interface between the LLM engine and a provider: one request in, one typed response out.

Adapters translate every SDK exception into a ``ModelError`` (a ``SelfixError``) and retry transient failures
themselves, so that a ``retry-after`` of minutes is honoured only up to ``RetryPolicy.max_wait`` and every
wait is reported in the response (never silent).
"""

from __future__ import annotations

import difflib
import email.utils
import functools
import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
        timed_out: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.timed_out = timed_out  # the request outlived its timeout (the connection was abandoned)
        self.retries: tuple[RetryNote, ...] = ()


class ModelAuthError(ModelError):
    """The provider rejected the credentials (401/403): retrying cannot help."""

    exit_code = ExitCode.BAD_INPUT


class ModelRateLimited(ModelError):
    """429 (rate limit or quota) that outlasted the retries."""


class ModelSetupError(ModelError):
    """The preflight check found the key, the base URL or the model name wrong: a usage error (exit 2), found
    before the test suite runs. The message names what to fix (``fix``: the variable, flag or input)."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, message: str, *, status: int | None = None, fix: str = "") -> None:
        super().__init__(message, status=status)
        self.fix = fix


# -- structured output ---------------------------------------------------------------------------------
# How a structured answer is asked for: a forced tool call, a JSON Schema the server enforces (OpenAI
# ``response_format: json_schema``, Anthropic ``output_config.format``), or JSON asked for in the prompt (with
# OpenAI's ``json_object`` mode). "auto" starts with tools and steps down on a clear signal (see ``next_mode``).
STRUCTURED_MODES = ("tools", "json-schema", "json")
STRUCTURED_CHOICES = ("auto", *STRUCTURED_MODES)


def structured_modes(choice: str) -> tuple[str, ...]:
    """The modes a ``--structured`` choice may use, in the order tried."""
    if choice == "auto":
        return STRUCTURED_MODES
    if choice not in STRUCTURED_MODES:
        raise ValueError(f"structured output must be one of {', '.join(STRUCTURED_CHOICES)}, not {choice!r}")
    return (choice,)


# Words of a 400/422 error that say the request's structured-output part was refused (not, say, its length).
MODE_WORDS = {
    "tools": ("tool", "function"),
    "json-schema": ("response_format", "json_schema", "output_config", "format", "schema"),
}


def mode_refused(err: ModelError, mode: str) -> bool:
    """A clear signal that the server does not take ``mode``: HTTP 400/422 naming its request field."""
    text = str(err).lower()
    return err.status in (400, 422) and any(word in text for word in MODE_WORDS.get(mode, ()))


@dataclass(frozen=True)
class PreflightResult:
    """What the cheap check before the run found: the models the server lists, and a note (or "")."""

    models: tuple[str, ...]
    note: str = ""
    server: str = ""  # who serves them, when the listing says ("llamacpp": llama.cpp's server)


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
    # Seconds this one request may take (the run's remaining time can make it shorter than the adapter's
    # default); None: the adapter's ``timeout``.
    timeout: float | None = None

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
    structured: str = "tools"  # the mode this answer was asked in (STRUCTURED_MODES)
    # The answer shows the server ignored the mode (a forced tool never called, "JSON" that is prose): a clear
    # signal for "auto" to step down to the next mode.
    mode_ignored: bool = False


class ChatModel(Protocol):
    """One structured completion per call. Implementations: ``AnthropicModel``, ``OpenAIModel``."""

    provider: str
    model: str

    @property
    def structured(self) -> str:
        """The mode the next call uses."""
        ...

    def complete(self, request: ModelRequest) -> ModelResponse: ...

    def step_down(self) -> str | None:
        """Switch to the next structured mode ("auto" only); the new mode, or None when there is none."""
        ...

    def preflight(self) -> PreflightResult:
        """One cheap call (``GET /v1/models``) that checks key, base URL and model name before the run;
        raises ``ModelSetupError`` naming what to fix."""
        ...


class ModeLadder:
    """The structured modes a model may still use; ``step_down`` moves to the next one."""

    def __init__(self, choice: str) -> None:
        self.choice = choice
        self.modes = structured_modes(choice)
        self.index = 0

    def start_at(self, mode: str) -> bool:
        """For "auto": begin with ``mode`` (the preflight knows the server ignores the ones before it)."""
        if self.choice != "auto" or mode not in self.modes or self.modes.index(mode) <= self.index:
            return False
        self.index = self.modes.index(mode)
        return True

    @property
    def current(self) -> str:
        return self.modes[self.index]

    def step_down(self) -> str | None:
        if self.index + 1 >= len(self.modes):
            return None
        self.index += 1
        return self.current


def answer_instruction(mode: str, spec: ToolSpec) -> str:
    """The last words of a request in ``mode``: the form of the answer, said once and only in that mode's terms
    (a JSON mode never asks for a tool call). The role prompts themselves name no form."""
    if mode == "tools":
        return f"\n\nAnswer by calling the {spec.name} tool, with arguments matching its schema."
    if mode == "json-schema":
        return f"\n\nAnswer with only a JSON object ({spec.description})."
    return json_instruction(spec.description, spec.schema)


def json_instruction(description: str, schema: Mapping[str, Any]) -> str:
    """The prompt suffix of the "json" mode: the schema spelled out, since nothing enforces it."""
    return (
        f"\n\nAnswer with only a JSON object ({description}) matching this JSON Schema, no prose:\n"
        f"{json.dumps(schema, separators=(',', ':'))}"
    )


def served_by(models: Sequence[Any]) -> str:
    """The ``owned_by`` of a listing's models when they all say the same (llama.cpp's server: "llamacpp")."""
    owners = {str(getattr(m, "owned_by", "") or "") for m in models}
    return owners.pop() if len(owners) == 1 else ""


# Servers whose listing names them and whose structured output is known (measured on llama.cpp's server: tool
# calls and Anthropic's output_config are ignored, response_format json_schema is enforced by a grammar).
KNOWN_SERVER_MODES = {("openai", "llamacpp"): "json-schema", ("anthropic", "llamacpp"): "json"}


def check_listed_model(
    provider: str,
    model: str,
    listed: Sequence[str],
    fixes: Mapping[str, str],
    retrievable: Callable[[], bool],
) -> str:
    """The preflight's model-name check on a listing: "" when ``model`` is listed or can be retrieved by name
    (an alias); a note when the server lists exactly one model (a local single-model server such as llama.cpp
    answers under any name); else ``ModelSetupError`` naming the model flag or input."""
    if model in listed or not listed or retrievable():
        return ""
    if len(listed) == 1:
        return f"{provider}: model {model!r} is not listed; the server serves one model ({listed[0]}) and is used as is"
    close = difflib.get_close_matches(model, list(listed), n=3, cutoff=0.5)
    hint = f" (close: {', '.join(close)})" if close else ""
    raise ModelSetupError(
        f"{provider} does not list the model {model!r}{hint}; {len(listed)} models are listed. "
        f"Set {fixes['model']} to one of them.",
        status=404,
        fix=fixes["model"],
    )


def preflight_result(
    provider: str,
    model: str,
    models: Sequence[Any],
    fixes: Mapping[str, str],
    retrievable: Callable[[], bool],
    ladder: ModeLadder,
) -> PreflightResult:
    """The preflight's verdict on a model listing, the same for both SDKs: the model-name check, and the structured
    mode a server known by its listing starts at (``ladder`` is moved there)."""
    listed = tuple(str(m.id) for m in models)
    note = check_listed_model(provider, model, listed, fixes, retrievable)
    server = served_by(models)
    known = KNOWN_SERVER_MODES.get((provider, server))
    if known is not None and ladder.start_at(known):
        found = f"the server is {server}: structured answers use {known}"
        note = f"{note}; {found}" if note else found
    return PreflightResult(listed, note, server)


def preflight_status_error(provider: str, status: int, detail: str, fixes: Mapping[str, str]) -> ModelSetupError:
    """The usage error for an HTTP error status of the preflight's ``GET /v1/models``."""
    if status in (401, 403):
        what = "rejected the API key" if status == 401 else "refused access with this API key"
        return ModelSetupError(
            f"{provider} {what} (HTTP {status}): {detail}. Set {fixes['api_key']} (and check {fixes['base_url']}).",
            status=status,
            fix=fixes["api_key"],
        )
    if status == 404:
        return ModelSetupError(
            f"{provider}: the base URL has no models endpoint (HTTP 404 on GET /v1/models): {detail}. "
            f"Check {fixes['base_url']} (an OpenAI-compatible URL usually ends in /v1).",
            status=status,
            fix=fixes["base_url"],
        )
    return ModelSetupError(
        f"{provider}: the models endpoint answered HTTP {status}: {detail}. Check {fixes['base_url']}.",
        status=status,
        fix=fixes["base_url"],
    )


# -- retries -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RetryPolicy:
    """Our own retry loop (SDK clients get ``max_retries=0``) so that no single wait exceeds ``max_wait``."""

    max_retries: int = 3
    max_wait: float = 30.0
    base_delay: float = 0.5
    max_backoff: float = 8.0
    # A request that timed out is retried this often at most: the same prompt on the same server mostly times
    # out again, and on a single-slot server (llama.cpp) every retry waits for the slot.
    max_timeout_retries: int = 1

    def wait_for(self, retry_number: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_wait)
        backoff = min(self.base_delay * 2.0 ** (retry_number - 1), self.max_backoff)
        return min(backoff * (1 - 0.25 * random.random()), self.max_wait)


def with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    *,
    before_retry: Callable[[ModelError], None] | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[T, tuple[RetryNote, ...]]:
    """Run ``call`` (which raises only ``ModelError``), retrying the retryable ones with capped waits.

    ``before_retry`` runs before each retry (the adapters drop their connections after a timeout, so the server
    sees the abandoned request's socket close and cancels it instead of finishing it first); no retry starts
    after ``deadline`` (a ``clock`` time): the call's share of the run is spent."""
    notes: list[RetryNote] = []
    attempt = 0
    timeouts = 0
    while True:
        try:
            return call(), tuple(notes)
        except ModelError as err:
            err.retries = tuple(notes)
            timeouts += err.timed_out
            if not err.retryable or attempt >= policy.max_retries:
                raise
            if err.timed_out and timeouts > policy.max_timeout_retries:
                raise
            wait = policy.wait_for(attempt + 1, err.retry_after)
            if deadline is not None and clock() + wait >= deadline:
                raise
            attempt += 1
            reason = "a timeout" if err.timed_out else f"HTTP {err.status}" if err.status else "a connection error"
            notes.append(RetryNote(attempt, err.status, reason, err.retry_after, wait))
            if before_retry is not None:
                before_retry(err)
            sleep(wait)


def complete_stepping_down(
    attempt: Callable[[str, float | None], ModelResponse],
    request: ModelRequest,
    ladder: ModeLadder,
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    clock: Callable[[], float],
    before_retry: Callable[[ModelError], None],
) -> ModelResponse:
    """One structured completion for either SDK: ``attempt(mode, deadline)`` retried by ``with_retries``; a
    structured mode the server refuses steps down the ``ladder`` and the request is sent again in the next mode,
    every retry so far kept in the response's notes."""
    deadline = clock() + request.timeout if request.timeout else None
    notes: list[RetryNote] = []
    while True:
        mode = ladder.current
        try:
            response, retries = with_retries(
                functools.partial(attempt, mode, deadline),
                policy,
                sleep,
                before_retry=before_retry,
                deadline=deadline,
                clock=clock,
            )
        except ModelError as err:
            if mode_refused(err, mode) and (lower := ladder.step_down()) is not None:
                reason = f"HTTP {err.status} for the {mode} mode (now {lower})"
                notes += [*err.retries, RetryNote(len(notes) + len(err.retries) + 1, err.status, reason, None, 0.0)]
                continue
            err.retries = (*notes, *err.retries)
            raise
        return replace(response, retries=(*notes, *retries))


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
