"""A test that talks to a server of its own on 127.0.0.1 passes at every level with a network namespace, as it
does outside: the namespace's loopback is up (``unshare --net`` left it down, and such tests failed there with
"Network is unreachable": boltons' socket tests, found by the sandbox differential). At ``landlock`` TCP stays
refused, as documented: Landlock cannot tell loopback from the internet."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfix_action.repair.values import TestStatus
from tests.helpers.isolation import run_project_at

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
    run = run_project_at(mode, tmp_path, LOCALHOST)
    assert run.results[NODE].status is TestStatus(expected), run.output_tail
