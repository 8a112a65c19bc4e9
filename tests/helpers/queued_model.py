"""A scripted ``ChatModel``: answers each tool from its own queue and records every request (the LLM engine's
unit tests, where the requests themselves are what is checked)."""

from __future__ import annotations

import json
from typing import Any

from selfix_action.providers.base import ModelRequest, ModelResponse, TokenUsage


class QueuedModel:
    provider = "scripted"
    model = "scripted"

    def __init__(
        self, answers: dict[str, list[dict[str, Any]]], *, structured: str = "tools", usage: tuple[int, int] = (300, 40)
    ) -> None:
        self.answers = answers
        self.structured = structured
        self.usage = TokenUsage(*usage)
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        answer = self.answers[request.tool].pop(0)
        return ModelResponse(json.dumps(answer), request.tool, answer, self.usage, "scripted")

    def prompts(self, tool: str) -> list[tuple[str, str]]:
        """(context, messages) of each request for ``tool``."""
        return [(r.context, "\n".join(m.content for m in r.messages)) for r in self.requests if r.tool == tool]

    def text(self, tool: str) -> list[str]:
        """Each request for ``tool`` as one text: its context, then its messages."""
        return [context + messages for context, messages in self.prompts(tool)]
