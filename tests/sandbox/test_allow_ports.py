"""``allow_ports``: a service the CI job started on the host's loopback (a database, a cache), reachable from the
test runs at exactly the allowed ports, at every isolation level; without it, a heal whose failing tests cannot
connect stops as the environment's, not the code's, naming the port."""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.cli import main
from selfix_action.repair.report import StopReason
from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.isolation import Isolation, IsolationConfig, IsolationLevel
from tests.helpers.isolation import need_level, python_for, sandbox_at, traversable
from tests.helpers.projects import write_project

SERVICE_TESTS = """
import socket

def test_service():
    with socket.create_connection(("127.0.0.1", {port}), timeout=5) as conn:
        conn.sendall(b"ping")
        assert conn.recv(100) == b"pong:ping"

def test_service_by_name():
    with socket.create_connection(("localhost", {port}), timeout=5) as conn:
        conn.sendall(b"ping")
        assert conn.recv(100) == b"pong:ping"

def test_another_port():
    socket.create_connection(("127.0.0.1", {other}), timeout=5).close()
"""


class Service:
    """A tiny TCP service on the host's loopback (an ephemeral port): answers ``pong:`` + what it got."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.served = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong:" + conn.recv(100))
                self.served += 1

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def service() -> Iterator[Service]:
    made = Service()
    yield made
    made.close()


@pytest.fixture
def other_service() -> Iterator[Service]:
    """A second listener on the host's loopback that is never allowed."""
    made = Service()
    yield made
    made.close()


def _allowing(isolation: Isolation, *ports: int) -> Isolation:
    return dataclasses.replace(isolation, config=dataclasses.replace(isolation.config, allow_ports=ports))


def test_an_allowed_port_reaches_the_hosts_service_and_no_other_port_does(
    isolation: Isolation, service: Service, other_service: Service, tmp_path: Path
) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    allowed = _allowing(isolation, service.port)
    traversable(tmp_path)
    repo = write_project(
        tmp_path / "repo", {"tests/test_service.py": SERVICE_TESTS.format(port=service.port, other=other_service.port)}
    )
    with sandbox_at(allowed, repo, tmp_path) as sandbox:
        run = sandbox.run_tests(None)
    results = run.results
    assert results["tests/test_service.py::test_service"].status is TestStatus.PASSED, run.output_tail
    assert results["tests/test_service.py::test_service_by_name"].status is TestStatus.PASSED, run.output_tail
    refused = results["tests/test_service.py::test_another_port"]
    assert refused.status is TestStatus.FAILED
    # bwrap/unshare: the namespace's own loopback has nothing there; landlock: Landlock refuses the connect.
    assert refused.exc_type in ("ConnectionRefusedError", "PermissionError"), refused.message
    assert refused.address == f"127.0.0.1:{other_service.port}"  # the collector names the port it aimed at
    assert service.served >= 2 and other_service.served == 0  # (the bridge checks once that it listens)


def test_the_allowed_port_is_reached_from_the_warm_and_hot_workers_too(
    isolation: Isolation, service: Service, tmp_path: Path
) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    allowed = _allowing(isolation, service.port)
    traversable(tmp_path)
    files = {
        "pkg.py": "def answer():\n    return 41\n",
        "tests/test_service.py": SERVICE_TESTS.format(port=service.port, other=1),
        "tests/test_pkg.py": "from pkg import answer\n\ndef test_answer():\n    assert answer() == 42\n",
    }
    repo = write_project(tmp_path / "repo", files)
    with sandbox_at(allowed, repo, tmp_path) as sandbox:
        sandbox.run_tests(None)
        warm = sandbox.run_tests(["tests/test_service.py::test_service"], warm=True)
        assert warm.results["tests/test_service.py::test_service"].status is TestStatus.PASSED, warm.output_tail
        with sandbox.patched({"pkg.py": "def answer():\n    return 42\n"}):
            hot = sandbox.run_tests(["tests/test_service.py::test_service", "tests/test_pkg.py::test_answer"])
        assert hot.results["tests/test_service.py::test_service"].status is TestStatus.PASSED, hot.output_tail
        assert hot.results["tests/test_pkg.py::test_answer"].status is TestStatus.PASSED
    assert service.served >= 3


