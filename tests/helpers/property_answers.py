"""A project whose bug is a class of inputs (single values of sibling types), and scripted model answers for it:
a QA reproduction with a property test, a partial patch that fixes the reported type only, and the complete patch.

``as_items`` treats every single value but a number as a sequence: ``as_items("ab")`` gives ``["a", "b"]``, and
``as_items(b"ab")`` gives ``[97, 98]``. The failing test reports the string; the property states the claim for
every single value (numbers, strings, bytes). Handling ``str`` alone passes the failing test and the example QA
test, and the property's counterexample (a bytes value) shows it is partial.
"""

from __future__ import annotations

from typing import Any

ITEMS = {
    "items.py": '''
        def as_items(value):
            """The items of ``value``: a list or a tuple gives its items, any single value (a number, a string,
            bytes) is one item."""
            if isinstance(value, (int, float)):
                return [value]
            return list(value)
        ''',
    "tests/test_items.py": """
        from items import as_items


        def test_string_is_one_item():
            assert as_items("ab") == ["ab"]


        def test_list_gives_its_items():
            assert as_items([1, 2]) == [1, 2]


        def test_tuple_gives_its_items():
            assert as_items((1, 2)) == [1, 2]


        def test_number_is_one_item():
            assert as_items(3) == [3]
        """,
}

DETECTIVE = {
    "hypotheses": [
        {
            "title": "as_items splits every single value that is not a number",
            "confidence": 0.9,
            "file": "items.py",
            "symbol": "as_items",
            "line_start": 1,
            "line_end": 6,
            "reasoning": "only int and float are kept whole; a string (and any other single value) is iterated",
            "proposed_fix": "treat anything but a list or a tuple as one item",
        }
    ]
}
QA_TEST = "from items import as_items\n\n\ndef test_qa():\n    assert as_items('xy') == ['xy']\n"
# For every single value (a number, a string, bytes), one item.
PROPERTY = (
    "from hypothesis import given, strategies as st\n\n"
    "from items import as_items\n\n\n"
    "@given(st.one_of(st.integers(), st.text(), st.binary()))\n"
    "def test_single_value_is_one_item(value):\n"
    "    assert as_items(value) == [value]\n"
)
# True of the unpatched code already: lists give their items.
HOLDS_ALREADY = (
    "from hypothesis import given, strategies as st\n\n"
    "from items import as_items\n\n\n"
    "@given(st.lists(st.integers()))\n"
    "def test_list_gives_its_items(value):\n"
    "    assert as_items(value) == value\n"
)
PARTIAL = {
    "explanation": "keep strings whole too",
    "edits": [{"file": "items.py", "search": "(int, float)", "replace": "(int, float, str)"}],
}
COMPLETE = {
    "explanation": "only lists and tuples give their items",
    "edits": [
        {
            "file": "items.py",
            "search": "    if isinstance(value, (int, float)):\n        return [value]\n    return list(value)",
            "replace": "    if isinstance(value, (list, tuple)):\n        return list(value)\n    return [value]",
        }
    ],
}


def qa_answer(property_source: str = PROPERTY) -> dict[str, Any]:
    return {"test_source": QA_TEST, "expected_failure": "AssertionError", "property_source": property_source}


# Complete, in two hunks: strings kept whole at the check, bytes at the return. Dropping the bytes hunk still passes
# the failing test, the example QA test and the passing tests: only the property tells minimization to keep it.
TWO_HUNKS = {
    "explanation": "keep strings and bytes whole",
    "edits": [
        {"file": "items.py", "search": "(int, float)", "replace": "(int, float, str)"},
        {
            "file": "items.py",
            "search": "    return list(value)",
            "replace": "    return [value] if isinstance(value, bytes) else list(value)",
        },
    ],
}
