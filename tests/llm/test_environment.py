"""The environment, not the code: the Detective or the Patcher may say (some) failing tests fail because of the
environment. All of them: the heal stops ENVIRONMENT with the diagnosis, patches nothing, and the escalation
names it. Some of them: those are left out, named in the report, and the others are healed (at most medium).

Real pytest in the real sandbox; the model is a scripted Anthropic server on 127.0.0.1 reached by the real SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from selfix_action.cli import main
from selfix_action.publish.render import escalation_body, pr_body
from selfix_action.repair.report import HealReport
from tests.helpers.fake_providers import FakeProvider, anthropic_tool_use, serve
from tests.helpers.projects import write_project
from tests.helpers.tally import DETECTIVE, FIX, QA, TALLY

# One code bug (tally counts 1 for every word) and one test that needs a service nothing here runs.
PROJECT = {
    "tally.py": TALLY["tally.py"],
    "tests/test_tally.py": "import socket\n\nfrom tally import tally\n\n\ndef test_tally():\n"
    '    assert tally(["a", "a", "b"]) == {"a": 2, "b": 1}\n\n\n'
    "def test_counts_service():\n"
    '    socket.create_connection(("127.0.0.1", 9), timeout=1)\n',
}
ENVIRONMENT = "test_counts_service needs a counting service on 127.0.0.1:9 that nothing in this job starts"
HYPOTHESIS = DETECTIVE["hypotheses"][0]
EDIT = FIX["edits"][0]


def _provider(patch: dict[str, Any]) -> FakeProvider:
    """The Detective names the tally bug, QA reproduces it, the Patcher answers ``patch``."""
    return FakeProvider(
        by_tool={
            "report_hypotheses": [anthropic_tool_use("report_hypotheses", {"hypotheses": [HYPOTHESIS]})],
            "write_reproduction_test": [anthropic_tool_use("write_reproduction_test", QA)],
            "propose_edits": [anthropic_tool_use("propose_edits", patch)],
        }
    )


def _heal(tmp_path: Path, provider: FakeProvider) -> tuple[int, dict[str, Any], Path]:
    repo = write_project(tmp_path / "p", PROJECT)
    argv = ["fix", str(repo), "--engine", "anthropic", "--quiet", "--no-memory", "--test-timeout", "30"]
    with serve(provider) as url:
        code = main([*argv, "--api-key", "k", "--base-url", url])
    return code, json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8")), repo


def test_a_failure_the_detective_puts_on_the_environment_is_escalated_never_patched(tmp_path: Path) -> None:
    provider = FakeProvider(
        by_tool={"report_hypotheses": [anthropic_tool_use("report_hypotheses", {"environment_problem": ENVIRONMENT})]}
    )
    code, report, repo = _heal(tmp_path, provider)
    assert code == 1 and report["stop_reason"] == "environment_not_code"
    assert report["patch"] is None and ENVIRONMENT in report["environment_problem"]
    assert [r.tool for r in provider.requests] == ["report_hypotheses"]  # no QA, no Patcher
    assert not (repo / ".selfix" / "patch.diff").exists() and (repo / "tally.py").read_text() == PROJECT["tally.py"]
    body = escalation_body(HealReport.model_validate(report), run_url="", fp="f1")
    assert "### The environment, not the code" in body and ENVIRONMENT in body


@pytest.mark.slow
def test_tests_the_patcher_puts_on_the_environment_are_left_out_and_the_others_healed(tmp_path: Path) -> None:
    patch = {
        "explanation": "count each occurrence",
        "edits": [EDIT],
        "environment_problem": ENVIRONMENT,
        "environment_tests": ["tests/test_tally.py::test_counts_service"],
    }
    provider = _provider(patch)
    code, report, _ = _heal(tmp_path, provider)
    assert code == 0 and report["stop_reason"] == "healed"
    assert "counts.get(word, 0) + 1" in report["patch"]["diff"]
    assert report["environment_tests"] == ["tests/test_tally.py::test_counts_service"]
    assert report["f2p_tests"] == ["tests/test_tally.py::test_tally"]
    levels = {r["code"]: r["level"] for r in report["confidence"]["reasons"]}
    assert levels["environment_tests_left_out"] == "medium" and report["confidence"]["level"] != "high"
    # One Patcher call: the edit that came with the diagnosis is tried once those tests are left out (the second
    # solution's call, role patcher2, is another role).
    assert report["usage"]["by_role"]["patcher"]["calls"] == 1
    body = pr_body(HealReport.model_validate(report), run_url="", fp="f2")
    assert "still fail and were left out" in body and "test_counts_service" in body


@pytest.mark.slow
def test_naming_every_failing_test_as_the_environments_stops_the_heal(tmp_path: Path) -> None:
    patch = {
        "explanation": "nothing to change in the code",
        "edits": [],
        "environment_problem": ENVIRONMENT,
        "environment_tests": ["tests/test_tally.py::test_counts_service", "tests/test_tally.py::test_tally"],
    }
    code, report, _ = _heal(tmp_path, _provider(patch))
    assert code == 1 and report["stop_reason"] == "environment_not_code" and report["patch"] is None


@pytest.mark.slow
def test_blaming_tests_that_are_not_to_be_healed_ends_the_hypothesis_not_the_heal(tmp_path: Path) -> None:
    """The Patcher blamed the environment for a test outside the failing ones (a passing test that timed out,
    say): that is no reason to stop the heal, only this hypothesis."""
    patch = {
        "explanation": "nothing more to change",
        "edits": [],
        "environment_problem": "test_pgen was killed by the machine's load, not by the patch",
        "environment_tests": ["tests/test_tally.py::test_pgen"],
    }
    code, report, _ = _heal(tmp_path, _provider(patch))
    assert code == 1 and report["stop_reason"] == "hypotheses_exhausted"
    assert any("hypothesis 1 ended" in note and "test_pgen" in note for note in report["notes"])
