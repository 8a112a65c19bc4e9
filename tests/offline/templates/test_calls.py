"""Call templates (calls.py): argument swaps, drops and additions; calls added or removed."""

from __future__ import annotations

from tests.helpers.templates import fix, load


def test_arg_swap() -> None:
    source = "def power(base, exp):\n    return pow(exp, base)\n"
    edit = fix(source, 2, source.replace("pow(exp, base)", "pow(base, exp)"), "arg_swap")
    assert load(edit.new_source)["power"](2, 3) == 8


def test_arg_drop() -> None:
    source = "def whole(x):\n    return round(x, 1)\n"
    edit = fix(source, 2, source.replace("round(x, 1)", "round(x)"), "arg_drop")
    assert load(edit.new_source)["whole"](2.6) == 3


def test_arg_add() -> None:
    source = (
        'def decorate(text, suffix=""):\n'
        "    return text + suffix\n"
        "\n"
        "\n"
        "def shout(text, suffix):\n"
        "    return decorate(text.upper())\n"
    )
    edit = fix(source, 6, source.replace("decorate(text.upper())", "decorate(text.upper(), suffix)"), "arg_add")
    assert load(edit.new_source)["shout"]("hi", "!") == "HI!"


def test_wrap_call() -> None:
    source = "def last_index(xs):\n    return xs - 1\n"
    edit = fix(source, 2, source.replace("xs - 1", "len(xs) - 1"), "wrap_call")
    assert load(edit.new_source)["last_index"]([1, 2, 3]) == 2


def test_unwrap_call() -> None:
    source = "def halve(x):\n    return int(x / 2)\n"
    edit = fix(source, 2, source.replace("int(x / 2)", "x / 2"), "unwrap_call")
    assert load(edit.new_source)["halve"](3) == 1.5


def test_unwrap_adds_parentheses_when_precedence_needs_them() -> None:
    source = "def f(a, b):\n    return 2 * int(a + b)\n"
    fix(source, 2, source.replace("int(a + b)", "(a + b)"), "unwrap_call")
