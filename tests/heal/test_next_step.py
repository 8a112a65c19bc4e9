"""What to try next after a heal that did not end in a fix: one decision (``heal.next_step``), specific to why the
heal stopped, in the spelling of the front end that ran; the console, report.md, the job summary and the
escalation comment all show it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from selfix_action.ci.request import ACTION_OPTIONS
from selfix_action.cli import main
from selfix_action.errors import ExitCode
from selfix_action.gitlab_ci.settings import GITLAB_OPTIONS_ADVICE
from selfix_action.heal.next_step import next_step
from selfix_action.heal.request import HealRequest
from selfix_action.publish.render import escalation_body, job_summary
from selfix_action.repair.loop import LoopConfig
from selfix_action.repair.report import STOP_EXPLANATIONS, HealReport, StopReason, render_markdown
from selfix_action.sandbox.process import Limits
from tests.helpers.projects import write_project
from tests.helpers.tally import TALLY

CLI = HealRequest(
    repo=Path("."),
    test_cmd=("python", "-m", "pytest"),
    out_dir=Path(".selfix"),
    loop=LoopConfig(max_hypotheses=3, max_candidates=500, time_limit_seconds=900),
    limits=Limits(wall_seconds=120),
)
ACTION = HealRequest(
    repo=Path("."),
    test_cmd=("python", "-m", "pytest"),
    out_dir=Path(".selfix/report"),
    loop=LoopConfig(time_limit_seconds=900),
    option_names=ACTION_OPTIONS,
)


def report(reason: StopReason, engine: str = "offline", **fields: Any) -> HealReport:
    return HealReport(
        repo=".",
        engine=engine,
        stop_reason=reason,
        explanation=STOP_EXPLANATIONS[reason],
        exit_code=int(reason.exit_code),
        **fields,
    )


LLM_USAGE = {"calls": 40, "tokens": 52_000, "cost_usd": 0.31, "limits": {"max_calls": 40, "max_tokens": 400_000}}


@pytest.mark.parametrize(
    ("outcome", "cli", "action"),
    [
        # the offline engine exhausted: the LLM engine, with the exact flags (a hosted key or a local server)
        (
            report(StopReason.HYPOTHESES_EXHAUSTED),
            ["`selfix fix --engine auto` with ANTHROPIC_API_KEY", "--base-url http://127.0.0.1:11434/v1"],
            ["`engine: auto` with the `anthropic_api_key`", "`openai_base_url`", "`price_per_mtok_in: 0`"],
        ),
        (
            report(StopReason.REPEATED_EDIT),
            ["--engine auto"],
            ["`engine: auto`"],
        ),
        # the LLM engine exhausted its hypotheses: more room for it, never "try the LLM engine"
        (
            report(StopReason.HYPOTHESES_EXHAUSTED, engine="anthropic:claude-sonnet-4-6"),
            ["`--hypotheses 5`", "`--samples 2`", "`--hint"],
            ["`max_attempts: 5`", "/selfix fix <notes>"],
        ),
        (
            report(StopReason.CANDIDATE_BUDGET),
            ["`--max-candidates 1000`", "--engine auto"],
            ["`engine: auto`"],
        ),
        (report(StopReason.TIME_LIMIT), ["`--time-limit 1800`", "900 s this run"], ["`timeout_minutes: 30`"]),
        (
            report(StopReason.VERIFIED_UNCONFIRMED),
            ["Review patch.diff", "`--time-limit 1800`"],
            ["Review patch.diff", "`timeout_minutes: 30`"],
        ),
        # the engine's budget: the cap that was reached, by name
        (
            report(StopReason.BUDGET_EXHAUSTED, engine="openai:gpt-5-mini", usage=LLM_USAGE),
            ["call cap (40) was reached", "`--max-calls 80`"],
            ["call cap (40) was reached"],
        ),
        (
            report(
                StopReason.BUDGET_EXHAUSTED,
                engine="openai:gpt-5-mini",
                usage={"calls": 9, "tokens": 9000, "cost_usd": 2.01, "limits": {"max_cost_usd": 2.0}},
            ),
            ["dollar cap (2) was reached", "`--max-cost 4`"],
            ["dollar cap (2) was reached", "`max_cost_usd: 4`"],
        ),
        (
            report(StopReason.ENVIRONMENT, engine="anthropic:claude-sonnet-4-6"),
            ["Fix the environment", "`--test-cmd`"],
            ["Fix the environment", "`setup_command`"],
        ),
        (
            report(StopReason.SANDBOX_ERROR),
            ["`python -m pytest`", "`--test-timeout 240`", "`--isolation none`"],
            ["the `test_command` input", "`isolation: none`"],
        ),
        (
            report(StopReason.ONLY_SANDBOX_FAILURES),
            ["withholds", "`--isolation none`"],
            ["`setup_command`", "`isolation: none`"],
        ),
        (report(StopReason.NOT_REPRODUCIBLE), ["flaky"], ["flaky"]),
        (
            report(StopReason.NO_SUSPECTS),
            ["pip install -e .", "`--working-directory"],
            ["pip install -e .", "`working_directory:"],
        ),
        (report(StopReason.MODEL_ERROR, engine="openai:gpt-5-mini"), ["`--base-url`", "`--model`"], ["`model`"]),
        (
            report(
                StopReason.REPORT_MISMATCH,
                junit_missing=("tests/test_a.py::test_gone",),
                seen_failures=("tests/test_b.py::test_here",),
            ),
            ["`--junit`", "`--heal-seen-failures`", "a subfolder", "`--working-directory"],
            ["`junit_paths`", "`working_directory:"],
        ),
        # auto whose LLM engine could not be set up: fix that first, whatever the offline engine's stop
        (
            report(StopReason.HYPOTHESES_EXHAUSTED, llm_problem="the openai engine could not be used: HTTP 401"),
            ["Fix the LLM engine's setup", "HTTP 401"],
            ["Fix the LLM engine's setup", "`openai_base_url`", "HTTP 401"],
        ),
    ],
    ids=lambda value: value.stop_reason.value if isinstance(value, HealReport) else "",
)
def test_the_next_step_is_specific_to_the_stop_and_spelled_for_the_front_end(
    outcome: HealReport, cli: list[str], action: list[str]
) -> None:
    for request, expected, foreign in ((CLI, cli, "`engine: auto`"), (ACTION, action, "`--")):
        advice = next_step(outcome, request)
        assert all(part in advice for part in expected), advice
        assert foreign not in advice, advice  # each front end names its own settings only


def test_the_llm_engine_is_never_suggested_after_the_llm_engine() -> None:
    for reason in (StopReason.HYPOTHESES_EXHAUSTED, StopReason.CANDIDATE_BUDGET, StopReason.REPEATED_EDIT):
        advice = next_step(report(reason, engine="auto (offline, then anthropic:claude-sonnet-4-6)"), CLI)
        assert "--engine auto" not in advice, advice


def test_the_gitlab_job_is_told_its_variables_never_the_actions_inputs() -> None:
    gitlab = dataclasses.replace(ACTION, option_names=GITLAB_OPTIONS_ADVICE)
    for reason in (StopReason.NO_SUSPECTS, StopReason.REPORT_MISMATCH, StopReason.HYPOTHESES_EXHAUSTED):
        advice = next_step(report(reason), gitlab)
        assert "SELFIX_" in advice and " input" not in advice and "/selfix" not in advice, advice


def test_a_heal_that_ran_in_a_subfolder_is_not_told_to_name_one() -> None:
    for reason in (StopReason.NO_SUSPECTS, StopReason.REPORT_MISMATCH):
        assert "subfolder" not in next_step(report(reason, project_folder="backend"), CLI)


def test_no_next_step_when_healed_or_nothing_to_heal() -> None:
    assert next_step(report(StopReason.HEALED), CLI) == ""
    assert next_step(report(StopReason.NO_FAILING_TESTS), CLI) == ""


@pytest.mark.slow
def test_an_offline_heal_that_fails_suggests_the_llm_engine_everywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = write_project(tmp_path / "p", TALLY)  # no repair template fixes it

    code = main(["fix", str(repo), "--quiet", "--no-memory"])

    out = capsys.readouterr().out
    assert code == ExitCode.NOT_HEALED, out
    last = out.splitlines()[-1]
    assert last.startswith("selfix: next step: The offline engine's repair templates found no fix.")
    assert "`selfix fix --engine auto` with ANTHROPIC_API_KEY" in last
    data = json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))
    assert data["next_step"] == last.removeprefix("selfix: next step: ")
    head = (repo / ".selfix" / "report.md").read_text(encoding="utf-8").splitlines()[:8]
    assert f"**Next step:** {data['next_step']}" in head
    # The action's renderers show the same decision (here in the CLI's spelling: the request was the CLI's).
    healed = HealReport.model_validate(data)
    assert f"**Next step:** {data['next_step']}" in job_summary("not_healed", healed, render_markdown(healed))
    assert f"**Next step:** {data['next_step']}" in escalation_body(healed, run_url="", fp="f")
