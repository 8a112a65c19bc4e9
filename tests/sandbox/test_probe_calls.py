"""The behaviour probe's sandbox half (``PytestSandbox.probe_calls``, ``plugin/selfix_calls.py``): real pytest runs
record the calls the tests make to a function, and real replays run them, with variations, on other versions."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from selfix_action.repair.values import CallProbe, ProbeTarget
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.project_pythons import project_venv, shared_venv_root

MAILER = {
    "mailer/__init__.py": "",
    "mailer/send.py": """
        import functools
        import random
        import threading


        def logged(function):
            @functools.wraps(function)
            def wrapper(*args, **kwargs):
                return function(*args, **kwargs)

            return wrapper


        class Mailer:
            def __init__(self, sender):
                self.sender = sender

            @logged
            def recipients(self, to, cc=None):
                rcpts = to[:]
                if cc:
                    rcpts.extend(cc)
                return rcpts


        def stamp(subject):
            return subject + str(random.random())


        def locked(lock, value):
            with lock:
                return value * 2
        """,
    "tests/test_send.py": """
        import threading

        from mailer.send import Mailer, locked, stamp


        def test_string_to():
            assert Mailer("me").recipients("a@x") == ["a@x"]


        def test_lists():
            assert Mailer("me").recipients(["a@x"], ["b@x"]) == ["a@x", "b@x"]


        def test_stamp():
            assert stamp("hi").startswith("hi")


        def test_locked():
            assert locked(threading.Lock(), 2) == 4
        """,
}
TESTS = [
    "tests/test_send.py::test_string_to",
    "tests/test_send.py::test_lists",
    "tests/test_send.py::test_stamp",
    "tests/test_send.py::test_locked",
]
RECIPIENTS = ProbeTarget(path="mailer/send.py", qualname="Mailer.recipients", first=19, last=23)
STAMP = ProbeTarget(path="mailer/send.py", qualname="stamp", first=26, last=27)
LOCKED = ProbeTarget(path="mailer/send.py", qualname="locked", first=30, last=32)
BUGGY_LINE = "        rcpts = to[:]"
PARTIAL = "        if isinstance(to, str):\n            to = [to]\n        rcpts = to[:]"  # a string, not a tuple
COMPLETE = "        rcpts = [to] if isinstance(to, str) else list(to)"


def outcomes(probe: CallProbe, version: str, variation: str, call: int = 1) -> str:
    return next(
        line.outcome
        for line in probe.versions[version]
        if line.target == RECIPIENTS.id and line.variation == variation and line.call == call
    )


def probe_mailer(sandbox: PytestSandbox) -> CallProbe:
    source = sandbox.read_file("mailer/send.py")
    assert BUGGY_LINE in source
    versions = {
        "partial": {"mailer/send.py": source.replace(BUGGY_LINE, PARTIAL)},
        "complete": {"mailer/send.py": source.replace(BUGGY_LINE, COMPLETE)},
    }
    return sandbox.probe_calls([RECIPIENTS, STAMP, LOCKED], TESTS, versions)


def check_mailer(probe: CallProbe) -> None:
    assert probe.note == ""
    assert set(probe.versions) == {"before", "before again", "partial", "complete"}
    assert probe.processes == 5  # the recording run and four replays, each counted as a run
    # The method is reached through its decorator and called with its own instance; the string is a test's call.
    assert outcomes(probe, "before", "as recorded") == "returns 'a@x'"
    assert outcomes(probe, "partial", "as recorded") == "returns ['a@x']"
    # A tuple of one address: the partial fix returns it as it came, the complete one a list.
    assert outcomes(probe, "partial", "argument 1 in a tuple") == "returns ('a@x',)"
    assert outcomes(probe, "complete", "argument 1 in a tuple") == "returns ['a@x']"
    # The second test's call, with the list as a tuple: only the complete fix handles it.
    assert outcomes(probe, "partial", "argument 1 as a tuple", call=2).startswith("raises AttributeError")
    assert outcomes(probe, "complete", "argument 1 as a tuple", call=2).startswith("returns ['a@x', 'b@x']")
    # A call whose outcome is random differs between the two runs of the unpatched code.
    stamps = [line.outcome for v in ("before", "before again") for line in probe.versions[v] if line.target == STAMP.id]
    assert stamps and len(set(stamps)) > 1
    # A lock cannot be copied: a stand-in takes its place (the same on every version), and the call is replayed.
    locked = [line for line in probe.versions["before"] if line.target == LOCKED.id]
    assert [(line.text, line.outcome) for line in locked[:1]] == [("(<_thread.lock>, 2)", "returns 4")]
    assert probe.unpicklable == 0
    assert probe.recorded == 4  # two calls of recipients, one of stamp, one of locked


@pytest.mark.slow
def test_calls_are_recorded_and_replayed_with_variations_on_each_version(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    check_mailer(probe_mailer(make_sandbox(MAILER)))


@pytest.mark.slow
def test_the_probe_runs_on_the_oldest_project_python(
    make_sandbox: Callable[..., PytestSandbox],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    python = project_venv(shared_venv_root(tmp_path_factory), "3.8")
    sandbox = make_sandbox(MAILER)
    sandbox.test_cmd = [str(python), "-m", "pytest"]
    check_mailer(probe_mailer(sandbox))


def test_nothing_to_probe_says_why(make_sandbox: Callable[..., PytestSandbox]) -> None:
    sandbox = make_sandbox(MAILER)
    assert sandbox.probe_calls([], TESTS, {}).note == "no function to probe"
    assert sandbox.probe_calls([RECIPIENTS], [], {}).note == "no test calls the edited code"


UNITTEST_MAILER = {
    "mailer.py": """
        def send(to, body, _callback=None):
            rcpts = to[:]
            if _callback is not None:
                _callback(rcpts)
            return rcpts
        """,
    "tests/test_mailer.py": """
        import threading
        import unittest

        from mailer import send


        class MailTest(unittest.TestCase):
            def setUp(self):
                self.lock = threading.Lock()  # the test case itself cannot be pickled
                self.sent = []

            def _catch(self, rcpts):
                self.sent.append(rcpts)

            def test_send(self):
                assert send(["a@x"], "hi", _callback=self._catch) == ["a@x"]
                assert self.sent == [["a@x"]]
        """,
}


@pytest.mark.slow
def test_a_call_given_a_test_cases_callback_is_replayed(make_sandbox: Callable[..., PytestSandbox]) -> None:
    """scrapy's mail tests hand MailSender.send a bound method of the running test case: the call is replayed."""
    sandbox = make_sandbox(UNITTEST_MAILER)
    target = ProbeTarget(path="mailer.py", qualname="send", first=1, last=5)
    probe = sandbox.probe_calls([target], ["tests/test_mailer.py::MailTest::test_send"], {})
    assert probe.note == "" and probe.recorded == 1, probe
    recorded = [line for line in probe.versions["before"] if line.variation == "as recorded"]
    assert [line.outcome for line in recorded] == ["returns ['a@x']"]
    # The callback drags the running test case, and pytest's machinery behind it, in: what is rebuilt of it
    # differs with the environment (the method, or a stand-in), and is the same in every replay of one probe.
    assert recorded[0].text.startswith("(['a@x'], 'hi', ")


