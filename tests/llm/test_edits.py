"""Search/replace edits: exact unique matches, "did you mean" feedback, refused paths."""

from __future__ import annotations

import pytest

from selfix_action.llm.edits import Edit, EditError, apply_edits, replace_once

SOURCE = (
    "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n\n\ndef double(x):\n    return x * 2\n"
)
FILES = {"calc.py": SOURCE, "tests/test_calc.py": "def test_it():\n    assert True\n"}
EDITABLE = {"calc.py"}


def apply(*edits: Edit, protected: tuple[str, ...] = ()) -> dict[str, str]:
    return apply_edits(list(edits), FILES.__getitem__, EDITABLE, protected)


def test_unique_match_is_replaced() -> None:
    files = apply(Edit("calc.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b"))
    assert files == {"calc.py": SOURCE.replace("return a - b", "return a + b", 1)}


def test_several_matches_ask_for_more_context() -> None:
    with pytest.raises(EditError, match=r"matches 2 places \(lines 2, 6\)"):
        apply(Edit("calc.py", "return a - b", "return a + b"))


def test_no_match_shows_the_most_similar_region() -> None:
    with pytest.raises(EditError) as caught:
        apply(Edit("./calc.py", "def double(x):\n    return x*2", "def double(x):\n    return x * 3"))
    message = str(caught.value)
    assert "search text was not found" in message
    assert "lines 9-10" in message and "   10 |     return x * 2" in message


def test_nothing_similar() -> None:
    with pytest.raises(EditError, match="Nothing in the file resembles it"):
        replace_once(SOURCE, "import numpy as np\nnp.zeros(3)", "")


def test_line_numbers_copied_from_the_prompt_are_tolerated() -> None:
    files = apply(Edit("calc.py", "   10 |     return x * 2", "   10 |     return x + x"))
    assert files["calc.py"].endswith("    return x + x\n")


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("tests/test_calc.py", "is a test file"),
        ("conftest.py", "is a test file"),
        ("pyproject.toml", "test, build or CI configuration"),
        (".github/workflows/ci.yml", "CI configuration"),
        ("../outside.py", "outside the repository"),
    ],
)
def test_protected_paths_are_refused(path: str, reason: str) -> None:
    with pytest.raises(EditError, match="refused") as caught:
        apply(Edit(path, "x", "y"))
    assert reason in str(caught.value)


def test_user_protected_pattern() -> None:
    with pytest.raises(EditError, match="protected by pattern"):
        apply(Edit("calc.py", "x * 2", "x * 3"), protected=("calc*.py",))


def test_unknown_file_suggests_a_known_one() -> None:
    with pytest.raises(EditError, match=r"unknown file.*Did you mean calc\.py"):
        apply(Edit("calc2.py", "x", "y"))


def test_edit_that_breaks_the_syntax() -> None:
    with pytest.raises(EditError, match="no longer parses"):
        apply(Edit("calc.py", "def double(x):", "def double(x:"))


def test_edit_that_changes_nothing() -> None:
    with pytest.raises(EditError, match="change nothing"):
        apply(Edit("calc.py", "x * 2", "x * 2"))


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(EditError) as caught:
        apply(Edit("tests/test_calc.py", "x", "y"), Edit("calc.py", "nope nope", "y"))
    assert "edit 1 (tests/test_calc.py)" in str(caught.value) and "edit 2 (calc.py)" in str(caught.value)


def test_sequential_edits_on_one_file() -> None:
    files = apply(
        Edit("calc.py", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b"),
        Edit("calc.py", "return x * 2", "return 2 * x"),
    )
    assert "return a + b" in files["calc.py"] and "return 2 * x" in files["calc.py"]
