"""Static sanity: candidates that cannot make sense are found from the syntax tree alone, against the original."""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import pytest

from selfix_action.repair.loop import HealingLoop
from selfix_action.repair.report import StopReason
from selfix_action.repair.sanity import ProjectSignatures, SanityChecker, changed_span, file_issues
from selfix_action.repair.values import Hypothesis
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.scripted_engine import ScriptedEngine

ORIGINAL = textwrap.dedent(
    """
    import os
    import pkg.helpers
    from textwrap import indent
    from .helpers import helper


    def scale(a, b=1, *, c):
        return a * b * c


    class Shape:
        def __init__(self, dims):
            self.dims = dims

        def area(self, unit):
            return unit

        @staticmethod
        def unit(z):
            return z

        def describe(self, name):
            if hasattr(self, "shape"):
                return name
            return os.sep
    """
).lstrip()
HELPERS = "def helper(a, b):\n    return a\n"
SOURCES = {"pkg/shapes.py": ORIGINAL, "pkg/helpers.py": HELPERS, "pkg/__init__.py": ""}


def issues_of(old: str, new: str) -> list[str]:
    patched = ORIGINAL.replace(old, new)
    assert patched != ORIGINAL, old
    project = ProjectSignatures(SOURCES.get, lambda: list(SOURCES))
    return [f"{issue.kind}: {issue.message}" for issue in file_issues("pkg/shapes.py", ORIGINAL, patched, project)]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # literals where an object is needed (the hasattr("shape", self.iterable) of a real bug)
        ('hasattr(self, "shape")', 'hasattr("shape", self)', "literal: `hasattr()` gets the literal `'shape'`"),
        ('hasattr(self, "shape")', "isinstance(name, 'str')", "literal: `isinstance()` needs a type, not the literal"),
        ('hasattr(self, "shape")', "hasattr(self, 3)", "literal: `hasattr()` needs an attribute name, not `3`"),
        ("return unit", 'return "abc"(unit)', "literal: calls the literal `'abc'`"),
        ("return unit", 'return "abc".shape', "literal: `'abc'.shape`: a str literal has no attribute `shape`"),
        ("return unit", "return None[0]", "literal: subscripts the literal `None`"),
        ("return unit", "return len(3)", "literal: `len()` gets `3`, which is not iterable"),
        ("return unit", "return [u for u in 3]", "literal: iterates over `3`"),
        ("return unit", "return unit in None", "literal: `in` over `None`"),
        ("return unit", 'return "a" - 1', "literal: `'a' - 1` raises TypeError"),
        # wrong arity against signatures in the project's source
        ("return a * b * c", "return scale(a, b, 3, c=c)", "arity: `scale(...)` passes 3 positional argument(s)"),
        ("return a * b * c", "return scale(a)", "arity: `scale(...)` misses the required keyword argument `c`"),
        ("return a * b * c", "return scale(a, d=2, c=c)", "arity: `scale(...)` passes the unknown keyword `d`"),
        ("return unit", "return self.area(unit, unit)", "arity: `self.area(...)` passes 2 positional argument(s)"),
        ("return unit", "return self.unit(unit, 1)", "arity: `self.unit(...)` passes 2 positional argument(s)"),
        ("return unit", "return Shape()", "arity: `Shape(...)` misses the required argument `dims`"),
        ("return unit", "return helper(unit)", "arity: `helper(...)` misses the required argument `b`"),
        ("return unit", "return pkg.helpers.helper(unit)", "arity: `pkg.helpers.helper(...)` misses the required"),
        # calls that cannot bind to a builtin's or a standard callable's signature (inspect.signature)
        (
            'hasattr(self, "shape")',
            "hasattr(self)",
            "arity: `hasattr(...)` does not fit `hasattr(obj, name, /)` (a builtin): missing a required argument",
        ),
        ("return unit", "return len(unit, unit)", "arity: `len(...)` does not fit `len(obj, /)` (a builtin): too many"),
        ("return unit", "return sorted(unit, reversed=True)", "arity: `sorted(...)` does not fit `sorted(iterable"),
        (
            "return unit",
            'return os.path.join(unit, sep="/")',
            "arity: `os.path.join(...)` does not fit `os.path.join(a, *p)` (the standard library's): got an unexpected",
        ),
        ("return unit", "return indent(unit)", "arity: `indent(...)` does not fit `textwrap.indent(text, prefix"),
        ("return unit", "return os.getcwd(unit)", "arity: `os.getcwd(...)` does not fit `os.getcwd()`"),
        # a name bound nowhere in scope
        ("return unit", "return units", "unbound_name: name `units` is bound nowhere in scope (in `area`)"),
        ("return unit", "return dims", "unbound_name: name `dims` is bound nowhere in scope (in `area`)"),
    ],
)
def test_a_candidate_that_cannot_make_sense_is_found(old: str, new: str, expected: str) -> None:
    found = issues_of(old, new)
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("return a * b * c", "return scale(a, c=c)"),  # the default fills b
        ("return a * b * c", "return scale(*[a], c=c)"),  # starred: not surely wrong
        ("return unit", "return self.unit(unit)"),  # staticmethod: no self
        ("return unit", "return Shape(unit)"),
        ("return unit", "return helper(unit, 1)"),
        ("return unit", "return isinstance(unit, (type(None), (int, str)))"),
        ("return unit", "return self.dims"),
        ("return unit", "return os.path.join(unit)"),
        ("return unit", "return [d for d in self.dims if d]"),
        ("return unit", "return (lambda u: u)(unit)"),
        ("return unit", 'return "%s" % unit'),
        ("return unit", "return __class__"),  # the implicit cell of methods
        ('hasattr(self, "shape")', "hasattr(self, name)"),
        ("return unit", "return pkg.helpers.helper(unit, 1)"),
        ("return unit", 'return indent(unit, "  ")'),
        ("return unit", "return sorted(unit, reverse=True)"),
        ("return unit", 'return print(unit, unit, sep="")'),
        ("return unit", "return max(unit, 1)"),  # no runtime signature: left to the tests
        ("return unit", "return len(*unit)"),  # starred: not surely wrong
        ("return unit", "return os.path.join(unit, unit, unit)"),
    ],
)
def test_sensible_candidates_pass(old: str, new: str) -> None:
    assert issues_of(old, new) == []


