"""The mutable-default template (defaults.py): the None sentinel, proposed from the body's lines."""

from __future__ import annotations

from tests.helpers.templates import fix, load


def test_mutable_default_from_body_line() -> None:
    source = "def add_item(item, items=[]):\n    items.append(item)\n    return items\n"
    buggy = load(source)["add_item"]
    buggy(1)
    assert buggy(2) == [1, 2]  # state leaks between calls
    expected = (
        "def add_item(item, items=None):\n"
        "    if items is None:\n"
        "        items = []\n"
        "    items.append(item)\n"
        "    return items\n"
    )
    edit = fix(source, 2, expected, "mutable_default")
    assert edit.line == 1
    fixed = load(edit.new_source)["add_item"]
    fixed(1)
    assert fixed(2) == [2]
    assert fixed(3, [0]) == [0, 3]


def test_mutable_default_after_docstring_with_crlf_and_tabs() -> None:
    source = (
        'def tally(word, counts={}):\r\n\t"""Count words."""\r\n'
        "\tcounts[word] = counts.get(word, 0) + 1\r\n\treturn counts\r\n"
    )
    expected = (
        'def tally(word, counts=None):\r\n\t"""Count words."""\r\n'
        "\tif counts is None:\r\n\t\tcounts = {}\r\n"
        "\tcounts[word] = counts.get(word, 0) + 1\r\n\treturn counts\r\n"
    )
    edit = fix(source, 3, expected, "mutable_default")
    tally = load(edit.new_source)["tally"]
    tally("a")
    assert tally("b") == {"b": 1}
