"""What the fake APIs share (fake_github, fake_gitlab): a ``ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a daemon
thread, a lock for their state, and failures injected per route (a status ``times`` times, optionally after the
change was applied: the response was lost on the way)."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import SplitResult, parse_qs, urlsplit


@dataclass
class Failure:
    method: str
    pattern: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str]
    body: Any
    after_apply: bool  # apply the change, then fail (the response was lost)


class JSONHandler(BaseHTTPRequestHandler):
    """A request handler of a fake JSON API: the request read (path, last value of each query key, JSON body),
    the answer written with its length (HTTP/1.1 keeps the connection, as the real APIs do)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        return None

    def read_request(self) -> tuple[SplitResult, dict[str, str], Any]:
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        return parts, query, json.loads(raw) if raw else None

    def answer(self, status: int, headers: dict[str, str], data: Any, content_type: str) -> None:
        """``data`` as JSON (bytes as they are), with ``content_type`` unless ``headers`` names another."""
        payload = data if isinstance(data, bytes) else json.dumps(data).encode()
        self.send_response(status)
        for key, value in {"content-type": content_type, **headers}.items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class LocalServer:
    """Subclasses route requests; ``handler``'s ``fake`` attribute is this server."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.failures: list[Failure] = []
        self._lock = threading.Lock()
        bound = type("Handler", (handler,), {"fake": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), bound)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self) -> Self:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fail(
        self,
        method: str,
        path_regex: str,
        status: int = 500,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: Any = None,
        after_apply: bool = False,
    ) -> None:
        """Answer ``status`` to the next ``times`` requests of ``method`` whose path matches ``path_regex``."""
        body = body if body is not None else {"message": "Server Error"}
        self.failures.append(Failure(method, re.compile(path_regex), status, times, headers or {}, body, after_apply))

    def take_failure(self, method: str, path: str) -> Failure | None:
        """The injected failure this request gets, if any (counted down)."""
        failure = next(
            (f for f in self.failures if f.times > 0 and f.method == method and f.pattern.search(path)), None
        )
        if failure is not None:
            failure.times -= 1
        return failure
