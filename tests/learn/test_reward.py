from __future__ import annotations

import pytest

from selfix_action.learn.reward import (
    attempt_reward,
    attempts_component,
    hypothesis_reward,
    outcome_component,
    rank_component,
)
from selfix_action.learn.runs import Attempt, HypothesisOutcome


def hyp(rank: int = 1, *, reached: bool = True, exposed: bool = True, fixed: bool = False, attempts: int = 0):
    tries = [Attempt(candidate=f"C{i}", ok=fixed and i == attempts - 1, stage="fail_to_pass") for i in range(attempts)]
    return HypothesisOutcome(
        id="H",
        rank=rank,
        confidence=0.5,
        title="t",
        file="f.py",
        symbol="s",
        reached=reached,
        exposed=exposed,
        fixed=fixed,
        attempts=tries,
    )


def test_outcome_component() -> None:
    assert outcome_component(True, True) == 0.9
    assert outcome_component(False, True) == -0.3
    assert outcome_component(False, False) == -0.6


def test_rank_component_rewards_a_right_first_guess_and_punishes_a_wrong_one() -> None:
    assert rank_component(1, True) == pytest.approx(0.1)
    assert rank_component(2, True) == pytest.approx(0.05)
    assert rank_component(1, False) == pytest.approx(-0.1)
    assert rank_component(3, False) == pytest.approx(-0.1 / 3)


def test_attempts_component_saturates_and_spares_a_first_try_fix() -> None:
    assert attempts_component(1, True) == 0.0
    assert attempts_component(0, False) == 0.0
    assert attempts_component(11, True) == pytest.approx(-0.15)
    assert attempts_component(10, False) == pytest.approx(-0.15)
    assert attempts_component(10_000, False) > -0.3
    assert attempts_component(5, True) > attempts_component(20, True)


def test_ordering_of_outcomes_and_not_reached() -> None:
    fixed = hypothesis_reward(hyp(fixed=True, attempts=40))
    failed = hypothesis_reward(hyp(exposed=True, attempts=1))
    dropped = hypothesis_reward(hyp(exposed=False))
    assert fixed and failed and dropped
    assert fixed.total > failed.total > dropped.total
    assert hypothesis_reward(hyp(reached=False, exposed=False)) is None
    assert -1.0 <= dropped.total and fixed.total <= 1.0


def test_fewer_attempts_and_better_rank_raise_the_reward() -> None:
    one = hypothesis_reward(hyp(fixed=True, attempts=1))
    many = hypothesis_reward(hyp(fixed=True, attempts=30))
    later = hypothesis_reward(hyp(rank=3, fixed=True, attempts=1))
    assert one and many and later
    assert one.total > many.total and one.total > later.total
    assert one.total == pytest.approx(1.0)  # 0.9 + 0.1: the best reward there is


def test_attempt_reward() -> None:
    assert attempt_reward(True, "verified") == 1.0
    assert attempt_reward(False, "pass_to_pass") < attempt_reward(False, "fail_to_pass") < 0
    assert attempt_reward(False, "protected_path") == -1.0
