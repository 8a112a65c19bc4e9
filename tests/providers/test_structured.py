"""Structured output modes and slow servers, through the real SDK clients against servers on 127.0.0.1."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from selfix_action.providers.anthropic_model import AnthropicModel, output_format_schema
from selfix_action.providers.base import Message, ModelError, ModelRequest, RetryPolicy, ToolSpec
from selfix_action.providers.openai_model import OpenAIModel
from tests.helpers.fake_providers import FakeProvider, anthropic_text, openai_error, openai_text, serve, serving

SCHEMA = {
    "type": "object",
    "properties": {"file": {"type": "string", "enum": ["a.py"], "maxLength": 50}, "n": {"type": "integer"}},
    "required": ["file", "n"],
}
TOOL = ToolSpec("answer", "an answer", SCHEMA)
REQUEST = ModelRequest("system", "context", (Message("user", "answer please"),), (TOOL,), "answer", max_tokens=64)
FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_wait=0.05)


def test_openai_json_schema_mode_sends_the_schema_as_response_format() -> None:
    provider = FakeProvider([openai_text('{"file": "a.py", "n": 2}')])
    with serve(provider) as url:
        response = OpenAIModel(api_key="k", base_url=url + "/v1", structured="json-schema", retry=FAST).complete(
            REQUEST
        )
    assert response.tool_input == {"file": "a.py", "n": 2} and response.structured == "json-schema"
    body = provider.requests[0].body
    assert "tools" not in body and "tool_choice" not in body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA


def test_anthropic_json_schema_mode_sends_a_schema_its_structured_outputs_take() -> None:
    provider = FakeProvider([anthropic_text('{"file": "a.py", "n": 2}')])
    with serve(provider) as url:
        response = AnthropicModel(api_key="k", base_url=url, structured="json-schema", retry=FAST).complete(REQUEST)
    assert response.tool_input == {"file": "a.py", "n": 2}
    body = provider.requests[0].body
    assert "tools" not in body
    sent = body["output_config"]["format"]
    assert sent == {"type": "json_schema", "schema": output_format_schema(SCHEMA)}
    assert sent["schema"]["additionalProperties"] is False
    assert "maxLength" not in json.dumps(sent) and sent["schema"]["properties"]["file"]["enum"] == ["a.py"]


@pytest.mark.parametrize("make", ["openai", "anthropic"])
def test_prose_where_a_tool_call_was_forced_is_the_signal_to_step_down(make: str) -> None:
    reply = openai_text("Sure! Here is my answer.") if make == "openai" else anthropic_text("Sure! Here it is.")
    provider = FakeProvider([reply])
    with serve(provider) as url:
        model: Any = (
            OpenAIModel(api_key="k", base_url=url + "/v1", retry=FAST)
            if make == "openai"
            else AnthropicModel(api_key="k", base_url=url, retry=FAST)
        )
        response = model.complete(REQUEST)
        assert response.mode_ignored and response.tool_input is None and response.structured == "tools"
        assert model.step_down() == "json-schema" and model.step_down() == "json" and model.step_down() is None


def test_a_400_naming_the_tools_field_steps_down_and_the_same_call_goes_on() -> None:
    provider = FakeProvider(
        [
            openai_error(400, "invalid_request_error", "this model does not support tools"),
            openai_text('{"file": "a.py", "n": 1}'),
        ]
    )
    with serve(provider) as url:
        model = OpenAIModel(api_key="k", base_url=url + "/v1", retry=FAST)
        response = model.complete(REQUEST)
    assert response.tool_input == {"file": "a.py", "n": 1} and model.structured == "json-schema"
    assert "tools" in provider.requests[0].body and "response_format" in provider.requests[1].body
    assert "HTTP 400 for the tools mode" in response.retries[0].reason


def test_a_400_about_something_else_is_not_a_mode_problem() -> None:
    provider = FakeProvider([openai_error(400, "invalid_request_error", "max_tokens is too large")])
    with serve(provider) as url:
        model = OpenAIModel(api_key="k", base_url=url + "/v1", retry=FAST)
        with pytest.raises(ModelError, match="too large"):
            model.complete(REQUEST)
    assert model.structured == "tools" and len(provider.requests) == 1


# -- a single-slot server that never answers in time ---------------------------------------------------------
class StallingServer:
    """Answers nothing; records when each request arrived and when its client closed the connection (the
    signal llama.cpp's server cancels an abandoned request on)."""

    def __init__(self) -> None:
        self.arrived: list[float] = []
        self.closed: list[float] = []
        self.lock = threading.Lock()


@contextmanager
def stalling(server_state: StallingServer, hold: float = 20.0) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            with server_state.lock:
                server_state.arrived.append(time.monotonic())
            deadline = time.monotonic() + hold
            while time.monotonic() < deadline:
                readable, _, _ = select.select([self.connection], [], [], 0.02)
                if readable and self.connection.recv(1, socket.MSG_PEEK) == b"":
                    with server_state.lock:
                        server_state.closed.append(time.monotonic())
                    return
            self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            return None

    with serving(Handler) as url:
        yield url


@pytest.mark.parametrize("make", ["openai", "anthropic"])
def test_a_timed_out_request_is_abandoned_before_its_one_retry(make: str) -> None:
    state = StallingServer()
    with stalling(state) as url:
        model: Any = (
            OpenAIModel(api_key="k", base_url=url + "/v1", timeout=0.5, retry=FAST, structured="json")
            if make == "openai"
            else AnthropicModel(api_key="k", base_url=url, timeout=0.5, retry=FAST, structured="json")
        )
        with pytest.raises(ModelError, match="timed out") as caught:
            model.complete(REQUEST)
        time.sleep(0.2)  # the server thread notices the second close
    assert caught.value.timed_out
    # One retry, not max_retries: the same prompt on a stuck server mostly times out again.
    assert len(state.arrived) == 2 and [note.reason for note in caught.value.retries] == ["a timeout"]
    # The first connection was closed (the server could cancel that request) before the retry arrived.
    assert state.closed and state.closed[0] <= state.arrived[1]


def test_no_retry_starts_after_the_calls_deadline() -> None:
    state = StallingServer()
    with stalling(state) as url:
        model = OpenAIModel(api_key="k", base_url=url + "/v1", timeout=5.0, retry=FAST, structured="json")
        request = ModelRequest(REQUEST.system, REQUEST.context, REQUEST.messages, REQUEST.tools, "answer", 64, 0.4)
        with pytest.raises(ModelError, match="timed out"):
            model.complete(request)  # the request's own 0.4 s, not the adapter's 5 s
    assert len(state.arrived) == 1
