"""The offline engine: no model, no key. Hypotheses are the most suspicious functions; patches are repair
templates applied at their most suspicious lines, most likely first."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from selfix_action.engine.models import CandidatePatch, Evidence, Hypothesis, QATest, Verification
from selfix_action.engine.protocols import Sandbox
from selfix_action.offline.templates import candidate_edits

MAX_LINES_PER_HYPOTHESIS = 12


class OfflineEngine:
    name = "offline"
    independent_candidates = True  # candidates come from templates, never from verification feedback

    def __init__(self, template_scores: Callable[[Evidence], Mapping[str, float]] | None = None) -> None:
        self._seen: set[str] = set()  # normalized candidate sources, across hypotheses
        # Memory hook (selfix_action.learn): templates that fixed similar failures -> score; tried first.
        self.template_scores = template_scores
        self._boost: Mapping[str, float] | None = None

    def usage(self) -> dict[str, Any]:
        return {}

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

    def qa_test(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> QATest | None:
        # The failing tests themselves expose the bug: localization only proposes code they execute.
        return None

    def candidates(
        self,
        hypothesis: Hypothesis,
        evidence: Evidence,
        sandbox: Sandbox,
        history: Sequence[Verification],
    ) -> Iterator[CandidatePatch]:
        source = sandbox.read_file(hypothesis.file)
        score_of = {s.line: s.score for s in evidence.suspicious_lines if s.file == hypothesis.file}
        if self._boost is None:
            self._boost = dict(self.template_scores(evidence)) if self.template_scores else {}
        boost = self._boost
        fresh = []
        for order, line in enumerate(hypothesis.lines):
            for edit in candidate_edits(source, hypothesis.file, [line]):
                if edit.normalized in self._seen:
                    continue
                self._seen.add(edit.normalized)
                fresh.append((order, line, edit))
        fan_out = Counter((line, edit.template) for _, line, edit in fresh)
        scored = []
        for order, line, edit in fresh:
            # A template's prior is the chance that the bug is of its kind; one of its k variants on a line is
            # the fix with about prior / k. Ordering by that puts a lone operator swap ahead of the 8th renamed
            # identifier. Ties in suspiciousness are common in small programs: within a tie this weight decides,
            # so every line of the top tie group gets its likeliest repairs first.
            weight = edit.prior / fan_out[(line, edit.template)]
            scored.append(
                (-boost.get(edit.template, 0.0), -score_of.get(line, 0.0), -weight, order, len(scored), edit)
            )
        scored.sort(key=lambda item: item[:5])
        for number, (*_, edit) in enumerate(scored, 1):
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
