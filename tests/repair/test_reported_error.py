"""Step 0 of a heal from a production error (``HealingLoop.heal_reported``): a reproduction test first.

Real pytest runs in the real sandbox. The reported traceback comes from a deployment (other paths, a frame of code
this checkout does not have); QA's tests are judged by the traceback their own run produced: the same exception
type raised at the same project frame, or it is fed back and QA is asked again.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from selfix_action.repair.loop import HealingLoop, LoopConfig
from selfix_action.repair.report import StopReason, render_markdown
from selfix_action.repair.reported_error import locate_frames, render_error
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from selfix_action.tracebacks import read_error
from tests.helpers.projects import write_project
from tests.helpers.scripted_engine import ScriptedEngine, hyp

CART = """\
PRICES = {"pear": 3, "apple": 2}


def price(name):
    return PRICES[name]


def total(items):
    return sum(price(name) * count for name, count in items.items())


def average(items):
    return total(items) / len(items)
"""
FIXED = CART.replace("    return total(items) / len(items)\n", "    return total(items) / len(items) if items else 0\n")
TESTS = """\
from shop.cart import average, total


def test_total():
    assert total({"pear": 2}) == 6


def test_average():
    assert average({"pear": 1, "apple": 1}) == 2.5
"""
PROJECT = {"shop/__init__.py": "", "shop/cart.py": CART, "tests/test_cart.py": TESTS}
REPORTED = """\
2026-12-01 09:12:44 ERROR app.checkout: request failed
Traceback (most recent call last):
  File "/srv/app/releases/41/web/views.py", line 20, in checkout
    summary = cart.average(session_items)
  File "/srv/app/releases/41/shop/cart.py", line 13, in average
    return total(items) / len(items)
           ~~~~~~~~~~~~~^~~~~~~~~~~~
ZeroDivisionError: division by zero
"""
TEST_PATH = "tests/test_selfix_average.py"
REPRODUCES = """\
from shop.cart import average


def test_an_empty_cart_averages():
    assert average({}) == 0
"""
WRONG_PLACE = """\
from shop.cart import price


def test_unknown_item():
    price("kiwi")
"""
CAUGHT = """\
import pytest

from shop.cart import average


def test_empty():
    with pytest.raises(ZeroDivisionError):
        average({})
"""
RAISED_BY_THE_TEST = """\
def test_divides():
    1 / 0
