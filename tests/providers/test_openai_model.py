"""The OpenAI-compatible adapter over the real ``openai`` SDK, against a local Chat Completions server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from selfix_action.providers.base import Message, ModelAuthError, ModelError, ModelRequest, RetryPolicy, ToolSpec
from selfix_action.providers.openai_model import OpenAIModel
from tests.helpers.fake_providers import FakeProvider, Reply, openai_error, openai_text, openai_tool_call, serve

TOOL = ToolSpec("answer", "an answer", {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]})
REQUEST = ModelRequest(
    system="you are a test",
    context="# Evidence\nstable context",
    messages=(Message("user", "answer please"),),
    tools=(TOOL,),
    tool="answer",
    max_tokens=300,
)
FAST = RetryPolicy(max_retries=2, max_wait=0.05)


def complete(provider: FakeProvider, **options: Any) -> Any:
    with serve(provider) as url:
        model = OpenAIModel(api_key="sk-test", base_url=url + "/v1", retry=FAST, model="gpt-5-mini", **options)
        return model.complete(REQUEST)


def test_tool_call_answer_and_usage() -> None:
    provider = FakeProvider(
        [openai_tool_call("answer", {"x": 3}, prompt_tokens=1500, completion_tokens=30, cached_tokens=1024)]
    )
    response = complete(provider)
    assert response.tool_input == {"x": 3} and response.parse_error is None
    assert response.usage.input_tokens == 476 and response.usage.cache_read_tokens == 1024
    assert response.usage.output_tokens == 30
    (request,) = provider.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    body = request.body
    assert body["messages"][0] == {"role": "system", "content": "you are a test\n\n# Evidence\nstable context"}
    # The tool mode's own words end the request (a JSON mode never asks for a tool call).
    assert body["messages"][1] == {
        "role": "user",
        "content": "answer please\n\nAnswer by calling the answer tool, with arguments matching its schema.",
    }
    assert body["tools"][0]["function"]["name"] == "answer"
    assert body["tool_choice"] == {"type": "function", "function": {"name": "answer"}}
    assert body["max_tokens"] == 300  # a base URL means an OpenAI-compatible server: the classic parameter


def test_malformed_arguments_are_a_parse_error() -> None:
    response = complete(FakeProvider([openai_tool_call("answer", '{"x": 3')]))
    assert response.tool_input is None and "not valid JSON" in (response.parse_error or "")
    assert response.text == '{"x": 3'


def test_json_text_instead_of_a_tool_call_is_accepted() -> None:
    response = complete(FakeProvider([openai_text('{"x": 9}')]))
    assert response.tool_input == {"x": 9} and response.parse_error is None


def test_json_mode() -> None:
    provider = FakeProvider([openai_text('```json\n{"x": 5}\n```')])
    response = complete(provider, structured="json")
    assert response.tool_input == {"x": 5}
    body = provider.requests[0].body
    assert body["response_format"] == {"type": "json_object"} and "tools" not in body
    assert json.dumps(TOOL.schema, separators=(",", ":")) in body["messages"][-1]["content"]


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_transient_errors_are_retried(status: int) -> None:
    provider = FakeProvider(
        [openai_error(status, "server_error", "busy", {"retry-after": "0.01"}), openai_tool_call("answer", {"x": 1})]
    )
    response = complete(provider)
    assert response.tool_input == {"x": 1} and [n.status for n in response.retries] == [status]


def test_401_stops_at_once() -> None:
    provider = FakeProvider([openai_error(401, "invalid_api_key", "Incorrect API key provided")] * 3)
    with pytest.raises(ModelAuthError) as caught:
        complete(provider)
    assert len(provider.requests) == 1
    assert "Incorrect API key provided" in str(caught.value) and "OPENAI_API_KEY" in str(caught.value)


def test_body_that_is_not_a_completion() -> None:
    provider = FakeProvider([Reply(200, {"unexpected": True})] * 3)
    with pytest.raises(ModelError, match="not a chat completion"):
        complete(provider)
    assert len(provider.requests) == 3


def test_hosted_openai_uses_max_completion_tokens() -> None:
    assert OpenAIModel(api_key="sk-test", retry=FAST)._token_param == "max_completion_tokens"
    hosted = OpenAIModel(api_key="sk-test", base_url="https://api.openai.com/v1", retry=FAST)
    assert hosted._token_param == "max_completion_tokens"
