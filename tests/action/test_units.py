"""Settings, event parsing, branch-name safety and rendering, without git or HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.action.events import Command, parse_command
from selfix_action.action.log import Log
from selfix_action.action.runner import ActionOutcome
from selfix_action.action.settings import load_settings
from selfix_action.errors import InputError
from selfix_action.llm.budget import Budget
from selfix_action.providers.base import TokenUsage
from selfix_action.publish.render import (
    SUMMARY_LIMIT,
    clean,
    cost_usd,
    escalation_body,
    job_summary,
    pr_body,
    suggestions_from_diff,
    summary_markdown,
    tokens,
)
from selfix_action.publish.values import Mode
from selfix_action.repair.report import (
    STOP_EXPLANATIONS,
    HealReport,
    HypothesisRecord,
    PatchRecord,
    StopReason,
    Usage,
)
from selfix_action.repair.values import Hypothesis
from tests.helpers.action import runner_inputs


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/selfix fix the cache is stale", (Command.FIX, "the cache is stale")),
        ("/selfix retry", (Command.RETRY, "")),
        ("  /selfix EXPLAIN", (Command.EXPLAIN, "")),
        ("/selfix", (Command.HELP, "")),
        ("/selfix frobnicate", (Command.HELP, "")),
        ("/selfixer fix", None),
        ("please /selfix fix", None),
    ],
)
def test_parse_command(body: str, expected: tuple[Command, str] | None) -> None:
    assert parse_command(body) == expected


def test_config_file_unknown_key_is_named(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "selfix.yml").write_text("mode: suggest\nmaxattempts: 3\n")
    with pytest.raises(InputError, match="unknown key 'maxattempts'"):
        load_settings({"GITHUB_WORKSPACE": str(tmp_path)})


def test_precedence_input_then_file_then_default(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "selfix.yml").write_text(
        "mode: suggest\nmax_attempts: 5\nrules:\n  - paths: ['src/pay/**']\n    protected: true\n"
    )
    settings = load_settings({"GITHUB_WORKSPACE": str(tmp_path), "INPUT_MAX_ATTEMPTS": "2", "INPUT_MODE": ""})
    assert (settings.mode, settings.max_attempts, settings.labels) == (Mode.SUGGEST, 2, ("selfix",))
    assert settings.rules[0].protected and settings.engine == "offline"


def test_token_is_not_printed() -> None:
    settings = load_settings({"INPUT_GITHUB_TOKEN": "ghs_secret", "GITHUB_WORKSPACE": "/nonexistent"})
    assert "ghs_secret" not in repr(settings) and "ghs_secret" not in str(settings.model_dump())


def test_untrusted_text_is_cleaned() -> None:
    text = clean("a<!-- selfix:tracking 1 -->b\u200b```c")
    assert "<!--" not in text and "\u200b" not in text and "```" not in text


def test_untrusted_log_output_cannot_run_workflow_commands(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    Log(sys.stdout).untrusted("::add-mask::x\n::set-output name=status::healed")
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("::stop-commands::") and out[-1] == f"::{out[0].split('::')[2]}::"


def test_summary_stays_under_limit() -> None:
    assert len(summary_markdown("healed", "x" * (2 * 1024 * 1024)).encode()) < SUMMARY_LIMIT


def test_suggestions_cover_replaced_lines() -> None:
    diff = "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def limit():\n-    return 9\n+    return 10\n"
    (s,) = suggestions_from_diff(diff)
    assert (s.path, s.start_line, s.line) == ("calc.py", 2, 2) and "    return 10" in s.body


def one_line_patch(candidate_id: str, description: str) -> PatchRecord:
    return PatchRecord(
        candidate_id=candidate_id,
        hypothesis_id="H1",
        template="constant",
        description=description,
        files=("calc.py",),
        diff="--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-X = 9\n+X = 10\n",
        changed_lines=1,
        minimized_from_hunks=1,
        hunks=1,
    )


def test_pr_body_says_what_was_checked_and_warns_without_isolation() -> None:
    patch = one_line_patch("H1-C1", "line 2: replace `9` with `10`")
    report = HealReport(
        repo="o/r",
        engine="offline",
        stop_reason=StopReason.HEALED,
        explanation=STOP_EXPLANATIONS[StopReason.HEALED],
        exit_code=0,
        patch=patch,
        verification="F2P, guarding P2P and the whole suite",
        isolation={"level": "none", "warnings": ["NO ISOLATION (isolation mode is 'none')"]},
    )
    body = pr_body(report, run_url="", fp="abc")
    assert "**Checked:** F2P, guarding P2P and the whole suite." in body
    assert "**WARNING: no isolation**" in body
    isolated = report.model_copy(update={"isolation": {"level": "bwrap", "mechanism": "bwrap", "uid": 65534}})
    assert "WARNING" not in pr_body(isolated, run_url="", fp="abc")
    assert "Isolation: `bwrap` (bwrap), as uid 65534" in pr_body(isolated, run_url="", fp="abc")


def test_pr_body_and_summary_count_the_rejected_candidates() -> None:
    hypothesis = Hypothesis(id="H1", rank=1, title="off by one", confidence=0.5, file="calc.py", symbol="f", lines=(2,))
    tried = HypothesisRecord(
        hypothesis=hypothesis,
        exposed=True,
        exposure="F2P",
        candidates_tried=6,
        rejections_by_stage={"fail_to_pass": 3, "pass_to_pass": 2, "static_sanity": 4},
    )
    patch = one_line_patch("H1-C6", "line 2")
    report = HealReport(
        repo="o/r",
        engine="offline",
        stop_reason=StopReason.HEALED,
        explanation="verified",
        exit_code=0,
        patch=patch,
        hypotheses=(tried,),
        candidates_tried=6,
        candidates_rejected_static=4,  # refused untested: not tried, so not rejected ones either
        test_runs=9,
        f2p_tests=("t.py::test_a",),
        tests_before={"t.py::test_a": "failed"},
        tests_after={"t.py::test_a": "passed"},
    )
    body = pr_body(report, run_url="", fp="abc")
    counts = "6 tried, 5 rejected; 4 refused untested (static sanity)"
    assert f"**Search:** candidate patches {counts}, over 1 hypothesis(es)" in body
    assert "Isolation: not reported" in body
    summary = job_summary("healed", report, "# selfix: verified\n\n**verified.**\n\n- Engine: `offline`\n")
    assert summary.startswith("# selfix: healed\n\n**Verified.**\n\n| test | before | after |")
    assert summary.count("# selfix") == 1 and summary.count("erified.**") == 1
    assert f"**Cost:** $0.0000, 0 tokens (engine `offline`). **Candidates:** {counts}; 9 test runs." in summary
    assert summary.index("| `t.py::test_a` | failed | passed |") < summary.index("<details>")
    assert summary.index("<details>") < summary.index("- Engine: `offline`")


def test_the_job_summary_shows_an_llm_heals_calls_tokens_and_where_the_time_went() -> None:
    usage = Usage(
        provider="openai",
        model="gpt-5-mini",
        calls=3,
        input_tokens=9000,
        output_tokens=700,
        cache_read_tokens=4000,
        tokens=13700,
        cost_usd=0.0375,
        model_seconds=21.5,
        price_known=True,
    )
    report = HealReport(
        repo="o/r",
        engine="openai:gpt-5-mini",
        stop_reason=StopReason.HEALED,
        explanation="verified",
        exit_code=0,
        timings={"total": 60.0, "tests": 30.25},
        usage=usage,
    )
    summary = job_summary("healed", report, "# selfix\n\n**verified.**\n")
    assert "3 model call(s), 9000 tokens in, 700 out, 4000 cached; $0.0375, 13700 tokens" in summary
    assert "time 60.0 s (model 21.5s, tests 30.2s, other 8.2s)" in summary
    unpriced = report.model_copy(update={"usage": usage.model_copy(update={"price_known": False, "cost_usd": 0.0})})
    assert "its price is not in the table, so the cost counts 0" in job_summary("healed", unpriced, "")


def test_the_summary_and_the_outputs_show_the_cost_and_tokens_a_heal_recorded() -> None:
    """What the LLM engine's budget counted, through report.json (as ``selfix publish`` reads it from a bundle),
    is what the job summary and the ``cost_usd``/``tokens`` outputs show: every kind of token, the priced cost."""
    budget = Budget(model="gpt-5-mini")
    budget.record("detective", TokenUsage(input_tokens=1000, output_tokens=300, cache_read_tokens=500))
    budget.record("patcher", TokenUsage(input_tokens=2000, output_tokens=700, cache_write_tokens=100))
    recorded = budget.usage().model_copy(update={"provider": "openai", "model": "gpt-5-mini"})
    cost = round(budget.total.cost_usd, 6)
    assert cost > 0
    written = HealReport(
        repo="o/r",
        engine="openai:gpt-5-mini",
        stop_reason=StopReason.HYPOTHESES_EXHAUSTED,
        explanation="no patch",
        exit_code=1,
        usage=recorded,
    ).model_dump_json()
    report = HealReport.model_validate_json(written)
    assert cost_usd(report) == cost and tokens(report) == 1000 + 300 + 500 + 2000 + 700 + 100
    summary = job_summary("not_healed", report, "# selfix\n")
    assert f"2 model call(s), 3000 tokens in, 1000 out, 500 cached; ${cost:.4f}, 4600 tokens" in summary
    outputs = ActionOutcome("not_healed", cost_usd=cost_usd(report), tokens=tokens(report)).outputs()
    assert outputs["cost_usd"] == f"{cost:.4f}" and outputs["tokens"] == "4600"


def test_the_default_config_file_may_be_missing_but_a_chosen_one_may_not(tmp_path: Path) -> None:
    """The runner passes every declared input with its default: INPUT_CONFIG_FILE always arrives."""
    env = {"GITHUB_WORKSPACE": str(tmp_path), **runner_inputs()}
    assert env["INPUT_CONFIG_FILE"] == ".github/selfix.yml"
    assert load_settings(env).engine == "offline"
    with pytest.raises(InputError, match="does not exist"):
        load_settings({**env, **runner_inputs(config_file="ci/selfix.yml")})


def test_an_escalation_on_a_commit_offers_no_comment_command() -> None:
    report = HealReport(
        repo="o/r",
        engine="offline",
        stop_reason=StopReason.HYPOTHESES_EXHAUSTED,
        explanation=STOP_EXPLANATIONS[StopReason.HYPOTHESES_EXHAUSTED],
        exit_code=1,
    )
    assert "/selfix retry" in escalation_body(report, run_url="", fp="abc", on_pull=True)
    on_commit = escalation_body(report, run_url="", fp="abc", on_pull=False)
    assert "/selfix" not in on_commit and "Push a change to run again." in on_commit


def test_loop_guard_settings_defaults_file_and_input(tmp_path: Path) -> None:
    env = {"GITHUB_WORKSPACE": str(tmp_path), **runner_inputs()}
    settings = load_settings(env)
    assert (settings.max_open_prs, settings.opt_out_label) == (3, "selfix:skip")
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "selfix.yml").write_text("max_open_prs: 0\nopt_out_label: no-bots\n")
    assert (load_settings(env).max_open_prs, load_settings(env).opt_out_label) == (0, "no-bots")
    both = load_settings({**env, **runner_inputs(max_open_prs="9", opt_out_label="hands-off")})
    assert (both.max_open_prs, both.opt_out_label) == (9, "hands-off")


@pytest.mark.parametrize(
    ("where", "text", "says"),
    [
        ("input", "-1", "max_open_prs"),
        ("input", "three", "max_open_prs"),
        ("file", "max_open_prs: -2\n", "max_open_prs"),
        ("file", "opt_out_label: ''\n", "opt_out_label"),
        ("file", f"opt_out_label: {'x' * 51}\n", "opt_out_label"),
    ],
)
def test_bad_loop_guard_settings_are_named(tmp_path: Path, where: str, text: str, says: str) -> None:
    env = {"GITHUB_WORKSPACE": str(tmp_path), **runner_inputs()}
    if where == "input":
        env = {**env, **runner_inputs(max_open_prs=text)}
    else:
        (tmp_path / ".github").mkdir()
        (tmp_path / ".github" / "selfix.yml").write_text(text)
    with pytest.raises(InputError, match=says):
        load_settings(env)
