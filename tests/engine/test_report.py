"""Stop reasons: each has an explanation, and only a heal confirmed on the whole suite exits 0."""

from __future__ import annotations

from selfix_action.engine.report import STOP_EXPLANATIONS, HealReport, PatchRecord, StopReason, render_markdown
from selfix_action.errors import ExitCode


def test_every_stop_reason_is_explained_and_only_a_confirmed_heal_exits_zero() -> None:
    assert set(STOP_EXPLANATIONS) == set(StopReason)
    assert [r for r in StopReason if r.exit_code is ExitCode.HEALED] == [StopReason.HEALED]
    assert StopReason.VERIFIED_UNCONFIRMED.exit_code is ExitCode.NOT_HEALED  # a patch, not proven: exit 1
    assert StopReason.SANDBOX_ERROR.exit_code is ExitCode.BAD_INPUT  # like a test command that cannot run
    assert StopReason.NOT_REPRODUCIBLE.exit_code is ExitCode.NOTHING_TO_HEAL  # flaky: only when a re-run passed


def test_the_markdown_says_what_an_unconfirmed_patch_was_checked_on() -> None:
    reason = StopReason.VERIFIED_UNCONFIRMED
    patch = PatchRecord(
        candidate_id="c1",
        hypothesis_id="H1",
        template="t",
        description="swap the operator",
        files=("calc.py",),
        diff="--- a/calc.py\n+++ b/calc.py\n",
        changed_lines=1,
        minimized_from_hunks=1,
        hunks=1,
        confirmed=False,
    )
    report = HealReport(
        repo=".",
        engine="offline",
        stop_reason=reason,
        explanation=STOP_EXPLANATIONS[reason],
        exit_code=int(reason.exit_code),
        patch=patch,
        verification="F2P and guarding P2P only; not confirmed on the whole suite: time limit",
        process_runs={"hot": 2, "warm": 0, "cold": 2},
    )
    markdown = render_markdown(report)
    assert markdown.startswith("# selfix: verified unconfirmed")
    assert "Checked: F2P and guarding P2P only; not confirmed on the whole suite: time limit." in markdown
    assert "whole-suite confirmation was one of these" not in markdown
    assert "review it before applying" in markdown
