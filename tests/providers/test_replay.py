"""The recorded-answer model: a heal recorded against a scripted server on 127.0.0.1 (the real Anthropic SDK),
then healed again from its trace alone, with no server; a transcript that no longer fits the loop's requests
fails as a model error naming where it diverged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.providers.base import ModelError, ModelRequest
from selfix_action.providers.replay import ReplayModel
from tests.helpers.fake_providers import FakeProvider, anthropic_tool_use, serve
from tests.helpers.projects import write_project
from tests.helpers.tally import DETECTIVE, FIX, QA, TALLY


def _fix(repo: Path, *extra: str) -> int:
    argv = ["fix", str(repo), "--engine", "anthropic", "--quiet", "--no-memory", "--test-timeout", "30"]
    return main([*argv, *extra])


def _report(repo: Path) -> dict:
    return json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_a_recorded_heal_replays_to_the_same_patch_without_a_server(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "p", TALLY)
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [anthropic_tool_use("report_hypotheses", DETECTIVE)],
            "write_reproduction_test": [anthropic_tool_use("write_reproduction_test", QA)],
            "propose_edits": [anthropic_tool_use("propose_edits", FIX)],
        }
    )
    with serve(provider) as url:
        assert _fix(repo, "--api-key", "k", "--base-url", url) == 0
    recorded = _report(repo)
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_bytes((repo / ".selfix" / "trace.jsonl").read_bytes())

    replayed_repo = write_project(tmp_path / "q", TALLY)
    # No key, and a base URL nothing listens on: only the transcript answers.
    code = _fix(replayed_repo, "--replay", str(transcript), "--base-url", "http://127.0.0.1:9/")
    assert code == 0
    replayed = _report(replayed_repo)
    assert replayed["patch"]["diff"] == recorded["patch"]["diff"]
    assert replayed["confidence"]["level"] == recorded["confidence"]["level"]
    assert replayed["usage"]["calls"] == recorded["usage"]["calls"] == 3
    assert replayed["engine"].startswith("replay(anthropic)")


def test_a_transcript_that_diverges_is_a_model_error(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    event = {"step": "model_call", "role": "patcher", "tool": "propose_edits", "response": json.dumps(FIX)}
    transcript.write_text(json.dumps({"record": "header", "engine": "openai"}) + "\n" + json.dumps(event) + "\n")
    model = ReplayModel(transcript)
    request = ModelRequest(system="s", context="c", messages=(), tools=(), tool="report_hypotheses")
    with pytest.raises(ModelError, match="diverged at answer 1: selfix asked for report_hypotheses"):
        model.complete(request)
    answer = model.complete(ModelRequest(system="s", context="c", messages=(), tools=(), tool="propose_edits"))
    assert answer.tool_input == FIX
    with pytest.raises(ModelError, match="no answer left"):
        model.complete(request)


def test_replay_is_refused_with_the_offline_engine_and_for_a_missing_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(tmp_path / "p", TALLY)
    assert main(["fix", str(repo), "--replay", str(tmp_path / "t.jsonl"), "--quiet"]) == 2
    assert "--replay replays an LLM engine's answers" in capsys.readouterr().err
    assert _fix(repo, "--replay", str(tmp_path / "missing.jsonl")) == 2
    assert "cannot read the transcript" in capsys.readouterr().err
    assert not (repo / ".selfix").exists()  # refused before anything was written


def test_the_calls_after_the_recorded_ones_go_to_the_model_named_next(tmp_path: Path) -> None:
    """--replay-then-server: the recorded answers first (the same patch), then the live model answers the calls a
    recording made before those roles existed (a reviewer, a second Patcher)."""
    header = json.dumps({"record": "header", "engine": "openai"})
    recorded, later = tmp_path / "recorded.jsonl", tmp_path / "later.jsonl"
    event = {"step": "model_call", "role": "patcher", "tool": "propose_edits", "response": json.dumps(FIX)}
    recorded.write_text(header + "\n" + json.dumps(event) + "\n")
    review = {"verdict": "complete", "reason": "r"}
    second = {"step": "model_call", "role": "reviewer", "tool": "review_patch", "response": json.dumps(review)}
    later.write_text(header + "\n" + json.dumps(second) + "\n")
    model = ReplayModel(recorded, then=ReplayModel(later))
    assert model.provider == "replay(openai), then replay(openai)"
    first = model.complete(ModelRequest(system="s", context="c", messages=(), tools=(), tool="propose_edits"))
    assert first.tool_input == FIX
    after = model.complete(ModelRequest(system="s", context="c", messages=(), tools=(), tool="review_patch"))
    assert after.tool_input == review
