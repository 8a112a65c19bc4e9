"""The Anthropic adapter over the real ``anthropic`` SDK, against a local server speaking the Messages API."""

from __future__ import annotations

import time

import pytest

from selfix_action.providers.anthropic_model import AnthropicModel
from selfix_action.providers.base import (
    Message,
    ModelAuthError,
    ModelError,
    ModelRateLimited,
    ModelRequest,
    RetryPolicy,
    ToolSpec,
)
from tests.helpers.fake_providers import (
    FakeProvider,
    Reply,
    anthropic_error,
    anthropic_text,
    anthropic_tool_use,
    serve,
)

TOOL = ToolSpec("answer", "an answer", {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})
OTHER = ToolSpec("other", "another tool", {"type": "object", "properties": {}})
REQUEST = ModelRequest(
    system="you are a test",
    context="# Evidence\nstable repository context",
    messages=(Message("user", "answer please"),),
    tools=(TOOL, OTHER),
    tool="answer",
    max_tokens=300,
)
FAST = RetryPolicy(max_retries=2, max_wait=0.05)


def complete(provider: FakeProvider, retry: RetryPolicy = FAST) -> object:
    with serve(provider) as url:
        return AnthropicModel(api_key="sk-test", base_url=url, retry=retry, model="claude-sonnet-4-6").complete(REQUEST)


def test_tool_use_answer_and_usage() -> None:
    provider = FakeProvider(
        [anthropic_tool_use("answer", {"x": 4}, input_tokens=12, output_tokens=7, cache_read=900, cache_write=40)]
    )
    response = complete(provider)
    assert response.tool_input == {"x": 4} and response.tool_name == "answer"  # type: ignore[attr-defined]
    assert response.text == '{"x": 4}' and response.parse_error is None  # type: ignore[attr-defined]
    usage = response.usage  # type: ignore[attr-defined]
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        12,
        7,
        900,
        40,
    )
    (request,) = provider.requests
    assert request.path == "/v1/messages"
    body = request.body
    assert body["model"] == "claude-sonnet-4-6" and body["max_tokens"] == 300
    # The stable prefix: system prompt, then the repository context carrying the cache breakpoint.
    assert body["system"] == [
        {"type": "text", "text": "you are a test"},
        {"type": "text", "text": "# Evidence\nstable repository context", "cache_control": {"type": "ephemeral"}},
    ]
    assert [t["name"] for t in body["tools"]] == ["answer", "other"]
    assert body["tools"][0]["input_schema"]["required"] == ["x"]
    assert body["tool_choice"] == {"type": "tool", "name": "answer", "disable_parallel_tool_use": True}
    assert body["messages"] == [
        {
            "role": "user",
            "content": "answer please\n\nAnswer by calling the answer tool, with arguments matching its schema.",
        }
    ]
    assert request.headers.get("x-stainless-retry-count") == "0"


def test_text_instead_of_tool_is_a_parse_error() -> None:
    response = complete(FakeProvider([anthropic_text("I think the bug is in add")]))
    assert response.tool_input is None  # type: ignore[attr-defined]
    assert response.parse_error == "the answer did not call the answer tool"  # type: ignore[attr-defined]
    assert response.text == "I think the bug is in add"  # type: ignore[attr-defined]


def test_cut_off_answer_is_a_parse_error() -> None:
    response = complete(FakeProvider([anthropic_tool_use("answer", {}, stop_reason="max_tokens")]))
    assert "cut off" in (response.parse_error or "")  # type: ignore[attr-defined]


def test_429_with_retry_after_then_success() -> None:
    provider = FakeProvider(
        [
            anthropic_error(429, "rate_limit_error", "Number of requests exceeded", {"retry-after": "0.02"}),
            anthropic_tool_use("answer", {"x": 1}),
        ]
    )
    response = complete(provider)
    (note,) = response.retries  # type: ignore[attr-defined]
    assert note.status == 429 and note.requested_wait == 0.02 and note.waited == 0.02
    assert len(provider.requests) == 2


def test_long_retry_after_is_capped() -> None:
    provider = FakeProvider(
        [
            anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "3600"}),
            anthropic_tool_use("answer", {"x": 1}),
        ]
    )
    started = time.monotonic()
    response = complete(provider)
    assert time.monotonic() - started < 5
    assert response.retries[0].waited == 0.05  # type: ignore[attr-defined]


@pytest.mark.parametrize(("status", "kind"), [(529, "overloaded_error"), (503, "api_error"), (500, "api_error")])
def test_transient_server_errors_are_retried(status: int, kind: str) -> None:
    provider = FakeProvider([anthropic_error(status, kind, "try later"), anthropic_tool_use("answer", {"x": 2})])
    response = complete(provider)
    assert response.tool_input == {"x": 2}  # type: ignore[attr-defined]
    assert [n.status for n in response.retries] == [status]  # type: ignore[attr-defined]


def test_rate_limit_that_outlasts_the_retries() -> None:
    provider = FakeProvider([anthropic_error(429, "rate_limit_error", "quota", {"retry-after": "0"})] * 5)
    with pytest.raises(ModelRateLimited) as caught:
        complete(provider)
    assert len(provider.requests) == 3 and "HTTP 429" in str(caught.value)
    assert len(caught.value.retries) == 2


def test_401_stops_at_once_with_a_clear_message() -> None:
    provider = FakeProvider([anthropic_error(401, "authentication_error", "invalid x-api-key")] * 3)
    with pytest.raises(ModelAuthError) as caught:
        complete(provider)
    assert len(provider.requests) == 1
    message = str(caught.value)
    assert "rejected the API key (HTTP 401): invalid x-api-key" in message and "ANTHROPIC_API_KEY" in message
    assert caught.value.__cause__ is not None  # raised from the SDK's error


def test_bad_request_is_not_retried() -> None:
    provider = FakeProvider([anthropic_error(400, "invalid_request_error", "max_tokens: too large")] * 3)
    with pytest.raises(ModelError, match="max_tokens: too large"):
        complete(provider)
    assert len(provider.requests) == 1


def test_body_that_is_not_json_is_retried_then_reported() -> None:
    provider = FakeProvider([Reply(200, "<html>bad gateway</html>")] * 3)
    with pytest.raises(ModelError, match="unreadable response"):
        complete(provider)
    assert len(provider.requests) == 3


def test_unreachable_server() -> None:
    with serve(FakeProvider()) as url:
        pass  # the server is gone: nothing listens on that port any more
    model = AnthropicModel(api_key="k", base_url=url, retry=RetryPolicy(max_retries=1, max_wait=0.01), timeout=2)
    with pytest.raises(ModelError, match=r"cannot connect|timed out"):
        model.complete(REQUEST)
