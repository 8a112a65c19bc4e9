"""Repair templates: each real one-statement bug must get its fix, rendered without reformatting."""

from __future__ import annotations

import ast
import functools
import time
from typing import Any

from selfix_action.offline.templates import PRIORS, SourceEdit, candidate_edits

PATH = "pkg/mod.py"


def load(source: str) -> dict[str, Any]:
    """Execute a (fixed) module and return its namespace: the proof that the fix works."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<fixed>", "exec"), namespace)
    return namespace


def fix(source: str, line: int, expected: str, template: str | None = None) -> SourceEdit:
    """The candidate at `line` that turns `source` into `expected` (compared by AST).

    Also asserts the rendering is byte-identical to `expected`, i.e. nothing outside the edited
    span changed: comments, odd spacing, blank lines and line endings all survive.
    """
    edits = candidate_edits(source, PATH, [line])
    wanted = ast.dump(ast.parse(expected.removeprefix("\ufeff")))
    matches = [e for e in edits if e.normalized == wanted]
    assert matches, f"fix not proposed; got: {[e.description for e in edits]}"
    edit = matches[0]
    assert edit.new_source == expected
    assert edit.path == PATH
    if template is not None:
        assert edit.template == template, edit.description
    return edit


# ----------------------------------------------------------------- the project's example bugs


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


def test_one_line_for_body_gets_header_and_body_mutations() -> None:
    source = "def sum_to(n):\n    total = 0\n    for i in range(1, n): total += i\n    return total\n"
    edit = fix(source, 3, source.replace("range(1, n)", "range(1, n + 1)"))
    assert load(edit.new_source)["sum_to"](4) == 10
    fix(source, 3, source.replace("total += i", "total -= i"))  # the body statement is targeted too


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


def test_min_instead_of_max() -> None:
    source = "def lowest(values):\n    return max(values)\n"
    edit = fix(source, 2, source.replace("max", "min"), "sibling_call")
    assert load(edit.new_source)["lowest"]([3, 1, 2]) == 1


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


# ----------------------------------------------------------------------- one test per template


def test_name_replace() -> None:
    source = "def area(width, height):\n    return width * width\n"
    edit = fix(source, 2, "def area(width, height):\n    return width * height\n", "name_replace")
    assert load(edit.new_source)["area"](2, 3) == 6


def test_operand_replace_with_literal() -> None:
    source = "def is_even(n):\n    return n % 2 == n\n"
    edit = fix(source, 2, source.replace("== n", "== 0"), "operand_replace")
    assert load(edit.new_source)["is_even"](4) is True


def test_arg_swap() -> None:
    source = "def power(base, exp):\n    return pow(exp, base)\n"
    edit = fix(source, 2, source.replace("pow(exp, base)", "pow(base, exp)"), "arg_swap")
    assert load(edit.new_source)["power"](2, 3) == 8


def test_target_swap() -> None:
    source = "def positions(xs):\n    out = {}\n    for x, i in enumerate(xs):\n        out[x] = i\n    return out\n"
    edit = fix(source, 3, source.replace("for x, i in", "for i, x in"), "target_swap")
    assert load(edit.new_source)["positions"](["a"]) == {"a": 0}


def test_byte_order_mark_is_kept() -> None:
    source = "\ufeffdef f(a, b):\n    return a - b\n"
    edit = fix(source, 2, source.replace("a - b", "a + b"), "binop_replace")
    assert load(edit.new_source[1:])["f"](1, 2) == 3


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


def test_literal_tweak() -> None:
    source = "def minutes(hours):\n    return hours * 61\n"
    edit = fix(source, 2, source.replace("61", "60"), "literal_tweak")
    assert load(edit.new_source)["minutes"](2) == 120


def test_condition_narrow() -> None:
    source = 'def sign(x):\n    if x > 0:\n        return "+"\n    return "?"\n'
    expected = source.replace("if x > 0:", "if x is not None and x > 0:")
    edit = fix(source, 2, expected, "condition_narrow")
    assert load(edit.new_source)["sign"](None) == "?"


def test_condition_widen_and_drop_conjunct() -> None:
    source = 'def blank(value):\n    if value == "":\n        return True\n    return False\n'
    edit = fix(source, 2, source.replace('if value == "":', 'if value is None or value == "":'), "condition_widen")
    assert load(edit.new_source)["blank"](None) is True
    source = "def big(x):\n    return x > 0 and x > 10\n"
    edit = fix(source, 2, source.replace("x > 0 and x > 10", "x > 0"), "condition_widen")
    assert load(edit.new_source)["big"](5) is True


def test_condition_negate_removes_not() -> None:
    source = "def has_items(xs):\n    if not xs:\n        return True\n    return False\n"
    edit = fix(source, 2, source.replace("not xs", "xs"))
    assert edit.template in ("condition_negate", "unary_replace")
    assert load(edit.new_source)["has_items"]([1]) is True


def test_bool_flip() -> None:
    source = "def positive(x):\n    if x > 0:\n        return False\n    return False\n"
    edit = fix(source, 3, "def positive(x):\n    if x > 0:\n        return True\n    return False\n", "bool_flip")
    assert load(edit.new_source)["positive"](1) is True
    source = "def truthy(x):\n    if x:\n        return\n    return False\n"
    edit = fix(source, 3, source.replace("        return\n", "        return True\n"), "bool_flip")
    assert load(edit.new_source)["truthy"](1) is True


def test_boolop_replace() -> None:
    source = 'def weekend(day):\n    return day == "sat" and day == "sun"\n'
    edit = fix(source, 2, source.replace(" and ", " or "), "boolop_replace")
    assert load(edit.new_source)["weekend"]("sun") is True


def test_unary_replace() -> None:
    source = "def distance(a, b):\n    return -abs(a - b)\n"
    edit = fix(source, 2, source.replace("-abs", "abs"), "unary_replace")
    assert load(edit.new_source)["distance"](1, 4) == 3


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


def test_stmt_insert_copies_sibling_statement() -> None:
    source = (
        "class Stats:\n"
        "    def __init__(self):\n"
        "        self.count = 0\n"
        "        self.total = 0\n"
        "\n"
        "    def reset(self):\n"
        "        self.count = 0  # start over\n"
        "\n"
        "    def add(self, x):\n"
        "        self.count += 1\n"
        "        self.total += x\n"
    )
    expected = source.replace("# start over\n", "# start over\n        self.total = 0\n")
    edit = fix(source, 7, expected, "stmt_insert")
    assert edit.line == 8
    stats = load(edit.new_source)["Stats"]()
    stats.add(5)
    stats.reset()
    assert stats.total == 0


def test_stmt_delete() -> None:
    source = "def ascending(xs):\n    xs.sort()\n    xs.reverse()\n    return xs\n"
    edit = fix(source, 3, "def ascending(xs):\n    xs.sort()\n    return xs\n", "stmt_delete")
    assert load(edit.new_source)["ascending"]([2, 1, 3]) == [1, 2, 3]


def test_stmt_delete_last_statement_in_block_becomes_pass() -> None:
    source = "def f(xs):\n    for x in xs:\n        xs.clear()\n    return xs\n"
    fix(source, 3, source.replace("xs.clear()", "pass"), "stmt_delete")


def test_return_replace() -> None:
    source = (
        "def find(xs, target):\n"
        "    for i, x in enumerate(xs):\n"
        "        if x == target:\n"
        "            return i\n"
        "    return 0\n"
    )
    edit = fix(source, 5, source.replace("return 0", "return None"), "return_replace")
    assert load(edit.new_source)["find"]([1], 5) is None


# --------------------------------------------------------------------------- robustness


def test_non_ascii_before_the_edited_node() -> None:
    source = 'def label(total, n):\n    return "ünï→" + str(total // n)  # ø\n'
    edit = fix(source, 2, source.replace("//", "/"), "binop_replace")
    assert load(edit.new_source)["label"](3, 2) == "ünï→1.5"
    source = 'def greet(name, age):\n    if name == "José" and age > 18:\n        return "olé"\n    return ""\n'
    edit = fix(source, 2, source.replace("age > 18", "age >= 18"))
    assert load(edit.new_source)["greet"]("José", 18) == "olé"


def test_crlf_and_comments_preserved_for_expression_edit() -> None:
    source = "def f(a, b):  # top\r\n    # explain\r\n    return a < b  # cmp\r\n\r\n\r\nX = 1\r\n"
    edit = fix(source, 3, source.replace("a < b", "a <= b"))
    assert edit.new_source.count("\r\n") == source.count("\r\n")


def test_unparsable_source_gives_nothing() -> None:
    assert candidate_edits("def f(:\n    return 1\n", PATH, [1, 2]) == []


def test_out_of_range_and_blank_lines_are_harmless() -> None:
    source = "x = 1\n\ny = x + 1\n"
    assert candidate_edits(source, PATH, [0, 2, 99]) == []


REALISTIC = '''"""Inventory helpers."""

from collections import Counter

DEFAULT_UNITS = ("kg", "g", "lb")


def restock_report(items, threshold=5, units="kg"):
    """Summarize stock below `threshold` for the given units."""
    counts = Counter()
    low = []
    total = 0
    for index, item in enumerate(items):
        name = item["name"].strip().lower()
        qty = item.get("qty", 0)
        if item.get("unit", units) not in DEFAULT_UNITS:
            continue
        counts[name] += qty
        total += qty
        if qty < threshold and name not in low:
            low.append(name)
        elif qty > threshold * 10:
            counts[name] -= qty // 2
    ratio = len(low) / max(len(items), 1)
    lines = [f"{name}: {counts[name]}" for name in sorted(low)]
    if ratio > 0.5 and total:
        lines.insert(0, "WARNING: most items are low")
    summary = {"low": low, "total": total, "ratio": round(ratio, 2)}
    return summary, "\\n".join(lines[:-1])
'''


@functools.cache
def realistic(line: int) -> tuple[SourceEdit, ...]:
    return tuple(candidate_edits(REALISTIC, PATH, [line]))


def test_every_edit_parses_differs_is_unique_and_local() -> None:
    started = time.perf_counter()
    edits = candidate_edits(REALISTIC, PATH, range(1, 31))
    elapsed = time.perf_counter() - started
    assert edits
    assert elapsed < 20  # ~0.5 s on an idle machine; a generous guard against blow-ups
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


def test_within_a_prior_smaller_changes_come_first() -> None:
    source = "def mean(total, count):\n    return total // count\n"
    ops = [e.description for e in candidate_edits(source, PATH, [2]) if e.template == "binop_replace"]
    assert ops[0] == "line 2: replace `total // count` with `total / count`"


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
