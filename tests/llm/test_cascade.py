"""``--engine auto``: the offline engine first, the LLM engine only when it did not heal, shown what it tried.

Real pytest runs in the real sandbox; the model is a scripted Anthropic server on 127.0.0.1 reached by the real
SDK client. The nine examples heal with no model call but the reviewer's (and the preflight's ``GET /v1/models``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from selfix_action.action.settings import load_settings
from selfix_action.ci.request import heal_request
from selfix_action.cli import main
from tests.helpers.fake_providers import FakeProvider, anthropic_tool_use, serve
from tests.helpers.projects import EXAMPLES, write_project
from tests.helpers.tally import DETECTIVE, FIX, QA, TALLY

# Both branches of the cascade: an example the offline engine heals at high confidence, and the two it heals
# below high (test_fix_cmd heals every example offline; these are the ones whose auto path differs or stops short).
CASCADE_EXAMPLES = ("age_check", "inventory", "two_modules")


def fix(repo: Path, url: str, *extra: str) -> int:
    argv = ["fix", str(repo), "--engine", "auto", "--api-key", "k", "--base-url", url, "--provider", "anthropic"]
    return main([*argv, "--quiet", "--no-memory", "--test-timeout", "30", *extra])


def report_of(repo: Path) -> dict[str, Any]:
    return json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))


def trace_of(repo: Path) -> list[dict[str, Any]]:
    lines = (repo / ".selfix" / "trace.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[1:]]


@pytest.mark.slow
def test_what_the_offline_engine_cannot_heal_reaches_the_llm_engine_with_its_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(tmp_path / "p", TALLY)
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [anthropic_tool_use("report_hypotheses", DETECTIVE)],
            "write_reproduction_test": [anthropic_tool_use("write_reproduction_test", QA)],
            "propose_edits": [anthropic_tool_use("propose_edits", FIX)],
        }
    )
    with serve(provider) as url:
        code = fix(repo, url)
    out = capsys.readouterr().out
    assert code == 0, out
    report = report_of(repo)
    assert report["stop_reason"] == "healed" and "counts.get(word, 0) + 1" in report["patch"]["diff"]
    assert report["patch"]["template"] == "llm"  # the LLM engine's patch, after the offline engine's share
    offline = report["usage"]["offline"]
    assert offline["handed_over"] is True
    steps = [event["step"] for event in trace_of(repo)]
    assert steps.index("engine_handover") < steps.index("model_call")
    # The Detective saw the loop's evidence (the failing test, its assertion, the ranking) and, when the offline
    # engine had candidates, each of them with how it failed.
    detective = provider.calls("report_hypotheses")[0].prompt_text()
    assert "test_tally" in detective and "assert" in detective and "tally.py:4" in detective
    if offline["candidates"]:
        assert "Already tried by selfix's offline repair templates" in detective
        assert "failed at" in detective
    assert report["usage"]["calls"] == 3 and [g.path for g in provider.gets] == ["/v1/models?limit=1000"]


@pytest.mark.slow
def test_the_offline_candidates_that_failed_are_the_negative_examples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An operator bug the templates do fix, with the offline share cut to one candidate that is not the fix:
    # the hand-over then carries that failed candidate to the model.
    repo = write_project(
        tmp_path / "q",
        {
            "calc.py": "def area(width, height):\n    return width + height\n",
            "tests/test_calc.py": "from calc import area\n\n\ndef test_area():\n    assert area(3, 4) == 12\n",
        },
    )
    detective = {
        "hypotheses": [
            {**DETECTIVE["hypotheses"][0], "file": "calc.py", "symbol": "area", "line_start": 2, "line_end": 2}
        ]
    }
    patch = {
        "explanation": "multiply",
        "edits": [{"file": "calc.py", "search": "width + height", "replace": "width * height"}],
    }
    qa = {
        "test_source": "from calc import area\n\n\ndef test_qa():\n    assert area(2, 5) == 10\n",
        "expected_failure": "AssertionError",
    }
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [anthropic_tool_use("report_hypotheses", detective)],
            "write_reproduction_test": [anthropic_tool_use("write_reproduction_test", qa)],
            "propose_edits": [anthropic_tool_use("propose_edits", patch)],
        }
    )
    with serve(provider) as url:
        code = fix(repo, url, "--offline-candidates", "1")
    assert code == 0, capsys.readouterr().out
    report = report_of(repo)
    if report["usage"]["offline"]["handed_over"]:
        prompt = provider.calls("report_hypotheses")[0].prompt_text()
        assert "Already tried by selfix's offline repair templates (1 candidate edit(s)" in prompt
        assert "- calc.py" in prompt and "failed at fail_to_pass (tests/test_calc.py::test_area)" in prompt
    else:  # the one offline candidate was the fix: no model call but the reviewer's
        assert {r.tool for r in provider.requests} <= {"review_patch"}


@pytest.mark.slow
@pytest.mark.parametrize("name", CASCADE_EXAMPLES)
def test_auto_heals_and_calls_the_model_only_below_high_confidence(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An offline patch at high confidence ends the heal with no model call but the reviewer's; below high the
    model is asked to confirm or beat it, and when the model fails (every completion here gets an error) the
    offline patch stays, unreviewed, the heal standing."""
    repo = tmp_path / name
    shutil.copytree(EXAMPLES / name, repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
    provider = FakeProvider()  # any completion asked for gets an error ("script exhausted")
    with serve(provider) as url:
        code = fix(repo, url)
    assert code == 0, capsys.readouterr().out
    report = report_of(repo)
    assert report["stop_reason"] == "healed" and report["patch"]["template"] != "llm"
    steps = [event["step"] for event in trace_of(repo)]
    if report["confidence"]["level"] == "high":
        assert report["usage"]["calls"] == 0 and report["usage"]["offline"]["handed_over"] is False
        assert {r.tool for r in provider.requests} == {"review_patch"} and len(provider.gets) == 1
        assert "incumbent" not in steps and report["review"] is None
        assert any(note.startswith("no review: ") for note in report["notes"])
    else:
        assert report["usage"]["offline"]["handed_over"] is True and provider.requests
        assert "incumbent" in steps and "model_error" in steps
        assert any("script exhausted" in note for note in report["notes"]), report["notes"]


def test_the_action_defaults_to_auto_when_a_key_is_given(tmp_path: Path) -> None:
    env = {"GITHUB_WORKSPACE": str(tmp_path), "INPUT_ANTHROPIC_API_KEY": "sk-ant-x", "INPUT_REQUEST_TIMEOUT": "45"}
    settings = load_settings(env)
    assert settings.engine == "auto" and settings.request_timeout == 45.0 and settings.structured == "auto"
    choice = heal_request(settings, env, (), "").engine
    assert (choice.kind, choice.provider, choice.request_timeout) == ("auto", "anthropic", 45.0)
    assert choice.api_key == "sk-ant-x" and "anthropic_api_key input" in choice.fixes["api_key"]
    assert load_settings({"GITHUB_WORKSPACE": str(tmp_path)}).engine == "offline"


INVENTORY_DETECTIVE = {
    "hypotheses": [
        {
            "title": "the restock threshold is one too low",
            "confidence": 0.9,
            "file": "inventory.py",
            "symbol": "RESTOCK_THRESHOLD",
            "line_start": 4,
            "line_end": 4,
            "reasoning": "items with 5 units must be restocked; the docstring says 5 or fewer",
            "proposed_fix": "RESTOCK_THRESHOLD = 5",
        }
    ]
}
INVENTORY_QA = {
    "test_source": "from inventory import Inventory\n\n\ndef test_qa():\n    inv = Inventory()\n"
    '    inv.add("x", 5)\n    assert inv.needs_restock("x") is True\n',
    "expected_failure": "AssertionError",
}


def _inventory_fix(replace: str) -> dict[str, Any]:
    edit = {"file": "inventory.py", "search": "RESTOCK_THRESHOLD = 4", "replace": replace}
    return {"explanation": "restock at five units", "edits": [edit]}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("replace", "winner"),
    [("RESTOCK_THRESHOLD = 5", "offline"), ("RESTOCK_THRESHOLD = 6 - 1", "llm")],
)
def test_an_offline_patch_below_high_is_shown_to_the_llm_engine_to_confirm_or_beat(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], replace: str, winner: str
) -> None:
    """inventory heals offline at medium: the heal does not end there. The Detective sees the offline patch;
    the same edit again is the offline patch confirmed (kept), a different one verified at a higher confidence
    wins."""
    repo = tmp_path / "inventory"
    shutil.copytree(EXAMPLES / "inventory", repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
    provider = FakeProvider(
        by_tool={
            "report_hypotheses": [anthropic_tool_use("report_hypotheses", INVENTORY_DETECTIVE)],
            "write_reproduction_test": [anthropic_tool_use("write_reproduction_test", INVENTORY_QA)],
            "propose_edits": [anthropic_tool_use("propose_edits", _inventory_fix(replace))] * 3,
        }
    )
    with serve(provider) as url:
        code = fix(repo, url)
    assert code == 0, capsys.readouterr().out
    report = report_of(repo)
    steps = [event["step"] for event in trace_of(repo)]
    assert "incumbent" in steps and report["usage"]["offline"]["handed_over"] is True
    detective = provider.requests[0].prompt_text()
    assert "A patch selfix's offline templates found" in detective and "+RESTOCK_THRESHOLD = 5" in detective
    if winner == "offline":
        assert report["patch"]["template"] != "llm" and report["confidence"]["level"] == "medium"
    else:
        assert report["patch"]["template"] == "llm" and report["confidence"]["level"] == "high"
        assert "6 - 1" in report["patch"]["diff"]
