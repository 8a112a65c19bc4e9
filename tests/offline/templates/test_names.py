"""Identifier templates (names.py): the wrong name, attribute or function, swapped targets."""

from __future__ import annotations

from tests.helpers.templates import fix, load


def test_name_replace() -> None:
    source = "def area(width, height):\n    return width * width\n"
    edit = fix(source, 2, "def area(width, height):\n    return width * height\n", "name_replace")
    assert load(edit.new_source)["area"](2, 3) == 6


def test_attribute_replace() -> None:
    source = (
        "class Rect:\n"
        "    def __init__(self, width, height):\n"
        "        self.width = width\n"
        "        self.height = height\n"
        "\n"
        "    def area(self):\n"
        "        return self.width * self.width\n"
    )
    expected = source.replace("self.width * self.width", "self.width * self.height")
    edit = fix(source, 7, expected, "attribute_replace")
    assert load(edit.new_source)["Rect"](2, 3).area() == 6


def test_min_instead_of_max() -> None:
    source = "def lowest(values):\n    return max(values)\n"
    edit = fix(source, 2, source.replace("max", "min"), "sibling_call")
    assert load(edit.new_source)["lowest"]([3, 1, 2]) == 1


def test_target_swap() -> None:
    source = "def positions(xs):\n    out = {}\n    for x, i in enumerate(xs):\n        out[x] = i\n    return out\n"
    edit = fix(source, 3, source.replace("for x, i in", "for i, x in"), "target_swap")
    assert load(edit.new_source)["positions"](["a"]) == {"a": 0}
