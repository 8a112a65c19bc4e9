"""``selfix bench --from-traceback``: a failing test's traceback as production would log it (``production_traceback``),
from a real pytest run in the product's sandbox; and what selfix then reads of it."""

from __future__ import annotations

import sys
from pathlib import Path

from selfix_action.tracebacks import read_error
from selfix_bench.worker import DEPLOYED_AT, production_traceback
from tests.helpers.projects import write_project

PROJECT = {
    "shop/__init__.py": "",
    "shop/cart.py": """
        def total(items):
            return sum(price * count for price, count in items)


        def average(items):
            return total(items) / len(items)
        """,
    "tests/test_cart.py": """
        from shop.cart import average


        def test_empty_cart():
            assert average([]) == 0


        def test_assertion_in_the_test():
            assert average([(2, 1)]) == 3
        """,
}
COMMAND = (sys.executable, "-m", "pytest")


def test_the_traceback_drops_the_tests_frames_and_names_the_deployment(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "shop", PROJECT)
    text = production_traceback(repo, COMMAND, ["tests/test_cart.py::test_empty_cart"])
    assert "tests/test_cart.py" not in text
    assert f'File "{DEPLOYED_AT}shop/cart.py", line 6, in average' in text
    assert text.rstrip().endswith("ZeroDivisionError: division by zero")
    error = read_error(text)
    assert (error.exc_type, [f.function for f in error.frames]) == ("ZeroDivisionError", ["average"])


def test_an_assertion_in_the_test_is_no_production_error(tmp_path: Path) -> None:
    repo = write_project(tmp_path / "shop", PROJECT)
    assert production_traceback(repo, COMMAND, ["tests/test_cart.py::test_assertion_in_the_test"]) == ""
