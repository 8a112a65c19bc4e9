"""A failing test that cannot reach a service on the loopback is the environment's: read from the failure the
baseline run recorded (``repair.services``), and the loop stops before any engine, or leaves such tests out."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest

from selfix_action.repair.loop import HealingLoop, LoopConfig
from selfix_action.repair.report import StopReason
from selfix_action.repair.services import refused_port, unreachable_services
from selfix_action.repair.values import TestResult, TestStatus
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.helpers.projects import CALC
from tests.helpers.scripted_engine import ScriptedEngine, hyp


def failure(exc_type: str, message: str, address: str = "", nodeid: str = "tests/test_db.py::test_q") -> TestResult:
    return TestResult(nodeid=nodeid, status=TestStatus.FAILED, exc_type=exc_type, message=message, address=address)


@pytest.mark.parametrize(
    ("exc_type", "message", "address", "port"),
    [
        ("ConnectionRefusedError", "[Errno 111] Connection refused", "127.0.0.1:5432", 5432),
        # psycopg2 / psycopg 3 (libpq), old and new wording
        (
            "OperationalError",
            'connection to server at "localhost" (127.0.0.1), port 5432 failed: Connection refused\n\tIs the '
            "server running on that host and accepting TCP/IP connections?",
            "",
            5432,
        ),
        (
            "OperationalError",
            'could not connect to server: Connection refused\n\tIs the server running on host "localhost" '
            "(127.0.0.1) and accepting\n\tTCP/IP connections on port 5433?",
            "",
            5433,
        ),
        ("ConnectionError", "Error 111 connecting to localhost:6379. Connection refused.", "", 6379),
        ("ServerSelectionTimeoutError", "localhost:27017: [Errno 111] Connection refused", "", 27017),
        (
            "OperationalError",
            "(2003, \"Can't connect to MySQL server on 'localhost' ([Errno 111] Connection refused)\")",
            "",
            3306,
        ),
        (
            "ConnectionError",
            "HTTPConnectionPool(host='localhost', port=9200): Max retries exceeded with url: / (Caused by "
            "NewConnectionError(': Failed to establish a new connection: [Errno 111] Connection refused'))",
            "",
            9200,
        ),
        # the landlock level: the socket or the connect is refused, the address comes from the collector
        ("OSError", "[Errno 97] Address family not supported by protocol", "127.0.0.1:11211", 11211),
        ("PermissionError", "[Errno 13] Permission denied", "::1:5672", 5672),
        # not a refused loopback connection
        ("AssertionError", "assert 5432 == 6379", "", None),
        ("ConnectionRefusedError", "[Errno 111] Connection refused", "", None),  # no port known
        (
            "OperationalError",
            'connection to server at "db.example.com" (10.0.0.5), port 5432 failed: timeout',
            "",
            None,
        ),
        ("OSError", "[Errno 97] Address family not supported by protocol", "", None),
    ],
)
def test_the_refused_port_is_read_from_the_failure(exc_type: str, message: str, address: str, port: int | None) -> None:
    assert refused_port(failure(exc_type, message, address)) == port


def test_the_diagnosis_names_the_service_and_the_setting() -> None:
    failures = [
        failure(
            "OperationalError", 'connection to server at "localhost" (127.0.0.1), port 5432 failed: Connection refused'
        ),
        failure("ConnectionError", "Error 111 connecting to localhost:6379. Connection refused.", nodeid="t::r"),
        failure("AssertionError", "assert 1 == 2", nodeid="t::other"),
    ]
    found = unreachable_services(failures)
    assert found is not None
    assert found.tests == ("tests/test_db.py::test_q", "t::r") and found.ports == (5432, 6379)
    assert "port 5432 (postgres, likely)" in found.detail and "port 6379 (redis, likely)" in found.detail
    assert "set allow_ports: 5432,6379" in found.detail and "if your CI starts this service" in found.detail
    opened = unreachable_services(failures[:1], allow_ports=(5432,))
    assert opened is not None and "allow_ports opens 5432, but nothing listens there" in opened.detail
    assert "set allow_ports" not in opened.detail
    assert unreachable_services(failures[2:]) is None


def test_the_loop_stops_before_any_engine_when_every_failing_test_is_refused(
    make_sandbox: Callable[..., PytestSandbox],
) -> None:
    idle = socket.create_server(("127.0.0.1", 0))
    port = idle.getsockname()[1]
    idle.close()  # nothing listens there
    test = f"import socket\n\ndef test_db():\n    socket.create_connection(('127.0.0.1', {port}), timeout=5)\n"
    sandbox = make_sandbox({**CALC, "tests/test_db.py": test, "tests/test_calc.py": "def test_ok():\n    pass\n"})

    class NoEngine(ScriptedEngine):
        def hypotheses(self, *args: object) -> list:  # type: ignore[override]
            raise AssertionError("the engine must not be asked")

    result = HealingLoop(sandbox, NoEngine([hyp("h1", 1)], {}, {}), LoopConfig()).run()
    report = result.report
    assert report.stop_reason is StopReason.ENVIRONMENT and result.files is None
    assert f"port {port}" in report.environment_problem and f"allow_ports: {port}" in report.environment_problem
    assert report.environment_tests == ("tests/test_db.py::test_db",)
    assert report.candidates_tried == 0
