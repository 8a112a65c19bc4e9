"""What the two SDK adapters share (``AnthropicModel``, ``OpenAIModel``): the constructor, the client and its reset
after a timeout, the preflight, the deadline of one request and the translation of the SDK's exceptions into
``ModelError``. Each adapter keeps only its wire format: the request it builds, the call it makes, the response
it parses, and the SDK's exception classes (``SDKErrors``). No SDK is imported here."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from selfix_action.providers.base import (
    ModeLadder,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSetupError,
    PreflightResult,
    RetryPolicy,
    complete_stepping_down,
    preflight_result,
    preflight_status_error,
    status_error,
)

DEFAULT_TIMEOUT = 120.0
PREFLIGHT_TIMEOUT = 30.0  # the cheap calls before the run (list, retrieve) wait no longer than this


class SDKClient(Protocol):
    """The part of an SDK client the shared code uses; the rest is the adapter's."""

    def with_options(self, *, timeout: float) -> Self: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class SDKErrors:
    """One SDK's exception classes, from the most specific down to its root (``APIStatusError`` is an
    ``APIError``, ``APITimeoutError`` an ``APIConnectionError``: the order of ``SDKModel._send``'s ladder)."""

    status: type[Exception]  # an HTTP error status: ``status_code``, ``response.headers``
    timeout: type[Exception]
    connection: type[Exception]
    validation: type[Exception]  # a 200 whose body the SDK could not read into its types
    root: type[Exception]  # every other error of the SDK


ClientT = TypeVar("ClientT", bound=SDKClient)


class SDKModel(ABC, Generic[ClientT]):
    """One structured completion per call through an SDK client (the ``ChatModel`` protocol)."""

    provider: str  # set by each adapter's class
    default_model: ClassVar[str]
    default_fixes: ClassVar[Mapping[str, str]]
    errors: ClassVar[SDKErrors]

    def __init__(
        self,
        *,
        api_key: str,
        model: str | None = None,  # None: the adapter's default model
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        structured: str = "auto",
        fixes: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model = self.default_model if model is None else model
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.fixes = {**self.default_fixes, **(fixes or {})}
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

    # -- the wire format: each adapter's own ------------------------------------------------------------
    @abstractmethod
    def _new_client(self) -> ClientT:
        """A client with the SDK's own retries off: we retry ourselves so that no single wait exceeds the
        policy's cap, a provider's ``retry-after`` included (see ``base.with_retries``)."""

    @abstractmethod
    def _list_models(self, client: ClientT) -> list[Any]:
        """``GET /v1/models``: the models the server lists."""

    @abstractmethod
    def _retrieve_model(self, client: ClientT) -> None:
        """``GET /v1/models/{model}``: raises when the server does not know the model."""

    @abstractmethod
    def _request(self, request: ModelRequest, mode: str) -> dict[str, Any]:
        """The keyword arguments of the SDK's create call for ``request``, structured output asked in ``mode``."""

    @abstractmethod
    def _create(self, client: ClientT, kwargs: dict[str, Any]) -> Any:
        """Send the request; the SDK's answer object."""

    @abstractmethod
    def _response(self, answer: Any, tool: str, mode: str) -> ModelResponse:
        """The SDK's answer read into a ``ModelResponse`` (``ModelError`` for a body that is not an answer)."""

    @abstractmethod
    def _status(self, exc: Any) -> tuple[int, str, Mapping[str, str]]:
        """An HTTP error (``errors.status``): its status, the server's own words (shortened), its headers."""

    # -- shared ----------------------------------------------------------------------------------------
    def _drop_connections(self, err: ModelError) -> None:
        """After a timeout, close the pooled connections: the server sees the abandoned request's socket close
        (llama.cpp then cancels its task) rather than finishing it while the retry waits for the slot."""
        if err.timed_out:
            self._client.close()
            self._client = self._new_client()

    def preflight(self) -> PreflightResult:
        provider, errors = self.provider, self.errors
        try:
            models = self._list_models(self._client.with_options(timeout=min(self.timeout, PREFLIGHT_TIMEOUT)))
        except errors.status as exc:
            status, detail, _headers = self._status(exc)
            raise preflight_status_error(provider, status, detail, self.fixes) from exc
        except errors.connection as exc:
            raise ModelSetupError(
                f"{provider}: cannot reach the server ({short(str(exc))}). Check {self.fixes['base_url']}.",
                fix=self.fixes["base_url"],
            ) from exc
        except (errors.root, ValueError) as exc:  # a body that is not a model list
            raise ModelSetupError(
                f"{provider}: GET /v1/models gave no model list ({short(str(exc))}). Check {self.fixes['base_url']}.",
                fix=self.fixes["base_url"],
            ) from exc
        return preflight_result(provider, self.model, models, self.fixes, self._retrievable, self._ladder)

    def _retrievable(self) -> bool:
        try:
            self._retrieve_model(self._client.with_options(timeout=min(self.timeout, PREFLIGHT_TIMEOUT)))
        except (self.errors.root, ValueError):
            return False
        return True

    def complete(self, request: ModelRequest) -> ModelResponse:
        return complete_stepping_down(
            lambda mode, deadline: self._response(self._send(request, mode, deadline), request.tool, mode),
            request,
            self._ladder,
            self.retry,
            self._sleep,
            self._clock,
            self._drop_connections,
        )

    def _send(self, request: ModelRequest, mode: str, deadline: float | None) -> Any:
        """One request, within ``deadline`` (the heal's time left), the SDK's errors as ``ModelError``."""
        provider, errors = self.provider, self.errors
        kwargs = self._request(request, mode)
        client = self._client
        if deadline is not None:
            left = deadline - self._clock()
            if left <= 0:
                raise ModelError(f"{provider}: no time left for the request", timed_out=True)
            client = client.with_options(timeout=min(self.timeout, left))
        try:
            return self._create(client, kwargs)
        except errors.status as exc:
            status, detail, headers = self._status(exc)
            raise status_error(status, provider, detail, headers) from exc
        except errors.timeout as exc:
            raise ModelError(f"{provider}: request timed out", retryable=True, timed_out=True) from exc
        except errors.connection as exc:
            raise ModelError(f"{provider}: cannot connect ({short(str(exc))})", retryable=True) from exc
        except errors.validation as exc:
            raise ModelError(f"{provider}: unreadable response ({short(str(exc))})", retryable=True) from exc
        except ValueError as exc:  # a body that is not JSON (a proxy's error page)
            raise ModelError(f"{provider}: unreadable response ({short(str(exc))})", retryable=True) from exc
        except errors.root as exc:
            raise ModelError(f"{provider}: {short(str(exc))}") from exc


def short(text: str, limit: int = 300) -> str:
    """``text`` on one line, at most ``limit`` characters: an error's words in a message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