def test_a_project_module_named_like_a_standard_one_is_read_as_source() -> None:
    original = "from textwrap import indent\n\n\ndef f(x):\n    return x\n"
    sources = {"app/textwrap.py": "def indent(text):\n    return text\n", "app/m.py": original}
    project = ProjectSignatures(sources.get, lambda: list(sources))

    def issues(new: str) -> list[str]:
        return [i.message for i in file_issues("app/m.py", original, original.replace("return x", new), project)]

    assert issues("return indent(x)") == []  # the standard indent needs a prefix; the project's does not
    assert issues("return indent(x, 2)") == [
        "`indent(...)` passes 2 positional argument(s); it takes at most 1 (signature of `indent` in the project)"
    ]


def test_a_builtin_shadowed_in_the_module_or_a_scope_is_not_checked_as_the_builtin() -> None:
    original = "def len(a, b):\n    return a\n\n\ndef f(x, y):\n    return x\n"
    patched = original.replace("return x", "return len(x, y)")
    assert file_issues("m.py", original, patched, None) == []
    local = "def f(x, y, hasattr):\n    return x\n"
    assert file_issues("m.py", local, local.replace("return x", "return hasattr(x)"), None) == []


def test_problems_the_original_already_has_are_not_the_patchs() -> None:
    original = "def f(x):\n    return undefined_name + x\n"
    patched = "def f(x):\n    return undefined_name - x\n"
    assert file_issues("m.py", original, patched, None) == []
    added = "def f(x):\n    return undefined_name - other_undefined\n"
    assert [i.message for i in file_issues("m.py", original, added, None)] == [
        "name `other_undefined` is bound nowhere in scope (in `f`)"
    ]


def test_star_imports_and_decorators_leave_it_to_the_tests() -> None:
    original = (
        "from os.path import *\nimport functools\n\n\n"
        "@functools.cache\ndef g(a):\n    return a\n\n\ndef f(x):\n    return x\n"
    )
    # a star import may bind anything; a decorator may change the signature
    assert file_issues("m.py", original, original.replace("return x", "return join(x)"), None) == []
    assert file_issues("m.py", original, original.replace("return x", "return g(x, x)"), None) == []


def test_a_patch_that_does_not_parse_and_a_new_file() -> None:
    assert [i.kind for i in file_issues("m.py", "x = 1\n", "x = (\n", None)] == ["syntax"]
    assert [i.kind for i in file_issues("new.py", None, "def f():\n    return y\n", None)] == ["unbound_name"]


