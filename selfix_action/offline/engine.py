"""The offline engine: no model, no key. Hypotheses are the most suspicious functions; patches are repair
templates applied at their most suspicious lines, most likely first (the order: ``offline.ordering``)."""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence

from selfix_action.offline.ordering import (
    FailureContext,
    FileIndex,
    OrderModel,
    RankedCandidate,
    candidate_features,
    ordered,
    shipped_order_model,
)
from selfix_action.offline.templates import Hints, SourceEdit, candidate_edits, pair_edits
from selfix_action.repair.protocols import Sandbox
from selfix_action.repair.report import Confidence, Usage
from selfix_action.repair.review import Review, ReviewRequest
from selfix_action.repair.values import CandidatePatch, Evidence, Hypothesis, PlanChange, QATest, Verification

MAX_LINES_PER_HYPOTHESIS = 12

# The memory's hook: (evidence, hypothesis) -> template -> boost, for candidates at this hypothesis' location.
TemplateBoosts = Callable[[Evidence, Hypothesis], Mapping[str, float]]
_USE_SHIPPED = object()


class OfflineEngine:
    name = "offline"
    independent_candidates = True  # candidates come from templates, never from verification feedback

    def __init__(
        self,
        template_scores: TemplateBoosts | None = None,
        order_model: OrderModel | object | None = _USE_SHIPPED,
    ) -> None:
        self._seen: set[str] = set()  # normalized candidate sources, across hypotheses
        # Memory hook (selfix_action.learn): templates that fixed failures at this location -> boost.
        self.template_scores = template_scores
        # The learned candidate order shipped with selfix, or None for the hand priors (prior / k).
        self.order_model: OrderModel | None = (
            shipped_order_model() if order_model is _USE_SHIPPED else order_model  # type: ignore[assignment]
        )
        self._failure: FailureContext | None = None

    def usage(self) -> Usage:
        return Usage()  # no model, nothing spent

    def revise(self, hypothesis: Hypothesis, ahead: Sequence[Hypothesis]) -> PlanChange:
        return PlanChange()  # its hypotheses are fixed up front

    def settle(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, disagreements: str) -> QATest | None:
        return None  # no QA of its own: a disagreement stays unsettled

    def broaden(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, diff: str, review: Review
    ) -> CandidatePatch | None:
        return None  # no reviewer: nothing to broaden

    def second_patch(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> CandidatePatch | None:
        return None  # its second solution is another candidate that passed in the loop's window

    def hypotheses(self, evidence: Evidence, sandbox: Sandbox, limit: int) -> list[Hypothesis]:
        groups: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
        for item in evidence.suspicious_lines:
            groups[(item.file, item.function or "<module>")].append((item.line, item.score))
        ranked = sorted(groups.items(), key=lambda kv: -max(score for _, score in kv[1]))
        top_score = ranked[0][1][0][1] if ranked else 1.0
        hypotheses = []
        for rank, ((file, symbol), lines) in enumerate(ranked[:limit], 1):
            best = max(score for _, score in lines)
            ordered = sorted(lines, key=lambda ls: (-ls[1], ls[0]))[:MAX_LINES_PER_HYPOTHESIS]
            hypotheses.append(
                Hypothesis(
                    id=f"H{rank}",
                    rank=rank,
                    title=f"the bug is in `{symbol}` ({file})",
                    confidence=round(best / top_score if top_score else 0.0, 3) if rank > 1 else 1.0,
                    file=file,
                    symbol=symbol,
                    lines=tuple(line for line, _ in ordered),
                    reasoning=(
                        f"suspiciousness {best:.3f} ({evidence.localization_note}); "
                        f"{len(lines)} suspicious line(s) in this function"
                    ),
                    proposed_fix="try repair templates at its lines, most suspicious first",
                )
            )
        return hypotheses

    def review(self, request: ReviewRequest) -> Review | None:
        return None  # no reviewer: the templates have no judgement of their own to offer

    def accepts(self, patch: CandidatePatch, confidence: Confidence | None) -> bool:
        return True  # alone, its best patch is the answer

    def qa_test(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, feedback: str = "", disputed: str = ""
    ) -> QATest | None:
        # The failing tests themselves expose the bug: localization only proposes code they execute.
        return None

    def ranked(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> list[RankedCandidate]:
        """This hypothesis' fresh candidates (not generated for an earlier one) with their features, in
        generation order: line by line, most suspicious first."""
        source = sandbox.read_file(hypothesis.file)
        score_of = {s.line: s.score for s in evidence.suspicious_lines if s.file == hypothesis.file}
        if self._failure is None:
            self._failure = FailureContext.of(evidence)
        # The failing assertions' compared strings and the project's other files, for the families that use them.
        failures = (failure.message for failure in evidence.failures)
        hints = Hints.from_failures(failures, read_file=sandbox.read_file, list_files=lambda: sandbox.source_files())
        fresh = []
        for order, line in enumerate(hypothesis.lines):
            for edit in candidate_edits(source, hypothesis.file, [line], hints=hints):
                if edit.normalized in self._seen:
                    continue
                self._seen.add(edit.normalized)
                fresh.append((order, line, edit))
        # A template's prior is the chance that the bug is of its kind; one of its k variants on a line is the
        # fix with about prior / k: the fan-out is a feature of the learned order and the hand order's divisor.
        fan_out = Counter((line, edit.template) for _, line, edit in fresh)
        top_score = max((score_of.get(line, 0.0) for line in hypothesis.lines), default=0.0)
        index = FileIndex.of(source)
        return [
            RankedCandidate(
                edit=edit,
                line=line,
                line_order=order,
                suspiciousness=score_of.get(line, 0.0),
                fan_out=fan_out[(line, edit.template)],
                features=candidate_features(
                    edit,
                    index,
                    self._failure,
                    hypothesis=hypothesis,
                    line_order=order,
                    score=score_of.get(line, 0.0),
                    top_score=top_score,
                    fan_out=fan_out[(line, edit.template)],
                ),
                generated=number,
            )
            for number, (order, line, edit) in enumerate(fresh)
        ]

    def candidates(
        self,
        hypothesis: Hypothesis,
        evidence: Evidence,
        sandbox: Sandbox,
        history: Sequence[Verification],
    ) -> Iterator[CandidatePatch]:
        items = self.ranked(hypothesis, evidence, sandbox)
        boost = dict(self.template_scores(evidence, hypothesis)) if self.template_scores and items else {}
        # Most suspicious line first; within a line (or lines localized exactly as well) the memory's boost,
        # then the learned score (or prior / k). Ties in suspiciousness are common in small programs: within a
        # tie the score decides, so every line of the top tie group gets its likeliest repairs first.
        singles = (item.edit for item in ordered(items, boost, self.order_model))
        for number, edit in enumerate(itertools.chain(singles, self._pairs(hypothesis, items, sandbox)), 1):
            yield CandidatePatch(
                id=f"{hypothesis.id}-C{number}",
                hypothesis_id=hypothesis.id,
                description=edit.description,
                template=edit.template,
                files={hypothesis.file: edit.new_source},
                line=edit.line,
                prior=edit.prior,
                normalized={hypothesis.file: edit.normalized},
            )

    def _pairs(self, hypothesis: Hypothesis, items: list[RankedCandidate], sandbox: Sandbox) -> Iterator[SourceEdit]:
        """Pairs of the best single edits at the hypothesis' two most suspicious lines, after every single edit
        (made only when the singles are spent)."""
        if len(hypothesis.lines) < 2:
            return
        first, second = ([item.edit for item in items if item.line == line] for line in hypothesis.lines[:2])
        for edit in pair_edits(sandbox.read_file(hypothesis.file), hypothesis.file, first, second):
            if edit.normalized not in self._seen:
                self._seen.add(edit.normalized)
                yield edit
