"""The LLM engine against a real model: llama.cpp's server with SmolLM2-135M on 127.0.0.1 (tests/helpers/real_model.py),
through ``selfix fix --engine openai`` (``/v1/chat/completions``) and ``--engine anthropic`` (``/v1/messages``).

A 135M model cannot heal; what is checked is that the wiring survives a real one: the preflight, the structured
mode the server honours, per-call output caps, a clean stop, every call in the trace with its usage, the budgets
held, no traceback. Small budgets (one call, 96 output tokens) keep it to about a minute per engine on one thread.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.cli import main
from tests.helpers.projects import EXAMPLES
from tests.helpers.real_model import llama_server, unavailable_reason

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(unavailable_reason() is not None, reason=unavailable_reason() or ""),
]

MAX_CALLS = 1  # one call proves the wiring; each costs about a minute of prompt processing on one thread
MAX_OUTPUT_TOKENS = 96
# environment_not_code: a small model may say the failure is the environment's; a clean stop too (exit 1).
CLEAN_STOPS = {
    "healed",
    "hypotheses_exhausted",
    "budget_exhausted",
    "time_limit",
    "repeated_edit",
    "no_suspects",
    "environment_not_code",
}


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with llama_server() as address:
        yield address


@pytest.mark.parametrize(("engine", "suffix", "mode"), [("openai", "/v1", "json-schema"), ("anthropic", "", "json")])
def test_selfix_fix_against_a_real_model_stops_cleanly(
    engine: str, suffix: str, mode: str, server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "range_sum"
    shutil.copytree(EXAMPLES / "range_sum", repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix"))
    argv = ["fix", str(repo), "--engine", engine, "--base-url", server + suffix, "--api-key", "local"]
    argv += ["--model", "smollm2", "--max-calls", str(MAX_CALLS), "--max-output-tokens", str(MAX_OUTPUT_TOKENS)]
    argv += ["--time-limit", "400", "--request-timeout", "240", "--hypotheses", "1", "--no-memory"]
    argv += ["--price-per-mtok-in", "0", "--price-per-mtok-out", "0"]  # a local model: free, and not in the table
    code = main(argv)
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    report = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert report["stop_reason"] in CLEAN_STOPS, (report["stop_reason"], report["notes"])
    assert code == report["exit_code"] and code in (0, 1)

    usage = report["usage"]
    # The preflight saw llama.cpp's listing and chose the mode that server honours: no call spent finding out.
    assert usage["structured"] == mode and "llamacpp" in usage["preflight"]["note"]
    calls = [
        json.loads(line)
        for line in (repo / ".selfix" / "trace.jsonl").read_text(encoding="utf-8").splitlines()[1:]
        if json.loads(line)["step"] == "model_call"
    ]
    assert 1 <= len(calls) <= MAX_CALLS and usage["calls"] == len(calls)
    for call in calls:
        assert call["usage"]["input_tokens"] + call["usage"]["cache_read_tokens"] > 0, call
        assert 0 < call["usage"]["output_tokens"] <= MAX_OUTPUT_TOKENS, call
        assert call["structured"] == mode and call["seconds"] > 0
    assert usage["tokens"] == sum(sum(c["usage"].values()) for c in calls)
    assert sum(role["calls"] for role in usage["by_role"].values()) == len(calls)
