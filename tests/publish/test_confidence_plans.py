"""What a verified patch's confidence lets selfix do with it (``plan_fix`` against ``pr_confidence``): every
level in every mode, as pure plans; the forges carrying them out are tested in tests/action and tests/gitlab_ci."""

from __future__ import annotations

import pytest

from selfix_action.ci.settings import OptionSettings
from selfix_action.publish.bar import Treatment, evidence_against, treatment
from selfix_action.publish.policy import Action, PublishPlan, Target, plan_escalation, plan_fix
from selfix_action.publish.values import PullInfo
from selfix_action.repair.patches import unified_diff
from selfix_action.repair.report import (
    STOP_EXPLANATIONS,
    Confidence,
    ConfidenceReason,
    HealReport,
    PatchRecord,
    StopReason,
)

ORIGINAL = "def limit():\n    return 9\n"
FIXED = "def limit():\n    return 10\n"
F2P = "tests/test_calc.py::test_limit"
FOR = ConfidenceReason(code="localized", level="high", text="the edit is in the top-ranked function")
CAP = ConfidenceReason(code="unconfirmed", level="medium", text="no reproduction test confirmed the hypothesis")
LOWER = ConfidenceReason(code="pattern:guard_deleted", level="low", text="the patch deletes a guard")
CONFIDENCES = {
    "high": Confidence(level="high", reasons=(FOR,)),
    "medium": Confidence(level="medium", reasons=(FOR, CAP)),
    "low": Confidence(level="low", reasons=(FOR, CAP, LOWER)),
}
PULL = PullInfo(7, "https://github.test/o/r/pull/7", "open", "t", "", "feature", "a" * 40, "o/r", "main")


def report(level: str | None) -> HealReport:
    diff = unified_diff({"calc.py": ORIGINAL}, {"calc.py": FIXED})
    patch = PatchRecord(
        candidate_id="H1-C1",
        hypothesis_id="H1",
        template="constant",
        description="line 2: replace `9` with `10`",
        files=("calc.py",),
        diff=diff,
        changed_lines=1,
        minimized_from_hunks=1,
        hunks=1,
    )
    return HealReport(
        repo="o/r",
        engine="offline",
        stop_reason=StopReason.HEALED,
        explanation=STOP_EXPLANATIONS[StopReason.HEALED],
        exit_code=0,
        f2p_tests=(F2P,),
        patch=patch,
        tests_before={F2P: "failed"},
        tests_after={F2P: "passed"},
        confidence=CONFIDENCES[level] if level is not None else None,
    )


def plan(
    level: str | None, mode: str = "pr", *, bar: str = "high", pull: bool = False, **options: object
) -> PublishPlan:
    settings = OptionSettings.model_validate({"mode": mode, "pr_confidence": bar, **options})
    target = Target("b" * 40, "feature", PULL if pull else None, fork=False, default_branch="main")
    return plan_fix(settings, target, report(level), "fp123", tracked_files={"calc.py"}, can_publish=True)


def test_the_levels_against_each_bar() -> None:
    expected = {
        ("high", "high"): Treatment.READY,
        ("medium", "high"): Treatment.DRAFT,
        ("low", "high"): Treatment.HELD_BACK,
        ("medium", "medium"): Treatment.READY,
        ("low", "medium"): Treatment.DRAFT,
        ("low", "low"): Treatment.READY,
        ("high", "low"): Treatment.READY,
    }
    for (level, bar), treated in expected.items():
        assert treatment(level, bar) is treated, (level, bar)
    assert treatment("not assessed", "high") is Treatment.READY  # an older bundle: published as before, saying so


def test_evidence_against_is_the_reasons_below_high_lowest_first() -> None:
    assert evidence_against(report("high")) == ()
    assert evidence_against(report("low")) == (LOWER, CAP)
    assert evidence_against(report(None)) == ()


# -- high: the mode's own action ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "pull", "action"),
    [
        ("pr", False, Action.OPEN_PR),
        ("commit", True, Action.COMMIT),
        ("suggest", True, Action.SUGGEST),
        ("report", True, Action.REPORT),
        ("commit", False, Action.OPEN_PR),  # commit and suggest need a pull request
    ],
)
def test_high_does_what_the_mode_says(mode: str, pull: bool, action: Action) -> None:
    made = plan("high", mode, pull=pull)
    assert made.action is action and not made.draft
    assert made.body.startswith("## selfix: verified fix") or action in (Action.COMMIT, Action.SUGGEST)
    assert "Evidence against" not in made.body + made.fallback_body
    assert made.decision.startswith("high confidence: ") and made.decision.endswith("(pr_confidence=high)")


def test_high_opens_a_ready_pr_and_says_so() -> None:
    made = plan("high")
    assert (made.kind, made.decision) == ("pr", "high confidence: ready PR (pr_confidence=high)")


def test_the_draft_option_still_makes_every_pr_a_draft() -> None:
    made = plan("high", draft=True)
    assert (made.kind, made.decision) == ("draft_pr", "high confidence: draft PR (draft=true)")


# -- medium: a draft PR or suggestions, led by the evidence against ------------------------------------------------
def test_medium_opens_a_draft_pr_whose_body_leads_with_the_evidence_against() -> None:
    made = plan("medium")
    assert made.action is Action.OPEN_PR and made.draft and made.kind == "draft_pr"
    assert made.decision == "medium confidence: draft PR (pr_confidence=high)"
    lines = made.body.splitlines()
    assert lines[0] == "## selfix: a patch that passes, with medium confidence"
    assert lines[2].startswith("**Evidence against this patch**")
    assert lines[4] == f"- {CAP.text} (caps it at medium)"
    # the evidence comes before everything else the body says (the full confidence, the root cause, the diff)
    assert made.body.index(CAP.text) < made.body.index("Patch confidence: **medium**") < made.body.index("**Patch:**")
    assert made.title.startswith("selfix (medium confidence): fix ")


