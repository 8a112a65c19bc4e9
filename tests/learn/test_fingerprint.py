from __future__ import annotations

from selfix_action.repair.fingerprint import failure_signature, message_shape, signature, similarity
from selfix_action.repair.values import Frame, TestResult, TestStatus


def result(exc: str, message: str, frame: tuple[str, int, str] | None) -> TestResult:
    frames = (Frame(file=frame[0], line=frame[1], function=frame[2]),) if frame else ()
    return TestResult(nodeid="t::x", status=TestStatus.FAILED, exc_type=exc, message=message, frames=frames)


def test_message_shape_replaces_literals() -> None:
    assert message_shape("assert 1 == 1.5\nmore") == "assert <num> == <num>"
    assert message_shape("KeyError: 'apple'") == "KeyError: <str>"
    assert message_shape("<Foo object at 0xdeadbeef> bad") == "<obj> bad"
    assert message_shape("x1 = -3e5") == "x1 = <num>"


def test_fingerprint_is_stable_across_values_and_lines() -> None:
    a = failure_signature(result("AssertionError", "assert 1 == 1.5", ("m.py", 11, "average")))
    b = failure_signature(result("AssertionError", "assert 3 == 2.5", ("m.py", 40, "average")))
    assert a.fingerprint == b.fingerprint and len(a.fingerprint) == 16
    assert a.frame == "m.py:average"


def test_fingerprint_changes_with_each_part() -> None:
    base = signature("AssertionError", "assert 1 == 2", "m.py:f")
    assert signature("ValueError", "assert 1 == 2", "m.py:f").fingerprint != base.fingerprint
    assert signature("AssertionError", "assert f(1)", "m.py:f").fingerprint != base.fingerprint
    assert signature("AssertionError", "assert 1 == 2", "m.py:g").fingerprint != base.fingerprint


def test_similarity_grades() -> None:
    base = signature("AssertionError", "assert 1 == 2", "m.py:f")
    assert similarity(base, signature("AssertionError", "assert 5 == 6", "m.py:f")) == 1.0
    assert similarity(base, signature("AssertionError", "assert 5 == 6", "n.py:g")) == 0.7
    assert similarity(base, signature("AssertionError", "other", "m.py:f")) == 0.4
    assert similarity(base, signature("AssertionError", "other", "n.py:g")) == 0.25
    assert similarity(base, signature("TypeError", "assert 1 == 2", "m.py:f")) == 0.0
