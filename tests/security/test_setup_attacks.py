"""Attacks by a hostile ``setup.py`` that the setup command (``pip install -e .``) runs through the build backend.

The project's ``setup.py`` tries, at every build-backend hook: the token in its own environment, in
``/proc/1/environ``, the parent's and a token holder's ``/proc/<pid>/environ``; the checkout token in the
workspace's ``.git/config``; appending to the runner's ``GITHUB_ENV`` file (world-writable); planting
``core.fsmonitor`` in the workspace's ``.git/config``; writing a ``.pth`` into selfix's own site-packages. Each
attempt is recorded in ``attacks.json`` in the setup's copy. Each must fail, the install must still succeed
(the heal goes on) and the heal's test run must work with the environment. A control run without isolation
shows the very same attacks working, so the test proves something.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfix_action.repair.values import TestStatus
from selfix_action.sandbox.isolation import Isolation, IsolationLevel
from tests.helpers.isolation import FAKE_API_KEY, FAKE_CHECKOUT_TOKEN, FAKE_GITHUB_TOKEN, need_level
from tests.helpers.project_setup import SELFIX_SITE, env_source, heal_sandbox, run_setup, tiny_project

HOSTILE_SETUP = r"""
import json, os, pathlib
from setuptools import setup

CONFIG = json.loads(pathlib.Path("attack_config.json").read_text())
report = {}


def attempt(name, action):
    try:
        report[name] = "WORKED: " + repr(action())[:200]
    except Exception as exc:
        report[name] = f"blocked: {type(exc).__name__}: {exc}"[:300]


def own_environ():
    text = repr(dict(os.environ)) + open("/proc/self/environ", "rb").read().decode("latin-1")
    if CONFIG["token"] not in text and CONFIG["key"] not in text:
        raise LookupError("no secret in the environment")
    return "found"


def other_environs():
    found = []
    pids = {"1", str(os.getppid()), str(CONFIG["holder"])}
    pids.update(entry for entry in os.listdir("/proc") if entry.isdigit())
    for pid in sorted(pids):
        try:
            data = open(f"/proc/{pid}/environ", "rb").read()
        except OSError:
            continue
        if CONFIG["token"].encode() in data:
            found.append(pid)
    if not found:
        raise PermissionError("no readable environ holds the token")
    return found


def git_config_token():
    text = pathlib.Path(CONFIG["workspace"], ".git", "config").read_text()
    if CONFIG["checkout"] not in text:
        raise LookupError("no token in it")
    return "found"


def github_env():
    with open(CONFIG["github_env"], "a") as handle:
        handle.write("LD_PRELOAD=/tmp/evil.so\n")


def fsmonitor():
    with open(pathlib.Path(CONFIG["workspace"], ".git", "config"), "a") as handle:
        handle.write("[core]\n\tfsmonitor = touch /tmp/selfix-pwned\n")


def selfix_site_packages():
    pathlib.Path(CONFIG["selfix_site"], CONFIG["planted"]).write_text("# planted by a setup.py\n")


for name, action in list(globals().items()):
    if name in ("own_environ", "other_environs", "git_config_token", "github_env", "fsmonitor",
                "selfix_site_packages"):
        attempt(name, action)
pathlib.Path("attacks.json").write_text(json.dumps(report))
setup()
"""
GIT_CONFIG = f"""[core]
\trepositoryformatversion = 0
[http "https://github.com/"]
\textraheader = AUTHORIZATION: basic {FAKE_CHECKOUT_TOKEN}
"""
CANARY = "tests/test_zz_canary.py::test_canary"
ATTACKS = ("own_environ", "other_environs", "git_config_token", "github_env", "fsmonitor", "selfix_site_packages")


@pytest.fixture
def token_holder() -> Iterator[int]:
    """A process holding the token in its (initial) environment, like the runner or selfix itself."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={"PATH": os.defpath, "GITHUB_TOKEN": FAKE_GITHUB_TOKEN},
    )
    yield holder.pid
    holder.kill()
    holder.wait()


def _hostile_workspace(tmp_path: Path, outside_tmp: Path, holder: int) -> tuple[Path, Path]:
    commands = outside_tmp / "_runner_file_commands"
    commands.mkdir()
    commands.chmod(0o777)
    github_env = commands / "set_env_0123"
    github_env.write_text("")
    github_env.chmod(0o666)
    repo = tiny_project(
        tmp_path / "workspace",
        {"setup.py": HOSTILE_SETUP, "tests/test_zz_canary.py": "import tinypkg\n\n\ndef test_canary():\n    pass\n"},
    )
    (repo / ".git").mkdir()
    (repo / ".git" / "config").write_text(GIT_CONFIG)
    config = {
        "token": FAKE_GITHUB_TOKEN,
        "key": FAKE_API_KEY,
        "checkout": FAKE_CHECKOUT_TOKEN,
        "holder": holder,
        "workspace": str(repo),
        "github_env": str(github_env),
        "selfix_site": SELFIX_SITE,
        # One name per test: the control test plants its own file there, possibly while another test runs.
        "planted": _planted_name(tmp_path),
    }
    (repo / "attack_config.json").write_text(json.dumps(config))
    return repo, github_env


def _planted_name(tmp_path: Path) -> str:
    return f"selfix-test-pwned-{tmp_path.parent.name}-{tmp_path.name}.pth"


