"""What the offline templates tried reaches the model counted in full: listed one by one, then summarized by
place, never "... and 88 more"."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from selfix_action.heal.cascade import MAX_NEGATIVE_EXAMPLES, CascadeEngine
from selfix_action.llm.budget import Budget
from selfix_action.llm.engine import LLMEngine
from selfix_action.repair.values import CandidatePatch, Evidence, Hypothesis, Verification, VerifyStage
from tests.helpers.scripted_engine import ScriptedEngine, hyp

TEMPLATES = ("swap_operator", "off_by_one", "negate_condition", "swap_arguments")


class ManyTemplates(ScriptedEngine):
    """An offline engine that proposes 100 template edits over five lines of calc.py."""

    def candidates(
        self, hypothesis: Hypothesis, evidence: Evidence, sandbox: Any, history: Sequence[Verification]
    ) -> Iterator[CandidatePatch]:
        for n in range(100):
            yield CandidatePatch(
                id=f"c{n}",
                hypothesis_id=hypothesis.id,
                description=f"edit {n}",
                template=TEMPLATES[n % len(TEMPLATES)],
                files={"calc.py": f"# {n}\n"},
                line=2 + n % 5,
            )


class NoModel:
    """The LLM engine's model: never called here (only the hand-over's text is read)."""

    provider = "none"
    model = "none"
    structured = "tools"


def test_the_candidates_past_the_listed_ones_are_summarized_by_place_not_cut() -> None:
    hypothesis = hyp("H1", 1)
    offline = ManyTemplates([hypothesis], {}, {})
    llm = LLMEngine(NoModel(), Budget(model="none"))  # type: ignore[arg-type]
    cascade = CascadeEngine(offline, llm, offline_candidates=100)
    evidence = Evidence(
        f2p_tests=(), p2p_tests=(), failures=(), suspicious_lines=(), suspicious_functions=(), coverage_used=False
    )
    cascade.hypotheses(evidence, None, 3)  # type: ignore[arg-type]
    history: list[Verification] = []
    for candidate in cascade.candidates(hypothesis, evidence, None, history):  # type: ignore[arg-type]
        history.append(Verification(candidate_id=candidate.id, ok=False, stage=VerifyStage.F2P))
    text = cascade.negative_examples()
    assert "more" not in text
    rest = 100 - MAX_NEGATIVE_EXAMPLES
    assert f"the other {rest} candidate edit(s), by place:" in text
    counted = [line for line in text.splitlines() if line.startswith("  - calc.py:")]
    assert len(counted) == 5 and sum(int(line.split(": ")[1].split(" ")[0]) for line in counted) == rest
    assert "swap_operator" in counted[0] and "failed at fail_to_pass" in counted[0]
