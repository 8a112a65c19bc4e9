"""Local HTTP servers that speak the Anthropic Messages and OpenAI Chat Completions wire formats.

The real SDK clients are pointed at them through ``base_url``. Replies are scripted and stateful: a queue
(optionally one per forced tool, so the Detective, QA and Patcher roles each get their own script), and every
request is recorded for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON, str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def tool(self) -> str | None:
        """The tool the request forces (Anthropic or OpenAI shape)."""
        choice = self.body.get("tool_choice")
        if isinstance(choice, dict):
            return choice.get("name") or (choice.get("function") or {}).get("name")
        return None

    def prompt_text(self) -> str:
        """Every prompt part of the request as one string (system, context, messages)."""
        parts: list[str] = []
        system = self.body.get("system")
        if isinstance(system, list):
            parts += [block.get("text", "") for block in system]
        elif isinstance(system, str):
            parts.append(system)
        for message in self.body.get("messages", []):
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [block.get("text", "") for block in content if isinstance(block, dict)]
        return "\n".join(parts)


Script = Iterable[Reply | Callable[[Recorded], Reply]]


LISTED_MODELS = ("claude-sonnet-4-6", "gpt-5-mini", "llama3.1:8b")


class FakeProvider:
    """Replies from ``script`` in order; with ``by_tool``, from the queue of the tool the request forces.

    ``GET /v1/models`` (the preflight) answers ``models_reply`` if given, else a listing of ``models`` in the
    wire format of the path's API (Anthropic's when the request carries ``x-api-key``, else OpenAI's);
    ``GET /v1/models/NAME`` answers 404 unless NAME is listed. GETs are recorded in ``gets``, apart from the
    POSTs in ``requests``."""

    def __init__(
        self,
        script: Script = (),
        by_tool: dict[str, Script] | None = None,
        *,
        models: tuple[str, ...] = LISTED_MODELS,
        models_reply: Reply | None = None,
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.queue: deque[Reply | Callable[[Recorded], Reply]] = deque(script)
        self.by_tool = {name: deque(replies) for name, replies in (by_tool or {}).items()}
        self.requests: list[Recorded] = []
        self.gets: list[Recorded] = []
        self.models = models
        self.models_reply = models_reply
        self.aliases = aliases  # retrievable by name (GET /v1/models/NAME) but not listed
        self._lock = threading.Lock()

    def get(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.gets.append(recorded)
        path = recorded.path.split("?", 1)[0].rstrip("/")
        anthropic_api = "x-api-key" in recorded.headers
        if path.endswith("/models"):
            if self.models_reply is not None:
                return self.models_reply
            if anthropic_api:
                data = [
                    {"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z"}
                    for m in self.models
                ]
                first, last = (self.models[0], self.models[-1]) if self.models else (None, None)
                return Reply(200, {"data": data, "has_more": False, "first_id": first, "last_id": last})
            data = [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "test"} for m in self.models]
            return Reply(200, {"object": "list", "data": data})
        name = path.rsplit("/", 1)[-1]
        if "/models/" in path and (name in self.models or name in self.aliases):
            if anthropic_api:
                return Reply(
                    200, {"type": "model", "id": name, "display_name": name, "created_at": "2025-01-01T00:00:00Z"}
                )
            return Reply(200, {"id": name, "object": "model", "created": 1_700_000_000, "owned_by": "test"})
        return Reply(404, {"error": {"message": "not found", "type": "not_found_error"}})

    def reply(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            queue = self.by_tool.get(recorded.tool or "", self.queue)
            if not queue:
                # A request error, not a server error: the client retries a 5xx with backoff (seconds of idle
                # waiting for every role a script leaves unanswered), and a 400 is final, as "no answer" means.
                return Reply(400, {"error": {"type": "invalid_request_error", "message": "script exhausted"}})
            item = queue.popleft()
        return item(recorded) if callable(item) else item

    def calls(self, tool: str) -> list[Recorded]:
        return [r for r in self.requests if r.tool == tool]


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded HTTP server on 127.0.0.1 with ``handler``, for the duration: its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def serve(provider: FakeProvider) -> Iterator[str]:
    """Run ``provider`` on 127.0.0.1 (a free port) in a background thread; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._send(provider.get(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, {})))

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {"_raw": raw.decode("utf-8", "replace")}
            self._send(provider.reply(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body)))

        def _send(self, reply: Reply) -> None:
            data = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
            payload = data.encode("utf-8")
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    with serving(Handler) as url:
        yield url


# -- Anthropic wire format -------------------------------------------------------------------------------
_ids = iter(range(1, 1_000_000))


def anthropic_tool_use(
    name: str,
    tool_input: dict[str, Any],
    *,
    input_tokens: int = 100,
    output_tokens: int = 20,
    cache_read: int = 0,
    cache_write: int = 0,
    model: str = "claude-sonnet-4-6",
    stop_reason: str = "tool_use",
) -> Reply:
    n = next(_ids)
    return Reply(
        200,
        {
            "id": f"msg_{n:06d}",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": f"toolu_{n:06d}", "name": name, "input": tool_input}],
            "model": model,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
            },
        },
    )


def anthropic_text(text: str, *, input_tokens: int = 100, output_tokens: int = 20) -> Reply:
    n = next(_ids)
    return Reply(
        200,
        {
            "id": f"msg_{n:06d}",
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "model": "claude-sonnet-4-6",
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        },
    )


def anthropic_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}}, headers or {})


# -- OpenAI wire format ------------------------------------------------------------------------------
def openai_tool_call(
    name: str,
    arguments: dict[str, Any] | str,
    *,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
    cached_tokens: int = 0,
    model: str = "gpt-5-mini",
    finish_reason: str = "tool_calls",
) -> Reply:
    n = next(_ids)
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return Reply(
        200,
        {
            "id": f"chatcmpl-{n:06d}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": f"call_{n:06d}",
                                "type": "function",
                                "function": {"name": name, "arguments": args},
                            }
                        ],
                    },
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached_tokens},
            },
        },
    )


def openai_text(text: str, *, prompt_tokens: int = 100, completion_tokens: int = 20) -> Reply:
    n = next(_ids)
    return Reply(
        200,
        {
            "id": f"chatcmpl-{n:06d}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": "llama3.1:8b",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        },
    )


def openai_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": None, "code": kind}}, headers or {})