def _secrets_source() -> dict[str, str]:
    return {
        **env_source(),
        "GITHUB_TOKEN": FAKE_GITHUB_TOKEN,
        "INPUT_GITHUB_TOKEN": FAKE_GITHUB_TOKEN,
        "ANTHROPIC_API_KEY": FAKE_API_KEY,
        "PIP_INDEX_URL_TOKEN": FAKE_GITHUB_TOKEN,  # installer prefix, still secret-looking: dropped
    }


@pytest.mark.slow
def test_a_hostile_setup_py_gets_nothing_and_the_heal_goes_on(
    tmp_path: Path, isolation: Isolation, outside_tmp: Path, token_holder: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_level(isolation, IsolationLevel.BWRAP, "a setup command inside the boundary")
    repo, github_env = _hostile_workspace(tmp_path, outside_tmp, token_holder)
    monkeypatch.setenv("RUNNER_TEMP", str(outside_tmp))  # the runner's command files live there
    planted = Path(SELFIX_SITE) / _planted_name(tmp_path)
    setup = run_setup(repo, isolation, env_source=_secrets_source())
    try:
        assert setup.ok, setup.result.stdout + setup.result.stderr  # the install itself went on
        report = json.loads((setup.project / "attacks.json").read_text())
        assert sorted(report) == sorted(ATTACKS)
        worked = {name: outcome for name, outcome in report.items() if not outcome.startswith("blocked")}
        assert worked == {}, f"ATTACKS SUCCEEDED: {worked}"
        assert github_env.read_text() == ""
        assert (repo / ".git" / "config").read_text() == GIT_CONFIG
        assert not planted.exists()
        output = setup.result.stdout + setup.result.stderr
        assert FAKE_GITHUB_TOKEN not in output and FAKE_CHECKOUT_TOKEN not in output
        # the heal goes on: its test runs use the environment the setup installed into
        with heal_sandbox(repo, setup, isolation, tmp_path) as sandbox:
            run = sandbox.run_tests([CANARY])
        assert run.results[CANARY].status is TestStatus.PASSED, run.output_tail
    finally:
        planted.unlink(missing_ok=True)
        setup.close()


@pytest.mark.slow
def test_control_without_isolation_the_same_setup_py_succeeds(
    tmp_path: Path, outside_tmp: Path, token_holder: int
) -> None:
    """The attacks are real: run unconfined (as root, here) they read and write everything."""
    if os.geteuid() != 0:
        pytest.skip("the control's writes (selfix's site-packages, a 0666 file) need root here")
    repo, github_env = _hostile_workspace(tmp_path, outside_tmp, token_holder)
    planted = Path(SELFIX_SITE) / _planted_name(tmp_path)
    setup = run_setup(repo, None, env_source=_secrets_source())
    try:
        assert setup.ok, setup.result.stdout + setup.result.stderr
        report = json.loads((setup.project / "attacks.json").read_text())
        for name in ("other_environs", "git_config_token", "github_env", "fsmonitor", "selfix_site_packages"):
            assert report[name].startswith("WORKED"), (name, report[name])
        assert report["own_environ"].startswith("blocked")  # the environment allowlist holds even here
        assert "LD_PRELOAD" in github_env.read_text()
        assert "fsmonitor" in (repo / ".git" / "config").read_text()
    finally:
        planted.unlink(missing_ok=True)
        setup.close()


REWRITE_ENV = r"""
import os, pathlib, sys
venv = pathlib.Path(os.environ["VIRTUAL_ENV"])
secret = sys.argv[1]
(venv / "pyvenv.cfg").write_text(f"home = {secret}\ninclude-system-site-packages = false\n")
link = venv / "bin" / "python3"
link.unlink()
link.symlink_to(f"{secret}/bin/python3")
"""


def test_a_setup_that_rewrites_its_environment_cannot_expose_a_hidden_path(
    tmp_path: Path, isolation: Isolation
) -> None:
    """selfix reads ``pyvenv.cfg`` and the ``bin/python*`` links (outside the sandbox) to decide what the test
    runs may read: a setup naming the workspace's ``.git`` there gets it restored, and the tests see nothing."""
    need_level(isolation, IsolationLevel.BWRAP, "a setup command inside the boundary")
    read_test = "import pathlib\n\n\ndef test_read():\n    pathlib.Path(SECRET, 'config').read_text()\n"
    repo = tiny_project(tmp_path / "workspace", {"rewrite_env.py": REWRITE_ENV})
    (repo / ".git").mkdir()
    (repo / ".git" / "config").write_text(GIT_CONFIG)
    (repo / "tests" / "test_read.py").write_text(f"SECRET = {str(repo / '.git')!r}\n" + read_test)
    command = f'sh -c "python standin_pytest.py && python rewrite_env.py {repo / ".git"}"'
    setup = run_setup(repo, isolation, command=command)
    try:
        assert setup.ok, setup.result.stderr
        assert str(repo) not in (setup.venv / "pyvenv.cfg").read_text()
        assert str(repo) not in os.readlink(setup.venv / "bin" / "python3")
        with heal_sandbox(repo, setup, isolation, tmp_path) as sandbox:
            run = sandbox.run_tests(["tests/test_read.py::test_read"])
        result = run.results["tests/test_read.py::test_read"]
        assert result.status is TestStatus.FAILED, f"ATTACK SUCCEEDED\n{run.output_tail}"
        assert result.exc_type in ("FileNotFoundError", "PermissionError", "NotADirectoryError"), result.message
        assert FAKE_CHECKOUT_TOKEN not in run.output_tail
    finally:
        setup.close()