def test_medium_in_suggest_mode_is_review_suggestions_led_by_the_evidence() -> None:
    made = plan("medium", "suggest", pull=True)
    assert made.action is Action.SUGGEST and made.suggestions
    assert made.decision == "medium confidence: review suggestions (pr_confidence=high)"
    assert made.fallback_body.splitlines()[2].startswith("**Evidence against this patch**")


def test_medium_in_commit_mode_is_suggestions_never_a_push_onto_the_branch() -> None:
    made = plan("medium", "commit", pull=True)
    assert made.action is Action.SUGGEST and made.suggestions
    assert made.decision == "medium confidence: review suggestions, not pushed onto the branch (pr_confidence=high)"


def test_medium_in_report_mode_is_the_comment_led_by_the_evidence() -> None:
    made = plan("medium", "report", pull=True)
    assert made.action is Action.REPORT and made.body.splitlines()[2].startswith("**Evidence against this patch**")


def test_medium_without_a_pull_request_in_commit_mode_is_a_draft_pr() -> None:
    made = plan("medium", "commit")
    assert made.action is Action.OPEN_PR and made.draft
    assert made.notes == ("commit mode needs a pull request; opening a fix PR instead",)
    assert made.decision == "medium confidence: draft PR (pr_confidence=high)"


# -- low: one escalation carrying the patch, nothing pushed ---------------------------------------------------------
@pytest.mark.parametrize("mode", ["pr", "commit", "suggest", "report"])
@pytest.mark.parametrize("pull", [True, False])
def test_low_is_one_escalation_with_the_patch_attached(mode: str, pull: bool) -> None:
    made = plan("low", mode, pull=pull)
    assert made.action is Action.ESCALATE and made.kind == "escalate"
    assert not made.suggestions and not made.commit_message and not made.draft
    assert (
        made.decision == "low confidence: one escalation with the patch attached, nothing pushed (pr_confidence=high)"
    )
    body = made.body
    assert body.startswith("## selfix: a patch that passes, held back at low confidence")
    # the evidence against first, then the failure and the patch, collapsed
    assert body.index(LOWER.text) < body.index(CAP.text) < body.index("### What failed") < body.index("<details>")
    assert "<details><summary>The verified patch (diff)</summary>" in body
    assert "```diff\n" in body and "+    return 10" in body and body.index("<details>") < body.index("+    return 10")
    assert body.index("+    return 10") < body.index("</details>")
    # the same fingerprint as the escalation of the same failure: one comment or issue, edited by later runs
    assert "Failure fingerprint `fp123`" in body
    if pull:
        assert made.title == "" and "/selfix retry" in body
    else:
        assert made.title == "selfix: a low-confidence patch for test_limit on feature, not pushed"
        assert "edits this issue" in body


def test_an_escalation_of_the_same_failure_lands_where_the_held_back_patch_did() -> None:
    """Same action, fingerprint and (without a pull request) the issue the publisher finds by the fingerprint."""
    settings = OptionSettings()
    target = Target("b" * 40, "feature", None, fork=False, default_branch="main")
    not_healed = plan_escalation(settings, report(None), "fp123", target, explain=False)
    held = plan("low")
    assert (held.action, held.fingerprint) == (not_healed.action, not_healed.fingerprint)


# -- the bar moves ----------------------------------------------------------------------------------------------
def test_a_lower_bar_opens_ready_prs_lower() -> None:
    assert plan("medium", bar="medium").kind == "pr"
    low = plan("low", bar="medium")
    assert low.kind == "draft_pr" and low.decision == "low confidence: draft PR (pr_confidence=medium)"
    assert low.body.splitlines()[4] == f"- {LOWER.text} (lowers it to low)"
    assert plan("low", bar="low").kind == "pr"
    assert plan("low", "commit", bar="low", pull=True).action is Action.COMMIT


def test_no_token_publishes_nothing_and_says_what_it_would_have_done() -> None:
    settings = OptionSettings()
    target = Target("b" * 40, "feature", None, fork=False, default_branch="main")
    made = plan_fix(settings, target, report("low"), "fp", tracked_files={"calc.py"}, can_publish=False)
    assert made.action is Action.NOTHING
    assert made.decision.endswith("nothing pushed (pr_confidence=high); not published: no github_token")


def test_a_gitlab_plan_says_merge_request() -> None:
    settings = OptionSettings()
    target = Target("b" * 40, "feature", None, fork=False, default_branch="main")
    made = plan_fix(settings, target, report("medium"), "fp", tracked_files={"calc.py"}, can_publish=True, change="MR")
    assert made.decision == "medium confidence: draft MR (pr_confidence=high)"


def test_an_unassessed_patch_opens_a_ready_pr_as_before_and_says_why() -> None:
    made = plan(None)
    assert made.kind == "pr"
    assert made.decision == (
        "confidence not assessed: ready PR (an older report without a confidence: treated as at the bar)"
    )


def test_a_mode_given_as_a_rule_is_held_to_the_bar_too() -> None:
    rule = {"paths": ["calc.py"], "mode": "commit"}
    made = plan("medium", "pr", pull=True, rules=[rule])
    assert made.action is Action.SUGGEST and "not pushed onto the branch" in made.decision
