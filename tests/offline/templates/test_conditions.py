"""Condition templates (conditions.py): tests narrowed, widened or negated."""

from __future__ import annotations

from tests.helpers.templates import fix, load


def test_condition_narrow() -> None:
    source = 'def sign(x):\n    if x > 0:\n        return "+"\n    return "?"\n'
    expected = source.replace("if x > 0:", "if x is not None and x > 0:")
    edit = fix(source, 2, expected, "condition_narrow")
    assert load(edit.new_source)["sign"](None) == "?"


def test_condition_widen_and_drop_conjunct() -> None:
    source = 'def blank(value):\n    if value == "":\n        return True\n    return False\n'
    edit = fix(source, 2, source.replace('if value == "":', 'if value is None or value == "":'), "condition_widen")
    assert load(edit.new_source)["blank"](None) is True
    source = "def big(x):\n    return x > 0 and x > 10\n"
    edit = fix(source, 2, source.replace("x > 0 and x > 10", "x > 0"), "condition_widen")
    assert load(edit.new_source)["big"](5) is True


def test_condition_negate_removes_not() -> None:
    source = "def has_items(xs):\n    if not xs:\n        return True\n    return False\n"
    edit = fix(source, 2, source.replace("not xs", "xs"))
    assert edit.template in ("condition_negate", "unary_replace")
    assert load(edit.new_source)["has_items"]([1]) is True
