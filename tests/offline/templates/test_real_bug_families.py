"""The repairs real bugs need (issue 14): unbound names, literals for named constants, missing
None/empty guards, omitted keyword arguments, sibling methods, assertion-guided string edits and
pairs of edits. Each makes the fix on a small buggy module (the fixed code is run to prove it) and
stays within its bound, so it never floods a line's candidates."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

from selfix_action.offline.templates import Hints, candidate_edits, pair_edits
from selfix_action.offline.templates.hints import compared_strings
from selfix_action.offline.templates.pairs import PER_LINE
from selfix_action.offline.templates.strings import literal_edit
from tests.helpers.templates import PATH, fix, load


def _count(source: str, line: int, template: str, hints: Hints | None = None) -> int:
    edits = candidate_edits(source, PATH, [line], hints=hints or Hints())
    return Counter(edit.template for edit in edits)[template]


# ------------------------------------------------------------------------------ unbound_name
def test_an_unbound_name_becomes_its_in_scope_spelling_neighbour() -> None:
    source = "def area(width, height):\n    return width * heigth\n"
    edit = fix(source, 2, source.replace("heigth", "height"), "unbound_name")
    assert load(edit.new_source)["area"](2, 3) == 6
    assert _count(source, 2, "unbound_name") == 1  # `width` is not spelled like `heigth`


def test_an_unbound_callee_becomes_a_function_in_scope() -> None:
    source = "def normalise(s):\n    return s.strip()\n\n\ndef clean(s):\n    return normalize(s)\n"
    edit = fix(source, 6, source.replace("normalize(s)", "normalise(s)"), "unbound_name")
    assert load(edit.new_source)["clean"](" a ") == "a"


def test_unbound_name_leaves_bound_and_possibly_bound_names_alone() -> None:
    bound = "def area(width, height):\n    return width * height\n"
    assert _count(bound, 2, "unbound_name") == 0
    star = "from os.path import *\n\ndef f(path):\n    return jion(path, 'a')\n"
    assert _count(star, 4, "unbound_name") == 0  # a star import may bind anything
    elsewhere = "def setup():\n    global cache\n    cache = {}\n\ndef get(key):\n    return cache[key]\n"
    assert _count(elsewhere, 6, "unbound_name") == 0  # bound at module level by another function
    many = "def f(total_a, total_b, total_c, total_d, total_e):\n    return total_x\n"
    assert _count(many, 2, "unbound_name") == 4  # spelling neighbours are capped


# --------------------------------------------------------------------------- literal_to_name
def test_a_path_separator_literal_becomes_os_pathsep() -> None:
    source = "import os\n\n\ndef search_path(folders):\n    return ':'.join(folders)\n"
    edit = fix(source, 5, source.replace("':'", "os.pathsep"), "literal_to_name")
    namespace = load(edit.new_source)
    namespace["os"] = SimpleNamespace(pathsep=";")  # the platform where the literal was wrong
    assert namespace["search_path"](["a", "b"]) == "a;b"
    assert _count(source, 5, "literal_to_name") == 1


def test_a_literal_becomes_the_module_or_class_constant_of_that_value() -> None:
    source = (
        "MAX_RETRIES = 3\n"
        "\n"
        "\n"
        "class Client:\n"
        "    TIMEOUT = 30\n"
        "\n"
        "    def plan(self):\n"
        "        return [30] * 3\n"
        "\n"
        "    def attempts(self):\n"
        "        return list(range(3))\n"
    )
    fix(source, 11, source.replace("range(3)", "range(MAX_RETRIES)"), "literal_to_name")
    edit = fix(source, 8, source.replace("[30] * 3", "[self.TIMEOUT] * 3"), "literal_to_name")
    client = load(edit.new_source)["Client"]()
    client.TIMEOUT = 5
    assert client.plan() == [5, 5, 5]
    # The constant's own definition is never replaced by its name.
    assert _count(source, 1, "literal_to_name") == 0
    assert _count(source, 5, "literal_to_name") == 0


# -------------------------------------------------------------------------------- none_guard
def test_a_none_guard_at_the_top_of_the_function() -> None:
    source = 'def first_word(text):\n    """The first word."""\n    words = text.split()\n    return words[0]\n'
    expected = source.replace("    words =", "    if text is None:\n        return None\n    words =")
    edit = fix(source, 3, expected, "none_guard")
    assert load(edit.new_source)["first_word"](None) is None
    assert edit.description.endswith("at the top of the function")


def test_an_empty_guard_before_the_failing_line_returns_the_functions_empty_value() -> None:
    source = (
        "def tail(items):\n"
        "    rest = list(items)\n"
        "    if len(rest) > 10:\n"
        "        return rest[-10:]\n"
        "    last = rest[-1]\n"
        "    return [last]\n"
    )
    expected = source.replace("    last =", "    if not rest:\n        return []\n    last =")
    edit = fix(source, 5, expected, "none_guard")
    assert load(edit.new_source)["tail"]([]) == []
    assert load(edit.new_source)["tail"]([1, 2]) == [2]
    # Two places (here and the top) x a None and an empty guard per name, at most two names.
    assert _count(source, 5, "none_guard") <= 2 * 2 * 2


def test_no_guard_outside_functions_or_between_if_and_elif() -> None:
    assert _count("x = None\ny = x.real\n", 2, "none_guard") == 0
    source = "def sign(x):\n    if x > 0:\n        return 1\n    elif x < 0:\n        return -1\n    return 0\n"
    edits = candidate_edits(source, PATH, [4])
    assert not [e for e in edits if e.template == "none_guard" and "before line 4" in e.description]


# ------------------------------------------------------------------------------- keyword_add
def test_a_keyword_the_same_files_callee_accepts() -> None:
    source = (
        "def parse(text, strict=False):\n"
        "    if strict and not text:\n"
        "        raise ValueError('empty')\n"
        "    return text\n"
        "\n"
        "\n"
        "def load(text, strict):\n"
        "    return parse(text)\n"
    )
    edit = fix(source, 8, source.replace("parse(text)", "parse(text, strict=strict)"), "keyword_add")
    namespace = load(edit.new_source)
    assert namespace["load"]("a", True) == "a"
    try:
        namespace["load"]("", True)
    except ValueError:
        pass
    else:
        raise AssertionError("the keyword was not passed")
    fix(source, 8, source.replace("parse(text)", "parse(text, strict=True)"), "keyword_add")  # the bool default flipped
    assert _count(source, 8, "keyword_add") == 2


def _project(root: Path, files: dict[str, str]) -> Hints:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    listed = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
    return Hints.from_failures(
        [], read_file=lambda rel: (root / rel).read_text(encoding="utf-8"), list_files=lambda: listed
    )


def test_a_keyword_the_callee_in_another_project_file_accepts(tmp_path: Path) -> None:
    reader = (
        "import json\n"
        "\n"
        "\n"
        "def read_config(path, *, encoding='ascii', defaults=None):\n"
        "    with open(path, encoding=encoding) as handle:\n"
        "        return {**(defaults or {}), **json.load(handle)}\n"
    )
    caller = "from .reader import read_config\n\n\ndef settings(path, encoding):\n    return read_config(path)\n"
    hints = _project(tmp_path, {"src/app/__init__.py": "", "src/app/reader.py": reader, "src/app/settings.py": caller})
    source = (tmp_path / "src/app/settings.py").read_text(encoding="utf-8")
    edits = candidate_edits(source, "src/app/settings.py", [5], hints=hints)
    wanted = source.replace("read_config(path)", "read_config(path, encoding=encoding)")
    [edit] = [e for e in edits if e.new_source == wanted]
    assert edit.template == "keyword_add"
    # Without the project's files the callee is unknown: nothing is guessed.
    assert not [e for e in candidate_edits(source, "src/app/settings.py", [5]) if e.template == "keyword_add"]
    config = tmp_path / "config.json"
    config.write_text('{"name": "caf\\u00e9"}', encoding="utf-8")
    (tmp_path / "src/app/settings.py").write_text(edit.new_source, encoding="utf-8")
    import importlib.util
    import sys

    sys.path.insert(0, str(tmp_path / "src"))
    try:
        spec = importlib.util.spec_from_file_location("app.settings", tmp_path / "src/app/settings.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(tmp_path / "src"))
        for name in [n for n in sys.modules if n == "app" or n.startswith("app.")]:
            del sys.modules[name]
    assert module.settings(str(config), "utf-8") == {"name": "café"}


# ---------------------------------------------------------------------------- sibling_method
def test_a_sibling_method_with_a_fitting_signature() -> None:
    source = (
        "class Reader:\n"
        "    def parse_row(self, row):\n"
        "        return row.split(',')\n"
        "\n"
        "    def parse_header(self):\n"
        "        return []\n"
        "\n"
        "\n"
        "class CsvReader(Reader):\n"
        "    def parse_rows(self, rows):\n"
        "        return [r.split(',') for r in rows]\n"
        "\n"
        "    def read(self, row):\n"
        "        return self.parse_rows(row)\n"
    )
    edit = fix(source, 14, source.replace("self.parse_rows(row)", "self.parse_row(row)"), "sibling_method")
    assert load(edit.new_source)["CsvReader"]().read("a,b") == ["a", "b"]
    edits = [e for e in candidate_edits(source, PATH, [14]) if e.template == "sibling_method"]
    # parse_header takes no argument and read is the method itself: neither is proposed.
    assert [e.new_source.splitlines()[13].strip() for e in edits] == ["return self.parse_row(row)"]


# ------------------------------------------------------------------------------- string_edit
def test_compared_strings_are_read_from_pytest_and_unittest_messages() -> None:
    pytest_message = (
        "assert 'SELECT DISTINCTname' == 'SELECT DISTINCT name'\n  \n  - SELECT DISTINCT name\n"
        "  ?                -\n  + SELECT DISTINCTname"
    )
    unittest_message = "'a-b' != 'a_b'\n- a-b\n?  ^\n+ a_b\n?  ^\n"
    assert compared_strings([pytest_message]) == (("SELECT DISTINCTname", "SELECT DISTINCT name"),)
    assert compared_strings([unittest_message]) == (("a-b", "a_b"),)
    # pytest shortens long strings in its first line; its diff lines still carry the differing part.
    long = "assert 'xxxx...DISTINCTname' == 'xxxx...DISTINCT name'\n  \n  - T DISTINCT name\n  ?  -\n  + T DISTINCTname"
    assert ("T DISTINCT name", "T DISTINCTname") in compared_strings([long])
    # The shortened reprs themselves are not strings of the program: no literal is built from them.
    shortened = "assert 'git push --f...th-lease' == 'git push --f...fork main'"
    assert compared_strings([shortened]) == ()
    assert not any("..." in side for pair in compared_strings([long]) for side in pair)
    assert compared_strings(["assert 3 == 4", "ZeroDivisionError: division by zero"]) == ()


def test_the_literal_edit_is_the_part_of_the_difference_inside_the_literal() -> None:
    actual, expected = "SELECT DISTINCTname", "SELECT DISTINCT name"
    assert literal_edit(actual, expected, 7, 15) == "DISTINCT "  # 'DISTINCT' gets the missing space
    assert literal_edit(actual, expected, 15, 19) == " name"  # or the next part does
    assert literal_edit(actual, expected, 0, 7) is None  # 'SELECT ' is not where they differ
    assert literal_edit("ab-cd", "abXYd", 1, 3) is None  # the difference straddles the literal's end


def test_string_edit_from_the_sandboxes_own_failure_message(make_sandbox) -> None:  # type: ignore[no-untyped-def]
    sandbox = make_sandbox(
        {
            "query.py": (
                "def select(column, distinct=False):\n"
                "    keyword = 'SELECT DISTINCT' if distinct else 'SELECT '\n"
                "    return keyword + column\n"
            ),
            "tests/test_query.py": (
                "from query import select\n"
                "\n"
                "\n"
                "def test_distinct():\n"
                "    assert select('name', distinct=True) == 'SELECT DISTINCT name'\n"
                "\n"
                "\n"
                "def test_plain():\n"
                "    assert select('name') == 'SELECT name'\n"
            ),
        }
    )
    with sandbox:
        run = sandbox.run_tests()
        failing = [r for r in run.results.values() if not r.ok]
        assert [r.nodeid for r in failing] == ["tests/test_query.py::test_distinct"]
        hints = Hints.from_failures([r.message for r in failing])
        source = sandbox.read_file("query.py")
        edits = [e for e in candidate_edits(source, "query.py", [2], hints=hints) if e.template == "string_edit"]
        assert 1 <= len(edits) <= 3
        fixed = source.replace("'SELECT DISTINCT'", "'SELECT DISTINCT '")
        [edit] = [e for e in edits if e.new_source == fixed]
        with sandbox.patched({"query.py": edit.new_source}):
            assert all(r.ok for r in sandbox.run_tests().results.values())
    # No compared strings, no string edits.
    assert not [e for e in candidate_edits(source, "query.py", [2]) if e.template == "string_edit"]


def test_string_edit_inside_a_format_string() -> None:
    source = "def select(column):\n    return 'SELECT DISTINCT%s FROM t' % column\n"
    hints = Hints.from_failures(["assert 'SELECT DISTINCTname FROM t' == 'SELECT DISTINCT name FROM t'"])
    fixed = source.replace("DISTINCT%s", "DISTINCT %s")
    edit = fix(source, 2, fixed, "string_edit", hints)
    assert load(edit.new_source)["select"]("name") == "SELECT DISTINCT name FROM t"
    assert _count(source, 2, "string_edit", hints) <= 3


# --------------------------------------------------------------------------------- edit_pair
def test_a_pair_of_edits_at_the_two_top_lines() -> None:
    source = "def spread(values):\n    low = max(values)\n    high = min(values)\n    return high - low\n"
    first, second = candidate_edits(source, PATH, [2]), candidate_edits(source, PATH, [3])
    fixed = source.replace("max(values)", "MIN").replace("min(values)", "max(values)").replace("MIN", "min(values)")
    assert fixed not in {e.new_source for e in (*first, *second)}  # no single edit fixes it
    pairs = pair_edits(source, PATH, first, second)
    assert 1 <= len(pairs) <= PER_LINE * PER_LINE
    [edit] = [e for e in pairs if e.new_source == fixed]
    assert edit.template == "edit_pair" and edit.line == 2
    assert edit.normalized == ast.dump(ast.parse(fixed))
    assert load(edit.new_source)["spread"]([3, 1, 2]) == 2
    # Every pair is a distinct program, none of them a single edit or the original.
    singles = {e.normalized for e in (*first, *second)} | {ast.dump(ast.parse(source))}
    assert len({e.normalized for e in pairs}) == len(pairs) and not singles & {e.normalized for e in pairs}


def test_pairs_skip_overlapping_edits_and_keep_a_byte_order_mark() -> None:
    edit = candidate_edits("def f(a, b):\n    return a - b\n", PATH, [2])[0]
    assert pair_edits("def f(a, b):\n    return a - b\n", PATH, [edit], [edit]) == []  # the same span twice
    two = "\ufeffdef f(a, b):\n    c = a - b\n    return c * 2\n"
    pairs = pair_edits(two, PATH, candidate_edits(two, PATH, [2]), candidate_edits(two, PATH, [3]))
    assert pairs and all(e.new_source.startswith("\ufeff") for e in pairs)
