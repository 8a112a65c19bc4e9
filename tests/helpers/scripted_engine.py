"""An engine that plays back a script: the loop's tests drive it over real sandboxes without a model."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.report import Confidence, Usage
from selfix_action.repair.reported_error import ReproductionRequest
from selfix_action.repair.review import Review, ReviewRequest
from selfix_action.repair.values import CandidatePatch, Evidence, Hypothesis, PlanChange, QATest, Verification


class ScriptedEngine:
    """Plays back hypotheses, QA tests and candidates; records the feedback it was given."""

    name = "scripted"
    independent_candidates = False  # plays back feedback-driven candidates one at a time

    def __init__(
        self,
        hypotheses: list[Hypothesis],
        qa: dict[str, QATest | None],
        candidates: dict[str, list[dict[str, str]]],
        review: Review | None = None,
        qa_after_dispute: dict[str, QATest | None] | None = None,
        broadened: dict[str, str] | None = None,
        second_review: Review | None = None,
        reproductions: list[str | None] | None = None,
    ) -> None:
        self._hypotheses = hypotheses
        self._review = review  # the reviewer's verdict it plays back (None: no reviewer)
        self.review_requests: list[ReviewRequest] = []
        self._broadened = broadened  # the patch it answers a partial or wrong review with (None: none)
        self._second_review = second_review  # its verdict on that patch (None: the first verdict again)
        self.broaden_requests: list[tuple[str, Review]] = []  # (the confirmed patch's diff, the review)
        self._qa = qa
        self._reproductions = list(reproductions or [])  # QA's reproduction tests of a reported error, in order
        self.reproduction_requests: list[tuple[ReproductionRequest, str]] = []  # (request, feedback)
        self._candidates = candidates
        self.feedback: list[Verification] = []
        self.qa_feedback: list[tuple[str, str]] = []  # (hypothesis id, why its last QA test was broken)
        self._qa_after_dispute = qa_after_dispute or {}  # what QA answers once its test is disputed
        self.qa_disputes: list[tuple[str, str]] = []  # (hypothesis id, the disputed test and its failure)

    def usage(self) -> Usage:
        return Usage(calls=len(self.feedback))

    def revise(self, hypothesis: Hypothesis, ahead: Sequence[Hypothesis]) -> PlanChange:
        return PlanChange()

    def settle(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, disagreements: str) -> QATest | None:
        return None

    def second_patch(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> CandidatePatch | None:
        return None

    def broaden(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, diff: str, review: Review
    ) -> CandidatePatch | None:
        self.broaden_requests.append((diff, review))
        if self._broadened is None:
            return None
        return CandidatePatch(
            id=f"{hypothesis.id}-B",
            hypothesis_id=hypothesis.id,
            description="broadened",
            template="scripted",
            files=self._broadened,
        )

    def hypotheses(self, evidence: Evidence, sandbox: Sandbox, limit: int) -> list[Hypothesis]:
        return self._hypotheses[:limit]

    def review(self, request: ReviewRequest) -> Review | None:
        self.review_requests.append(request)
        if self.broaden_requests and self._second_review is not None:
            return self._second_review
        return self._review

    def accepts(self, patch: CandidatePatch, confidence: Confidence | None) -> bool:
        return True  # a scripted engine takes any patch

    def reproduce_error(self, request: ReproductionRequest, sandbox: Sandbox, feedback: str) -> QATest | None:
        self.reproduction_requests.append((request, feedback))
        source = self._reproductions.pop(0) if self._reproductions else None
        return QATest(path=request.test_path, source=source) if source is not None else None

    def qa_test(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, feedback: str = "", disputed: str = ""
    ) -> QATest | None:
        if feedback:
            self.qa_feedback.append((hypothesis.id, feedback))
        if disputed:
            self.qa_disputes.append((hypothesis.id, disputed))
            return self._qa_after_dispute.get(hypothesis.id)
        return self._qa.get(hypothesis.id)

    def candidates(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, history: Sequence[Verification]
    ) -> Iterator[CandidatePatch]:
        for number, files in enumerate(self._candidates.get(hypothesis.id, []), 1):
            if history:
                self.feedback.append(history[-1])
            yield CandidatePatch(
                id=f"{hypothesis.id}-{number}",
                hypothesis_id=hypothesis.id,
                description=f"candidate {number}",
                template="scripted",
                files=files,
            )


def hyp(ident: str, rank: int, file: str = "calc.py", symbol: str = "add") -> Hypothesis:
    return Hypothesis(
        id=ident,
        rank=rank,
        title=f"hypothesis {ident}",
        confidence=0.5,
        file=file,
        symbol=symbol,
        lines=(2,),
    )