def test_checker_reads_each_original_once_and_skips_unchanged_and_other_files() -> None:
    reads: list[str] = []

    def read(path: str) -> str | None:
        reads.append(path)
        return SOURCES.get(path)

    checker = SanityChecker(read, lambda: list(SOURCES))
    bad = {"pkg/shapes.py": ORIGINAL.replace("return unit", "return helper(unit)"), "README.md": "x"}
    assert [i.kind for i in checker.issues(bad)] == ["arity"]
    assert checker.issues({"pkg/shapes.py": ORIGINAL}) == []
    assert reads.count("pkg/shapes.py") == 1 and "README.md" not in reads


def test_a_call_is_checked_against_the_signature_the_same_patch_gives_another_module() -> None:
    # A real fix's shape (black's async keywords): a parameter added to a function in one module and passed from
    # another. Checked against the unpatched helper, the call was refused and a sound fix never ran.
    checker = SanityChecker(SOURCES.get, lambda: list(SOURCES))
    call = ORIGINAL.replace("return unit\n", "return helper(unit, 2, grammar=3)\n")
    widened = HELPERS.replace("def helper(a, b):", "def helper(a, b, grammar=None):")
    assert checker.issues({"pkg/shapes.py": call, "pkg/helpers.py": widened}) == []
    # The same call without the helper's new parameter is still refused, and the unpatched project is unchanged.
    assert [i.kind for i in checker.issues({"pkg/shapes.py": call})] == ["arity"]
    narrowed = HELPERS.replace("def helper(a, b):", "def helper(a):")
    kept = ORIGINAL.replace("return unit\n", "return helper(unit, 2)\n")
    assert [i.kind for i in checker.issues({"pkg/shapes.py": kept, "pkg/helpers.py": narrowed})] == ["arity"]
    assert checker.issues({"pkg/shapes.py": kept}) == []


def test_changed_span_covers_every_change() -> None:
    assert changed_span("a\nb\nc\n", "a\nB\nc\n") == ((2, 2), (2, 2))
    assert changed_span("a\nc\n", "a\nb\nc\n") == ((2, 2), (2, 2))  # an insertion: the line after stands for it
    assert changed_span("a\nb\nc\nd\n", "a\nX\nc\nY\n") == ((2, 4), (2, 4))


# A real bug's shape: the code under test swallows the TypeError a one-argument `hasattr` raises, so the candidate
# makes the failing test pass without fixing anything.
ARRAYS = {
    "arrays.py": (
        "def is_array(value):\n"
        '    """True for array-likes (they have a shape); False for anything else, strings included."""\n'
        "    try:\n"
        '        return hasattr(value, "shape") or len(value) > 0\n'
        "    except TypeError:\n"
        "        return False\n"
    ),
    "tests/test_arrays.py": (
        "from arrays import is_array\n"
        "\n"
        "\n"
        "def test_a_string_is_no_array():\n"
        '    assert is_array("abc") is False\n'
        "\n"
        "\n"
        "def test_a_number_is_no_array():\n"
        "    assert is_array(3) is False\n"
    ),
}
SWALLOWED = ARRAYS["arrays.py"].replace('hasattr(value, "shape")', "hasattr(value)")
FIXED_ARRAYS = ARRAYS["arrays.py"].replace(" or len(value) > 0", "")


@pytest.mark.slow
def test_a_one_argument_hasattr_the_code_swallows_heals_no_more(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(ARRAYS)
    hypothesis = Hypothesis(
        id="H1",
        rank=1,
        title="the bug is in `is_array`",
        confidence=1.0,
        file="arrays.py",
        symbol="is_array",
        lines=(4,),
    )
    engine = ScriptedEngine([hypothesis], {"H1": None}, {"H1": [{"arrays.py": SWALLOWED}, {"arrays.py": FIXED_ARRAYS}]})
    report = HealingLoop(sandbox, engine).run().report
    assert report.candidates_rejected_static == 1  # refused before any test ran: it passes them
    assert report.stop_reason is StopReason.HEALED
    assert report.patch is not None and '-        return hasattr(value, "shape") or len(value) > 0' in report.patch.diff
    assert '+        return hasattr(value, "shape")\n' in report.patch.diff
    [record] = report.hypotheses
    assert any("hasattr(obj, name, /)" in rejection.detail for rejection in record.rejections), record.rejections