"""
QUICK = LoopConfig(behaviour_probe=False)


def engine(*reproductions: str | None) -> ScriptedEngine:
    return ScriptedEngine(
        [hyp("H1", 1, file="shop/cart.py", symbol="average")],
        {},
        {"H1": [{"shop/cart.py": FIXED}]},
        reproductions=list(reproductions),
    )


@pytest.mark.slow
def test_a_reproduced_error_is_healed_and_the_patch_adds_its_test(make_sandbox: Callable[..., PytestSandbox]) -> None:
    scripted = engine(REPRODUCES)
    result = HealingLoop(make_sandbox(PROJECT), scripted, QUICK).heal_reported(
        read_error(REPORTED, origin="crash.log"), scripted, TEST_PATH
    )
    report = result.report
    assert report.stop_reason is StopReason.HEALED
    assert result.files == {"shop/cart.py": FIXED, TEST_PATH: REPRODUCES}
    assert report.f2p_tests == (f"{TEST_PATH}::test_an_empty_cart_averages",)
    assert set(report.p2p_tests) == {"tests/test_cart.py::test_total", "tests/test_cart.py::test_average"}
    assert report.patch is not None and f"diff --git a/{TEST_PATH} b/{TEST_PATH}\nnew file mode" in report.patch.diff
    record = report.reported_error
    assert record is not None and record.reproduced and record.site == "shop/cart.py:average"
    assert record.origin == "crash.log" and record.headline == "ZeroDivisionError: division by zero"
    # QA saw the project's frame as this checkout's file, the library-less stack, and the raising code.
    ((request, feedback),) = scripted.reproduction_requests
    assert feedback == "" and request.site.label() == "shop/cart.py:average"
    assert "shop/cart.py:13 in average" in request.error and "return total(items) / len(items)" in request.error
    assert "crash.log" in render_markdown(report)
    # Its only failing test is selfix's own: the patch is never `high` on that alone.
    assert report.confidence is not None and report.confidence.level != "high"
    assert "reproduction_only" in {r.code for r in report.confidence.reasons}


@pytest.mark.slow
def test_a_test_failing_another_way_is_fed_back_and_qa_asked_again(make_sandbox: Callable[..., PytestSandbox]) -> None:
    scripted = engine(WRONG_PLACE, CAUGHT, REPRODUCES)
    result = HealingLoop(make_sandbox(PROJECT), scripted, QUICK).heal_reported(
        read_error(REPORTED), scripted, TEST_PATH
    )
    assert result.report.stop_reason is StopReason.HEALED
    feedbacks = [feedback for _, feedback in scripted.reproduction_requests]
    assert feedbacks[0] == ""
    assert "expected ZeroDivisionError raised at shop/cart.py:average" in feedbacks[1]
    assert "KeyError" in feedbacks[1] and "at shop/cart.py:price" in feedbacks[1]
    assert "passed on the unpatched code" in feedbacks[2]
    record = result.report.reported_error
    assert record is not None and len(record.attempts) == 3 and record.reproduced


@pytest.mark.slow
def test_an_error_no_test_reproduces_ends_in_an_escalation_saying_what_was_tried(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    scripted = engine(RAISED_BY_THE_TEST, CAUGHT, WRONG_PLACE, REPRODUCES)
    result = HealingLoop(make_sandbox(PROJECT), scripted, QUICK).heal_reported(
        read_error(REPORTED), scripted, TEST_PATH
    )
    report = result.report
    assert report.stop_reason is StopReason.ERROR_NOT_REPRODUCED and report.exit_code == 1
    assert result.files is None and scripted.feedback == []  # no Patcher was asked
    record = report.reported_error
    assert record is not None and not record.reproduced and len(record.attempts) == 3
    # An exception the test raises itself is not the project's.
    assert "outside the project's source" in record.attempts[0]
    assert "3 attempt(s) by QA" in report.notes[-1]


def test_an_error_from_code_this_checkout_lacks_stops_before_qa(make_sandbox: Callable[..., PytestSandbox]) -> None:
    scripted = engine(REPRODUCES)
    other = REPORTED.replace("shop/cart.py", "billing/ledger.py")
    result = HealingLoop(make_sandbox(PROJECT), scripted, QUICK).heal_reported(read_error(other), scripted, TEST_PATH)
    assert result.report.stop_reason is StopReason.ERROR_NOT_REPRODUCED
    assert scripted.reproduction_requests == []
    assert "none of the reported frames is a source file of this checkout" in result.report.notes[-1]


@pytest.mark.slow
def test_a_test_command_naming_its_modules_still_runs_the_reproduction_test_in_the_suite(tmp_path: Path) -> None:
    """``pytest tests/test_cart.py``: the suite's own runs (the baseline, the confirmation) collect the added file
    beside the module the command names, as the reproduction must fail there and pass with the fix."""
    repo = write_project(tmp_path / "proj", PROJECT)
    scripted = engine(REPRODUCES)
    command = [sys.executable, "-m", "pytest", "tests/test_cart.py"]
    with PytestSandbox(repo, command, limits=Limits(wall_seconds=60), scratch_parent=tmp_path) as sandbox:
        result = HealingLoop(sandbox, scripted, QUICK).heal_reported(read_error(REPORTED), scripted, TEST_PATH)
    assert result.report.stop_reason is StopReason.HEALED
    assert f"{TEST_PATH}::test_an_empty_cart_averages" in result.report.tests_after
    assert result.files is not None and TEST_PATH in result.files


def test_qa_sees_the_frames_functions_whole_and_how_to_build_the_raising_methods_object() -> None:
    """What the readers of the first traceback run missed: the class to instantiate, its constructor (here a
    base class's), the abstract members a subclass must define, and each project frame's function."""
    copy = """\
import abc


class Base(abc.ABC):
    def __init__(self, host, port=5439):
        self.host = host

    @property
    @abc.abstractmethod
    def copy_options(self):
        ...


class Copy(Base):
    columns = None

    def run(self):
        return self.columns_sql()

    def columns_sql(self):
        return ",".join(self.columns)
"""
    reported = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/etl/copy.py", line 18, in run\n'
        '  File "/srv/app/etl/copy.py", line 21, in columns_sql\n'
        "TypeError: can only join an iterable\n"
    )
    error = read_error(reported)
    text = render_error(error, locate_frames(error, ["etl/copy.py"]), lambda path: copy)
    assert "etl/copy.py, `Copy.columns_sql`, lines 20-21" in text and "etl/copy.py, `Copy.run`, lines 17-18" in text
    assert "the class `Copy` in etl/copy.py" in text
    assert "def __init__(self, host, port=5439):  # constructor (from Base)" in text
    assert "def copy_options(self):  # abstract: a subclass must define it (from Base)" in text
