"""The reward of one hypothesis, from what the loop found out about it.

``reward = outcome + rank + attempts``, clipped to [-1, 1]:

- **outcome** (what the tests said):
  ``+0.9`` a patch for it was verified (the run healed through it);
  ``-0.3`` it was exposed (a QA test or the failing tests fail on it) but no patch passed verification;
  ``-0.6`` it was not exposed (its QA test passed on the buggy code, or failed for the wrong reason).
  A hypothesis the loop never reached (an earlier one healed) has no reward: ``None``, it teaches nothing.
- **rank** (was the Detective's ordering right?): ``+0.1 / rank`` for a fix (a fix ranked first is worth most),
  ``-0.1 / rank`` for a wrong hypothesis (a wrong first guess wasted the most: the loop started there).
- **attempts** (how much verification it cost): ``-0.3 * a / (a + 10)`` where ``a`` is the number of patch
  attempts beyond the first for a fix, or all attempts for a failed hypothesis; it saturates, so a long search
  is penalized but never outweighs the outcome.

The ordering this guarantees (tested): any verified fix > any exposed-but-failed > any not-exposed, at equal
rank and attempts; fewer attempts and a better rank each raise the reward.
"""

from __future__ import annotations

from dataclasses import dataclass

from selfix_action.learn.runs import HypothesisOutcome

OUTCOME_FIXED = 0.9
OUTCOME_EXPOSED_FAILED = -0.3
OUTCOME_NOT_EXPOSED = -0.6
RANK_WEIGHT = 0.1
ATTEMPT_WEIGHT = 0.3
ATTEMPT_HALF = 10.0


@dataclass(frozen=True)
class Reward:
    outcome: float
    rank: float
    attempts: float

    @property
    def total(self) -> float:
        return round(max(-1.0, min(1.0, self.outcome + self.rank + self.attempts)), 6)


def outcome_component(fixed: bool, exposed: bool) -> float:
    if fixed:
        return OUTCOME_FIXED
    return OUTCOME_EXPOSED_FAILED if exposed else OUTCOME_NOT_EXPOSED


def rank_component(rank: int, fixed: bool) -> float:
    weight = RANK_WEIGHT / max(1, rank)
    return weight if fixed else -weight


def attempts_component(attempts: int, fixed: bool) -> float:
    extra = max(0, attempts - 1) if fixed else max(0, attempts)
    return -ATTEMPT_WEIGHT * extra / (extra + ATTEMPT_HALF)


def hypothesis_reward(h: HypothesisOutcome) -> Reward | None:
    """The reward of one hypothesis, or None when the loop never reached it."""
    if not h.reached and not h.fixed:
        return None
    return Reward(
        outcome=outcome_component(h.fixed, h.exposed or h.fixed),
        rank=rank_component(h.rank, h.fixed),
        attempts=attempts_component(len(h.attempts), h.fixed),
    )


def attempt_reward(ok: bool, stage: str) -> float:
    """Reward of one patch attempt: verified 1.0; broke a passing test -0.8 (a regression is worse than no
    progress); failed the failing tests or the QA test -0.4; touched a protected path -1.0."""
    if ok:
        return 1.0
    return {"pass_to_pass": -0.8, "full_suite": -0.8, "protected_path": -1.0}.get(stage, -0.4)
