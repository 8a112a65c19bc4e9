"""Literal templates (constants.py): booleans flipped, ints tweaked, missing collection elements."""

from __future__ import annotations

from tests.helpers.templates import fix, load


def test_literal_tweak() -> None:
    source = "def minutes(hours):\n    return hours * 61\n"
    edit = fix(source, 2, source.replace("61", "60"), "literal_tweak")
    assert load(edit.new_source)["minutes"](2) == 120


def test_bool_flip() -> None:
    source = "def positive(x):\n    if x > 0:\n        return False\n    return False\n"
    edit = fix(source, 3, "def positive(x):\n    if x > 0:\n        return True\n    return False\n", "bool_flip")
    assert load(edit.new_source)["positive"](1) is True
    source = "def truthy(x):\n    if x:\n        return\n    return False\n"
    edit = fix(source, 3, source.replace("        return\n", "        return True\n"), "bool_flip")
    assert load(edit.new_source)["truthy"](1) is True


def test_missing_element_in_tuple_literal() -> None:
    source = (
        'VOWELS = ("a", "e", "i", "o")\n'
        "\n"
        "\n"
        "def count_vowels(text):\n"
        "    return sum(1 for ch in text.lower() if ch in VOWELS)\n"
        "\n"
        "\n"
        'SAMPLE = "u"  # used in docs\n'
    )
    edit = fix(source, 1, source.replace('"o")', '"o", "u")'), "iterable_add")
    assert load(edit.new_source)["count_vowels"]("Ubuntu") == 3
