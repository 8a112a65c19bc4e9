"""A recorded-answer model: replays the model's answers of a ``trace.jsonl`` in order, no server, no key.

With it the loop's decisions on real bugs are tested without a model: the transcripts of a benchmark run (each
task's trace, ``results/<run>/transcripts/``) drive the same heal again, and a change to selfix's gates,
verification or confidence shows in what the same answers now lead to. An answer is handed back only for the
role it was recorded for (the tool the request names); when selfix asks for another role than the transcript
recorded next, or for more answers than it holds, the transcript has diverged and the call fails as a model
error with that reason, so a regression check sees it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfix_action.errors import InputError
from selfix_action.providers.base import (
    ChatModel,
    ModelError,
    ModelRequest,
    ModelResponse,
    PreflightResult,
    TokenUsage,
    parse_json_object,
)


@dataclass(frozen=True)
class RecordedAnswer:
    role: str
    tool: str
    text: str
    usage: TokenUsage
    structured: str


def read_transcript(path: Path) -> tuple[str, str, list[RecordedAnswer]]:
    """(provider, model, answers in order) of a trace's ``model_call`` events (none: a heal that never called
    the model, e.g. ``--engine auto`` healed by the offline engine); an unreadable file is bad input."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read the transcript {path}: {exc}") from exc
    answers: list[RecordedAnswer] = []
    model = ""
    provider = ""
    for line in lines:
        try:
            event: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("record") == "header":
            provider = str(event.get("engine", ""))
        if event.get("step") != "model_call":
            continue
        usage = event.get("usage") or {}
        answers.append(
            RecordedAnswer(
                role=str(event.get("role", "")),
                tool=str(event.get("tool", "")),
                text=str(event.get("response", "")),
                usage=TokenUsage(**{k: int(v) for k, v in usage.items() if k in TokenUsage.__dataclass_fields__}),
                structured=str(event.get("structured", "tools")),
            )
        )
        model = model or str(event.get("model", ""))
    return provider or "replay", model or "replay", answers


class ReplayModel:
    """``ChatModel`` over a transcript's answers: the ``n``-th call gets the ``n``-th recorded answer.

    ``then``: a live model that answers every call after the recorded ones (the roles a recording made before
    they existed: the same patches and verdicts, with the new calls answered for real)."""

    def __init__(self, path: Path, then: ChatModel | None = None) -> None:
        provider, model, self.answers = read_transcript(path)
        self.provider = f"replay({provider})" + (f", then {then.provider}" if then is not None else "")
        self.model = model
        self.structured = self.answers[0].structured if self.answers else "tools"
        self.path = path
        self.used = 0
        self.then = then

    def complete(self, request: ModelRequest) -> ModelResponse:
        if self.used >= len(self.answers) and self.then is not None:
            return self.then.complete(request)
        if self.used >= len(self.answers):
            raise ModelError(
                f"the transcript {self.path.name} has no answer left: selfix asked for a {request.tool} call "
                f"after its {len(self.answers)} recorded answers (the run diverged from the recording)"
            )
        answer = self.answers[self.used]
        if answer.tool and answer.tool != request.tool:
            raise ModelError(
                f"the transcript diverged at answer {self.used + 1}: selfix asked for {request.tool}, the "
                f"recording has {answer.tool}"
            )
        self.used += 1
        value, problem = parse_json_object(answer.text)
        return ModelResponse(
            text=answer.text,
            tool_name=request.tool if value is not None else None,
            tool_input=value,
            usage=answer.usage,
            model=self.model,
            parse_error=problem,
            structured=answer.structured,
        )

    def step_down(self) -> str | None:
        return None  # the recording already holds the answers in the mode they were given

    def preflight(self) -> PreflightResult:
        return PreflightResult(models=(self.model,), note=f"replaying {len(self.answers)} recorded answer(s)")
