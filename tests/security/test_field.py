"""The field, reproduced: a GitHub Docker action's container (Docker's default seccomp rules and capabilities,
see ``tests/helpers/dockerlike.py``), where bwrap and ``unshare`` are refused. There ``--isolation auto`` must
choose the landlock level, and ``selfix fix`` on a hostile repository must heal it while every attack on the container's
secrets fails.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.sandbox.isolation import IsolationConfig, IsolationLevel, detect_isolation
from tests.helpers.isolation import FAKE_CHECKOUT_TOKEN, FAKE_GITHUB_TOKEN, python_for, traversable
from tests.helpers.projects import REPO_ROOT

HELPER = REPO_ROOT / "tests" / "helpers" / "dockerlike.py"
EXAMPLE = REPO_ROOT / "examples" / "range_sum"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the Docker-like environment is entered as root")


def in_container(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 60):
    return subprocess.run(
        [sys.executable, str(HELPER), "--", *argv],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


DETECT = """
import json
from selfix_action.sandbox.isolation import detect_isolation
found = detect_isolation()
print(json.dumps({"report": found.report(), "summary": found.summary()}))
"""


def test_namespaces_are_refused_in_the_docker_like_environment_and_auto_chooses_landlock() -> None:
    done = in_container(
        [
            "sh",
            "-c",
            "grep CapBnd /proc/self/status; bwrap --ro-bind / / true; echo bwrap=$?; "
            "unshare --net true; echo unshare=$?",
        ]
    )
    out = done.stdout + done.stderr
    assert "bwrap=1" in out and "Creating new namespace failed: Operation not permitted" in out, out
    assert "unshare=1" in out and "Operation not permitted" in out, out
    bounding = int(out.split("CapBnd:")[1].split()[0], 16)
    assert not bounding & (1 << 21), "CAP_SYS_ADMIN must be gone, as in Docker"
    # Control: outside the helper this machine has both.
    assert subprocess.run(["unshare", "--net", "true"], check=False).returncode == 0

    detected = in_container([sys.executable, "-c", DETECT])
    assert detected.returncode == 0, detected.stderr
    result = json.loads(detected.stdout)
    assert result["report"]["level"] == "landlock", result
    assert result["report"]["uid"] == 65534
    assert any("Creating new namespace failed" in reason for reason in result["report"]["fallbacks"]), result
    assert result["summary"].startswith("isolation: landlock")
    # And a named level that does not work there is refused, not silently replaced.
    named = in_container(
        [
            sys.executable,
            "-c",
            "from selfix_action.sandbox.isolation import *\ndetect_isolation(IsolationConfig(mode='bwrap'))",
        ]
    )
    assert named.returncode != 0 and "'bwrap' is not available" in named.stderr


HOSTILE_TESTS = """
import os, socket

ORIGINAL = {original!r}
GITHUB_ENV = {github_env!r}
PORT = {port}


def attack(steal):
    # Passes when the attack is blocked; fails, carrying what it stole out in its message, when it works.
    try:
        loot = steal()
    except OSError:
        return
    raise AssertionError(f"STOLEN: {{loot!r}}")


def test_steal_the_checkout_token():
    attack(lambda: open(os.path.join(ORIGINAL, ".git", "config")).read())


def test_steal_selfix_environment():
    def steal():
        for pid in (os.getppid(), 1):
            try:
                return open(f"/proc/{{pid}}/environ", "rb").read()
            except OSError as exc:
                error = exc
        raise error
    attack(steal)


def test_poison_github_env():
    attack(lambda: open(GITHUB_ENV, "a").write("NODE_OPTIONS=--require=/tmp/evil.js\\n"))


def test_call_home_over_tcp():
    attack(lambda: socket.create_connection(("127.0.0.1", PORT), timeout=3).close())


def test_call_home_over_udp():
    attack(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", PORT)))
"""
ATTACKS = [
    "steal_the_checkout_token",
    "steal_selfix_environment",
    "poison_github_env",
    "call_home_over_tcp",
    "call_home_over_udp",
]


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, socket.socket]]:
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    tcp.setblocking(False)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", tcp.getsockname()[1]))
    udp.setblocking(False)
    yield tcp, udp
    tcp.close()
    udp.close()


@pytest.mark.slow
def test_selfix_fix_heals_a_hostile_repository_in_the_docker_like_environment(
    tmp_path: Path, listener: tuple[socket.socket, socket.socket]
) -> None:
    tcp, udp = listener
    workspace = traversable(tmp_path / "github" / "workspace")  # /github/workspace
    repo = workspace / "range_sum"
    shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("__pycache__", ".selfix", ".pytest_cache"))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    with (repo / ".git" / "config").open("a") as handle:
        handle.write(f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {FAKE_CHECKOUT_TOKEN}\n')
    (repo / ".git" / "config").chmod(0o644)
    commands = tmp_path / "github" / "file_commands"
    commands.mkdir()
    commands.chmod(0o777)
    github_env = commands / "set_env_1"
    github_env.write_text("")
    github_env.chmod(0o666)  # only the sandbox stops the write
    out = tmp_path / "out"
    holder_env = {"INPUT_GITHUB_TOKEN": FAKE_GITHUB_TOKEN, "GITHUB_ENV": str(github_env)}
    # selfix itself holds the token in its environment (as PID 1 of the action holds INPUT_GITHUB_TOKEN).
    (repo / "tests" / "test_hostile.py").write_text(
        textwrap.dedent(HOSTILE_TESTS)
        .format(original=str(repo), holder=0, github_env=str(github_env), port=tcp.getsockname()[1])
        .replace("HOLDER = 0", "HOLDER = os.getppid()")
    )
    python = python_for(detect_isolation(IsolationConfig(mode="landlock")))
    # Control: unconfined, every attack works (the hostile tests fail), so the run below can see a leak.
    control = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_hostile.py"],
        cwd=repo,
        env={"PATH": os.environ["PATH"], **holder_env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "5 failed" in control.stdout, control.stdout
    tcp.accept()[0].close()
    udp.recvfrom(16)
    github_env.write_text("")
    done = in_container(
        [
            sys.executable,
            "-c",
            "import sys\nfrom selfix_action.cli import main\nsys.exit(main(sys.argv[1:]))",
            "fix",
            str(repo),
            "--quiet",
            "--out",
            str(out),
            "--test-cmd",
            f"{python} -m pytest",
            "--test-timeout",
            "30",
            "--isolation",
            "auto",
        ],
        env=holder_env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["isolation"]["level"] == IsolationLevel.LANDLOCK.value, report["isolation"]
    assert report["stop_reason"] == "healed"
    for name in ATTACKS:
        assert report["tests_after"][f"tests/test_hostile.py::test_{name}"] == "passed", (name, report["tests_after"])
    assert "range(1, n + 1)" in (out / "patch.diff").read_text()
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert FAKE_GITHUB_TOKEN not in text and FAKE_CHECKOUT_TOKEN not in text, path
    assert github_env.read_text() == ""
    with pytest.raises(BlockingIOError):
        tcp.accept()
    with pytest.raises(BlockingIOError):
        udp.recvfrom(16)
