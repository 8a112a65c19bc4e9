"""What a verified patch's confidence lets selfix do with it, against the ``pr_confidence`` bar (pure).

At or above the bar a patch goes out as the mode says (a ready fix PR, a commit, suggestions); one level below it,
as something a maintainer must choose to take (a draft PR, or review suggestions instead of a push) whose text leads
with the evidence against it; further below, nothing is pushed: one escalation carries the patch. The levels were
fitted on the benchmark's bugs (docs/BENCHMARK.md): ``high`` was the real fix 21 times in 26, so by default only
``high`` opens a ready PR.
"""

from __future__ import annotations

from enum import StrEnum

from selfix_action.repair.report import ConfidenceReason, HealReport

LEVELS = ("low", "medium", "high")  # lowest first
DEFAULT_BAR = "high"


class Treatment(StrEnum):
    READY = "ready"  # as the mode says: a ready PR, a commit onto the PR's branch, or suggestions
    DRAFT = "draft"  # a draft PR, or review suggestions (never a push onto the failing branch)
    HELD_BACK = "held_back"  # one escalation with the patch attached; nothing pushed


def treatment(level: str, bar: str) -> Treatment:
    """``level``: the patch's confidence ("not assessed" for a report without one: an older heal's bundle, which
    selfix published as a ready PR before there were levels, and still does, saying so); ``bar``: ``pr_confidence``."""
    if level not in LEVELS:
        return Treatment.READY
    below = LEVELS.index(bar) - LEVELS.index(level)
    if below <= 0:
        return Treatment.READY
    return Treatment.DRAFT if below == 1 else Treatment.HELD_BACK


def evidence_against(report: HealReport) -> tuple[ConfidenceReason, ...]:
    """The confidence's reasons that kept the patch below ``high`` (the ones that lowered it most first)."""
    if report.confidence is None:
        return ()
    reasons = [reason for reason in report.confidence.reasons if reason.level != "high"]
    return tuple(sorted(reasons, key=lambda reason: LEVELS.index(reason.level)))
