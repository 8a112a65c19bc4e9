"""A scripted engine that plays back candidate files for one hypothesis (the loop's honest-verdict and behaviour
probe tests), and the reason codes of a report's confidence."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.report import Confidence, HealReport, Usage
from selfix_action.repair.review import Review, ReviewRequest
from selfix_action.repair.values import (
    CandidatePatch,
    Evidence,
    Hypothesis,
    PlanChange,
    QATest,
    Verification,
)


class Playback:
    """Plays back candidate files for one hypothesis; records the verdicts it was fed back."""

    name = "playback"
    independent_candidates = True  # never reads the feedback: the loop may look past a passing candidate

    def __init__(self, file: str, symbol: str, candidates: list[dict[str, str]]) -> None:
        self.file = file
        self.symbol = symbol
        self._candidates = candidates
        self.feedback: Sequence[Verification] = []

    def usage(self) -> Usage:
        return Usage()

    def revise(self, hypothesis: Hypothesis, ahead: Sequence[Hypothesis]) -> PlanChange:
        return PlanChange()

    def settle(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, disagreements: str) -> QATest | None:
        return None

    def broaden(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, diff: str, review: Review
    ) -> CandidatePatch | None:
        return None

    def second_patch(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> CandidatePatch | None:
        return None

    def hypotheses(self, evidence: Evidence, sandbox: Sandbox, limit: int) -> list[Hypothesis]:
        return [Hypothesis(id="H1", rank=1, title="t", confidence=1.0, file=self.file, symbol=self.symbol, lines=(2,))]

    def review(self, request: ReviewRequest) -> Review | None:
        return None  # a playback has no reviewer

    def accepts(self, patch: CandidatePatch, confidence: Confidence | None) -> bool:
        return True  # a scripted engine takes any patch

    def qa_test(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, feedback: str = "", disputed: str = ""
    ) -> QATest | None:
        return None

    def candidates(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, history: Sequence[Verification]
    ) -> Iterator[CandidatePatch]:
        for number, files in enumerate(self._candidates, 1):
            yield CandidatePatch(
                id=f"C{number}", hypothesis_id="H1", description=f"candidate {number}", template="t", files=files
            )
        self.feedback = history  # the loop's list: it keeps growing after the last candidate


def codes(report: HealReport) -> list[str]:
    assert report.confidence is not None
    return [reason.code for reason in report.confidence.reasons]