LOCAL_CLASSES = {
    "summary.py": """
        def partition(tasks):
            done = [t for t in tasks if t.done]
            return len(done), len(tasks) - len(done)
        """,
    "tests/test_summary.py": """
        import threading

        from summary import partition


        def test_partition():
            class Task:  # a test's local class: its instances cannot be rebuilt by name
                def __init__(self, done):
                    self.done = done
                    self.lock = threading.Lock()

            assert partition([Task(True), Task(False)]) == (1, 1)
        """,
}


@pytest.mark.slow
def test_instances_of_a_tests_local_class_become_stand_ins(make_sandbox: Callable[..., PytestSandbox]) -> None:
    """luigi's execution summary tests build tasks from classes defined inside the test: the call is replayed with
    stand-ins for them (the same in every version), not lost."""
    sandbox = make_sandbox(LOCAL_CLASSES)
    target = ProbeTarget(path="summary.py", qualname="partition", first=1, last=3)
    probe = sandbox.probe_calls([target], ["tests/test_summary.py::test_partition"], {})
    assert probe.note == "" and probe.recorded == 1, probe
    recorded = [line for line in probe.versions["before"] if line.variation == "as recorded"]
    assert len(recorded) == 1 and "test_partition.<locals>.Task>" in recorded[0].text, recorded
    assert recorded[0].outcome.startswith("returns ("), recorded
