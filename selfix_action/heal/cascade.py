"""``--engine auto``: the cheap path first. The offline engine tries its repair templates within a small budget;
only if none heals at high confidence does the LLM engine run, shown what the offline engine tried (the evidence
is the same object, and the candidates that failed, with how they failed, go into its context as negative
examples). When the offline engine heals at high confidence, only the reviewer's one call is made (``review``
delegates to the LLM engine); a patch below high is kept,
shown to the LLM engine as a candidate to confirm or beat, and the loop keeps the better of the two
(``accepts``).

The loop asks an engine for its hypotheses once and walks them; what an engine changes on the way it says in
the value ``revise`` returns once the loop is done with a hypothesis (``engine.protocols.Engine``). The cascade
hands the loop the offline hypotheses followed by one hand-over entry. The loop reaches the hand-over only
after every offline candidate it took has its verdict and none healed (a winner ends the walk first), so the
model is never called for a run the offline engine heals, even with candidates checked side by side. Asked for
the hand-over's candidates, the cascade calls the Detective (the hand-over itself yields no candidate), and its
hypotheses come back from ``revise`` as the ones to walk next, so the same walk goes on into the LLM phase.
When the offline share runs out early, or an offline patch below high confidence is kept, the offline
hypotheses not reached yet are dropped the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence

from selfix_action.heal.tried import summarize_tried
from selfix_action.llm.engine import LLMEngine
from selfix_action.repair.patches import unified_diff
from selfix_action.repair.protocols import Engine, Sandbox
from selfix_action.repair.report import Confidence, OfflineUsage, Usage
from selfix_action.repair.reported_error import ReproductionRequest
from selfix_action.repair.review import Review, ReviewRequest
from selfix_action.repair.values import CandidatePatch, Evidence, Hypothesis, PlanChange, QATest, Verification
from selfix_action.untrusted import block

Trace = Callable[..., None]
MAX_NEGATIVE_EXAMPLES = 12


class CascadeEngine:
    def __init__(
        self,
        offline: Engine,
        llm: LLMEngine,
        *,
        offline_candidates: int = 100,
        offline_seconds: float = 300.0,
        trace: Trace | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.offline = offline
        self.llm = llm
        self.name = f"auto (offline, then {llm.name})"
        self.offline_candidates = offline_candidates
        self.offline_seconds = offline_seconds
        self.trace = trace or (lambda *args, **kwargs: None)
        self._clock = clock
        self._started: float | None = None
        self._limit = 1
        self._dropped = 0  # offline hypotheses skipped when the offline share ran out
        self._offline_ids: set[str] = set()
        self._spent = 0  # offline candidates handed to the loop
        self._tried: list[tuple[Hypothesis, CandidatePatch]] = []
        self._histories: list[Sequence[Verification]] = []
        self._handed_over = False
        self._found: list[Hypothesis] | None = None  # the LLM Detective's hypotheses, once it answered
        self._drop_offline = False  # the offline hypotheses ahead are not walked (its share ran out, an incumbent)
        self._share_ran_out = False
        self._incumbent: tuple[CandidatePatch, Confidence | None] | None = None  # an offline patch below high
        self._phase = "offline"
        self._handover = Hypothesis(
            id="handover",
            rank=0,
            title=f"hand-over: the offline engine did not heal; {llm.name}'s hypotheses follow",
            confidence=0.0,
            file="",
            symbol="",
            lines=(),
        )

    # -- Engine protocol ---------------------------------------------------------------------------------
    @property
    def independent_candidates(self) -> bool:
        # Read by the loop right after ``candidates`` is called for a hypothesis, so it is that hypothesis's phase.
        return self._phase == "offline"

    def usage(self) -> Usage:
        offline = OfflineUsage(candidates=self._spent, hypotheses=len(self._offline_ids), handed_over=self._handed_over)
        return self.llm.usage().model_copy(update={"offline": offline})

    def hypotheses(self, evidence: Evidence, sandbox: Sandbox, limit: int) -> list[Hypothesis]:
        self._started = self._clock()
        self._limit = limit
        plan = list(self.offline.hypotheses(evidence, sandbox, limit))
        self._offline_ids = {h.id for h in plan}
        self._handover = self._handover.model_copy(update={"rank": len(plan) + 1})
        return [*plan, self._handover]

    def settle(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, disagreements: str) -> QATest | None:
        if self._phase == "offline":
            return self.offline.settle(hypothesis, evidence, sandbox, disagreements)
        return self.llm.settle(hypothesis, evidence, sandbox, disagreements)

    def broaden(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, diff: str, review: Review
    ) -> CandidatePatch | None:
        """The engine of the hypothesis' phase, as for ``second_patch``."""
        if self._phase == "offline":
            return self.offline.broaden(hypothesis, evidence, sandbox, diff, review)
        return self.llm.broaden(hypothesis, evidence, sandbox, diff, review)

    def second_patch(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> CandidatePatch | None:
        """The engine of the hypothesis' phase: the offline one offers none (its window's candidates serve), so
        a patch the cheap path found costs no model call here."""
        if self._phase == "offline":
            return self.offline.second_patch(hypothesis, evidence, sandbox)
        return self.llm.second_patch(hypothesis, evidence, sandbox)

    def revise(self, hypothesis: Hypothesis, ahead: Sequence[Hypothesis]) -> PlanChange:
        """After the hand-over: the LLM Detective's hypotheses next. After an offline hypothesis whose share ran
        out, or whose patch was kept below high confidence: the offline hypotheses ahead dropped (the hand-over
        is next)."""
        if hypothesis.id == self._handover.id:
            return PlanChange(follow=tuple(self._found or ()))
        if hypothesis.id in self._offline_ids and self._drop_offline:
            if self._share_ran_out:
                self._dropped = sum(1 for h in ahead if h.id in self._offline_ids)
            self._drop_offline = self._share_ran_out = False
            return PlanChange(drop=frozenset(self._offline_ids))
        return PlanChange()

    def accepts(self, patch: CandidatePatch, confidence: Confidence | None) -> bool:
        """An offline patch ends the heal only at high confidence: below that the cheap path is often the wrong
        path (on real bugs, patches that pass the tests without being the fix). It is kept, the offline
        hypotheses not reached are dropped, and the LLM engine is shown it as a candidate to confirm or beat;
        the loop keeps the better of the two. The LLM engine's patches end the heal as they would alone."""
        if patch.hypothesis_id not in self._offline_ids:
            return self.llm.accepts(patch, confidence)
        if confidence is not None and confidence.level == "high":
            return True
        self._incumbent = (patch, confidence)
        self._drop_offline = True
        return False

    def qa_test(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox, feedback: str = "", disputed: str = ""
    ) -> QATest | None:
        if hypothesis.id == self._handover.id:
            return None  # nothing to expose: it only hands over
        if hypothesis.id in self._offline_ids:
            return self.offline.qa_test(hypothesis, evidence, sandbox, feedback, disputed)
        return self.llm.qa_test(hypothesis, evidence, sandbox, feedback, disputed)

    def candidates(
        self,
        hypothesis: Hypothesis,
        evidence: Evidence,
        sandbox: Sandbox,
        history: Sequence[Verification],
    ) -> Iterator[CandidatePatch]:
        if hypothesis.id == self._handover.id:
            self._phase = "llm"
            self._hand_over(evidence, sandbox)
            return iter(())
        if hypothesis.id in self._offline_ids:
            self._phase = "offline"
            return self._offline_candidates(hypothesis, evidence, sandbox, history)
        self._phase = "llm"
        return self.llm.candidates(hypothesis, evidence, sandbox, history)

    def reproduce_error(self, request: ReproductionRequest, sandbox: Sandbox, feedback: str = "") -> QATest | None:
        """A reported error's reproduction test is the LLM engine's to write: the offline engine writes no tests."""
        return self.llm.reproduce_error(request, sandbox, feedback)

    def review(self, request: ReviewRequest) -> Review | None:
        """The LLM engine reviews whichever engine's patch won, the offline one's too: its one call then is the
        only model call of a heal the offline engine ended."""
        return self.llm.review(request)

    # -- the offline phase -------------------------------------------------------------------------------
    def _offline_spent(self) -> bool:
        elapsed = self._clock() - (self._started or self._clock())
        return self._spent >= self.offline_candidates or elapsed >= self.offline_seconds

    def _offline_candidates(
        self,
        hypothesis: Hypothesis,
        evidence: Evidence,
        sandbox: Sandbox,
        history: Sequence[Verification],
    ) -> Iterator[CandidatePatch]:
        # The loop's list: verdicts of candidates checked side by side land in it after this generator ended.
        self._histories.append(history)
        if not self._offline_spent():
            for candidate in self.offline.candidates(hypothesis, evidence, sandbox, history):
                self._spent += 1
                self._tried.append((hypothesis, candidate))
                yield candidate
                if self._offline_spent():
                    break
        if self._offline_spent():  # the offline hypotheses not reached yet are skipped, the hand-over is next
            self._share_ran_out = self._drop_offline = True

    # -- the hand-over -------------------------------------------------------------------------------------
    def _hand_over(self, evidence: Evidence, sandbox: Sandbox) -> None:
        """Ask the LLM engine's Detective, shown what the offline engine tried (every offline verdict is in); its
        hypotheses are walked next (``revise``). Walked again (the Detective named some failing tests as the
        environment's and the loop left them out), the hand-over asks the Detective once more."""
        if self._found is not None:
            return
        if not self._handed_over:
            self._handed_over = True
            self._trace_handover()
        prior = self.negative_examples() + self.incumbent_section(sandbox)
        # Ids of their own: the offline hypotheses already hold H1, H2, ... in the report.
        self._found = [
            h.model_copy(update={"id": f"L{h.rank}", "rank": self._handover.rank + h.rank})
            for h in self.llm.hypotheses(evidence, sandbox, self._limit, prior_attempts=prior)
        ]
        self.trace(
            "hypotheses",
            f"{len(self._found)} hypotheses from {self.llm.name}",
            hypotheses=[h.model_dump() for h in self._found],
        )

    def _trace_handover(self) -> None:
        dropped = self._dropped
        why = (
            f"the offline engine's patch is only {self._incumbent[1].level if self._incumbent[1] else 'of unknown'} "
            "confidence"
            if self._incumbent is not None
            else f"the offline engine did not heal within its share ({self._spent} candidate(s)"
            + (f", {dropped} hypothesis(es) not reached" if dropped else "")
            + ")"
        )
        self.trace(
            "engine_handover",
            f"{why}; asking {self.llm.name}",
            offline_candidates=self._spent,
            offline_hypotheses_dropped=dropped,
            negative_examples=min(len(self._tried), MAX_NEGATIVE_EXAMPLES),
            incumbent=self._incumbent[0].id if self._incumbent is not None else None,
        )

    def incumbent_section(self, sandbox: Sandbox) -> str:
        """The offline patch that passed below high confidence, as a context section: a candidate to confirm
        (propose it again only if it is the real fix) or to beat."""
        if self._incumbent is None:
            return ""
        patch, confidence = self._incumbent
        originals = {path: sandbox.read_file(path) for path in patch.files}
        reasons = [r.text for r in confidence.reasons if r.level != "high"] if confidence is not None else []
        level = confidence.level if confidence is not None else "unknown"
        return (
            f"## A patch selfix's offline templates found (it passes the tests, but at {level} confidence)\n"
            "It may only make the tests pass without being the real fix. If it is the real fix, the same edit is "
            "the answer; if not, find the real root cause.\n"
            + ("".join(f"- doubt: {text}\n" for text in reasons))
            + block("offline patch", unified_diff(originals, patch.files), code=True, limit=4000)
            + "\n"
        )

    def negative_examples(self) -> str:
        """The offline candidates that failed, as a context section for the LLM roles."""
        kept = self._incumbent[0].id if self._incumbent is not None else None
        tried = [(h, c) for h, c in self._tried if c.id != kept]  # the passing one is shown apart
        if not tried:
            return ""
        verdicts = {verdict.candidate_id: verdict for history in self._histories for verdict in history}
        header = (
            f"## Already tried by selfix's offline repair templates ({len(tried)} candidate edit(s), none "
            "healed; do not propose these again)"
        )
        lines = []
        for hypothesis, candidate in tried[:MAX_NEGATIVE_EXAMPLES]:
            verdict = verdicts.get(candidate.id)
            how = "not verified (skipped)"
            if verdict is not None:
                failing = ", ".join(verdict.failing_tests[:2])
                how = f"failed at {verdict.stage.value}" + (f" ({failing})" if failing else "")
            where = f"{hypothesis.file}:{candidate.line}" if candidate.line else hypothesis.file
            lines.append(f"- {where} [{candidate.template}] {candidate.description} -> {how}")
        lines += summarize_tried(tried[MAX_NEGATIVE_EXAMPLES:], verdicts)
        return header + "\n" + block("offline attempts", "\n".join(lines), limit=6000) + "\n"
