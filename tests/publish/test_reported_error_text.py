"""What a heal from a production error says where the error came from: the PR and the escalation (the texts
every forge posts), with the origin's untrusted text cleaned."""

from __future__ import annotations

from selfix_action.publish.render import escalation_body, pr_body
from selfix_action.repair.report import HealReport, PatchRecord, StopReason
from selfix_action.repair.values import ReproductionRecord

TEST = "tests/test_selfix_average_1a2b3c4d.py"
RECORD = ReproductionRecord(
    origin="https://sentry.example/issues/7/ <!-- hidden -->",
    headline="ZeroDivisionError: division by zero",
    fingerprint="1a2b3c4d5e6f7a8b",
    site="shop/cart.py:average",
    test_path=TEST,
    reproduced=True,
    attempts=(f"{TEST}::test_empty failed with ZeroDivisionError raised at shop/cart.py:average",),
)


def _report(reason: StopReason, record: ReproductionRecord, patch: PatchRecord | None = None) -> HealReport:
    return HealReport(
        repo=".",
        engine="anthropic",
        stop_reason=reason,
        explanation="x",
        exit_code=int(reason.exit_code),
        patch=patch,
        reported_error=record,
    )


def test_the_pr_says_where_the_error_came_from_and_that_it_adds_the_test() -> None:
    patch = PatchRecord(
        candidate_id="H1-C1",
        hypothesis_id="H1",
        template="llm",
        description="guard the empty cart",
        files=("shop/cart.py", TEST),
        diff="",
        changed_lines=6,
        minimized_from_hunks=1,
        hunks=2,
    )
    body = pr_body(_report(StopReason.HEALED, RECORD, patch), run_url="", fp="f")
    assert "### Where the error came from" in body
    assert "- Reported by: https://sentry.example/issues/7/" in body and "hidden" not in body
    assert f"`{TEST}`" in body and "this patch adds it as a new file" in body
    assert "Raised at: `shop/cart.py:average` in this checkout" in body


def test_the_escalation_lists_every_attempt() -> None:
    record = RECORD.model_copy(
        update={"reproduced": False, "attempts": ("every test passed on the unpatched code", "no test ran: x")}
    )
    body = escalation_body(_report(StopReason.ERROR_NOT_REPRODUCED, record), run_url="", fp="f")
    assert "- Attempt 1: every test passed on the unpatched code" in body and "- Attempt 2: no test ran: x" in body
    assert "this patch adds it" not in body
