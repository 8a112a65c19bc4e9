"""A test that talks to a server of its own on 127.0.0.1 passes at every level with a network namespace, as it
does outside: the namespace's loopback is up (``unshare --net`` left it down, and such tests failed there with
"Network is unreachable": boltons' socket tests, found by the sandbox differential). At ``landlock`` TCP stays
refused, as documented: Landlock cannot tell loopback from the internet."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.engine.models import TestStatus
from selfix_action.errors import SandboxError
from selfix_action.sandbox.isolation import IsolationConfig, detect_isolation
from selfix_action.sandbox.process import Limits
from selfix_action.sandbox.pytest_sandbox import PytestSandbox
from tests.conftest import write_project
from tests.security.conftest import python_for, traversable

LOCALHOST = {
    "tests/test_lo.py": """
        import socket


        def test_a_server_of_its_own_on_localhost():
            server = socket.socket()
            server.bind(("127.0.0.1", 0))
            server.listen(1)
            client = socket.create_connection(server.getsockname(), timeout=5)
            conn, _ = server.accept()
            client.sendall(b"ping")
            assert conn.recv(4) == b"ping"
        """,
}
NODE = "tests/test_lo.py::test_a_server_of_its_own_on_localhost"


@pytest.mark.parametrize(("mode", "expected"), [("unshare", "passed"), ("bwrap", "passed"), ("landlock", "failed")])
def test_localhost_inside_the_sandbox(tmp_path: Path, mode: str, expected: str) -> None:
    try:
        isolation = detect_isolation(IsolationConfig(mode=mode))
    except SandboxError as exc:
        pytest.skip(f"isolation level {mode} is not available on this machine: {exc}")
    traversable(tmp_path)
    repo = write_project(tmp_path / "repo", LOCALHOST)
    with PytestSandbox(
        repo,
        [python_for(isolation), "-m", "pytest"],
        limits=Limits(wall_seconds=60),
        env_source={"PATH": "/usr/bin:/bin"},
        scratch_parent=tmp_path,
        isolation=isolation,
    ) as sandbox:
        run = sandbox.run_tests(None)
    assert run.results[NODE].status is TestStatus(expected), run.output_tail
