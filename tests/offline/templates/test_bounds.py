"""Off-by-one templates (bounds.py): range, index, slice and comparison bounds; skipped items."""

from __future__ import annotations

from tests.helpers.templates import fix, load


def test_range_upper_bound_off_by_one() -> None:
    source = (
        "def sum_to(n):\n"
        "    total = 0\n"
        "    for i in range(1, n):  # 1..n inclusive\n"
        "        total += i\n"
        "    return total\n"
    )
    assert load(source)["sum_to"](4) == 6  # the bug
    edit = fix(source, 3, source.replace("range(1, n)", "range(1, n + 1)"), "off_by_one")
    assert edit.line == 3
    assert edit.description == "line 3: replace `n` with `n + 1`"
    assert load(edit.new_source)["sum_to"](4) == 10


def test_while_condition_drops_minus_one() -> None:
    source = (
        "def total_len(xs):\n"
        "    i = 0\n"
        "    n = 0\n"
        "    while i < len(xs) - 1:\n"
        "        n += len(xs[i])\n"
        "        i += 1\n"
        "    return n\n"
    )
    edit = fix(source, 4, source.replace("len(xs) - 1", "len(xs)"), "off_by_one")
    assert load(edit.new_source)["total_len"](["ab", "c", "def"]) == 6


def test_off_by_one_subscript_and_slice() -> None:
    source = "def last(xs):\n    return xs[len(xs)]\n"
    edit = fix(source, 2, source.replace("xs[len(xs)]", "xs[len(xs) - 1]"), "off_by_one")
    assert load(edit.new_source)["last"]([1, 2]) == 2
    source = "def copy(xs):\n    return xs[:-1]\n"
    edit = fix(source, 2, source.replace("xs[:-1]", "xs[:]"), "off_by_one")
    assert load(edit.new_source)["copy"]([1, 2]) == [1, 2]
    source = "def rest(xs, i):\n    return xs[i:]\n"
    edit = fix(source, 2, source.replace("xs[i:]", "xs[i + 1:]"), "off_by_one")
    assert load(edit.new_source)["rest"]([1, 2, 3], 0) == [2, 3]


def test_slice_add_skips_header_row() -> None:
    source = "def values(lines):\n    return [int(line) for line in lines]\n"
    edit = fix(source, 2, source.replace("in lines]", "in lines[1:]]"), "slice_add")
    assert load(edit.new_source)["values"](["n", "1", "2"]) == [1, 2]
