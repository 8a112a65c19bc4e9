"""The families for the bug kinds an adopter's first week showed missing (issue 22): a wrong dict key
(keys.py), a removed `is not None` check and a truthiness test meant as one (nones.py), and a format
string's fields in the wrong order (fields.py). Each makes the fix on a small buggy module (the fixed
code is run to prove it) and stays within its bound, so it never floods a line's candidates."""

from __future__ import annotations

from collections import Counter

import pytest

from selfix_action.offline.templates import candidate_edits
from tests.helpers.templates import PATH, fix, load


def _count(source: str, line: int, template: str) -> int:
    return Counter(edit.template for edit in candidate_edits(source, PATH, [line]))[template]


# ------------------------------------------------------------------------------ key_replace
ORDERS = (
    "def total(order):\n"
    '    return sum(line["price"] * line["quantity"] for line in order["lines"])\n'
    "\n"
    "\n"
    "def count(order):\n"
    '    return sum(line["quantity"] for line in order["lnies"])\n'
)


def test_a_misspelt_key_becomes_the_key_the_file_uses() -> None:
    edit = fix(ORDERS, 6, ORDERS.replace('order["lnies"]', 'order["lines"]'), "key_replace")
    assert load(edit.new_source)["count"]({"lines": [{"quantity": 2}, {"quantity": 3}]}) == 5
    first = next(e for e in candidate_edits(ORDERS, PATH, [6]) if e.template == "key_replace")
    assert first.new_source == edit.new_source  # the spelling neighbour is the family's first guess
    tried = [e for e in candidate_edits(ORDERS, PATH, [6]) if e.description.startswith('line 6: replace `"lnies"`')]
    assert 1 <= len(tried) <= 5


def test_the_wrong_one_of_a_mappings_known_keys_becomes_another() -> None:
    source = (
        "def greeting(user):\n"
        '    if "name" not in user:\n'
        '        return "Hello!"\n'
        '    return "Hello " + user["email"] + "!"\n'
        "\n"
        "\n"
        "def address(user):\n"
        '    return user.get("email", "")\n'
    )
    edit = fix(source, 4, source.replace('user["email"]', 'user["name"]'), "key_replace")
    assert load(edit.new_source)["greeting"]({"name": "Ada", "email": "a@b"}) == "Hello Ada!"
    # `.get` keys and `in` tests are keys too
    fix(source, 8, source.replace('user.get("email"', 'user.get("name"'), "key_replace")


def test_a_key_written_into_a_dict_display_is_only_respelt() -> None:
    source = (
        "def row(user):\n"
        '    return {"nmae": user.name, "age": user.age}\n'
        "\n"
        "\n"
        "def header(row):\n"
        '    return row["name"].title()\n'
    )
    edit = fix(source, 2, source.replace('"nmae"', '"name"'), "key_replace")
    assert "name" in load(edit.new_source)["row"](type("U", (), {"name": "a", "age": 3}))
    # an unnamed display's other keys are the reader's: "age" is not tried for "nmae", nor "name" for "age"
    assert _count(source, 2, "key_replace") == 1


def test_strings_that_are_no_keys_are_left_alone() -> None:
    source = 'def shout(order):\n    print("lines")\n    return order["lines"]\n'
    assert _count(source, 2, "key_replace") == 0


# ------------------------------------------------------------------------------- none_check
COUPON = (
    "class Order:\n"
    "    def __init__(self, amount, coupon=None):\n"
    "        self.amount = amount\n"
    "        self.coupon = coupon\n"
    "\n"
    "    def discount(self):\n"
    "        if self.coupon.active:\n"
    "            return self.amount * self.coupon.percent / 100\n"
    "        return 0\n"
    "\n"
    "    def label(self):\n"
    "        if not self.coupon.active:\n"
    '            return "full price"\n'
    '        return f"{self.coupon.percent}% off"\n'
)


def test_a_removed_none_check_on_a_dereferenced_attribute_is_restored() -> None:
    fixed = COUPON.replace("if self.coupon.active:", "if self.coupon is not None and self.coupon.active:")
    edit = fix(COUPON, 7, fixed, "none_check")
    assert load(edit.new_source)["Order"](100).discount() == 0
    # a test that escapes gets the `is None or` form
    fixed = COUPON.replace("if not self.coupon.active:", "if self.coupon is None or not self.coupon.active:")
    edit = fix(COUPON, 12, fixed, "none_check")
    assert load(edit.new_source)["Order"](100).label() == "full price"


def test_the_check_goes_before_the_operand_that_dereferences() -> None:
    source = "def email(user):\n    if user.active and user.profile.email:\n        return user.profile.email\n"
    fixed = source.replace(
        "user.active and user.profile.email:", "user.active and user.profile is not None and user.profile.email:"
    )
    edit = fix(source, 2, fixed, "none_check")
    user = type("U", (), {"active": True, "profile": None})
    assert load(edit.new_source)["email"](user) is None