DB_PROJECT = {
    "app/__init__.py": "",
    "app/db.py": (
        "import socket\n\n\ndef fetch(port):\n"
        "    with socket.create_connection(('127.0.0.1', port), timeout=5) as conn:\n"
        "        conn.sendall(b'ping')\n"
        "        return conn.recv(100)\n"
    ),
    "tests/test_db.py": (
        "from app.db import fetch\n\nPORT = {port}\n\n\ndef test_fetch():\n    assert fetch(PORT) == b'pong:ping'\n"
    ),
}


def _heal(isolation: Isolation, repo: Path, *flags: str) -> tuple[int, dict]:
    code = main(
        [
            "fix",
            str(repo),
            "--quiet",
            "--isolation",
            isolation.level.value,
            "--test-cmd",
            f"{python_for(isolation)} -m pytest",
            *flags,
        ]
    )
    return code, json.loads((repo / ".selfix" / "report.json").read_text(encoding="utf-8"))


def test_without_allow_ports_the_heal_stops_as_the_environments_naming_the_port(
    isolation: Isolation, service: Service, tmp_path: Path
) -> None:
    """The service runs on the host, but its port is not allowed: the failing test cannot connect, and the heal
    says so (the port, and allow_ports) instead of patching the code; with the port allowed, the suite passes."""
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    traversable(tmp_path)
    files = {path: text.replace("{port}", str(service.port)) for path, text in DB_PROJECT.items()}
    repo = write_project(tmp_path / "repo", files)
    code, report = _heal(isolation, repo)
    assert report["stop_reason"] == StopReason.ENVIRONMENT.value == "environment_not_code"
    assert code == StopReason.ENVIRONMENT.exit_code
    assert f"port {service.port}" in report["environment_problem"]
    assert f"allow_ports: {service.port}" in report["environment_problem"]
    assert report["patch"] is None and report["candidates_tried"] == 0
    assert report["environment_tests"] == ["tests/test_db.py::test_fetch"]
    assert not (repo / ".selfix" / "patch.diff").exists() or not (repo / ".selfix" / "patch.diff").read_text()
    assert service.served == 0

    code, report = _heal(isolation, repo, "--allow-ports", str(service.port))
    assert report["stop_reason"] == StopReason.NO_FAILING_TESTS.value, report["environment_problem"]
    assert service.served >= 1


def test_an_allowed_port_where_nothing_listens_stops_the_heal_too(isolation: Isolation, tmp_path: Path) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    traversable(tmp_path)
    idle = socket.create_server(("127.0.0.1", 0))
    port = idle.getsockname()[1]
    idle.close()  # nothing listens there any more
    files = {path: text.replace("{port}", str(port)) for path, text in DB_PROJECT.items()}
    repo = write_project(tmp_path / "repo", files)
    code, report = _heal(isolation, repo, "--allow-ports", str(port))
    assert report["stop_reason"] == "environment_not_code"
    assert code == StopReason.ENVIRONMENT.exit_code
    assert f"allow_ports opens {port}, but nothing listens there" in report["environment_problem"]
    assert report["patch"] is None and report["candidates_tried"] == 0


def test_bad_ports_are_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = write_project(tmp_path / "p", {"m.py": "X = 1\n", "tests/test_m.py": "def test_x():\n    pass\n"})
    for bad in ("0", "65536", "postgres", "5432,-1"):
        with pytest.raises(SystemExit) as exited:
            main(["fix", str(repo), "--allow-ports", bad])
        assert exited.value.code == 2
        assert "is not a TCP port (an integer from 1 to 65535)" in capsys.readouterr().err
    with pytest.raises(ValueError, match="not a TCP port"):
        IsolationConfig(allow_ports=(70000,))
    assert IsolationConfig(allow_ports=("6379", 5432, 5432)).allow_ports == (5432, 6379)  # type: ignore[arg-type]
