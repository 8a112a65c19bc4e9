"""The pipeline (candidates.py, targeting.py, render.py): what a line exposes, how candidates are
rendered without reformatting, and how they are ranked, capped and deduplicated."""

from __future__ import annotations

import ast

import pytest

from selfix_action.offline.templates import PRIORS, candidate_edits
from tests.helpers.templates import PATH, REALISTIC, fix, load, realistic


def test_one_line_for_body_gets_header_and_body_mutations() -> None:
    source = "def sum_to(n):\n    total = 0\n    for i in range(1, n): total += i\n    return total\n"
    edit = fix(source, 3, source.replace("range(1, n)", "range(1, n + 1)"))
    assert load(edit.new_source)["sum_to"](4) == 10
    fix(source, 3, source.replace("total += i", "total -= i"))  # the body statement is targeted too


def test_byte_order_mark_is_kept() -> None:
    source = "\ufeffdef f(a, b):\n    return a - b\n"
    edit = fix(source, 2, source.replace("a - b", "a + b"), "binop_replace")
    assert load(edit.new_source[1:])["f"](1, 2) == 3


def test_crlf_and_comments_preserved_for_expression_edit() -> None:
    source = "def f(a, b):  # top\r\n    # explain\r\n    return a < b  # cmp\r\n\r\n\r\nX = 1\r\n"
    edit = fix(source, 3, source.replace("a < b", "a <= b"))
    assert edit.new_source.count("\r\n") == source.count("\r\n")


def test_unparsable_source_gives_nothing() -> None:
    assert candidate_edits("def f(:\n    return 1\n", PATH, [1, 2]) == []


def test_out_of_range_and_blank_lines_are_harmless() -> None:
    source = "x = 1\n\ny = x + 1\n"
    assert candidate_edits(source, PATH, [0, 2, 99]) == []


@pytest.mark.slow
def test_every_edit_parses_differs_is_unique_and_local() -> None:
    edits = candidate_edits(REALISTIC, PATH, range(1, 31))  # its speed is bench/, never a timed assertion
    assert edits
    original = ast.dump(ast.parse(REALISTIC))
    normalized = [e.normalized for e in edits]
    assert len(normalized) == len(set(normalized))
    for edit in edits:
        assert edit.normalized == ast.dump(ast.parse(edit.new_source))
        assert edit.normalized != original
        assert 0 < edit.prior <= 1
        assert edit.template in PRIORS
        assert edit.description.startswith(f"line {edit.line}: ")
        # The text before the reported first changed line is untouched.
        prefix = 0
        while prefix < min(len(REALISTIC), len(edit.new_source)) and REALISTIC[prefix] == edit.new_source[prefix]:
            prefix += 1
        assert REALISTIC[:prefix].count("\n") + 1 >= edit.line


def test_ordering_by_line_then_prior_then_size() -> None:
    lines = [24, 15, 20]
    edits = candidate_edits(REALISTIC, PATH, lines)
    # Grouped in the caller's line order: each group is the line's own list minus earlier duplicates.
    position = 0
    seen: set[str] = set()
    for line in lines:
        group = [e for e in realistic(line) if e.normalized not in seen]
        assert edits[position : position + len(group)] == group
        seen.update(e.normalized for e in group)
        position += len(group)
    assert position == len(edits)
    for line in lines:
        keys = [(-e.prior, e.template) for e in realistic(line)]
        assert [k[0] for k in keys] == sorted(k[0] for k in keys)


def test_candidate_counts_are_bounded() -> None:
    counts = {line: len(realistic(line)) for line in range(8, 30)}
    assert max(counts.values()) <= 400
    assert sum(counts.values()) / len(counts) >= 10  # templates fire on a realistic function
    capped = candidate_edits(REALISTIC, PATH, [20], max_per_line=7)
    assert len(capped) == 7
    assert tuple(capped) == realistic(20)[:7]


def test_duplicate_lines_processed_once() -> None:
    source = "def f(a, b):\n    return a + b\n"
    assert candidate_edits(source, PATH, [2, 2]) == candidate_edits(source, PATH, [2])