def test_a_statement_using_a_value_that_may_be_none_goes_under_a_check() -> None:
    source = 'def send(to, body, log=None):\n    log.append(f"to {to}")\n    return len(body)\n'
    fixed = source.replace('    log.append(f"to {to}")\n', '    if log is not None:\n        log.append(f"to {to}")\n')
    edit = fix(source, 2, fixed, "none_check")
    assert load(edit.new_source)["send"]("ada", "hi") == 2


def test_an_assignment_from_a_value_that_may_be_none_gets_a_conditional_value() -> None:
    source = (
        "class Task:\n"
        "    owner = None\n"
        "\n"
        "    def assignee(self):\n"
        "        name = self.owner.name\n"
        "        return name or 'nobody'\n"
    )
    fixed = source.replace("name = self.owner.name", "name = self.owner.name if self.owner is not None else None")
    edit = fix(source, 5, fixed, "none_check")
    assert load(edit.new_source)["Task"]().assignee() == "nobody"


def test_statements_on_values_nothing_says_may_be_none_are_not_guarded() -> None:
    source = "def add(items, item):\n    items.append(item)\n    return items\n"
    assert _count(source, 2, "none_check") == 0


# ------------------------------------------------------------------------------- field_swap
def test_two_fields_of_an_f_string_swap_with_their_formats() -> None:
    source = 'def line(name, quantity, price):\n    return f"{name} x {quantity} @ {price:.2f}"\n'
    edit = fix(source, 2, source.replace("{name} x {quantity}", "{quantity} x {name}"), "field_swap")
    assert load(edit.new_source)["line"]("apple", 3, 0.5) == "3 x apple @ 0.50"
    assert _count(source, 2, "field_swap") == 3  # every pair once, neighbours first


def test_values_alone_swap_when_the_fields_are_formatted_differently() -> None:
    source = 'def row(name, amount):\n    return f"{amount:<6}|{name:>8.2f}"\n'
    edit = fix(source, 2, source.replace("{amount:<6}|{name:>8.2f}", "{name:<6}|{amount:>8.2f}"), "field_swap")
    assert load(edit.new_source)["row"]("tea", 2.5) == "tea   |    2.50"


def test_the_values_of_a_percent_format_swap() -> None:
    source = 'def line(quantity, name):\n    return "%d x %s" % (name, quantity)\n'
    edit = fix(source, 2, source.replace("(name, quantity)", "(quantity, name)"), "field_swap")
    assert load(edit.new_source)["line"](3, "apple") == "3 x apple"


@pytest.mark.parametrize("text", ['f"{a=} {b}"', 'f"{a}"', 'f"{a} {a}"'])
def test_self_documenting_single_and_equal_fields_are_not_swapped(text: str) -> None:
    assert _count(f"def f(a, b):\n    return {text}\n", 2, "field_swap") == 0


# -------------------------------------------------------------------------------- none_test
SETTINGS = (
    "def timeout(config, default=30):\n"
    '    value = config.get("timeout")\n'
    "    if value:\n"
    "        return value\n"
    "    return default\n"
)


def test_a_truthiness_test_becomes_an_is_not_none_test() -> None:
    edit = fix(SETTINGS, 3, SETTINGS.replace("if value:", "if value is not None:"), "none_test")
    assert load(edit.new_source)["timeout"]({"timeout": 0}) == 0
    source = "def title(name):\n    if not name:\n        return 'untitled'\n    return name\n"
    edit = fix(source, 2, source.replace("if not name:", "if name is None:"), "none_test")
    assert load(edit.new_source)["title"]("") == ""


def test_each_operand_of_a_test_can_become_an_is_not_none_test() -> None:
    source = "def adult(user):\n    return bool(user and user.age and user.age >= 18)\n"
    assert _count(source, 2, "none_test") == 0  # bool(...) is a value, not a test the statement makes
    source = "def known_age(user):\n    if user and user.age:\n        return True\n    return False\n"
    edit = fix(source, 2, source.replace("user and user.age:", "user and user.age is not None:"), "none_test")
    assert load(edit.new_source)["known_age"](type("U", (), {"age": 0})) is True


def test_an_or_default_becomes_a_none_default() -> None:
    source = "def label(item):\n    title = item.get('title')\n    return title or item['id']\n"
    fixed = source.replace("title or item['id']", "title if title is not None else item['id']")
    edit = fix(source, 3, fixed, "none_test")
    assert load(edit.new_source)["label"]({"id": 7, "title": ""}) == ""


def test_an_or_in_a_test_or_of_a_call_is_no_default() -> None:
    assert _count("def f(a, b):\n    return compute(a) or b\n", 2, "none_test") == 0  # the call would run twice
    test = "def f(a, b):\n    if a or b:\n        return 1\n"
    assert {e.description for e in candidate_edits(test, PATH, [2]) if e.template == "none_test"} == {
        "line 2: replace `a` with `a is not None`",
        "line 2: replace `b` with `b is not None`",
    }
