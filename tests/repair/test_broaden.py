"""Step 10 of the loop: a patch the reviewer calls partial is broadened once (``HealingLoop._broadened``).

Real pytest runs in the real sandbox on a small project whose bug has two branches and one failing test: the
first patch fixes the tested branch only, the reviewer names the other, and the Patcher's broader patch must
pass everything the first one passed, be confirmed on the whole suite and be called complete to replace it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from selfix_action.repair.loop import HealingLoop, LoopConfig
from selfix_action.repair.report import HealReport, StopReason, render_markdown
from selfix_action.repair.review import Review
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.scripted_engine import ScriptedEngine, hyp

BUGGY = """\
def clamp(x, low, high):
    if x < low:
        return high
    if x > high:
        return low
    return x
"""
TESTS = """\
from clamp import clamp


def test_below():
    assert clamp(-5, 0, 10) == 0


def test_inside():
    assert clamp(5, 0, 10) == 5
"""
PROJECT = {"clamp.py": BUGGY, "tests/test_clamp.py": TESTS}
FIRST = BUGGY.replace("        return high\n", "        return low\n", 1)  # the tested branch only
COMPLETE = FIRST.replace("    if x > high:\n        return low\n", "    if x > high:\n        return high\n")
BREAKS_INSIDE = COMPLETE.replace("    return x\n", "    return low\n")
PARTIAL = Review(verdict="partial", reason="only values below the range", missed="clamp(15, 0, 10) returns 0")
WHOLE = Review(verdict="complete", reason="both ends clamp to their own bound")
QUICK = LoopConfig(behaviour_probe=False)


def heal(sandbox: PytestSandbox, engine: ScriptedEngine) -> tuple[str, HealReport]:
    result = HealingLoop(sandbox, engine, QUICK).run()
    assert result.report.stop_reason is StopReason.HEALED
    assert result.files is not None
    return result.files["clamp.py"], result.report


@pytest.mark.slow
def test_a_partial_patch_is_replaced_by_a_broader_one_the_reviewer_calls_complete(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    engine = ScriptedEngine(
        [hyp("H1", 1, file="clamp.py", symbol="clamp")],
        {},
        {"H1": [{"clamp.py": FIRST}]},
        review=PARTIAL,
        broadened={"clamp.py": COMPLETE},
        second_review=WHOLE,
    )
    files, report = heal(make_sandbox(PROJECT), engine)
    assert files == COMPLETE
    # The Patcher was shown the confirmed patch and the reviewer's case.
    ((diff, review),) = engine.broaden_requests
    assert "-        return high\n+        return low" in diff and review == PARTIAL
    # Both patches were reviewed; the report carries the second verdict and says what happened.
    assert len(engine.review_requests) == 2
    assert report.review == WHOLE
    assert any(n.startswith("broadened after the reviewer called") and "clamp(15, 0, 10)" in n for n in report.notes)
    assert "clamp(15, 0, 10)" in render_markdown(report)
    assert report.patch is not None and report.patch.confirmed


@pytest.mark.slow
@pytest.mark.parametrize(
    ("broadened", "second_review", "why"),
    [
        (BREAKS_INSIDE, WHOLE, "the broader patch failed verification"),
        (COMPLETE, PARTIAL, "the reviewer's verdict on the broader patch is partial"),
        (FIRST, WHOLE, "the Patcher returned the same program"),
        (None, WHOLE, "the engine proposed no broader patch"),
    ],
    ids=["fails-a-passing-test", "still-partial", "same-program", "none-offered"],
)
def test_the_first_patch_stays_unless_the_broader_one_passes_everything_and_is_called_complete(
    make_sandbox: Callable[..., PytestSandbox], broadened: str | None, second_review: Review, why: str
) -> None:
    engine = ScriptedEngine(
        [hyp("H1", 1, file="clamp.py", symbol="clamp")],
        {},
        {"H1": [{"clamp.py": FIRST}]},
        review=PARTIAL,
        broadened={"clamp.py": broadened} if broadened is not None else None,
        second_review=second_review,
    )
    files, report = heal(make_sandbox(PROJECT), engine)
    assert files == FIRST
    assert report.review == PARTIAL  # the verdict on the patch kept
    assert any(n.startswith("not broadened after the reviewer's partial verdict") and why in n for n in report.notes)


@pytest.mark.slow
def test_a_complete_verdict_asks_for_nothing_more(make_sandbox: Callable[..., PytestSandbox]) -> None:
    engine = ScriptedEngine(
        [hyp("H1", 1, file="clamp.py", symbol="clamp")],
        {},
        {"H1": [{"clamp.py": FIRST}]},
        review=WHOLE,
        broadened={"clamp.py": COMPLETE},
    )
    files, report = heal(make_sandbox(PROJECT), engine)
    assert files == FIRST and engine.broaden_requests == [] and len(engine.review_requests) == 1
    assert not any("broadened" in n for n in report.notes)
