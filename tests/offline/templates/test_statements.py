"""Statement templates (statements.py): returned values, deleted and inserted statements."""

from __future__ import annotations

from tests.helpers.templates import fix, load


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
