"""A reproduction test whose own fake object lacks what the project calls fails on every code, fixed or not: it is
a broken test (re-asked), never an exposure (it would reject every right patch). Seen in the field: a QA test's
``_FakeStream`` without ``set_close_callback`` made a correct HTTP fix fail its QA test twice (tornado-11)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from selfix_action.repair.values import QATest
from selfix_action.repair.verify import Verifier
from selfix_action.sandbox.pytest_sandbox import PytestSandbox

PROJECT = {
    "conn.py": """
        def open_connection(stream, encoding):
            stream.set_close_callback(print)
            return encoding == "chunked"  # the bug: 'Chunked' is not matched
    """,
    "tests/test_conn.py": """
        from conn import open_connection


        class Stream:
            def set_close_callback(self, callback):
                self.callback = callback


        def test_chunked():
            assert open_connection(Stream(), "chunked")
    """,
}

INCOMPLETE = """\
from conn import open_connection


class _FakeStream:
    pass


def test_upper_case_chunked():
    assert open_connection(_FakeStream(), "Chunked")
"""

COMPLETE = INCOMPLETE.replace("    pass", "    def set_close_callback(self, callback):\n        pass")


@pytest.mark.slow
def test_a_qa_test_whose_own_fake_lacks_what_the_project_calls_is_broken_not_exposing(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    verifier = Verifier(make_sandbox(PROJECT))
    broken = verifier.expose(QATest(path="test_qa_h1.py", source=INCOMPLETE))
    assert not broken.exposed and broken.broken
    assert "_FakeStream, a stand-in the QA test defines itself" in broken.how
    assert "set_close_callback" in broken.output and "give it what the project calls" in broken.output
    # The same test with a complete stand-in exposes the bug (an AssertionError on the unpatched code).
    fixed = verifier.expose(QATest(path="test_qa_h1.py", source=COMPLETE))
    assert fixed.exposed and not fixed.broken and "AssertionError" in fixed.how


def test_a_missing_attribute_on_the_projects_own_object_still_exposes(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    project = dict(PROJECT)
    project["conn.py"] = """
        class Conn:
            pass


        def open_connection(stream, encoding):
            return Conn().chunked  # the bug: Conn has no such attribute
    """
    qa = QATest(
        path="test_qa_h1.py",
        source="from conn import open_connection\n\n\ndef test_it():\n    assert open_connection(None, 'Chunked')\n",
    )
    exposure = Verifier(make_sandbox(project)).expose(qa)
    assert exposure.exposed and "AttributeError raised in conn.py" in exposure.how
