"""``--engine auto``: the cheap path first. The offline engine tries its repair templates within a small budget;
only if none heals does the LLM engine run, shown what the offline engine tried (the evidence is the same
object, and the candidates that failed, with how they failed, go into its context as negative examples). When
the offline engine heals, no model is called.

The loop asks an engine for its hypotheses once and walks the list it gets back. The cascade hands it the
offline hypotheses in a list it keeps; when the offline share is spent (its candidates, its time, or its last
hypothesis), the offline hypotheses not reached yet are dropped from that list and the Detective's are appended,
so the same walk goes on into the LLM phase (a list iterator reads the list's length at every step).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from selfix_action.engine.models import CandidatePatch, Evidence, Hypothesis, QATest, Verification
from selfix_action.engine.protocols import Engine, Sandbox
from selfix_action.llm.engine import LLMEngine
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
        self._plan: list[Hypothesis] = []
        self._limit = 1
        self._offline_ids: set[str] = set()
        self._spent = 0  # offline candidates handed to the loop
        self._tried: list[tuple[Hypothesis, CandidatePatch]] = []
        self._verdicts: dict[str, Verification] = {}
        self._handed_over = False
        self._phase = "offline"

    # -- Engine protocol ---------------------------------------------------------------------------------
    @property
    def independent_candidates(self) -> bool:  # type: ignore[override]
        # Read by the loop right after ``candidates`` is called for a hypothesis, so it is that hypothesis's phase.
        return self._phase == "offline"

    def usage(self) -> dict[str, Any]:
        usage = dict(self.llm.usage())
        usage["offline"] = {
            "candidates": self._spent,
            "hypotheses": len(self._offline_ids),
            "handed_over": self._handed_over,
        }
        return usage

    def hypotheses(self, evidence: Evidence, sandbox: Sandbox, limit: int) -> list[Hypothesis]:
        self._started = self._clock()
        self._limit = limit
        self._plan = list(self.offline.hypotheses(evidence, sandbox, limit))
        self._offline_ids = {h.id for h in self._plan}
        if not self._plan:
            self._hand_over(evidence, sandbox, after=-1)
        return self._plan

    def qa_test(self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Sandbox) -> QATest | None:
        if hypothesis.id in self._offline_ids:
            return self.offline.qa_test(hypothesis, evidence, sandbox)
        return self.llm.qa_test(hypothesis, evidence, sandbox)

    def candidates(
        self,
        hypothesis: Hypothesis,
        evidence: Evidence,
        sandbox: Sandbox,
        history: Sequence[Verification],
    ) -> Iterator[CandidatePatch]:
        if hypothesis.id in self._offline_ids:
            self._phase = "offline"
            return self._offline_candidates(hypothesis, evidence, sandbox, history)
        self._phase = "llm"
        return self.llm.candidates(hypothesis, evidence, sandbox, history)

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
        seen = 0
        if not self._offline_spent():
            for candidate in self.offline.candidates(hypothesis, evidence, sandbox, history):
                self._spent += 1
                self._tried.append((hypothesis, candidate))
                yield candidate
                self._note_verdicts(history, seen)
                seen = len(history)
                if self._offline_spent():
                    break
        self._note_verdicts(history, seen)
        # Only reached when the loop asks for more: nothing offline healed this hypothesis.
        position = self._plan.index(hypothesis)
        last_offline = all(h.id not in self._offline_ids for h in self._plan[position + 1 :])
        if self._offline_spent() or last_offline:
            self._hand_over(evidence, sandbox, after=position)

    def _note_verdicts(self, history: Sequence[Verification], seen: int) -> None:
        for verdict in history[seen:]:
            self._verdicts[verdict.candidate_id] = verdict

    # -- the hand-over -------------------------------------------------------------------------------------
    def _hand_over(self, evidence: Evidence, sandbox: Sandbox, *, after: int) -> None:
        """Replace what is left of the plan after position ``after`` by the Detective's hypotheses."""
        if self._handed_over:
            return
        self._handed_over = True
        dropped = len(self._plan) - (after + 1)
        del self._plan[after + 1 :]
        self.llm.prior_attempts = self.negative_examples()
        self.trace(
            "engine_handover",
            f"the offline engine did not heal within its share ({self._spent} candidate(s)"
            + (f", {dropped} hypothesis(es) not reached" if dropped else "")
            + f"); asking {self.llm.name}",
            offline_candidates=self._spent,
            offline_hypotheses_dropped=dropped,
            negative_examples=min(len(self._tried), MAX_NEGATIVE_EXAMPLES),
        )
        offset = len(self._plan)
        for hypothesis in self.llm.hypotheses(evidence, sandbox, self._limit):
            # Ids of their own: the offline hypotheses already hold H1, H2, ... in the report.
            rank = offset + hypothesis.rank
            self._plan.append(hypothesis.model_copy(update={"id": f"L{hypothesis.rank}", "rank": rank}))
        self.trace(
            "hypotheses",
            f"{len(self._plan) - offset} hypotheses from {self.llm.name}",
            hypotheses=[h.model_dump() for h in self._plan[offset:]],
        )

    def negative_examples(self) -> str:
        """The offline candidates that failed, as a context section for the LLM roles."""
        if not self._tried:
            return ""
        header = (
            f"## Already tried by selfix's offline repair templates ({len(self._tried)} candidate edit(s), none "
            "healed; do not propose these again)"
        )
        lines = []
        for hypothesis, candidate in self._tried[:MAX_NEGATIVE_EXAMPLES]:
            verdict = self._verdicts.get(candidate.id)
            how = "not verified (skipped)"
            if verdict is not None:
                failing = ", ".join(verdict.failing_tests[:2])
                how = f"failed at {verdict.stage.value}" + (f" ({failing})" if failing else "")
            where = f"{hypothesis.file}:{candidate.line}" if candidate.line else hypothesis.file
            lines.append(f"- {where} [{candidate.template}] {candidate.description} -> {how}")
        if len(self._tried) > MAX_NEGATIVE_EXAMPLES:
            lines.append(f"- ... and {len(self._tried) - MAX_NEGATIVE_EXAMPLES} more")
        return header + "\n" + block("offline attempts", "\n".join(lines), limit=6000) + "\n"
