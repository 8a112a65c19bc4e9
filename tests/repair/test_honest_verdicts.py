"""Honest verdicts in the loop, on small real projects in the real sandbox: candidates that cannot make sense are
refused untried, the most plausible passing candidate wins over the first, and the report's confidence says why."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from selfix_action.repair.loop import HealingLoop, LoopConfig
from selfix_action.repair.report import HealReport, StopReason, render_markdown
from selfix_action.repair.values import (
    VerifyStage,
)
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.playback import Playback, codes

SHAPES = {
    "shapes.py": """
        def has_shape(obj):
            return hasattr(obj, "size")
        """,
    "tests/test_shapes.py": """
        from shapes import has_shape


        class Array:
            shape = (2,)


        def test_array_has_a_shape():
            assert has_shape(Array())


        def test_int_has_none():
            assert not has_shape(1)
        """,
}


@pytest.mark.slow
def test_a_candidate_that_cannot_make_sense_is_refused_untried(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(SHAPES)
    fixed = 'def has_shape(obj):\n    return hasattr(obj, "shape")\n'
    engine = Playback(
        "shapes.py",
        "has_shape",
        [
            {"shapes.py": fixed.replace('hasattr(obj, "shape")', 'hasattr("shape", obj)')},  # a literal for obj
            {"shapes.py": fixed.replace("return", "return shapes_of(obj) and")},  # a name bound nowhere
            {"shapes.py": fixed},
        ],
    )
    events: list[tuple[str, dict]] = []
    loop = HealingLoop(sandbox, engine, trace=lambda step, message="", **data: events.append((step, data)))
    report = loop.run().report
    assert report.stop_reason is StopReason.HEALED
    assert report.patch is not None and '"shape"' in report.patch.diff
    assert report.candidates_rejected_static == 2
    assert report.candidates_tried == 1  # only the sensible one ran tests
    refused = [v for v in engine.feedback if v.stage is VerifyStage.SANITY]
    assert [v.test_runs for v in refused] == [0, 0]
    assert "`hasattr()` gets the literal `'shape'` where an object is needed" in refused[0].detail
    assert "name `shapes_of` is bound nowhere in scope" in refused[1].detail
    assert [data["candidate"] for step, data in events if step == "sanity"] == ["C1", "C2"]
    assert "refused before any test ran" in render_markdown(report)


PORTS = {
    "ports.py": """
        def parse_port(text):
            if not text.isdigit():
                raise ValueError("not a port: " + text)
            return int(text)
        """,
    "tests/test_ports.py": """
        from ports import parse_port


        def test_spaces_around():
            assert parse_port(" 80 ") == 80


        def test_plain():
            assert parse_port("8080") == 8080
        """,
}
GUARD_DELETED = "def parse_port(text):\n    return int(text)\n"
PORT_FIXED = (
    "def parse_port(text):\n"
    "    if not text.strip().isdigit():\n"
    '        raise ValueError("not a port: " + text)\n'
    "    return int(text)\n"
)


@pytest.mark.slow
def test_the_most_plausible_passing_candidate_wins_over_the_first(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(PORTS)
    engine = Playback("ports.py", "parse_port", [{"ports.py": GUARD_DELETED}, {"ports.py": PORT_FIXED}])
    report = HealingLoop(sandbox, engine).run().report
    assert report.stop_reason is StopReason.HEALED
    assert report.patch is not None and report.patch.candidate_id == "C2"  # the guard deletion passed first
    assert "preferred to 1 other passing candidate" in report.hypotheses[0].outcome
    # Two tests run the edit: never high (thin_tests), and nothing else lowers it.
    assert report.confidence is not None and report.confidence.level == "medium", report.confidence
    # The guard deletion, which passed too, behaves otherwise on an input the tests never tried (the probe).
    assert [r.code for r in report.confidence.reasons if r.level != "high"] == ["thin_tests", "second_solution_differs"]
    assert report.behaviour is not None and report.behaviour.second_source.startswith("another candidate")
    assert any("ValueError" in d.before and "ValueError" not in d.after for d in report.behaviour.disagreements), (
        report.behaviour
    )
    assert report.confidence.alternatives_passed == 1


@pytest.mark.slow
def test_a_deleted_guard_is_never_high_confidence(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(PORTS)
    report = HealingLoop(sandbox, Playback("ports.py", "parse_port", [{"ports.py": GUARD_DELETED}])).run().report
    assert report.stop_reason is StopReason.HEALED  # it passes every test; the confidence says what it is
    assert report.confidence is not None and report.confidence.level == "low"
    assert "pattern:guard_deleted" in codes(report)
    assert "deletes the guard `if not text.isdigit(): ...`" in render_markdown(report)
    assert HealReport.model_validate_json(report.model_dump_json()).confidence == report.confidence


TOTALS = {
    "totals.py": """
        def total(items):
            if len(items) < 3:
                return sum(items)
            result = 0
            for x in items:
                if x > 0:
                    result += x
            return result
        """,
    "tests/test_totals.py": """
        from totals import total


        def test_negative():
            assert total([-1, 2, 3, 4]) == 8


        def test_two():
            assert total([1, 2]) == 3


        def test_three():
            assert total([1, 2, 3]) == 6


        def test_four():
            assert total([4, 5, 6, 7]) == 22


        def test_same():
            assert total([2, 2, 2]) == 6
        """,
}
SOURCE = TOTALS["totals.py"]
FAST_PATH_FOR_ALL = (
    "def total(items):\n    if len(items) < 100:\n        return sum(items)\n    result = 0\n    for x in items:\n"
    "        if x > 0:\n            result += x\n    return result\n"
)
TOTAL_FIXED = (
    "def total(items):\n    if len(items) < 3:\n        return sum(items)\n    result = 0\n    for x in items:\n"
    "        result += x\n    return result\n"
)


@pytest.mark.slow
def test_a_patch_that_changes_what_passing_tests_execute_is_low(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(TOTALS)
    report = HealingLoop(sandbox, Playback("totals.py", "total", [{"totals.py": FAST_PATH_FOR_ALL}])).run().report
    assert report.stop_reason is StopReason.HEALED
    assert report.confidence is not None and report.confidence.level == "low"
    changed = next(r for r in report.confidence.reasons if r.code == "p2p_behaviour_changed")
    assert changed.level == "low" and changed.text.startswith("3 of 4 passing test(s) execute other lines")


@pytest.mark.slow
def test_of_equally_plausible_patches_the_one_keeping_passing_paths_wins(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    sandbox = make_sandbox(TOTALS)
    engine = Playback("totals.py", "total", [{"totals.py": FAST_PATH_FOR_ALL}, {"totals.py": TOTAL_FIXED}])
    events: list[tuple[str, str]] = []
    loop = HealingLoop(sandbox, engine, trace=lambda step, message="", **data: events.append((step, message)))
    report = loop.run().report
    assert report.patch is not None and report.patch.candidate_id == "C2"
    assert ("choose", "C2 changes fewer passing tests' paths than C1") in events
    assert report.confidence is not None and "p2p_behaviour_unchanged" in codes(report)
    assert report.test_runs >= 2 + 2  # both were confirmed on the whole suite


@pytest.mark.slow
def test_without_alternatives_the_first_passing_candidate_is_taken(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(PORTS)
    engine = Playback("ports.py", "parse_port", [{"ports.py": GUARD_DELETED}, {"ports.py": PORT_FIXED}])
    report = HealingLoop(sandbox, engine, LoopConfig(alternatives=0)).run().report
    assert report.patch is not None and report.patch.candidate_id == "C1"
    assert report.candidates_tried == 1
    assert report.confidence is not None and report.confidence.level == "low"


class FeedbackPlayback(Playback):
    independent_candidates = False  # as an LLM engine: each candidate would be a model call


@pytest.mark.slow
def test_a_feedback_driven_engine_is_not_asked_for_alternatives(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(PORTS)
    engine = FeedbackPlayback("ports.py", "parse_port", [{"ports.py": GUARD_DELETED}, {"ports.py": PORT_FIXED}])
    report = HealingLoop(sandbox, engine).run().report
    assert report.patch is not None and report.patch.candidate_id == "C1" and report.candidates_tried == 1
    assert report.confidence is not None and report.confidence.level == "low"  # the deleted guard says so
    assert not any(code.startswith("alternatives") for code in codes(report))
