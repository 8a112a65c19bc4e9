"""Operator templates (operators.py): operator swaps that keep the operands' text, wrong operands."""

from __future__ import annotations

from selfix_action.offline.templates import candidate_edits
from tests.helpers.templates import PATH, fix, load


def test_floor_division_to_true_division() -> None:
    source = (
        "def mean(values):\n"
        "\n"
        "    total = sum(values)   # odd  spacing kept\n"
        "    return total  //  len(values)  # mean\n"
    )
    assert load(source)["mean"]([1, 2]) == 1
    expected = source.replace("total  //  len", "total  /  len")
    edit = fix(source, 4, expected, "binop_replace")
    assert edit.description == "line 4: replace `total // len(values)` with `total / len(values)`"
    assert load(edit.new_source)["mean"]([1, 2]) == 1.5


def test_comparison_strictness() -> None:
    source = "def is_adult(age):\n    if age > 18:\n        return True\n    return False\n"
    edit = fix(source, 2, source.replace(">", ">="), "compare_replace")
    assert load(edit.new_source)["is_adult"](18) is True
    assert load(edit.new_source)["is_adult"](17) is False


def test_augmented_assignment_operator_in_method() -> None:
    source = (
        "class Account:\n"
        "    def __init__(self):\n"
        "        self.balance = 0\n"
        "\n"
        "    def deposit(self, amount):\n"
        "        self.balance -= amount\n"
        "        return self.balance\n"
    )
    edit = fix(source, 6, source.replace("-=", "+="), "binop_replace")
    account = load(edit.new_source)["Account"]()
    assert account.deposit(5) == 5


def test_operand_replace_with_literal() -> None:
    source = "def is_even(n):\n    return n % 2 == n\n"
    edit = fix(source, 2, source.replace("== n", "== 0"), "operand_replace")
    assert load(edit.new_source)["is_even"](4) is True


def test_boolop_replace() -> None:
    source = 'def weekend(day):\n    return day == "sat" and day == "sun"\n'
    edit = fix(source, 2, source.replace(" and ", " or "), "boolop_replace")
    assert load(edit.new_source)["weekend"]("sun") is True


def test_unary_replace() -> None:
    source = "def distance(a, b):\n    return -abs(a - b)\n"
    edit = fix(source, 2, source.replace("-abs", "abs"), "unary_replace")
    assert load(edit.new_source)["distance"](1, 4) == 3


def test_non_ascii_before_the_edited_node() -> None:
    source = 'def label(total, n):\n    return "ünï→" + str(total // n)  # ø\n'
    edit = fix(source, 2, source.replace("//", "/"), "binop_replace")
    assert load(edit.new_source)["label"](3, 2) == "ünï→1.5"
    source = 'def greet(name, age):\n    if name == "José" and age > 18:\n        return "olé"\n    return ""\n'
    edit = fix(source, 2, source.replace("age > 18", "age >= 18"))
    assert load(edit.new_source)["greet"]("José", 18) == "olé"


def test_within_a_prior_smaller_changes_come_first() -> None:
    source = "def mean(total, count):\n    return total // count\n"
    ops = [e.description for e in candidate_edits(source, PATH, [2]) if e.template == "binop_replace"]
    assert ops[0] == "line 2: replace `total // count` with `total / count`"
