"""``selfix fix --engine anthropic|openai`` through the CLI, against a local server speaking the provider's wire
format to the real SDK: the seed walk-through end to end, with usage in report.md and prompts in trace.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfix_action.cli import main
from tests.helpers.age_check import AGE_DETECTIVE, PATCH_RIGHT, QA_RIGHT, QA_WRONG
from tests.helpers.fake_providers import FakeProvider, anthropic_tool_use, openai_tool_call, serve
from tests.helpers.projects import copy_example

pytestmark = pytest.mark.slow


def test_anthropic_engine_heals_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = copy_example("age_check", tmp_path)
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [anthropic_tool_use("report_hypotheses", AGE_DETECTIVE, input_tokens=900)],
            "write_reproduction_test": [
                anthropic_tool_use("write_reproduction_test", QA_WRONG),
                anthropic_tool_use("write_reproduction_test", QA_RIGHT),
            ],
            "propose_edits": [anthropic_tool_use("propose_edits", PATCH_RIGHT)],
        }
    )
    with serve(provider) as url:
        code = main(
            [
                "fix",
                str(repo),
                "--quiet",
                "--engine",
                "anthropic",
                "--base-url",
                url,
                "--api-key",
                "test-key",
                "--max-retry-wait",
                "0.05",
            ]
        )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "4 model calls" in out
    report = json.loads((repo / ".selfix" / "report.json").read_text())
    assert report["engine"] == "anthropic:claude-sonnet-4-6"
    assert report["usage"]["calls"] == 4
    assert report["hypotheses"][0]["exposed"] is False
    assert "age >= ADULT_AGE" in (repo / ".selfix" / "patch.diff").read_text()
    markdown = (repo / ".selfix" / "report.md").read_text()
    assert "## Model usage" in markdown and "| detective | 1 |" in markdown
    events = [json.loads(line) for line in (repo / ".selfix" / "trace.jsonl").read_text().splitlines()]
    calls = [e for e in events if e.get("step") == "model_call"]  # line 1 is the schema header
    assert [c["role"] for c in calls] == ["detective", "qa", "qa", "patcher"]
    assert all(c["prompt"] and c["response"] for c in calls)


def test_openai_engine_that_never_heals_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = copy_example("age_check", tmp_path)
    passing_qa = {"test_source": "def test_qa():\n    assert True\n", "expected_failure": "AssertionError"}
    one = {"hypotheses": AGE_DETECTIVE["hypotheses"][:1]}
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [openai_tool_call("report_hypotheses", one)],
            "write_reproduction_test": [openai_tool_call("write_reproduction_test", passing_qa)],
        },
        models=("local-model",),  # what the preflight's GET /v1/models lists
    )
    with serve(provider) as url:
        code = main(
            [
                "fix",
                str(repo),
                "--quiet",
                "--engine",
                "openai",
                "--base-url",
                url + "/v1",
                "--api-key",
                "k",
                "--model",
                "local-model",
                "--max-cost",
                "0",  # no price for a local model: no dollar cap (the call and token caps hold)
                "--max-retry-wait",
                "0.05",
            ]
        )
    assert code == 1, capsys.readouterr().out
    report = json.loads((repo / ".selfix" / "report.json").read_text())
    assert report["stop_reason"] == "hypotheses_exhausted"
    assert report["usage"]["price_known"] is False and report["usage"]["cost_usd"] == 0
    assert not (repo / ".selfix" / "patch.diff").exists()
