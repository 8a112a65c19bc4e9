"""Stop reasons: each has an explanation, and only a heal confirmed on the whole suite exits 0."""

from __future__ import annotations

from selfix_action.errors import ExitCode
from selfix_action.repair.report import (
    STOP_EXPLANATIONS,
    Confidence,
    ConfidenceReason,
    HealReport,
    HypothesisRecord,
    PatchRecord,
    StopReason,
    render_markdown,
)
from selfix_action.repair.values import Hypothesis


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


def _healed_report(reasons: int) -> HealReport:
    levels = ["medium", "high", "high", "high", "high"][:reasons]
    hypothesis = Hypothesis(id="H1", rank=1, title="off by one", confidence=0.5, file="calc.py", symbol="f", lines=(2,))
    return HealReport(
        repo=".",
        engine="offline",
        stop_reason=StopReason.HEALED,
        explanation=STOP_EXPLANATIONS[StopReason.HEALED],
        exit_code=0,
        patch=PatchRecord(
            candidate_id="H1-C4",
            hypothesis_id="H1",
            template="off_by_one",
            description="line 2: replace `n` with `n + 1`",
            files=("calc.py",),
            diff="--- a/calc.py\n+++ b/calc.py\n@@ -2 +2 @@\n-    return n\n+    return n + 1\n",
            changed_lines=1,
            minimized_from_hunks=1,
            hunks=1,
        ),
        confidence=Confidence(
            level="medium",
            reasons=tuple(ConfidenceReason(code=f"r{i}", level=lv, text=f"reason {i}") for i, lv in enumerate(levels)),
        ),
        verification="confirmed on the whole suite",
        hypotheses=(
            HypothesisRecord(hypothesis=hypothesis, exposed=True, exposure="F2P", candidates_tried=4, outcome="healed"),
        ),
        candidates_tried=4,
        test_runs=7,
    )


def test_the_first_screen_is_the_outcome_the_confidence_and_the_patch() -> None:
    """report.md opens with the outcome, the confidence with its top reasons and the diff; details after."""
    markdown = render_markdown(_healed_report(5))
    head, details = markdown.split("\n## Details\n", 1)
    outcome = head.index("- Outcome: `healed` (exit 0)")
    confidence = head.index("- Confidence: **medium**")
    top = [head.index(f"  - reason {i} (") for i in range(3)]
    diff = head.index("```diff\n--- a/calc.py")
    assert outcome < confidence < top[0] < top[1] < top[2] < diff
    assert "  - reason 0 (caps it at medium)" in head
    assert "reason 3" not in head and '2 more under "The patch" below' in head
    assert "- Patch `H1-C4`: line 2: replace `n` with `n + 1`, in `calc.py`" in head
    assert "+    return n + 1" in head and "+    return n + 1" not in details  # the diff once, at the top
    assert "- Repository:" not in head and "## Hypotheses" not in head
    patch_section = details.split("## The patch", 1)[1]
    assert all(f"- reason {i} (" in patch_section for i in range(5))  # every reason, with the patch's record


def test_the_first_screen_without_a_patch_says_there_is_none() -> None:
    report = _healed_report(1).model_copy(
        update={
            "stop_reason": StopReason.HYPOTHESES_EXHAUSTED,
            "explanation": STOP_EXPLANATIONS[StopReason.HYPOTHESES_EXHAUSTED],
            "exit_code": 1,
            "patch": None,
            "confidence": None,
        }
    )
    head = render_markdown(report).split("\n## Details\n", 1)[0]
    assert head.splitlines()[4:] == [
        "- Outcome: `hypotheses_exhausted` (exit 1)",
        "- Patch: none passed verification, so none is proposed",
    ]
