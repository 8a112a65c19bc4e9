"""Attacks on what a GitHub Docker action's container holds: a process with the token in its environment (selfix
as PID 1), the runner's command files (GITHUB_ENV), the Docker socket, loopback services over TCP and UDP, and
abstract unix sockets. Each runs at the best level here and at landlock (see conftest), and must fail while the
run goes on.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.sandbox.isolation import Isolation, IsolationLevel
from tests.helpers.isolation import FAKE_GITHUB_TOKEN, RunAttack, assert_blocked, need_level


@pytest.fixture
def token_holder() -> Iterator[int]:
    """A root process with INPUT_GITHUB_TOKEN in its initial environment, like selfix as PID 1 in the action."""
    env = {"PATH": os.environ["PATH"], "INPUT_GITHUB_TOKEN": FAKE_GITHUB_TOKEN, "GITHUB_TOKEN": FAKE_GITHUB_TOKEN}
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env)
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def test_environ_and_memory_of_a_process_holding_the_token_are_unreachable(
    run_attack: RunAttack, isolation: Isolation, token_holder: int
) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "hiding other processes")
    attack = f"""
    import os
    seen, errors = b"", []
    for pid in ({token_holder}, 1, os.getppid()):
        for name in ("environ", "cmdline", "mem"):
            try:
                with open(f"/proc/{{pid}}/{{name}}", "rb") as handle:
                    seen += handle.read(1 << 16)
            except OSError as exc:
                errors.append(f"{{pid}}/{{name}}: {{exc.strerror}}")
    found = {FAKE_GITHUB_TOKEN[::-1]!r}[::-1].encode() in seen  # not in the assert: pytest would print it
    assert found, errors
    """
    run, _ = run_attack(textwrap.dedent(attack))
    assert_blocked(run, "AssertionError")
    # Control: the token is really there for a process allowed to look.
    assert FAKE_GITHUB_TOKEN.encode() in Path(f"/proc/{token_holder}/environ").read_bytes()


def test_ptrace_and_process_vm_readv_of_the_holder_are_refused(
    run_attack: RunAttack, isolation: Isolation, token_holder: int
) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "hiding other processes")
    attack = f"""
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    PTRACE_ATTACH = 16
    results = []
    for pid in ({token_holder}, 1, os.getppid()):
        rc = libc.ptrace(PTRACE_ATTACH, pid, None, None)
        results.append((pid, rc, os.strerror(ctypes.get_errno())))
    assert any(rc == 0 for _, rc, _ in results), results
    """
    run, _ = run_attack(textwrap.dedent(attack))
    assert_blocked(run, "AssertionError")


def test_appending_to_the_runners_github_env_file_fails(
    run_attack: RunAttack, isolation: Isolation, outside_tmp: Path
) -> None:
    # The runner's command files live in RUNNER_TEMP (/github/file_commands in a container); a line appended
    # to GITHUB_ENV sets variables for every later step. World-writable here, so only the sandbox stops it.
    need_level(isolation, IsolationLevel.BWRAP, "a read-only filesystem")
    commands = outside_tmp / "_runner_file_commands"
    commands.mkdir()
    github_env = commands / "set_env_0123"
    github_env.write_text("")
    github_env.chmod(0o666)
    commands.chmod(0o777)
    attack = f"""
    with open({str(github_env)!r}, "a") as handle:
        handle.write("LD_PRELOAD=/tmp/evil.so\\n")
    """
    run, _ = run_attack(textwrap.dedent(attack), env_source={**os.environ, "GITHUB_ENV": str(github_env)})
    assert_blocked(run, "PermissionError", "OSError", "FileNotFoundError")
    assert github_env.read_text() == ""


def test_connecting_to_a_docker_socket_stand_in_fails(
    run_attack: RunAttack, isolation: Isolation, outside_tmp: Path
) -> None:
    # Like /var/run/docker.sock: root-owned, 0660. Landlock does not cover path-named unix sockets; the uid
    # does (bwrap also hides /run, where the real one lives).
    need_level(isolation, IsolationLevel.BWRAP, "a dropped uid")
    path = outside_tmp / "docker.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(4)
    server.setblocking(False)
    path.chmod(0o660)
    assert stat.S_ISSOCK(path.stat().st_mode)
    try:
        attack = f"""
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect({str(path)!r})
        s.sendall(b"GET /containers/json HTTP/1.0\\r\\n\\r\\n")
        """
        run, _ = run_attack(textwrap.dedent(attack))
        assert_blocked(run, "PermissionError", "FileNotFoundError", "ConnectionRefusedError")
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()


def test_abstract_unix_socket_outside_the_sandbox_is_unreachable(run_attack: RunAttack, isolation: Isolation) -> None:
    # bwrap/unshare: abstract sockets belong to the network namespace; landlock: scoped to the domain (ABI >= 6).
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    if isolation.level is IsolationLevel.LANDLOCK and "ABI" in isolation.mechanism:
        abi = int(isolation.mechanism.split("ABI ", 1)[1].split()[0])
        if abi < 6:
            pytest.skip(f"Landlock ABI {abi} < 6 has no abstract unix socket scoping")
    name = f"\0selfix-standin-{os.getpid()}-{time.monotonic_ns()}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)
    server.listen(4)
    server.setblocking(False)
    try:
        attack = f"""
        import socket
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect({name!r})
        """
        run, _ = run_attack(textwrap.dedent(attack))
        assert_blocked(run, "PermissionError", "ConnectionRefusedError", "OSError")
        with pytest.raises(BlockingIOError):
            server.accept()
    finally:
        server.close()


def test_udp_to_a_loopback_listener_never_arrives(run_attack: RunAttack, isolation: Isolation) -> None:
    need_level(isolation, IsolationLevel.UNSHARE, "network isolation")
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    server.setblocking(False)
    port = server.getsockname()[1]
    try:
        attack = f"""
        import socket
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"stolen", ("127.0.0.1", {port}))
        raise AssertionError("sent")  # UDP gives no answer: the host side checks that nothing arrived
        """
        run, _ = run_attack(textwrap.dedent(attack))
        attack_result = run.results["tests/test_attack.py::test_attack"]
        if isolation.level is IsolationLevel.LANDLOCK:
            assert attack_result.exc_type == "OSError", attack_result.message  # no AF_INET socket at all
        assert_blocked(run, "OSError", "AssertionError")
        time.sleep(0.2)
        with pytest.raises(BlockingIOError):
            server.recvfrom(64)
    finally:
        server.close()


def test_signalling_selfix_is_refused(run_attack: RunAttack, isolation: Isolation, token_holder: int) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "hiding other processes")
    attack = f"""
    import os, signal
    errors = []
    for pid in ({token_holder}, os.getppid()):
        try:
            os.kill(pid, 0)
        except OSError as exc:
            errors.append(exc)
    assert not errors, errors
    """
    run, _ = run_attack(textwrap.dedent(attack))
    assert_blocked(run, "AssertionError")
    os.kill(token_holder, 0)  # still alive
